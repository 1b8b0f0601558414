//! `agents`: minting, listing, revoking and re-scoping credentials. Admin only for every
//! action: an agent able to mint could widen itself. Refusals answer `{ok:false, action,
//! refusal}` as successful JSON, as the Worker does.

mod auth;

pub use auth::Resolved;

use crate::service::Area;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Confirmer;
use super::args::Bounded;
use crate::caller::{AgentKind, Caller};
use crate::crypto::sha256_hex;
use crate::error::Result;
use crate::ids::{new_agent_id, new_agent_key};
use crate::ports::{AgentRow, NewAgent, StoreError};
use crate::scope::{Axis, Grant, ScopePatch, Scopes, ScopesView, allows_tool_action};
use crate::service::registry::RefusedAnswer;
use crate::time::Timestamp;

/// What the agents area's handlers reach: the agents table, the operator keys, ids and the
/// clock.
#[derive(Clone, Copy)]
pub struct AgentsCx<'a> {
    /// Agents.
    pub agents: &'a dyn crate::ports::AgentStore,
    /// Jobs (a run credential resolves against the job it names).
    pub jobs: &'a dyn crate::ports::JobStore,
    /// The registered namespaces (a credential names only those).
    pub namespaces: &'a dyn crate::ports::NamespaceStore,
    /// The legacy operator keys.
    /// Documents (an owner's role definitions).
    pub docs: &'a dyn crate::ports::DocumentStore,
    /// The audit log (the signature rows of role documents).
    pub audit_log: &'a dyn crate::ports::AuditLog,
    pub config: &'a super::ServiceConfig,
    /// Keys and ids.
    pub entropy: &'a dyn crate::ids::Entropy,
    /// Now.
    pub clock: &'a dyn crate::time::Clock,
}

impl super::Area for AgentsCx<'_> {
    fn clock(&self) -> &dyn crate::time::Clock {
        self.clock
    }
}

/// What `agents` can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentsAction {
    /// Create a credential; its key is shown once.
    Mint,
    /// Every agent, revoked included.
    List,
    /// Revoke by name.
    Revoke,
    /// Change the named axes of a live agent.
    UpdateScopes,
}

impl AgentsAction {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            AgentsAction::Mint => "mint",
            AgentsAction::List => "list",
            AgentsAction::Revoke => "revoke",
            AgentsAction::UpdateScopes => "update_scopes",
        }
    }
}

/// The ten flags, each optional.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlagsArg {
    /// Merge pull requests.
    pub can_merge: Option<bool>,
    /// Commit straight to the default branch.
    pub can_direct_write: Option<bool>,
    /// Dispatch or re-run CI.
    pub can_dispatch: Option<bool>,
    /// Write workflow files.
    pub can_write_workflows: Option<bool>,
    /// Touch protected paths.
    pub can_touch_protected: Option<bool>,
    /// Touch money paths.
    pub money_paths: Option<bool>,
    /// Comment on pull requests.
    pub can_comment_pr: Option<bool>,
    /// Write the shared context every namespace reads.
    pub can_write_shared: Option<bool>,
    /// Run a backup of every namespace on demand (POST /ops/backup).
    pub can_backup: Option<bool>,
    /// Raise a job's cap on what its run may spend (jobs raise).
    pub can_raise_budget: Option<bool>,
}

impl FlagsArg {
    fn named(&self) -> BTreeMap<String, bool> {
        [
            ("can_merge", self.can_merge),
            ("can_direct_write", self.can_direct_write),
            ("can_dispatch", self.can_dispatch),
            ("can_write_workflows", self.can_write_workflows),
            ("can_touch_protected", self.can_touch_protected),
            ("money_paths", self.money_paths),
            ("can_comment_pr", self.can_comment_pr),
            ("can_write_shared", self.can_write_shared),
            ("can_backup", self.can_backup),
            ("can_raise_budget", self.can_raise_budget),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
        .collect()
    }
}

/// `agents`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AgentsArgs {
    /// mint, list, revoke or update_scopes.
    pub action: AgentsAction,
    /// The agent's unique name (never reused).
    pub name: Option<Bounded<64>>,
    /// session, driver, seat or cron (mint).
    pub kind: Option<Bounded<16>>,
    /// Namespaces it may name; ["*"] means all (required by mint).
    pub namespaces: Option<Vec<Bounded<64>>>,
    /// Repo selectors it may pass; ["*"] means all.
    pub repos: Option<Vec<Bounded<256>>>,
    /// Tools it may call (entries may be tool.action); ["*"] means all.
    pub tools: Option<Vec<Bounded<64>>>,
    /// read and/or write.
    pub grants: Option<Vec<Bounded<8>>>,
    /// Blast-radius flags to set (unnamed flags are left as they are).
    pub flags: Option<FlagsArg>,
}
impl crate::service::args::ScopeArgs for AgentsArgs {
    fn action(&self) -> Option<&str> {
        Some(self.action.name())
    }
}

