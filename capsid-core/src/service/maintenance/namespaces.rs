//! `register_namespace` and `update_namespace`: create-only registration with its repos (each
//! within the caller's repos axis, asked at the one check), and remapping, admin only, with
//! the previous mapping kept in the audit row.

use super::MaintenanceCx;
use crate::service::Area;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::caller::Caller;
use crate::docs::bounds;
use crate::drive::runner::{RUNNER_FIELD_MAX, RunnerPatch, RunnerSettings};
use crate::error::{Error, Result};
use crate::ports::StoreError;
use crate::repos::{RepoEntry, is_repo_shape, parse_repos_list, require_single_primary};
use crate::scope_args;
use crate::service::Confirmer;
use crate::service::args::{Bounded, NamespaceArg, ScopeArgs};

/// `register_namespace`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RegisterArgs {
    /// The new namespace.
    pub namespace: NamespaceArg,
    /// Its repository, `owner/name` (label defaults to primary).
    pub repo: Option<Bounded<{ bounds::REPO_SELECTOR }>>,
    /// The repository's label.
    pub label: Option<Bounded<{ bounds::REPO_SELECTOR }>>,
    /// Several repositories: JSON `[{"repo":"owner/name","label":"primary"}, ...]`.
    pub repos: Option<Bounded<{ bounds::REPOS_JSON }>>,
}

impl ScopeArgs for RegisterArgs {
    fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str())
    }
    /// Every repository the registration maps, asked of the repos axis at the one check (an
    /// unparseable `repos` maps none, and the handler refuses it).
    fn new_mapping(&self) -> Vec<String> {
        match (&self.repos, &self.repo) {
            (Some(repos), _) => parse_repos_list(repos.as_str())
                .map(|list| list.into_iter().map(|e| e.repo).collect())
                .unwrap_or_default(),
            (None, Some(repo)) => vec![repo.0.clone()],
            (None, None) => Vec::new(),
        }
    }
}

/// `update_namespace`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateArgs {
    /// An existing namespace.
    pub namespace: NamespaceArg,
    /// JSON `[{"repo":"owner/name","label":"primary"}, ...]` with exactly one primary.
    pub repos: Option<Bounded<{ bounds::REPOS_JSON }>>,
    /// Runner (admin only): the project's root folder on agent hosts; "" clears.
    pub root_dir: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): the test command `capsid drive` and its hooks run; "" clears.
    pub test_command: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): the build check run before a push; "" clears.
    pub build_command: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): the agent command; "" clears.
    pub agent_command: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): env:NAME, file:/path or cmd:command, never a secret; "" clears.
    pub credential_ref: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Admin only: the namespace's monthly budget in US dollars (0 stops every claim), or
    /// "none" to clear it so the server's default (CAPSID_MONTHLY_BUDGET_USD) applies.
    pub monthly_budget_usd: Option<BudgetArg>,
    /// Runner (admin only): the cap of the namespace's jobs posted without their own
    /// max_cost_usd, in US dollars above zero, or "none" to clear it so the server's default
    /// (CAPSID_JOB_MAX_COST_USD) applies.
    pub job_max_cost_usd: Option<BudgetArg>,
    /// Runner (admin only): the agent CLI for the namespace's jobs that name none,
    /// `claude-code` or `codex`; "" clears (Claude Code).
    pub runtime: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): the migration tools the gate policy's additive_migration
    /// recognises here, comma separated from d1, psql and sqlx (unset: d1); "" clears.
    pub migration_tools: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): the branches a push or merge reaches only with an approval, comma
    /// separated (the remote's default branch is always one; unset: main, master and the
    /// default); "" clears.
    pub protected_branches: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): the dispatch bounds, `depth=N,children=N,<role>=N` (how deep a
    /// chain of dispatched jobs may go, how many children a job without a role may post, and
    /// how many a job of a role may; unset: depth 3, children 5, each role's own count); ""
    /// clears.
    pub dispatch_limits: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
    /// Runner (admin only): the command a deploy job's driver runs once its run merged through
    /// the gate (`mise run deploy`), in the project's own checkout on the agent host; ""
    /// clears.
    pub deploy_command: Option<Bounded<{ RUNNER_FIELD_MAX }>>,
}

