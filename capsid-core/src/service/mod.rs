//! The application service: the one place every tool call enters the core.
//!
//! [`Service::call_tool`] parses the arguments (bounds and path rules first, as the Worker's
//! schemas do), runs the registrar check of [`crate::tools::gate_call`] with the tool's
//! requirement from the one table, and only then calls the handler. MCP registration iterates
//! [`crate::tools::TOOLS`] through [`Service::tools_for`], so a tool cannot be served without
//! a requirement. Handlers ask the same check for what only they know (an action's grant, the
//! flags an argument needs) through [`Service::check`].

mod agents;
pub mod args;
mod auth;
mod backup;
mod confirm;
mod console;
mod documents;
mod improve;
mod jobs;
mod jobs_admin;
mod jobs_finish;
mod jobs_resume;
mod lint;
mod namespaces;
mod oauth;
mod oauth_token;
mod prompts;
mod repo;
mod repo_args;
mod repo_cache;
mod repo_ci;
mod repo_pr;
mod repo_read;
mod repo_search;
mod repo_write;
mod schedule;
mod writes;

pub use auth::Resolved;
pub use backup::{
    BackupCredential, CredentialError, CredentialObject, RestoreError, RestoreReport, TableCheck,
};
pub use confirm::{Confirmer, Consent, NoConfirmer};
pub use console::{ACTIVITY_ROWS, CONSOLE_ACTIONS, ConsoleAction};
pub use oauth::{AuthorizeCheck, ConsoleLogin, RateExceeded, console_return_path_ok};
pub use oauth_token::{AccessRefusal, TokenRequest};
pub use prompts::{
    PromptArgument, PromptListing, RESOURCE_TEMPLATE, RenderedPrompt, ResourceListing,
    ResourcePage, parse_resource_uri,
};
pub use schedule::{SWEEP_LEASE, Scheduler, TickReport};

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::caller::{Caller, OperatorKeyEntry};
use crate::error::{Error, Result};
use crate::ids::Entropy;
use crate::ports::{AuditEntry, Notifier, RepoHost, Store};
use crate::scope::{Need, check_scope};
use crate::time::{Clock, Timestamp};
use crate::tools::{Annotations, TOOLS, ToolSpec, gate_call, visible_to};

/// Configuration the service needs at run time. Secrets live only in memory.
#[derive(Clone, Default)]
pub struct ServiceConfig {
    /// Root of every HMAC (`CAPSID_SIGNING_SECRET`); `None` refuses signing.
    pub signing_secret: Option<String>,
    /// Legacy operator keys (`CAPSID_OPERATOR_KEY_HASH`).
    pub operator_keys: Vec<OperatorKeyEntry>,
}

impl fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceConfig")
            .field(
                "signing_secret",
                &self.signing_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("operator_keys", &self.operator_keys.len())
            .finish()
    }
}

/// The core, wired to its ports.
#[derive(Clone)]
pub struct Service {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) entropy: Arc<dyn Entropy>,
    pub(crate) repo_host: Option<Arc<dyn RepoHost>>,
    pub(crate) notifier: Option<Arc<dyn Notifier>>,
    pub(crate) config: Arc<ServiceConfig>,
    pub(crate) repo_reads: Arc<repo_cache::RepoReadCache>,
    pub(crate) backups: backup::BackupWiring,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A tool as `tools/list` shows it.
#[derive(Clone, Debug)]
pub struct ToolListing {
    /// The table row.
    pub spec: &'static ToolSpec,
    /// The JSON Schema of its arguments.
    pub input_schema: serde_json::Map<String, Value>,
    /// Its annotations.
    pub annotations: Annotations,
}

