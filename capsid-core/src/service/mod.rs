//! The application service: the one place every tool call enters the core.
//!
//! [`Service::call_tool`] looks the tool up in the [`registry`], parses the arguments (bounds
//! and path rules first, as the Worker's schemas do), runs the registrar check of
//! [`crate::tools::gate_call`] with the requirement of the call's action and every flag its
//! arguments need, and only then calls the handler. `tools/list` comes from the same registry
//! through [`Service::tools_for`], so a tool cannot be served without a requirement.

mod agents;
mod areas;
pub mod args;
mod autonomy;
mod backup;
mod checkmarks;
mod confirm;
mod documents;
mod improve;
mod intake;
mod jobs;
mod maintenance;
pub mod metrics;
pub mod registry;
mod repo;
mod roles;
mod schedule;
mod scouts;
mod surfaces;

pub use agents::Resolved;
pub use areas::Areas;
pub use backup::{
    BackupCredential, CredentialError, CredentialObject, DEFAULT_ON_DEMAND_INTERVAL_MS,
    OnDemandBackup, ReSigned, ReSignedJob, RestoreError, RestoreOptions, RestoreReport, TableCheck,
    check_dump_provenance, on_demand_key, re_sign_plan, rehearse_dump,
};
pub use confirm::{CONFIRM_WAIT_MS, Confirmer, Consent, NoConfirmer};
pub use documents::{
    CompletionRef, PromptArgument, PromptListing, RESOURCE_TEMPLATE, RenderedPrompt,
    ResourceListing, ResourcePage, parse_resource_uri,
};
pub use improve::ProbeAnswer;
pub use improve::StatusArgs as ImproveStatusArgs;
pub use improve::{HoldoutCredential, HoldoutObject, ScoreAnswer, ScoreError};
pub use intake::{IntakeReport, IssueJob};
pub use jobs::JobsArgs;
pub(crate) use jobs::{ResumeTo, budget_states};
pub use registry::{
    CallObserver, OutputSchema, ParsedCall, REGISTRY, RefusedAnswer, ToolEntry, ToolListing,
    output_schema, parse_tool_args, unknown_arguments,
};
pub use schedule::{SWEEP_LEASE, Scheduler, TaskOutcome, TaskRun, TickReport};
pub use surfaces::{CHECKMARK_TEMPLATE, parse_checkmark_uri, resource_mime};

pub(crate) use confirm::require_confirmation;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::caller::{Caller, OperatorKeyEntry};
use crate::error::{Error, Result};
use crate::ids::Entropy;
use crate::ports::{AuditEntry, Notifier, RepoHost, Store};
use crate::time::{Clock, Timestamp};

/// Configuration the service needs at run time. Secrets live only in memory.
#[derive(Clone, Default)]
pub struct ServiceConfig {
    /// Root of every HMAC (`CAPSID_SIGNING_SECRET`); `None` refuses signing.
    pub signing_secret: Option<String>,
    /// Legacy operator keys (`CAPSID_OPERATOR_KEY_HASH`).
    pub operator_keys: Vec<OperatorKeyEntry>,
    /// The monthly budget in US dollars of every namespace without its own
    /// (`CAPSID_MONTHLY_BUDGET_USD`); `None`: no budget.
    pub default_monthly_budget_usd: Option<f64>,
    /// What one run of a job without its own `max_cost_usd` may spend on its model
    /// (`CAPSID_JOB_MAX_COST_USD`); `None`: no cap.
    pub default_job_max_cost_usd: Option<crate::drive::ledger::Usd>,
}