/// A monthly budget as `update_namespace` takes it: dollars, or `"none"` to clear.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum BudgetArg {
    /// US dollars, zero or more.
    Dollars(f64),
    /// `"none"` (or `""`): clear it.
    Clear(Bounded<16>),
}

impl BudgetArg {
    /// The budget to store (`None` clears), or why it cannot be.
    fn value(&self) -> Result<Option<f64>> {
        match self {
            BudgetArg::Dollars(x) => crate::jobs::budget::parse_budget(*x)
                .map(Some)
                .map_err(|e| Error::Invalid(format!("update_namespace: {e}"))),
            BudgetArg::Clear(text) if matches!(text.as_str().trim(), "" | "none") => Ok(None),
            BudgetArg::Clear(text) => Err(Error::Invalid(format!(
                "update_namespace: monthly_budget_usd must be a number of US dollars or \"none\" to clear it, not {:?}",
                text.as_str()
            ))),
        }
    }
}

impl UpdateArgs {
    fn runner_patch(&self) -> RunnerPatch {
        let v = |f: &Option<Bounded<{ RUNNER_FIELD_MAX }>>| f.as_ref().map(|b| b.0.clone());
        RunnerPatch {
            root_dir: v(&self.root_dir),
            test_command: v(&self.test_command),
            build_command: v(&self.build_command),
            agent_command: v(&self.agent_command),
            credential_ref: v(&self.credential_ref),
            runtime: v(&self.runtime),
            // Checked with the other runner fields (`RunnerSettings::apply` names the field).
            job_max_cost_usd: self.job_max_cost_usd.as_ref().map(|c| match c {
                BudgetArg::Dollars(x) => x.to_string(),
                BudgetArg::Clear(t) if t.as_str().trim() == "none" => String::new(),
                BudgetArg::Clear(t) => t.as_str().to_owned(),
            }),
            migration_tools: v(&self.migration_tools),
            protected_branches: v(&self.protected_branches),
            dispatch_limits: v(&self.dispatch_limits),
            deploy_command: v(&self.deploy_command),
        }
    }
}
scope_args!(UpdateArgs, namespace);

/// A keyed update's `NotFound` in the tool's words: the namespace is not registered.
fn unregistered(ns: &str, e: StoreError) -> Error {
    match e {
        StoreError::NotFound(_) => Error::NotFound(format!(
            "namespace not found: {ns}. Use register_namespace to create it."
        )),
        other => other.into(),
    }
}

/// The `register_namespace` answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Registered {
    /// The namespace.
    pub namespace: String,
    /// Its repositories.
    pub repos: Vec<RepoEntry>,
    /// Always `registered`.
    pub action: &'static str,
    /// Always null: the driver is minted separately, by an admin.
    pub driver_agent: Option<String>,
    /// The command that mints its driver.
    pub next: String,
}

/// A repository mapping changed by `update_namespace`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReposUpdated {
    /// The namespace.
    pub namespace: String,
    /// Its repositories now.
    pub repos: Vec<RepoEntry>,
    /// Always `updated`.
    pub action: &'static str,
    /// The previous mapping as stored (JSON text).
    pub previous: Option<String>,
}

/// A monthly budget changed by `update_namespace`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BudgetUpdated {
    /// The namespace.
    pub namespace: String,
    /// Its own budget now (null: the server's default applies).
    pub monthly_budget_usd: Option<f64>,
    /// Its own budget before.
    pub previous_monthly_budget_usd: Option<f64>,
    /// Always `updated`.
    pub action: &'static str,
}

/// Runner settings changed by `update_namespace`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunnerUpdated {
    /// The namespace.
    pub namespace: String,
    /// The settings now.
    pub runner: RunnerSettings,
    /// Always `updated`.
    pub action: &'static str,
    /// The settings before.
    pub previous_runner: RunnerSettings,
}

