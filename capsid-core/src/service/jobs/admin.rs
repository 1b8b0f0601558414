//! `adminFailJob` (reference 6.1, 6.7): the owner marks a queued, claimed or blocked job
//! failed from the console. A keyed update from the status it was read in; an outcome row
//! when someone held it; audit `job-admin-fail`. Done and failed jobs stay as they are.

use super::{JobDone, JobOutcome, JobsAnswer, JobsCx, OutcomeShown};
use crate::service::Area;
use serde_json::json;

use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::jobs::JobStatus;
use crate::jobs::post::refuse_swallowed_tag;
use crate::jobs::state::{JobEvent, step};
use crate::ports::{Change, JobPatch, JobTransition, OutcomeRecord};
use crate::service::jobs::{JobsAction, job_audit, mirror_fn, refuse};

impl JobsCx<'_> {
    /// Marks job `id` failed with `reason`, as the admin `caller`. Refusals answer
    /// `{ok:false, action:"fail", refusal}`.
    pub async fn admin_fail_job(
        &self,
        caller: &Caller,
        id: &str,
        reason: &str,
    ) -> Result<JobsAnswer> {
        let act = JobsAction::Fail;
        if !caller.is_admin() {
            return Err(Error::Forbidden(
                "marking a job failed from outside its lease is admin only".into(),
            ));
        }
        let reason = reason.trim();
        if reason.is_empty() {
            return Ok(refuse(
                act,
                "failing a job needs a reason: what the owner decided, and why.",
            ));
        }
        if reason.chars().count() > 1024 {
            return Err(Error::Invalid(
                "fail_job: reason: at most 1024 characters".into(),
            ));
        }
        refuse_swallowed_tag("reason", reason).map_err(|e| Error::Invalid(e.to_string()))?;
        let Some(job) = self.jobs.job(id).await? else {
            return Ok(refuse(act, format!("no job {id}.")));
        };
        if matches!(job.status, JobStatus::Done | JobStatus::Failed) {
            return Ok(refuse(
                act,
                format!(
                    "{} is already {}; a finished job stays as it is.",
                    job.id, job.status
                ),
            ));
        }
        let now = self.now();
        let mut after = job.clone();
        after.status = JobStatus::Failed;
        // Someone held it: the failure counts on their record, verified like any other.
        let outcome = if job.claimed_by.is_some() {
            Some(self.outcome_for(&after, None).await)
        } else {
            None
        };
        let summary = format!("failed by the owner ({}): {reason}", caller.actor());
        let step = step(job.status, JobEvent::AdminFail)?;
        let t = JobTransition {
            id: job.id.clone(),
            expected: Some(job.clone()),
            step,
            holder: None,
            corrections: None,
            patch: JobPatch {
                result_summary: Change::Set(summary.clone()),
                lease_expires: Change::Clear,
                ..JobPatch::default()
            },
            at: now,
            audit: job_audit(
                &caller.actor(),
                step.audit_action(),
                &job,
                json!({"reason": reason, "from": job.status.as_str(), "holder": job.claimed_by}),
                now,
            ),
            outcome: outcome.as_ref().map(|o| OutcomeRecord {
                reported_call: None,
                row: o.row.clone(),
                pr_urls: Vec::new(),
            }),
            mirror: mirror_fn(now),
        };
        match self.jobs.transition_job(t).await? {
            Some(updated) => {
                let mut out = JobDone::new(act, updated);
                out.outcome = outcome.map(|o| {
                    JobOutcome::Recorded(OutcomeShown {
                        row: o.row,
                        notes: None,
                    })
                });
                Ok(out.into())
            }
            None => Ok(refuse(
                act,
                format!(
                    "{} changed (it was {}) while it was being failed. Look again.",
                    job.id, job.status
                ),
            )),
        }
    }
}
