//! Autonomy on the scheduler: the roster setting, the signed auto-merge policy as the tick
//! loads it, the auto-merge tick (`merge.rs`), the watcher (`watcher.rs`) and what
//! `improve_status` and the console say about them (`status.rs`).

pub(crate) mod merge;
pub(crate) mod status;
pub(crate) mod watcher;

use std::sync::Arc;

use serde::Serialize;

use super::{Area, Service};
use crate::autonomy::anchor::{POLICY_SIGNED_ACTION, signed_by_the_admin};
use crate::autonomy::parse_auto_merge_policy;
use crate::autonomy::policy::{
    AUTO_MERGE_POLICY_PATH, AutoMergePolicy, GATE_POLICY_PATH, POLICY_NAMESPACE,
};
use crate::error::Result;
use crate::improve::keys::ROSTER_KEY;
use crate::improve::roster::Roster;
use crate::jobs::signature::verify_task;
use crate::ports::RepoHost;

/// The actor of the rows the server's own periodic decisions write.
pub const LOOP_ACTOR: &str = "improve-loop";

/// What the autonomy tasks reach: settings (roster, awaiting-seat, last tick), documents
/// (the policy), the audit log (its signing), the queue, agents, namespaces (the primary
/// repository) and GitHub.
#[derive(Clone, Copy)]
pub struct AutonomyCx<'a> {
    /// Settings.
    pub settings: &'a dyn crate::ports::SettingsStore,
    /// Documents.
    pub docs: &'a dyn crate::ports::DocumentStore,
    /// Namespaces and their repositories.
    pub namespaces: &'a dyn crate::ports::NamespaceStore,
    /// The audit log.
    pub audit_log: &'a dyn crate::ports::AuditLog,
    /// The queue.
    pub jobs: &'a dyn crate::ports::JobStore,
    /// Agents.
    pub agents: &'a dyn crate::ports::AgentStore,
    /// GitHub, when configured.
    pub repo_host: &'a Option<Arc<dyn RepoHost>>,
    /// The signing secret.
    pub config: &'a super::ServiceConfig,
    /// Now.
    pub clock: &'a dyn crate::time::Clock,
}

impl super::Area for AutonomyCx<'_> {
    fn clock(&self) -> &dyn crate::time::Clock {
        self.clock
    }
}

impl Service {
    /// The autonomy area.
    pub(crate) fn autonomy(&self) -> AutonomyCx<'_> {
        AutonomyCx {
            settings: &*self.store,
            docs: &*self.store,
            namespaces: &*self.store,
            audit_log: &*self.store,
            jobs: &*self.store,
            agents: &*self.store,
            repo_host: &self.repo_host,
            config: &self.config,
            clock: &*self.clock,
        }
    }

    /// The roster the store holds (`improve:roster`; the Worker's five while unset).
    pub(crate) async fn roster(&self) -> Result<Roster> {
        read_roster(&*self.store, self.now()).await
    }
}

/// The roster in `settings` at `now`.
pub(crate) async fn read_roster(
    settings: &dyn crate::ports::SettingsStore,
    now: crate::time::Timestamp,
) -> Result<Roster> {
    Ok(Roster::from_setting(
        settings.setting(ROSTER_KEY, now).await?.as_deref(),
    ))
}

/// The auto-merge policy's state as the tick found it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PolicyState {
    /// `capsid/policy/auto-merge.md` exists.
    pub present: bool,
    /// It carries the signature its newest signing recorded.
    pub signed: bool,
    /// It says `- enabled: true`.
    pub enabled: bool,
    /// Its version, once parsed.
    pub version: Option<String>,
    /// The namespaces it covers, once parsed.
    pub namespaces: Vec<String>,
    /// Why it authorizes nothing, when it does not.
    pub note: Option<String>,
}

impl AutonomyCx<'_> {
    /// The auto-merge policy as the tick loads it.
    pub(crate) async fn auto_merge_policy(&self) -> Result<(PolicyState, Option<AutoMergePolicy>)> {
        load_auto_merge_policy(
            self.docs,
            self.audit_log,
            self.settings,
            self.config,
            self.now(),
        )
        .await
    }
}