/// The `update_namespace` answer: what the call changed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum NamespaceUpdated {
    /// The repository mapping.
    Repos(ReposUpdated),
    /// The monthly budget.
    Budget(BudgetUpdated),
    /// The runner settings.
    Runner(Box<RunnerUpdated>),
}

fn repos_json(list: &[RepoEntry]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".into())
}

impl MaintenanceCx<'_> {
    pub(crate) async fn register_namespace(
        &self,
        caller: &Caller,
        a: RegisterArgs,
        _: &dyn Confirmer,
    ) -> Result<Registered> {
        let ns = a.namespace.as_str().trim().to_owned();
        let list = match (&a.repos, &a.repo) {
            (Some(repos), _) => parse_repos_list(repos.as_str()).map_err(Error::Invalid)?,
            (None, Some(repo)) if is_repo_shape(repo.as_str()) => {
                let label = a
                    .label
                    .as_ref()
                    .map(|l| l.as_str().trim())
                    .filter(|l| !l.is_empty())
                    .unwrap_or("primary");
                vec![RepoEntry {
                    repo: repo.0.clone(),
                    label: label.to_owned(),
                }]
            }
            _ => {
                return Err(Error::Invalid(
                    "provide repo as \"owner/name\", or pass a repos JSON array".into(),
                ));
            }
        };
        require_single_primary(&list).map_err(Error::Invalid)?;
        let json = repos_json(&list);
        let audit = self.audit(
            caller,
            "register_namespace",
            Some(&ns),
            None,
            serde_json::to_value(&list).unwrap_or_default(),
        );
        match self
            .namespaces
            .register_namespace(&ns, &json, self.now(), audit)
            .await
        {
            Ok(()) => {}
            Err(StoreError::Conflict(_)) => {
                return Err(Error::Conflict(format!(
                    "namespace already registered: {ns}. Use update_namespace to change its repo mapping; it snapshots the prior mapping to the audit log."
                )));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(Registered {
            next: format!(
                "mint its driver (admin only): capsid agents mint --name {ns}-driver --kind driver --namespaces {ns} --grants read,write"
            ),
            namespace: ns,
            repos: list,
            action: "registered",
            driver_agent: None,
        })
    }

    pub(crate) async fn update_namespace(
        &self,
        caller: &Caller,
        a: UpdateArgs,
        _: &dyn Confirmer,
    ) -> Result<NamespaceUpdated> {
        let ns = a.namespace.as_str().trim().to_owned();
        let patch = a.runner_patch();
        if let Some(budget) = &a.monthly_budget_usd {
            if a.repos.is_some() || RunnerSettings::names_any(&patch) {
                return Err(Error::Invalid(
                    "update_namespace: change the budget, the repos and the runner settings in separate calls (each is its own audited change)".into(),
                ));
            }
            return self.update_budget(caller, &ns, budget.value()?).await;
        }
        let Some(repos) = &a.repos else {
            if !RunnerSettings::names_any(&patch) {
                return Err(Error::Invalid(
                    "update_namespace: give repos, a runner setting (root_dir, test_command, build_command, agent_command, credential_ref, job_max_cost_usd, runtime, migration_tools, protected_branches, dispatch_limits, deploy_command), or monthly_budget_usd".into(),
                ));
            }
            return self.update_runner(caller, &ns, &patch).await;
        };
        if RunnerSettings::names_any(&patch) {
            return Err(Error::Invalid(
                "update_namespace: change the repos and the runner settings in separate calls (each is its own audited change)".into(),
            ));
        }
        let list = parse_repos_list(repos.as_str()).map_err(Error::Invalid)?;
        require_single_primary(&list).map_err(Error::Invalid)?;
        let existing = self.namespaces.namespace(&ns).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "namespace not found: {ns}. Use register_namespace to create it."
            ))
        })?;
        let json = repos_json(&list);
        let audit = self.audit(
            caller,
            "update_namespace",
            Some(&ns),
            None,
            json!({"old": existing.repos, "new": json}),
        );
        let previous = self
            .namespaces
            .update_namespace(&ns, &json, audit)
            .await
            .map_err(|e| unregistered(&ns, e))?;
        Ok(NamespaceUpdated::Repos(ReposUpdated {
            namespace: ns,
            repos: list,
            action: "updated",
            previous,
        }))
    }

    /// The monthly budget: admin only (the tool is), in one audited keyed update.
    async fn update_budget(
        &self,
        caller: &Caller,
        ns: &str,
        budget: Option<f64>,
    ) -> Result<NamespaceUpdated> {
        let audit = self.audit(
            caller,
            "update_namespace",
            Some(ns),
            None,
            json!({"monthly_budget_usd": budget}),
        );
        let previous = self
            .namespaces
            .set_namespace_budget(ns, budget, audit)
            .await
            .map_err(|e| unregistered(ns, e))?;
        Ok(NamespaceUpdated::Budget(BudgetUpdated {
            namespace: ns.to_owned(),
            monthly_budget_usd: budget,
            previous_monthly_budget_usd: previous,
            action: "updated",
        }))
    }

    /// The runner settings: admin only (the agent command runs on agent hosts), checked and
    /// merged into what is stored, in one audited keyed update.
    async fn update_runner(
        &self,
        caller: &Caller,
        ns: &str,
        patch: &RunnerPatch,
    ) -> Result<NamespaceUpdated> {
        if !caller.is_admin() {
            return Err(Error::Forbidden(
                "update_namespace: the runner settings (what agent hosts run) are the admin's to change; run capsid namespaces update on the server".into(),
            ));
        }
        let existing = self.namespaces.namespace(ns).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "namespace not found: {ns}. Use register_namespace to create it."
            ))
        })?;
        let current = RunnerSettings::stored(existing.runner.as_deref());
        let next = current
            .apply(patch)
            .map_err(|e| Error::Invalid(format!("update_namespace: {e}")))?;
        let audit = self.audit(
            caller,
            "update_namespace",
            Some(ns),
            None,
            json!({"runner": {"old": current, "new": next}}),
        );
        self.namespaces
            .set_namespace_runner(ns, next.to_stored(), audit)
            .await
            .map_err(|e| unregistered(ns, e))?;
        Ok(NamespaceUpdated::Runner(Box::new(RunnerUpdated {
            namespace: ns.to_owned(),
            runner: next,
            action: "updated",
            previous_runner: current,
        })))
    }
}

