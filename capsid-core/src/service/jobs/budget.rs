//! Budgets at the queue: a claim reserves the job's cap against its namespace's month inside
//! the claim's transaction (the decider's `fits`, over the spend and the caps of the jobs
//! running there, read with the namespace held), so two claims never both take the last
//! dollars; a resume is checked the same way, and a finished job's cost
//! that brings the spend to 80% or 100% of the budget tells the owner once (the replay
//! cache keys each alert by namespace, month and share, so replicas, retries and
//! concurrent finishes send it once).

use super::JobsCx;
use serde_json::json;

use super::{JobDone, JobsAction, JobsAnswer, JobsArgs, job_audit, refuse};
use crate::caller::Caller;
use crate::drive::ledger::Usd;
use crate::drive::runner::RunnerSettings;
use crate::error::{Error, Result};
use crate::jobs::budget::parse_job_cap;
use crate::jobs::budget::{BudgetState, month_start, usd};
use crate::jobs::{Job, JobStatus};
use crate::ports::Notification;
use crate::service::Area;

/// The replay-cache scope of budget alerts.
const ALERT_SCOPE: &str = "budget-alert";

/// Every registered namespace's month of job spend against its budget (its own, else
/// `default`, the server's), as of `now`.
pub(crate) async fn budget_states(
    namespaces: &dyn crate::ports::NamespaceStore,
    default: Option<f64>,
    now: crate::time::Timestamp,
) -> Result<Vec<BudgetState>> {
    let spent = namespaces.spend_since(month_start(now)).await?;
    Ok(namespaces
        .namespaces()
        .await?
        .into_iter()
        .map(|row| {
            BudgetState::new(
                &row.namespace,
                now,
                row.monthly_budget_usd,
                default,
                spent
                    .iter()
                    .find(|s| s.namespace == row.namespace)
                    .map_or(0.0, |s| s.spent_usd),
            )
        })
        .collect())
}

impl JobsCx<'_> {
    /// `namespace`'s budget and spend this month; `None` when it is not registered.
    pub(crate) async fn budget_state(&self, namespace: &str) -> Result<Option<BudgetState>> {
        let now = self.now();
        let Some(found) = self
            .namespaces
            .namespace_budget(namespace, month_start(now))
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(BudgetState::new(
            namespace,
            now,
            found.budget_usd,
            self.config.default_monthly_budget_usd,
            found.spent_usd,
        )))
    }

    /// The cap of a job of `namespace` that names none: the namespace's own default (its
    /// runner setting `job_max_cost_usd`), else the server's (`CAPSID_JOB_MAX_COST_USD`).
    pub(crate) async fn default_cap(&self, namespace: &str) -> Result<Option<Usd>> {
        let own = self
            .namespaces
            .namespace_runner(namespace)
            .await?
            .and_then(|json| RunnerSettings::stored(Some(&json)).job_cap());
        Ok(own.or(self.config.default_job_max_cost_usd))
    }

    /// Why resuming `job` into another paid session is refused for its namespace's month:
    /// the month is spent, or the job's cap does not fit beside what the namespace's running
    /// jobs reserve. Read outside the resume's write (a claim decides inside its own).
    pub(super) async fn resume_budget_refusal(&self, job: &Job) -> Result<Option<String>> {
        let Some(state) = self.budget_state(&job.namespace).await? else {
            return Ok(None);
        };
        if state.budget_usd.is_none() {
            return Ok(None);
        }
        let month = self.jobs.month_spend(job, month_start(self.now())).await?;
        let default_cap = self.default_cap(&job.namespace).await?;
        let holding = super::claim::reservations(&month.holding, default_cap);
        Ok(state
            .resume_fits(
                &job.id,
                super::claim::own_reservation(job, month.job_spent, default_cap),
                &holding,
            )
            .err())
    }

    /// `raise`: sets an open job's cap above its current one (the job's own, else the
    /// namespace's default, else the server's), with its audit row. The job's namespace must be the one named (the
    /// call's scope was checked against it).
    pub(super) async fn raise(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        let act = JobsAction::Raise;
        let job = match self.job_for(act, a.id.as_ref()).await? {
            Ok(job) => job,
            Err(refused) => return Ok(refused),
        };
        let Some(ns) = a.namespace.as_ref().map(|n| n.as_str()) else {
            return Ok(refuse(act, "raise needs the job's namespace"));
        };
        if job.namespace != ns {
            return Ok(refuse(act, format!("no job {} in namespace {ns}.", job.id)));
        }
        let Some(given) = a.max_cost_usd else {
            return Err(Error::Invalid(
                "jobs raise: max_cost_usd (the job's new cap, in US dollars) is required".into(),
            ));
        };
        let cap = parse_job_cap(given).map_err(|e| Error::Invalid(format!("jobs raise: {e}")))?;
        if matches!(job.status, JobStatus::Done | JobStatus::Failed) {
            return Ok(refuse(
                act,
                format!(
                    "{} is {}; only a queued, claimed or blocked job's cap can be raised.",
                    job.id, job.status
                ),
            ));
        }
        let current = match job.max_cost_usd {
            Some(own) => Some(own),
            None => self.default_cap(&job.namespace).await?,
        };
        if let Some(current) = current.filter(|c| cap <= *c) {
            return Ok(refuse(
                act,
                format!(
                    "{}'s cap is {} already; a raise names more than that, not {}.",
                    job.id,
                    usd(current.dollars()),
                    usd(cap.dollars())
                ),
            ));
        }
        let now = self.now();
        let audit = job_audit(
            &caller.actor(),
            "job-cap-raised",
            &job,
            json!({
                "from_usd": current.map(|c| c.dollars()),
                "to_usd": cap.dollars(),
            }),
            now,
        );
        let Some(raised) = self.jobs.set_job_cap(&job.id, cap, now, audit).await? else {
            return Ok(refuse(
                act,
                format!(
                    "{} ended while its cap was being raised; nothing changed.",
                    job.id
                ),
            ));
        };
        let mut out = JobDone::new(act, raised);
        out.max_cost_usd = Some(cap);
        Ok(out.into())
    }

    /// After a job of `namespace` finished with a reported cost: each alert share the spend
    /// has reached, sent once a month (the replay cache decides, across replicas and
    /// concurrent finishes). A failure to send is the notifier's to log; nothing here undoes
    /// the finished job.
    pub(super) async fn budget_alerts(&self, namespace: &str) -> Result<()> {
        let Some(notifier) = self.notifier else {
            return Ok(());
        };
        let Some(state) = self.budget_state(namespace).await? else {
            return Ok(());
        };
        let now = self.now();
        for pct in state.reached() {
            let key = format!("{namespace}/{}/{pct}", state.month);
            if !self.settings.claim_nonce(ALERT_SCOPE, &key, now).await? {
                continue;
            }
            let budget = state.budget_usd.unwrap_or_default();
            notifier
                .notify(Notification {
                    event: format!("budget-{pct}"),
                    namespace: namespace.to_owned(),
                    job_id: None,
                    title: None,
                    agent: None,
                    question: None,
                    reason: format!(
                        "namespace '{namespace}' has spent {} of its {} monthly budget in {} (UTC): {pct}% reached{}",
                        usd(state.spent_usd),
                        usd(budget),
                        state.month,
                        if pct >= 100 {
                            "; no job there is claimed until the month ends or the budget is raised"
                        } else {
                            ""
                        }
                    ),
                    command: None,
                    link: Some("/console".to_owned()),
                    at: now.to_string(),
                })
                .await;
        }
        Ok(())
    }
}
