//! `improve_status` and `improve_run`, and the self-improvement loop behind them. The status
//! reports the loop (mode, budget and spend, each namespace's live run, pin, best record and
//! counts), the queue per namespace and every agent with its measured record.
//!
//! Every `improve_run` action is dispatched by one table ([`ImproveCx::improve_run`]) to a
//! handler on [`ImproveCx`], which holds only the role ports the wing uses (never the
//! composite store): the control actions (mode, pause, unpause, budget, the driver lease, a
//! read-only operator key) are here; opening a run `run.rs`, the subscription driver's
//! attempt `attempts.rs`, its skill proposals `abstraction.rs` and edits `edit.rs`, the
//! tick's loop step `night.rs`, finishing a run `finish.rs`, the scorer path `score.rs`
//! and the evaluation cycle `evaluate.rs`. The status is `status.rs` (its `autonomy` block
//! `service::autonomy::status`); roster and cadence `roster.rs`, signing `sign.rs`, pins
//! `pin.rs`, the agent inventory `inventory.rs`, the skill actions `skills.rs` (their
//! repository copy, `export_skills` and `import_skills`, `repo_copy.rs`), the tools'
//! registry entries `registered.rs`. Action `tick` asks the scheduler through [`Ticker`].
//! Every action answers an [`ImproveRunAnswer`] (`answer.rs`, the skill actions' shapes in
//! `answer/skills.rs`), whose JSON Schema is the tool's output schema.

use crate::service::Area;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Confirmer;
use super::args::{Bounded, DocPathArg, NamespaceArg};

mod abstraction;
mod answer;
mod attempts;
mod driver;
mod edit;
mod evaluate;
mod finish;
mod inventory;
pub mod night;
mod pin;
mod repo_copy;
mod roster;
mod run;
mod score;
mod sign;
mod skill_panel;
mod skills;
mod status;
mod task;
use crate::caller::Caller;
use crate::crypto::sha256_hex;
use crate::error::{Error, Result};
use crate::ids::new_token;
use crate::improve::budget::BudgetCaps;
use crate::improve::keys::{BUDGET_KEY, IMPROVE_MODE_KEY, driver_key, paused_key};
use crate::improve::roster::{DRIVER_LEASE_MS, ImproveMode};
use crate::ports::{Expect, SettingChange};
use crate::scope_args;
use crate::time::Timestamp;
pub use answer::*;
pub use evaluate::ProbeAnswer;
pub use score::{HoldoutCredential, HoldoutObject, ScoreAnswer, ScoreError};
pub use status::StatusAnswer;

/// What the improve area's handlers and the loop reach: the loop's settings and tables, the
/// queue (its counts and records), documents (reports, policies), agents, the audit log,
/// skills and their sources, the repository host, the model, the holdout store, the
/// scheduler's on-demand tick, ids and the signing secret. Each a role port: no handler
/// holds the composite store (`service::areas`).
#[derive(Clone, Copy)]
pub struct ImproveCx<'a> {
    /// Settings (mode, budget, pauses, leases).
    pub settings: &'a dyn crate::ports::SettingsStore,
    /// Run totals.
    pub improve: &'a dyn crate::ports::ImproveStore,
    /// Runs and attempts.
    pub runs: &'a dyn crate::ports::RunStore,
    /// Registered namespaces.
    pub namespaces: &'a dyn crate::ports::NamespaceStore,
    /// The queue.
    pub jobs: &'a dyn crate::ports::JobStore,
    /// Documents.
    pub docs: &'a dyn crate::ports::DocumentStore,
    /// Agents.
    pub agents: &'a dyn crate::ports::AgentStore,
    /// Audit rows of control changes.
    pub audit_log: &'a dyn crate::ports::AuditLog,
    /// Skills and their evidence.
    pub skills: &'a dyn crate::ports::SkillStore,
    /// The signing secret.
    pub config: &'a super::ServiceConfig,
    /// Keys.
    pub entropy: &'a dyn crate::ids::Entropy,
    /// Now.
    pub clock: &'a dyn crate::time::Clock,
    /// The loop's time zone.
    pub zone: &'a crate::improve::night::LoopZone,
    /// The sources skills are abstracted from (kept attempts, verified jobs).
    pub skill_sources: &'a dyn crate::ports::SkillSourceStore,
    /// The repository host the loop pushes attempts to and reads heads from.
    pub repo_host: &'a Option<std::sync::Arc<dyn crate::ports::RepoHost>>,
    /// The model `api` mode asks.
    pub model: &'a Option<std::sync::Arc<dyn crate::ports::ModelClient>>,
    /// The holdout store (only the scorer path and the holdout credential reach it).
    pub holdout: &'a Option<crate::improve::holdout::HoldoutStore>,
    /// The scheduler, asked to run its due tasks now (action `tick`).
    pub ticker: &'a dyn Ticker,
}