impl Service {
    /// Wires the core to its ports.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        config: ServiceConfig,
    ) -> Service {
        Service {
            store,
            clock,
            entropy,
            repo_host: None,
            notifier: None,
            config: Arc::new(config),
            repo_reads: Arc::default(),
            backups: backup::BackupWiring::default(),
        }
    }

    /// Adds the repository host (the GitHub App).
    pub fn with_repo_host(mut self, host: Arc<dyn RepoHost>) -> Service {
        self.repo_host = Some(host);
        self
    }

    /// Adds a notifier for blocked and failed jobs.
    pub fn with_notifier(mut self, notifier: Arc<dyn Notifier>) -> Service {
        self.notifier = Some(notifier);
        self
    }

    /// The store, for adapters that need direct reads (health, console).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Now, from the clock port.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The tools `caller` may see, in table order, with their schemas.
    pub fn tools_for(&self, caller: &Caller) -> Vec<ToolListing> {
        TOOLS
            .iter()
            .filter(|t| visible_to(caller, t))
            .map(|t| ToolListing {
                spec: t,
                input_schema: input_schema_of(t.name),
                annotations: t.annotations(),
            })
            .collect()
    }

    /// Calls `tool` for `caller`: parse and bound the arguments, run the one scope check, then
    /// the handler. `confirmer` asks a human when a destructive call lacks `confirm: true`.
    pub async fn call_tool(
        &self,
        caller: &Caller,
        tool: &str,
        args: Value,
        confirmer: &dyn Confirmer,
    ) -> Result<Value> {
        macro_rules! dispatch {
            ($($name:literal => $handler:ident($Args:ty)),* $(,)?) => {
                match tool {
                    $($name => {
                        let parsed: $Args = args::parse_args(tool, args)?;
                        // The flags a repo mutation's arguments need (reference 3.4) are asked
                        // here, with the tool, grant, namespace and repo: one check.
                        let flags = args::ScopeArgs::repo_write(&parsed)
                            .map(|w| crate::tools::repo_write_flags(tool, &w))
                            .unwrap_or_default();
                        gate_call(&caller.scopes, tool, args::ScopeArgs::namespace(&parsed), args::ScopeArgs::repo(&parsed), flags)?;
                        self.$handler(caller, parsed, confirmer).await
                    })*
                    _ => Err(Error::Invalid(format!("unknown tool: {tool}"))),
                }
            };
        }
        dispatch! {
            "list" => list(documents::ListArgs),
            "read" => read(documents::ReadArgs),
            "brief" => brief(documents::BriefArgs),
            "backlinks" => backlinks(documents::ReadArgs),
            "find" => find(documents::FindArgs),
            "search" => search(documents::SearchArgs),
            "namespaces" => namespaces(documents::NoArgs),
            "history" => history(documents::HistoryArgs),
            "write" => write(writes::WriteArgs),
            "delete" => delete(writes::DeleteArgs),
            "move" => move_document(writes::MoveArgs),
            "restore" => restore(writes::RestoreArgs),
            "lint" => lint(lint::LintArgs),
            "register_namespace" => register_namespace(namespaces::RegisterArgs),
            "update_namespace" => update_namespace(namespaces::UpdateArgs),
            "jobs" => jobs(jobs::JobsArgs),
            "improve_run" => improve_run(improve::RunArgs),
            "improve_status" => improve_status(improve::StatusArgs),
            "agents" => agents(agents::AgentsArgs),
            "list_repo_tree" => list_repo_tree(repo_args::ListTreeArgs),
            "read_repo_file" => read_repo_file(repo_args::ReadFileArgs),
            "search_code" => search_code(repo_args::SearchCodeArgs),
            "repo_refs" => repo_refs(repo_args::RepoRefsArgs),
            "repo_history" => repo_history(repo_args::RepoHistoryArgs),
            "ci_status" => ci_status(repo_args::CiStatusArgs),
            "write_repo_file" => write_repo_file(repo_args::WriteFileArgs),
            "create_branch" => create_branch(repo_args::CreateBranchArgs),
            "open_pr" => open_pr(repo_args::OpenPrArgs),
            "delete_repo_file" => delete_repo_file(repo_args::DeleteFileArgs),
            "manage_pr" => manage_pr(repo_args::ManagePrArgs),
            "delete_branch" => delete_branch(repo_args::DeleteBranchArgs),
            "ci_dispatch" => ci_dispatch(repo_args::CiDispatchArgs),
        }
    }

    /// The handler-side scope check, for what only the handler knows (an action's grant, the
    /// flags its arguments require): the same function the registrar runs.
    pub fn check(&self, caller: &Caller, need: &Need<'_>) -> Result<()> {
        check_scope(&caller.scopes, need).map_err(Error::from)
    }

    /// An audit row by `caller` at now.
    pub(crate) fn audit(
        &self,
        caller: &Caller,
        action: &str,
        namespace: Option<&str>,
        path: Option<&str>,
        params: Value,
    ) -> AuditEntry {
        AuditEntry {
            actor: caller.actor(),
            action: action.to_owned(),
            namespace: namespace.map(str::to_owned),
            path: path.map(str::to_owned),
            params,
            at: self.now(),
        }
    }

    /// Refuses when `namespace` is not registered.
    pub(crate) async fn require_namespace(&self, namespace: &str) -> Result<()> {
        match self.store.namespace(namespace).await? {
            Some(_) => Ok(()),
            None => Err(Error::NotFound(crate::docs::mutations::unknown_namespace(
                namespace,
            ))),
        }
    }
}