mod registered {
    //! The namespace tools as the registry serves them.
    use super::*;
    use crate::service::Areas;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Requirement::Fixed, Rule, ToolGroup::Maintenance, ToolSpec};

    /// `register_namespace`.
    #[derive(Debug)]
    pub struct RegisterNamespace;
    impl Tool for RegisterNamespace {
        type Args = RegisterArgs;
        type Answer = Registered;
        const SPEC: ToolSpec = ToolSpec::new(
            "register_namespace",
            Maintenance,
            Fixed(Rule::write()),
            "Register a new namespace with its repositories (exactly one labelled primary). Create-only.",
        )
        .titled("Register a namespace");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: RegisterArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.maintenance().register_namespace(c, a, k).await })
        }
    }

    /// Why `update_namespace` is admin only.
    pub const UPDATE_NAMESPACE_ADMIN_ONLY: &str = "update_namespace is admin only (the owner, a legacy write operator key, or the CLI): a namespace's repository mapping is the authorization boundary of repo access, so an agent that could remap its namespace could point it at any repository the GitHub App reaches, another namespace's included";

    /// `update_namespace`.
    #[derive(Debug)]
    pub struct UpdateNamespace;
    impl Tool for UpdateNamespace {
        type Args = UpdateArgs;
        type Answer = NamespaceUpdated;
        const SPEC: ToolSpec = ToolSpec::new(
            "update_namespace",
            Maintenance,
            Fixed(Rule::write().admin_only(UPDATE_NAMESPACE_ADMIN_ONLY)),
            "Replace a namespace's repository mapping (exactly one labelled primary), or its runner settings for agent hosts (admin only).",
        )
    .idempotent()
        .destructive()
        .titled("Update a namespace");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: UpdateArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.maintenance().update_namespace(c, a, k).await })
        }
    }
}
pub use registered::*;