/// The scheduler's on-demand run, as the improve area asks for it: the leader's periodic
/// tasks are the service's maintenance, reached through this one method, never held.
pub trait Ticker: Send + Sync {
    /// Runs the due periodic tasks now, or only `task`, and audits it as `caller`'s.
    fn tick<'a>(
        &'a self,
        caller: &'a Caller,
        task: Option<&'a str>,
    ) -> crate::service::registry::ToolFuture<'a, TickAnswer>;
}

impl super::Area for ImproveCx<'_> {
    fn clock(&self) -> &dyn crate::time::Clock {
        self.clock
    }
}

/// `improve_status`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusArgs {
    /// Only this namespace.
    pub namespace: Option<NamespaceArg>,
    /// A nightly task document to verify (`<ns>/improve/run-<date>.md`, or the bare path with `namespace`): verified by signature and the loop's authorship.
    pub task_path: Option<DocPathArg>,
}
scope_args!(StatusArgs, optional namespace);

/// What `improve_run` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunAction {
    /// Open a run now for a roster namespace (or the whole roster).
    Run,
    /// Subscription mode: the driver holding the lease reports the attempt it pushed.
    Attempt,
    /// Set the loop mode.
    Mode,
    /// Pause a namespace (or all).
    Pause,
    /// Unpause a namespace (or all).
    Unpause,
    /// Set the monthly caps.
    Budget,
    /// Mint a read-only operator key (shown once).
    MintOperatorKey,
    /// Take (or release) the subscription driver lease of a namespace.
    Claim,
    /// Sign a stored policy document (admin only).
    SignPolicy,
    /// Add, remove or list the roster's namespaces (admin only).
    Roster,
    /// Run the due periodic tasks now, or one by name (admin only).
    Tick,
    /// Read or set a periodic task's cadence in minutes (admin only).
    Cadence,
    /// Pin the Anchors checksum of a namespace's improve/scores.md (admin only).
    Pin,
    /// List skills (optionally of one status, or offerable to a namespace).
    Skills,
    /// One skill with its evaluations, edits and failure notes.
    Skill,
    /// Retire a skill by hand (admin only).
    RetireSkill,
    /// Settle a merge proposal: keep `skill`, retire `other` (admin only).
    AcceptMerge,
    /// Settle a merge proposal: the pair is not proposed again (admin only).
    RejectMerge,
    /// Subscription mode: the driver holding the lease proposes a skill from a source (or declines it).
    ProposeSkill,
    /// Subscription mode: the driver holding a lease proposes a bounded edit of a skill.
    ProposeEdit,
    /// Write the namespace's live skills to its repository as skills/<id>/SKILL.md, through a pull request.
    ExportSkills,
    /// Read the repository's skills/*/SKILL.md back: each copy that differs from its skill becomes a candidate.
    ImportSkills,
}

/// What `improve_run` action `roster` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RosterOp {
    /// Put a registered namespace on the roster.
    Add,
    /// Take a namespace off the roster.
    Remove,
    /// The roster as stored.
    List,
}