/// The input schema of a served tool.
pub fn input_schema_of(tool: &str) -> serde_json::Map<String, Value> {
    use args::input_schema;
    match tool {
        "list" => input_schema::<documents::ListArgs>(),
        "read" | "backlinks" => input_schema::<documents::ReadArgs>(),
        "brief" => input_schema::<documents::BriefArgs>(),
        "find" => input_schema::<documents::FindArgs>(),
        "search" => input_schema::<documents::SearchArgs>(),
        "namespaces" => input_schema::<documents::NoArgs>(),
        "history" => input_schema::<documents::HistoryArgs>(),
        "write" => input_schema::<writes::WriteArgs>(),
        "delete" => input_schema::<writes::DeleteArgs>(),
        "move" => input_schema::<writes::MoveArgs>(),
        "restore" => input_schema::<writes::RestoreArgs>(),
        "lint" => input_schema::<lint::LintArgs>(),
        "register_namespace" => input_schema::<namespaces::RegisterArgs>(),
        "update_namespace" => input_schema::<namespaces::UpdateArgs>(),
        "agents" => input_schema::<agents::AgentsArgs>(),
        "jobs" => input_schema::<jobs::JobsArgs>(),
        "improve_run" => input_schema::<improve::RunArgs>(),
        "improve_status" => input_schema::<improve::StatusArgs>(),
        "list_repo_tree" => input_schema::<repo_args::ListTreeArgs>(),
        "read_repo_file" => input_schema::<repo_args::ReadFileArgs>(),
        "search_code" => input_schema::<repo_args::SearchCodeArgs>(),
        "repo_refs" => input_schema::<repo_args::RepoRefsArgs>(),
        "repo_history" => input_schema::<repo_args::RepoHistoryArgs>(),
        "ci_status" => input_schema::<repo_args::CiStatusArgs>(),
        "write_repo_file" => input_schema::<repo_args::WriteFileArgs>(),
        "create_branch" => input_schema::<repo_args::CreateBranchArgs>(),
        "open_pr" => input_schema::<repo_args::OpenPrArgs>(),
        "delete_repo_file" => input_schema::<repo_args::DeleteFileArgs>(),
        "manage_pr" => input_schema::<repo_args::ManagePrArgs>(),
        "delete_branch" => input_schema::<repo_args::DeleteBranchArgs>(),
        "ci_dispatch" => input_schema::<repo_args::CiDispatchArgs>(),
        _ => input_schema::<documents::NoArgs>(),
    }
}

/// A serializable answer as JSON.
pub(crate) fn to_json<T: serde::Serialize>(value: T) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|e| Error::Internal(format!("could not render the answer: {e}")))
}

/// Pretty JSON of `value`, as every tool answers (`JSON.stringify(x, null, 2)`).
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod untouchable;