impl fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceConfig")
            .field(
                "signing_secret",
                &self.signing_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("operator_keys", &self.operator_keys.len())
            .field(
                "default_monthly_budget_usd",
                &self.default_monthly_budget_usd,
            )
            .field("default_job_max_cost_usd", &self.default_job_max_cost_usd)
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
    pub(crate) repo_reads: Arc<repo::RepoReadCache>,
    pub(crate) observer: Option<Arc<dyn CallObserver>>,
    pub(crate) backups: backup::BackupWiring,
    pub(crate) holdout: Option<crate::improve::holdout::HoldoutStore>,
    pub(crate) deadline: Option<Arc<dyn crate::ports::Deadline>>,
    pub(crate) model: Option<Arc<dyn crate::ports::ModelClient>>,
    pub(crate) loop_zone: crate::improve::night::LoopZone,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
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
            observer: None,
            backups: backup::BackupWiring::default(),
            holdout: None,
            deadline: None,
            model: None,
            loop_zone: crate::improve::night::LoopZone::default(),
        }
    }

    /// Sets the loop's time zone (`CAPSID_IMPROVE_TZ`; default America/Chicago).
    pub fn with_loop_zone(mut self, zone: crate::improve::night::LoopZone) -> Service {
        self.loop_zone = zone;
        self
    }

    /// Adds the model the loop's `api` mode asks (without one, `api` mode opens no run).
    pub fn with_model(mut self, model: Arc<dyn crate::ports::ModelClient>) -> Service {
        self.model = Some(model);
        self
    }

    /// Adds the timer that bounds each periodic task (without one, tasks run unbounded).
    pub fn with_deadline(mut self, deadline: Arc<dyn crate::ports::Deadline>) -> Service {
        self.deadline = Some(deadline);
        self
    }

    /// Adds the repository host (the GitHub App).
    pub fn with_repo_host(mut self, host: Arc<dyn RepoHost>) -> Service {
        self.repo_host = Some(host);
        self
    }

    /// Adds a notifier for blocked and failed jobs, and agents that ask or block.
    pub fn with_notifier(mut self, notifier: Arc<dyn Notifier>) -> Service {
        self.notifier = Some(notifier);
        self
    }

    /// Adds an observer told of every call that passes the one check.
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Service {
        self.observer = Some(observer);
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

    /// The documents area.
    pub(crate) fn documents(&self) -> documents::DocumentsCx<'_> {
        documents::DocumentsCx {
            docs: &*self.store,
            namespaces: &*self.store,
            clock: &*self.clock,
        }
    }

    /// The maintenance area.
    pub(crate) fn maintenance(&self) -> maintenance::MaintenanceCx<'_> {
        maintenance::MaintenanceCx {
            docs: &*self.store,
            namespaces: &*self.store,
            repo: self.repo(),
            clock: &*self.clock,
            backups: self,
        }
    }

    /// The repo area.
    pub(crate) fn repo(&self) -> repo::RepoCx<'_> {
        repo::RepoCx {
            namespaces: &*self.store,
            audit_log: &*self.store,
            reviews: &*self.store,
            jobs: &*self.store,
            repo_host: &self.repo_host,
            repo_reads: &self.repo_reads,
            clock: &*self.clock,
        }
    }

    /// The intake area (the `intake` periodic task).
    pub(crate) fn intake(&self) -> intake::IntakeCx<'_> {
        intake::IntakeCx {
            docs: &*self.store,
            audit_log: &*self.store,
            namespaces: &*self.store,
            jobs: &*self.store,
            intake: &*self.store,
            posting: self.jobs(),
            repo_host: &self.repo_host,
            config: &self.config,
            entropy: &*self.entropy,
            clock: &*self.clock,
        }
    }

    /// The jobs area.
    pub(crate) fn jobs(&self) -> jobs::JobsCx<'_> {
        jobs::JobsCx {
            jobs: &*self.store,
            namespaces: &*self.store,
            docs: &*self.store,
            improve: &*self.store,
            reviews: &*self.store,
            audit_log: &*self.store,
            skills: &*self.store,
            settings: &*self.store,
            repo_host: &self.repo_host,
            notifier: &self.notifier,
            config: &self.config,
            entropy: &*self.entropy,
            clock: &*self.clock,
        }
    }

    /// The improve area.
    pub(crate) fn improve(&self) -> improve::ImproveCx<'_> {
        improve::ImproveCx {
            settings: &*self.store,
            improve: &*self.store,
            runs: &*self.store,
            namespaces: &*self.store,
            jobs: &*self.store,
            docs: &*self.store,
            agents: &*self.store,
            audit_log: &*self.store,
            skills: &*self.store,
            config: &self.config,
            entropy: &*self.entropy,
            clock: &*self.clock,
            zone: &self.loop_zone,
            skill_sources: &*self.store,
            repo_host: &self.repo_host,
            model: &self.model,
            holdout: &self.holdout,
            ticker: self,
        }
    }

    /// The checkmarks area.
    pub(crate) fn checkmarks(&self) -> checkmarks::CheckmarksCx<'_> {
        checkmarks::CheckmarksCx {
            checkmarks: &*self.store,
            namespaces: &*self.store,
            agents: &*self.store,
            jobs: &*self.store,
            notifier: &self.notifier,
            clock: &*self.clock,
        }
    }

    /// The agents area.
    pub(crate) fn agents(&self) -> agents::AgentsCx<'_> {
        agents::AgentsCx {
            agents: &*self.store,
            jobs: &*self.store,
            namespaces: &*self.store,
            docs: &*self.store,
            audit_log: &*self.store,
            config: &self.config,
            entropy: &*self.entropy,
            clock: &*self.clock,
        }
    }
}

impl ServiceConfig {
    /// The signing secret, if configured.
    pub(crate) fn signing_secret(&self) -> Option<&str> {
        self.signing_secret.as_deref().filter(|s| !s.is_empty())
    }
}

/// What every area's context has besides its ports: the clock, so `now` and audit rows.
pub(crate) trait Area {
    /// The clock.
    fn clock(&self) -> &dyn Clock;

    /// Now.
    fn now(&self) -> Timestamp {
        self.clock().now()
    }

    /// An audit row by `caller` at now.
    fn audit(
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
}

/// Refuses when `namespace` is not registered.
pub(crate) async fn require_namespace(
    namespaces: &dyn crate::ports::NamespaceStore,
    namespace: &str,
) -> Result<()> {
    if namespaces.namespace_exists(namespace).await? {
        Ok(())
    } else {
        Err(Error::NotFound(crate::docs::mutations::unknown_namespace(
            namespace,
        )))
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
mod gate_props;
#[cfg(test)]
pub(crate) mod recording_store;
#[cfg(test)]
mod tests;