/// `improve_run`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunArgs {
    /// run (default), attempt, mode, pause, unpause, budget, mint_operator_key, claim, sign_policy, roster, tick, cadence, pin, skills, skill, retire_skill, accept_merge, reject_merge, propose_skill, propose_edit, export_skills or import_skills.
    pub action: Option<RunAction>,
    /// The namespace (pause/unpause: a namespace or all; sign_policy: capsid; pin: the namespace whose Anchors are pinned).
    pub namespace: Option<NamespaceArg>,
    /// mode: off, subscription or api; cadence: minutes.
    pub value: Option<Bounded<16>>,
    /// pause: why.
    pub reason: Option<Bounded<64>>,
    /// budget: CI minutes a month.
    pub actions_minutes_month: Option<f64>,
    /// budget: model spend a month, USD.
    pub model_usd_month: Option<f64>,
    /// Plan only; write nothing.
    pub dry_run: Option<bool>,
    /// claim: give the lease back.
    pub release: Option<bool>,
    /// run: full, no-memory or no-transfer.
    pub condition: Option<Bounded<16>>,
    /// sign_policy: the policy document's path (policy/...).
    pub path: Option<DocPathArg>,
    /// roster: add, remove or list (default list).
    pub op: Option<RosterOp>,
    /// tick: only this periodic task (sweep, ci-poll, backup, rehearsal, auto-merge, watcher, improve, intake, scouts), run whether due or not; cadence: the task.
    pub task: Option<Bounded<32>>,
    /// attempt: the commit the driver pushed to improve/<attempt>.
    pub head_sha: Option<Bounded<64>>,
    /// attempt: what it changes, in a line.
    pub summary: Option<Bounded<200>>,
    /// skill, retire_skill: the skill's id; attempt: the skill the session followed (a revert leaves it a failure note); accept_merge: the skill kept; reject_merge: one of the pair.
    pub skill: Option<Bounded<64>>,
    /// accept_merge: the skill retired into `skill`; reject_merge: the other of the pair.
    pub other: Option<Bounded<64>>,
    /// skills: only this status (candidate, live or retired).
    pub status: Option<Bounded<16>>,
    /// propose_skill: attempt or job.
    pub source_kind: Option<Bounded<16>>,
    /// propose_skill: the attempt's or the job's id.
    pub source_id: Option<Bounded<128>>,
    /// propose_skill: {title, trigger_condition, namespaces, termination_test, composition_interface, body}, or {"skill": null} to decline.
    pub proposal: Option<serde_json::Map<String, Value>>,
    /// propose_edit: the ops, [{op: add|delete|replace, line (1-based), text}].
    pub ops: Option<Vec<crate::skills::EditOp>>,
}
impl RunAction {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            RunAction::Run => "run",
            RunAction::Attempt => "attempt",
            RunAction::Mode => "mode",
            RunAction::Pause => "pause",
            RunAction::Unpause => "unpause",
            RunAction::Budget => "budget",
            RunAction::MintOperatorKey => "mint_operator_key",
            RunAction::Claim => "claim",
            RunAction::SignPolicy => "sign_policy",
            RunAction::Roster => "roster",
            RunAction::Tick => "tick",
            RunAction::Cadence => "cadence",
            RunAction::Pin => "pin",
            RunAction::Skills => "skills",
            RunAction::Skill => "skill",
            RunAction::RetireSkill => "retire_skill",
            RunAction::AcceptMerge => "accept_merge",
            RunAction::RejectMerge => "reject_merge",
            RunAction::ProposeSkill => "propose_skill",
            RunAction::ProposeEdit => "propose_edit",
            RunAction::ExportSkills => "export_skills",
            RunAction::ImportSkills => "import_skills",
        }
    }
}

impl crate::service::args::ScopeArgs for RunArgs {
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_ref().map(|n| n.as_str())
    }
    fn action(&self) -> Option<&str> {
        self.action.map(RunAction::name)
    }
}

pub(crate) fn month_start(now: Timestamp) -> Timestamp {
    Timestamp::parse(&format!("{}-01T00:00:00Z", now.month())).unwrap_or(now)
}