fn strings<const N: usize>(v: Option<Vec<Bounded<N>>>) -> Option<Vec<String>> {
    v.map(|l| l.into_iter().map(|b| b.0).collect())
}

/// The public view of an agent: never the key or its full hash.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentView {
    /// `agent_` + 12 hex.
    pub id: String,
    /// Its unique name.
    pub name: String,
    /// `session`, `driver`, `seat` or `cron`.
    pub kind: String,
    /// The first 12 hex of its key's sha256.
    pub fingerprint: String,
    /// What it may do.
    pub scopes: ScopesView,
    /// Who minted it.
    pub created_by: String,
    /// When.
    pub created_at: Timestamp,
    /// When revoked, or null.
    pub revoked_at: Option<Timestamp>,
    /// Its last authenticated call, or null.
    pub last_seen: Option<Timestamp>,
}

/// The public view of an agent: never the key or its full hash.
pub fn agent_view(row: &AgentRow) -> AgentView {
    AgentView {
        id: row.id.clone(),
        name: row.name.clone(),
        kind: row.kind.name().to_owned(),
        fingerprint: row.key_hash.chars().take(12).collect(),
        scopes: Scopes::parse(Some(&row.scopes)).view(),
        created_by: row.created_by.clone(),
        created_at: row.created_at,
        revoked_at: row.revoked_at,
        last_seen: row.last_seen,
    }
}

/// `agents list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentList {
    /// Always true.
    pub ok: bool,
    /// Always `list`.
    pub action: &'static str,
    /// Every agent, revoked included.
    pub agents: Vec<AgentView>,
}

/// `agents mint`: the key, shown once.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentMinted {
    /// Always true.
    pub ok: bool,
    /// Always `mint`.
    pub action: &'static str,
    /// The new agent.
    pub agent: AgentView,
    /// Its bearer key (stored nowhere).
    pub key: String,
    /// Its scopes.
    pub scopes: ScopesView,
    /// That the key is shown once.
    pub note: &'static str,
}

/// `agents revoke`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentRevoked {
    /// Always true.
    pub ok: bool,
    /// Always `revoke`.
    pub action: &'static str,
    /// The revoked agent.
    pub agent: AgentView,
}

/// `agents update_scopes`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentRescoped {
    /// Always true.
    pub ok: bool,
    /// Always `update_scopes`.
    pub action: &'static str,
    /// The agent as it is now.
    pub agent: AgentView,
    /// Its scopes before.
    pub before: ScopesView,
    /// Its scopes after.
    pub after: ScopesView,
}

/// The `agents` answer: one per action, or the action's refusal.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum AgentsAnswer {
    /// `list`.
    List(AgentList),
    /// `mint`.
    Minted(AgentMinted),
    /// `revoke`.
    Revoked(AgentRevoked),
    /// `update_scopes`.
    Rescoped(AgentRescoped),
    /// `{ok: false, action, refusal}`.
    Refused(RefusedAnswer),
}