/// The verified body of the signed policy at `path` in `capsid` (the auto-merge and the
/// intake policies alike): `None`, with the note saying why, when it is missing (`missing`
/// says what that means), not validly signed, or not the signature its newest signing
/// recorded. Sets `present` and `signed` as it goes; `what` names the policy in notes.
pub(crate) async fn signed_policy_body(
    docs: &dyn crate::ports::DocumentStore,
    audit_log: &dyn crate::ports::AuditLog,
    config: &super::ServiceConfig,
    path: &str,
    what: &str,
    missing: &str,
    state: &mut PolicyState,
) -> Result<Option<String>> {
    let Some(doc) = docs.document(POLICY_NAMESPACE, path).await? else {
        state.note = Some(format!("there is no {POLICY_NAMESPACE}/{path}: {missing}"));
        return Ok(None);
    };
    state.present = true;
    let stored = doc.body_text();
    let body = match verify_task(config.signing_secret().unwrap_or(""), stored) {
        Ok(body) => body.to_owned(),
        Err(e) => {
            state.note = Some(format!(
                "{what} is not validly signed ({e}); an unsigned policy, or one edited after signing, authorizes nothing"
            ));
            return Ok(None);
        }
    };
    let signed = audit_log
        .newest_audit(POLICY_SIGNED_ACTION, POLICY_NAMESPACE, path)
        .await?;
    if let Err(why) = signed_by_the_admin(stored, signed.as_ref().and_then(|r| r.params.as_deref()))
    {
        state.note = Some(format!("{what} is {why}; it authorizes nothing"));
        return Ok(None);
    }
    state.signed = true;
    Ok(Some(body))
}

/// Loads the auto-merge policy (reference 7.3): missing, unsigned, edited after signing,
/// unparseable or naming less than the code enforces, or disabled, is no policy, with the note
/// saying which.
pub(crate) async fn load_auto_merge_policy(
    docs: &dyn crate::ports::DocumentStore,
    audit_log: &dyn crate::ports::AuditLog,
    settings: &dyn crate::ports::SettingsStore,
    config: &super::ServiceConfig,
    now: crate::time::Timestamp,
) -> Result<(PolicyState, Option<AutoMergePolicy>)> {
    let mut state = PolicyState::default();
    let Some(body) = signed_policy_body(
        docs,
        audit_log,
        config,
        AUTO_MERGE_POLICY_PATH,
        "the merge policy",
        "nothing merges without a human",
        &mut state,
    )
    .await?
    else {
        return Ok((state, None));
    };
    let roster = read_roster(settings, now).await?;
    let policy = match parse_auto_merge_policy(&body, &roster) {
        Ok(p) => p,
        Err(e) => {
            state.note = Some(format!("{e}; it authorizes nothing"));
            return Ok((state, None));
        }
    };
    state.enabled = policy.enabled;
    state.version = Some(policy.version.clone());
    state.namespaces = policy.namespaces.clone();
    if !policy.enabled {
        state.note = Some(format!(
            "the merge policy (version {}) is disabled: it merges nothing",
            policy.version
        ));
        return Ok((state, None));
    }
    Ok((state, Some(policy)))
}

/// The gate policy's state (reference 7.4) as `jobs resume` with `approved_by_policy` would
/// load it now: present, signed by the admin, parsed, enabled, its version or why not.
pub(crate) async fn gate_policy_state(
    docs: &dyn crate::ports::DocumentStore,
    audit_log: &dyn crate::ports::AuditLog,
    config: &super::ServiceConfig,
) -> Result<PolicyState> {
    let mut state = PolicyState::default();
    let Some(doc) = docs.document(POLICY_NAMESPACE, GATE_POLICY_PATH).await? else {
        state.note = Some(format!(
            "there is no {POLICY_NAMESPACE}/{GATE_POLICY_PATH}: every gate waits for a human"
        ));
        return Ok(state);
    };
    state.present = true;
    let stored = doc.body_text();
    let body = match verify_task(config.signing_secret().unwrap_or(""), stored) {
        Ok(body) => body.to_owned(),
        Err(e) => {
            state.note = Some(format!(
                "the gate policy is not validly signed ({e}); an unsigned policy, or one edited after signing, authorizes nothing"
            ));
            return Ok(state);
        }
    };
    let signed = audit_log
        .newest_audit(POLICY_SIGNED_ACTION, POLICY_NAMESPACE, GATE_POLICY_PATH)
        .await?;
    if let Err(why) = signed_by_the_admin(stored, signed.as_ref().and_then(|r| r.params.as_deref()))
    {
        state.note = Some(format!("the gate policy is {why}; it authorizes nothing"));
        return Ok(state);
    }
    state.signed = true;
    match crate::autonomy::parse_gate_policy(&body) {
        Ok(policy) => {
            state.enabled = policy.enabled;
            if !policy.enabled {
                state.note = Some(format!(
                    "the gate policy (version {}) is disabled: it pre-approves nothing",
                    policy.version
                ));
            }
            state.version = Some(policy.version);
        }
        Err(e) => state.note = Some(format!("{e}; it authorizes nothing")),
    }
    Ok(state)
}