impl ImproveCx<'_> {
    pub(crate) async fn improve_run(
        &self,
        caller: &Caller,
        a: RunArgs,
        _: &dyn Confirmer,
    ) -> Result<ImproveRunAnswer> {
        let action = a.action.unwrap_or(RunAction::Run);
        let now = self.now();
        let ns = a.namespace.as_ref().map(|n| n.as_str().to_owned());
        let name = action.name();
        let dry = a.dry_run == Some(true);
        // The one table: every action's handler is on this context.
        match action {
            RunAction::Run => self.run_action(caller, &a).await,
            RunAction::Attempt => self.report_attempt(caller, &a).await,
            RunAction::ProposeSkill => self.propose_skill(caller, &a).await,
            RunAction::ProposeEdit => self.propose_edit_action(caller, &a).await,
            RunAction::ExportSkills => self.export_skills_action(caller, ns.as_deref(), dry).await,
            RunAction::ImportSkills => self.import_skills_action(caller, ns.as_deref(), dry).await,
            RunAction::Tick => Ok(self
                .ticker
                .tick(caller, a.task.as_ref().map(|t| t.as_str()))
                .await?
                .into()),
            RunAction::Mode => {
                let value = a.value.as_ref().map(|v| v.as_str()).unwrap_or("");
                let Some(mode) = ImproveMode::parse(value) else {
                    return Err(Error::Invalid(format!(
                        "improve_run: value must be off, subscription or api (got {value:?})"
                    )));
                };
                if !dry {
                    let audit = self.audit(
                        caller,
                        "improve-mode",
                        None,
                        None,
                        json!({"value": mode.name()}),
                    );
                    self.settings
                        .change_settings(
                            &[SettingChange::put(IMPROVE_MODE_KEY, mode.name())],
                            audit,
                            now,
                        )
                        .await?;
                }
                let stored = self.settings.setting(IMPROVE_MODE_KEY, now).await?;
                Ok(ModeSet {
                    ok: true,
                    action: name,
                    mode: ImproveMode::from_setting(stored.as_deref()).name(),
                    dry_run: dry,
                }
                .into())
            }
            RunAction::Pause | RunAction::Unpause => {
                let Some(target) = ns else {
                    return Ok(refuse(name, format!("{name} needs a namespace, or all")));
                };
                let targets: Vec<String> = if target == "all" {
                    self.namespaces
                        .namespaces()
                        .await?
                        .into_iter()
                        .map(|n| n.namespace)
                        .collect()
                } else {
                    vec![target.clone()]
                };
                if let Some(r) = a.reason.as_ref().filter(|r| {
                    r.as_str()
                        .starts_with(crate::autonomy::watcher::LOOP_PAUSE_PREFIX)
                }) {
                    return Err(Error::Invalid(format!(
                        "improve_run: reason: may not start with '{}', which marks the loop's own pauses (got {:?})",
                        crate::autonomy::watcher::LOOP_PAUSE_PREFIX,
                        r.as_str()
                    )));
                }
                if !dry {
                    let reason = a
                        .reason
                        .as_ref()
                        .map_or("paused by an operator", |r| r.as_str());
                    let changes: Vec<SettingChange> = targets
                        .iter()
                        .map(|t| match action {
                            RunAction::Pause => SettingChange::put(paused_key(t), reason),
                            _ => SettingChange::delete(paused_key(t)),
                        })
                        .collect();
                    let params = json!({"namespaces": targets, "reason": a.reason.as_ref().map(|r| r.as_str())});
                    let audit = self.audit(
                        caller,
                        &format!("improve-{name}"),
                        Some(&target),
                        None,
                        params,
                    );
                    self.settings.change_settings(&changes, audit, now).await?;
                }
                Ok(PauseSet {
                    ok: true,
                    action: name,
                    namespaces: targets,
                    dry_run: dry,
                }
                .into())
            }
            RunAction::Budget => {
                let caps = BudgetCaps::from_setting(
                    self.settings.setting(BUDGET_KEY, now).await?.as_deref(),
                );
                let updated = caps
                    .updated(a.actions_minutes_month, a.model_usd_month)
                    .map_err(|e| Error::Invalid(format!("improve_run: {e}")))?;
                if !dry {
                    let audit = self.audit(
                        caller,
                        "improve-budget",
                        None,
                        None,
                        json!({"caps": updated.to_setting()}),
                    );
                    self.settings
                        .change_settings(
                            &[SettingChange::put(BUDGET_KEY, updated.to_setting())],
                            audit,
                            now,
                        )
                        .await?;
                }
                Ok(BudgetSet {
                    ok: true,
                    action: name,
                    caps: status::BudgetCapsInForce {
                        actions_minutes_month: updated.actions_minutes_cap(),
                        model_usd_month: updated.model_usd_cap(),
                    },
                    dry_run: dry,
                }
                .into())
            }
            RunAction::MintOperatorKey => {
                let key = format!("capsid_ro_{}", new_token(self.entropy));
                let hash = sha256_hex(&key);
                self.audit_log
                    .append_audit(self.audit(
                        caller,
                        "improve-mint-operator-key",
                        None,
                        None,
                        json!({"fingerprint": &hash[..12]}),
                    ))
                    .await?;
                Ok(OperatorKeyMinted {
                    ok: true,
                    action: name,
                    command: format!("add ro:{hash} to CAPSID_OPERATOR_KEY_HASH (comma-separated) and restart capsid serve"),
                    key,
                    hash,
                    note: "The key is shown once; only its sha256 belongs in the configuration. It is read-only (ro:).",
                }
                .into())
            }
            RunAction::Claim => {
                let Some(target) = ns else {
                    return Ok(refuse(name, "claim needs a namespace"));
                };
                let key = driver_key(&target);
                let holder = caller.actor();
                let current = self.settings.setting(&key, now).await?;
                if a.release == Some(true) {
                    if current.as_deref() != Some(holder.as_str()) {
                        return Ok(refuse(
                            name,
                            format!("{holder} does not hold the driver lease of {target}"),
                        ));
                    }
                    let release = SettingChange {
                        key: key.clone(),
                        expected: Expect::Value(Some(holder.clone())),
                        value: None,
                        expires_at: None,
                    };
                    let audit = self.audit(
                        caller,
                        "improve-release",
                        Some(&target),
                        None,
                        json!({"lease": key}),
                    );
                    if !self
                        .settings
                        .change_settings(&[release], audit, now)
                        .await?
                    {
                        return Ok(refuse(
                            name,
                            format!("{holder} no longer holds the driver lease of {target}"),
                        ));
                    }
                    return Ok(LeaseReleased {
                        ok: true,
                        action: name,
                        namespace: target,
                        released: true,
                    }
                    .into());
                }
                let until = now.plus_millis(DRIVER_LEASE_MS);
                let take = SettingChange {
                    key: key.clone(),
                    expected: Expect::Value(current.clone().filter(|c| *c == holder)),
                    value: Some(holder.clone()),
                    expires_at: Some(until),
                };
                let audit = self.audit(
                    caller,
                    "improve-claim",
                    Some(&target),
                    None,
                    json!({"lease": key, "expires": until.to_string()}),
                );
                let won = self.settings.change_settings(&[take], audit, now).await?;
                if !won {
                    return Ok(refuse(
                        name,
                        format!(
                            "the driver lease of {target} is held by {}",
                            current.unwrap_or_else(|| "someone else".into())
                        ),
                    ));
                }
                Ok(LeaseClaimed {
                    ok: true,
                    action: name,
                    namespace: target,
                    holder,
                    expires: until.to_string(),
                }
                .into())
            }
            RunAction::SignPolicy => {
                self.sign_policy(caller, ns.as_deref(), a.path.as_ref().map(|p| p.as_str()))
                    .await
            }
            RunAction::Roster => self.roster_action(caller, a.op, ns.as_deref(), dry).await,
            RunAction::Pin => self.pin_action(caller, ns.as_deref(), dry).await,
            RunAction::Skills => {
                self.skills_action(caller, ns.as_deref(), a.status.as_ref().map(|s| s.as_str()))
                    .await
            }
            RunAction::Skill => {
                self.skill_action(caller, ns.as_deref(), a.skill.as_ref().map(|s| s.as_str()))
                    .await
            }
            RunAction::AcceptMerge | RunAction::RejectMerge => {
                let (a1, a2) = (
                    a.skill.as_ref().map(|s| s.as_str()),
                    a.other.as_ref().map(|s| s.as_str()),
                );
                let reason = a.reason.as_ref().map(|r| r.as_str());
                if action == RunAction::AcceptMerge {
                    self.accept_merge_action(caller, a1, a2, reason, dry).await
                } else {
                    self.reject_merge_action(caller, a1, a2, reason, dry).await
                }
            }
            RunAction::RetireSkill => {
                self.retire_skill_action(
                    caller,
                    a.skill.as_ref().map(|s| s.as_str()),
                    a.reason.as_ref().map(|r| r.as_str()),
                    dry,
                )
                .await
            }
            RunAction::Cadence => {
                self.cadence_action(
                    caller,
                    a.task.as_ref().map(|t| t.as_str()),
                    a.value.as_ref().map(|v| v.as_str()),
                    dry,
                )
                .await
            }
        }
    }
}

mod registered;
pub use registered::*;