/// The actions an action tool's input schema lists (`None`: the tool takes no action).
fn tool_actions(entry: &crate::service::ToolEntry) -> Option<Vec<String>> {
    let schema = entry.input_schema();
    let mut node = schema.get("properties")?.get("action")?;
    // schemars writes an enum once under `$defs` and refers to it, sometimes through a
    // one-element `allOf`/`anyOf` (when the field has a default or is optional).
    for _ in 0..4 {
        if let Some(list) = node.get("enum").and_then(Value::as_array) {
            return Some(
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
            );
        }
        // A documented enum: one `{"const": ...}` per variant.
        let consts: Option<Vec<String>> = ["oneOf", "anyOf"]
            .iter()
            .find_map(|k| node.get(*k).and_then(Value::as_array))
            .and_then(|list| {
                list.iter()
                    .map(|v| v.get("const").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            });
        if let Some(consts) = consts {
            return Some(consts);
        }
        if let Some(target) = node.get("$ref").and_then(Value::as_str) {
            let name = target.rsplit('/').next()?;
            node = schema.get("$defs")?.get(name)?;
        } else if let Some(first) = ["allOf", "anyOf", "oneOf"]
            .iter()
            .find_map(|k| node.get(*k).and_then(Value::as_array))
            .and_then(|list| list.iter().find(|v| v.get("type") != Some(&json!("null"))))
        {
            node = first;
        } else {
            return None;
        }
    }
    None
}

/// The tools axis names real tools: `*`, a tool, or `tool.action` with an action the tool
/// has. An unknown name is refused with the valid ones, never kept to match nothing.
fn check_tool_names(tools: &[String]) -> std::result::Result<(), String> {
    for entry in tools.iter().map(|t| t.trim()).filter(|t| *t != "*") {
        let (tool, action) = match entry.split_once('.') {
            Some((tool, action)) => (tool, Some(action)),
            None => (entry, None),
        };
        let Some(found) = crate::service::registry::lookup(tool) else {
            let valid: Vec<&str> = crate::service::REGISTRY
                .iter()
                .map(|e| e.spec.name)
                .collect();
            return Err(format!(
                "tools: unknown tool {tool:?} (valid: *, {})",
                valid.join(", ")
            ));
        };
        if let Some(action) = action {
            match tool_actions(found) {
                Some(actions) if actions.iter().any(|a| a == action) => {}
                Some(actions) => {
                    return Err(format!(
                        "tools: {tool} has no action {action:?} (valid: {})",
                        actions.join(", ")
                    ));
                }
                None => {
                    return Err(format!(
                        "tools: {tool} takes no action, so {entry:?} names nothing; give {tool}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The longest agent name.
const AGENT_NAME_MAX: usize = 64;

/// An agent name is what `agent:<name>` claims, audit paths and the console show: letters,
/// digits, `.`, `_` and `-`, starting with a letter or digit.
fn check_agent_name(name: &str) -> std::result::Result<(), String> {
    let starts_well = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let all_allowed = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if starts_well && all_allowed && name.len() <= AGENT_NAME_MAX {
        Ok(())
    } else {
        Err(format!(
            "name {name:?} is not an agent name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most {AGENT_NAME_MAX} characters"
        ))
    }
}

/// The registered name closest to `wanted` (by edit distance, at most a third of its length
/// apart), to suggest for a typo.
fn closest<'n>(wanted: &str, names: impl IntoIterator<Item = &'n str>) -> Option<&'n str> {
    let limit = (wanted.chars().count() / 3).max(1);
    names
        .into_iter()
        .map(|n| (strsim::damerau_levenshtein(wanted, n), n))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, n)| n)
}

fn refusal(action: AgentsAction, why: impl Into<String>) -> AgentsAnswer {
    AgentsAnswer::Refused(RefusedAnswer {
        ok: false,
        action: action.name().to_owned(),
        refusal: why.into(),
    })
}

impl AgentsCx<'_> {
    pub(crate) async fn agents(
        &self,
        caller: &Caller,
        a: AgentsArgs,
        _: &dyn Confirmer,
    ) -> Result<AgentsAnswer> {
        let action = a.action;
        if let Some(tools) = strings(a.tools.clone())
            && let Err(why) = check_tool_names(&tools)
        {
            return Ok(refusal(action, why));
        }
        let patch = match ScopePatch::from_input(
            strings(a.namespaces.clone()),
            strings(a.repos.clone()),
            strings(a.tools.clone()),
            strings(a.grants.clone()),
            a.flags.as_ref().map(FlagsArg::named),
        ) {
            Ok(p) => p,
            Err(why) => return Ok(refusal(action, why)),
        };
        match action {
            AgentsAction::List => {
                let rows = self.agents.agents().await?;
                Ok(AgentsAnswer::List(AgentList {
                    ok: true,
                    action: "list",
                    agents: rows.iter().map(agent_view).collect(),
                }))
            }
            AgentsAction::Mint => self.mint_agent(caller, &a, patch).await,
            AgentsAction::Revoke => self.revoke_agent(caller, &a).await,
            AgentsAction::UpdateScopes => self.rescope_agent(caller, &a, patch).await,
        }
    }

    /// Refuses a namespace axis naming a namespace nobody registered when it looks like a typo
    /// of a registered one (`dmeo` for `demo`), or when the key could not register it itself
    /// (without the write grant and `register_namespace`, a key for it would reach nothing).
    async fn registered(&self, scopes: &Scopes) -> Result<std::result::Result<(), String>> {
        let Axis::Only(list) = &scopes.namespaces else {
            return Ok(Ok(()));
        };
        let may_register = scopes.has_grant(Grant::Write)
            && allows_tool_action(&scopes.tools, "register_namespace", None);
        let mut known: Option<Vec<String>> = None;
        for ns in list {
            if self.namespaces.namespace_exists(ns).await? {
                continue;
            }
            let names = match &known {
                Some(n) => n,
                None => known.insert(
                    self.namespaces
                        .namespaces()
                        .await?
                        .into_iter()
                        .map(|r| r.namespace)
                        .collect(),
                ),
            };
            let near = closest(ns, names.iter().map(String::as_str));
            if near.is_none() && may_register {
                continue;
            }
            let hint = match near {
                Some(near) => format!("did you mean {near}? "),
                None => String::new(),
            };
            return Ok(Err(format!(
                "namespaces: {ns} is not a registered namespace, so a key for it would reach nothing; {hint}register it first (capsid namespaces register {ns} --repo owner/name), or list them (capsid namespaces list)"
            )));
        }
        Ok(Ok(()))
    }

    async fn mint_agent(
        &self,
        caller: &Caller,
        a: &AgentsArgs,
        patch: ScopePatch,
    ) -> Result<AgentsAnswer> {
        let action = AgentsAction::Mint;
        let name = a
            .name
            .as_ref()
            .map(|n| n.as_str().trim().to_owned())
            .unwrap_or_default();
        if name.is_empty() {
            return Ok(refusal(action, "mint needs a name"));
        }
        if let Err(why) = check_agent_name(&name) {
            return Ok(refusal(action, why));
        }
        let Some(kind) = a.kind.as_ref().and_then(|k| AgentKind::parse(k.as_str())) else {
            return Ok(refusal(
                action,
                "mint needs kind: session, driver, seat or cron",
            ));
        };
        let namespaces = match &patch.namespaces {
            Some(Axis::All) => Axis::All,
            Some(Axis::Only(list)) if !list.is_empty() => Axis::Only(list.clone()),
            _ => {
                return Ok(refusal(
                    action,
                    "mint needs namespaces: a non-empty list, or [\"*\"] for all",
                ));
            }
        };
        if self.agents.agent_by_name(&name).await?.is_some() {
            return Ok(refusal(
                action,
                format!("an agent named {name} exists or existed; names are never reused"),
            ));
        }
        let scopes = Scopes::mint_defaults(namespaces).apply(&patch);
        if let Err(why) = self.registered(&scopes).await? {
            return Ok(refusal(action, why));
        }
        let key = new_agent_key(self.entropy);
        let hash = sha256_hex(&key);
        let id = new_agent_id(self.entropy);
        let audit = self.audit(
            caller,
            "agent-minted",
            Some("agents"),
            Some(&name),
            json!({ "id": id, "kind": kind.name(), "key_fingerprint": &hash[..12], "scopes": scopes.to_json() }),
        );
        let new = NewAgent {
            id,
            name: name.clone(),
            kind,
            key_hash: hash,
            scopes: scopes.to_json().to_string(),
            created_by: caller.actor(),
            at: self.now(),
        };
        let row = match self.agents.mint_agent(new, audit).await {
            Ok(row) => row,
            Err(StoreError::Conflict(why)) => {
                return Ok(refusal(action, format!("mint refused: {why}")));
            }
            Err(e) => return Err(e.into()),
        };
        Ok(AgentsAnswer::Minted(AgentMinted {
            ok: true,
            action: "mint",
            agent: agent_view(&row),
            key,
            scopes: scopes.view(),
            note: "This key is shown once and stored nowhere (only its sha256). Give it to the agent as a bearer token for /ops/mcp.",
        }))
    }

    async fn live_agent(
        &self,
        action: AgentsAction,
        a: &AgentsArgs,
    ) -> Result<std::result::Result<AgentRow, AgentsAnswer>> {
        let name = a
            .name
            .as_ref()
            .map(|n| n.as_str().trim().to_owned())
            .unwrap_or_default();
        if name.is_empty() {
            return Ok(Err(refusal(
                action,
                format!("{} needs a name", action.name()),
            )));
        }
        match self.agents.agent_by_name(&name).await? {
            Some(row) if row.revoked_at.is_none() => Ok(Ok(row)),
            Some(_) => Ok(Err(refusal(
                action,
                format!("agent {name} is already revoked"),
            ))),
            None => Ok(Err(refusal(action, format!("no live agent named {name}")))),
        }
    }

    async fn revoke_agent(&self, caller: &Caller, a: &AgentsArgs) -> Result<AgentsAnswer> {
        let action = AgentsAction::Revoke;
        let row = match self.live_agent(action, a).await? {
            Ok(row) => row,
            Err(refused) => return Ok(refused),
        };
        let scopes = Scopes::parse(Some(&row.scopes)).to_json();
        let audit = self.audit(
            caller,
            "agent-revoked",
            Some("agents"),
            Some(&row.name),
            json!({ "id": row.id, "scopes": scopes }),
        );
        match self.agents.revoke_agent(&row.id, self.now(), audit).await? {
            Some(revoked) => Ok(AgentsAnswer::Revoked(AgentRevoked {
                ok: true,
                action: "revoke",
                agent: agent_view(&revoked),
            })),
            None => Ok(refusal(
                action,
                format!("agent {} was revoked by somebody else meanwhile", row.name),
            )),
        }
    }

    async fn rescope_agent(
        &self,
        caller: &Caller,
        a: &AgentsArgs,
        patch: ScopePatch,
    ) -> Result<AgentsAnswer> {
        let action = AgentsAction::UpdateScopes;
        let row = match self.live_agent(action, a).await? {
            Ok(row) => row,
            Err(refused) => return Ok(refused),
        };
        if patch == ScopePatch::default() {
            return Ok(refusal(
                action,
                "update_scopes needs at least one axis: namespaces, repos, tools, grants or flags",
            ));
        }
        if let Some(Axis::Only(list)) = &patch.namespaces
            && list.is_empty()
        {
            return Ok(refusal(
                action,
                "namespaces must not be empty; revoke the agent instead",
            ));
        }
        let before = Scopes::parse(Some(&row.scopes));
        let after = before.apply(&patch);
        if patch.namespaces.is_some()
            && let Err(why) = self.registered(&after).await?
        {
            return Ok(refusal(action, why));
        }
        let audit = self.audit(
            caller,
            "agent-rescoped",
            Some("agents"),
            Some(&row.name),
            json!({ "id": row.id, "before": before.to_json(), "after": after.to_json() }),
        );
        match self
            .agents
            .rescope_agent(&row.id, &row.scopes, &after.to_json().to_string(), audit)
            .await?
        {
            Some(updated) => Ok(AgentsAnswer::Rescoped(AgentRescoped {
                ok: true,
                action: "update_scopes",
                agent: agent_view(&updated),
                before: before.view(),
                after: after.view(),
            })),
            None => Ok(refusal(
                action,
                format!("agent {} changed meanwhile; list it and retry", row.name),
            )),
        }
    }
}

/// Why `agents` is admin only.
pub const AGENTS_ADMIN_ONLY: &str = "agents is admin only: only the owner (OAuth) or a write operator key may mint, list, revoke or re-scope \
     credentials, because an agent able to mint could widen itself";

mod registered {
    //! `agents` as the registry serves it.
    use super::*;
    use crate::service::Areas;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Requirement, Rule, ToolGroup, ToolSpec, action};

    const ADMIN: Rule = Rule::write().admin_only(AGENTS_ADMIN_ONLY);

    /// `agents`.
    #[derive(Debug)]
    pub struct Agents;
    impl Tool for Agents {
        type Args = AgentsArgs;
        type Answer = AgentsAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "agents",
            ToolGroup::Admin,
            Requirement::PerAction {
                default: "list",
                actions: &[
                    action("mint", ADMIN),
                    action("list", ADMIN),
                    action("revoke", ADMIN),
                    action("update_scopes", ADMIN),
                ],
            },
            "Admin only: mint, list, revoke or re-scope agent credentials.",
        )
        .destructive()
        .ok_false_refusals()
        .titled("Agent credentials");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: AgentsArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.agents().agents(c, a, k).await })
        }
    }
}
pub use registered::Agents;
