//! `meter`: the driver's model door writes each call it forwarded for a job into the job's
//! ledger (issue 49), before the call's answer ends. Only the job's holder (its driver's own
//! key, never the run credential the agent holds) or an admin writes a job's ledger; a call
//! the door sends twice (once as it settles, again when the run closes) is kept once. The
//! answer says how many calls were new; `get` answers the job's ledger summed.

use super::{JobDone, JobsAction, JobsAnswer, JobsArgs, JobsCx};
use crate::caller::Caller;
use crate::drive::ledger::{Usage, Usd};
use crate::error::{Error, Result};
use crate::jobs::spend::{CallEnded, JobSpend, LedgerCall, METER_CALLS_MAX, Priced, check_call};
use crate::service::Area;
use crate::time::Timestamp;
use schemars::JsonSchema;
use serde::Deserialize;

/// One call as the door sends it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeteredCall {
    /// The door's id for the call (1 to 64 letters, digits, `_` or `-`).
    pub call_id: String,
    /// The model that answered.
    pub model: String,
    /// The session the request named (Claude Code's `metadata.user_id`), if any.
    pub session: Option<String>,
    /// Input tokens read uncached.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// What the door priced the call at, in US dollars.
    pub cost_usd: f64,
    /// `table`, or `highest` when the price table does not list the model.
    pub priced: Priced,
    /// `completed`, `upstream_error` or `broken`.
    pub ended: CallEnded,
    /// When the call reached the door (ISO 8601).
    pub started_at: String,
    /// When its answer ended (ISO 8601).
    pub ended_at: String,
}

impl MeteredCall {
    /// The ledger row, or why it is not one (naming the call and the field).
    fn to_row(&self) -> std::result::Result<LedgerCall, String> {
        let id = &self.call_id;
        let time = |field: &str, text: &str| {
            Timestamp::parse(text)
                .ok_or_else(|| format!("call {id}: {field} {text:?} is not an ISO 8601 time"))
        };
        let cost = Usd::from_dollars(self.cost_usd).ok_or_else(|| {
            format!(
                "call {id}: cost_usd must be zero or more US dollars, not {}",
                self.cost_usd
            )
        })?;
        let row = LedgerCall {
            call_id: id.clone(),
            session: self.session.clone(),
            model: self.model.clone(),
            usage: Usage {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
                cache_write_tokens: self.cache_write_tokens,
                cache_read_tokens: self.cache_read_tokens,
            },
            cost,
            priced: self.priced,
            ended: self.ended,
            started_at: time("started_at", &self.started_at)?,
            ended_at: time("ended_at", &self.ended_at)?,
        };
        check_call(&row)?;
        Ok(row)
    }
}

impl JobsCx<'_> {
    /// `meter`.
    pub(super) async fn meter(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        let act = JobsAction::Meter;
        let Some(calls) = a.calls.as_ref() else {
            return Err(Error::Invalid(
                "jobs meter: calls (the model calls the door forwarded) is required".into(),
            ));
        };
        if calls.is_empty() || calls.len() > METER_CALLS_MAX {
            return Err(Error::Invalid(format!(
                "jobs meter: calls holds 1 to {METER_CALLS_MAX} calls, not {}",
                calls.len()
            )));
        }
        let rows = calls
            .iter()
            .map(MeteredCall::to_row)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Invalid(format!("jobs meter: {e}")))?;
        let mut ids = std::collections::BTreeSet::new();
        if let Some(dup) = rows.iter().find(|r| !ids.insert(r.call_id.as_str())) {
            return Err(Error::Invalid(format!(
                "jobs meter: call_id {} is given twice",
                dup.call_id
            )));
        }
        let job = match self.holders_job(act, caller, &a, "its ledger").await? {
            Ok(job) => job,
            Err(refused) => return Ok(refused),
        };
        let now = self.now();
        let new = self
            .jobs
            .record_calls(&job, &caller.actor(), &rows, now)
            .await?;
        let costly = rows.iter().any(|r| r.cost > Usd::ZERO);
        let namespace = job.namespace.clone();
        // The answer is the count, not the job's ledger summed: a door writes every call, and
        // reading the whole ledger back each time would grow with the job.
        let mut out = JobDone::new(act, job);
        out.recorded = Some(new);
        if new > 0 && costly {
            // The month's spend grew: each alert share it reached is sent once. The rows are
            // written either way; a driver that sees an error sends them again, kept once.
            self.budget_alerts(&namespace).await?;
        }
        Ok(out.into())
    }

    /// What `job_id`'s ledger sums to.
    pub(crate) async fn job_spend(&self, job_id: &str) -> Result<JobSpend> {
        Ok(JobSpend::of(&self.jobs.job_calls(job_id).await?))
    }
}
