//! `complete`, `fail` and `block`: holder-keyed transitions out of `claimed`, with the review
//! gate (complete and block: a `review_required` job completes only with its pull request on
//! a mapped repository, approved by another agent through Capsid on its current head),
//! evidence verified against the repository host, and the write-once outcome row (naming the
//! approving reviewer) in the same unit of work as the transition.

/// At most this many recorded verdicts of one pull request are read by the gate.
const REVIEWS_READ: usize = 100;

use super::{JobDone, JobOutcome, JobRefused, JobsAnswer, JobsCx, OutcomeShown};
use crate::service::Area;
use serde_json::json;

use crate::caller::Caller;
use crate::drive::ledger::Usd;
use crate::error::{Error, Result};
use crate::jobs::block::{at_correction_cap, block_summary};
use crate::jobs::evidence::Evidence;
use crate::jobs::outcome::{
    PrFacts, WorkflowRun, build_outcome, ci_head_to_check, prs_to_verify, verify_evidence,
};
use crate::jobs::post::refuse_swallowed_tag;
use crate::jobs::pr_url::PrUrl;
use crate::jobs::review::{
    RecordedVerdict, ReviewGate, ReviewTarget, changes_note, review_gate, review_target,
};
use crate::jobs::spend::LedgerCall;
use crate::jobs::state::{JobEvent, step};
use crate::jobs::{Job, JobStatus};
use crate::paths::result_ref_problem;
use crate::ports::{Change, JobPatch, JobTransition, Notification, OutcomeRecord, RepoRef};
use crate::repos::stored_repos;
use crate::service::jobs::{JobsAction, JobsArgs, job_audit, mirror_fn, refuse};

impl JobsCx<'_> {
    pub(crate) async fn finish(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        let act = a.action;
        let job = match self.job_for(act, a.id.as_ref()).await? {
            Ok(job) => job,
            Err(refused) => return Ok(refused),
        };
        let actor = caller.actor();
        let reason = a
            .reason
            .as_ref()
            .map(|r| r.as_str().trim())
            .filter(|r| !r.is_empty());
        match act {
            JobsAction::Complete => {
                let Some(summary) = a
                    .result_summary
                    .as_ref()
                    .map(|s| s.as_str())
                    .filter(|s| !s.trim().is_empty())
                else {
                    return Ok(refuse(
                        act,
                        "complete needs a result_summary. A done job with no summary is a job the seat has to reconstruct from the diff.",
                    ));
                };
                refuse_swallowed_tag("result_summary", summary)
                    .map_err(|e| Error::Invalid(e.to_string()))?;
            }
            JobsAction::Fail => {
                let Some(reason) = reason else {
                    return Ok(refuse(
                        act,
                        "fail needs a reason. A failed job with no reason is one nobody can retry or rule on.",
                    ));
                };
                refuse_swallowed_tag("reason", reason)
                    .map_err(|e| Error::Invalid(e.to_string()))?;
            }
            _ => {
                if reason.is_none() {
                    return Ok(refuse(act, "block needs a reason: what gate was hit."));
                }
            }
        }
        if let Some(r) = &a.result_ref
            && let Some(problem) = result_ref_problem(r.as_str())
        {
            return Err(Error::Invalid(format!("jobs: result_ref: {problem}")));
        }
        let evidence = match &a.evidence {
            None => None,
            Some(v) => {
                Evidence::parse(v).map_err(|e| Error::Invalid(format!("jobs: evidence: {e}")))?
            }
        };
        // Only the holder may finish; refuse before asking GitHub anything.
        if job.status != JobStatus::Claimed || job.claimed_by.as_deref() != Some(actor.as_str()) {
            return self.holder_refusal(act, &job.id, &actor).await;
        }
        let offered = if act == JobsAction::Block {
            None
        } else {
            self.offered_at_claim(&job).await?
        };
        let report = match super::skills::check_report(
            act,
            a.skills_used.as_deref(),
            a.skill_verdict,
            offered,
        )? {
            Ok(report) => report,
            Err(refused) => return Ok(refused),
        };
        let mut block_reason = reason.map(str::to_owned);
        let mut reviewed_by = None;
        // Read once: the review gate and the outcome's evidence both check against it.
        let mapped = self.mapped_repos(&job.namespace).await;
        if act != JobsAction::Fail {
            let result_ref = a
                .result_ref
                .as_ref()
                .map(|r| r.as_str())
                .or(job.result_ref.as_deref());
            let pr = match review_target(job.review_required, result_ref, &job.namespace, &mapped) {
                ReviewTarget::Ungated => None,
                ReviewTarget::Gated(pr) => Some(pr),
                ReviewTarget::Refused(why) if act == JobsAction::Complete => {
                    return Ok(refuse(act, why));
                }
                // A driver may stop at a human gate before it has a pull request to show.
                ReviewTarget::Refused(_) => None,
            };
            if let Some(pr) = pr {
                let head = self.pull_head(&pr).await;
                let recorded = self.recorded_verdicts(&pr).await?;
                match review_gate(
                    &pr,
                    &actor,
                    head.as_deref().map_err(String::as_str),
                    &recorded,
                ) {
                    ReviewGate::Approved(review) => reviewed_by = Some(review.by),
                    ReviewGate::Waiting { reason } | ReviewGate::Unreadable { reason } => {
                        return Ok(refuse(act, reason));
                    }
                    ReviewGate::Changes { summary, .. } => {
                        return self.review_changes(caller, &job, summary).await;
                    }
                    ReviewGate::Block { reason, .. } => {
                        // A BLOCK review blocks the job through the ordinary block path.
                        return self
                            .commit_finish(
                                caller,
                                &job,
                                JobsAction::Block,
                                Some(reason),
                                None,
                                None,
                                None,
                                None,
                                None,
                                &mapped,
                            )
                            .await;
                    }
                }
            }
        }
        if act == JobsAction::Complete {
            block_reason = a.result_summary.as_ref().map(|s| s.0.clone());
        }
        let command = a
            .command
            .as_ref()
            .map(|c| c.as_str().trim())
            .filter(|c| !c.is_empty());
        let answer = self
            .commit_finish(
                caller,
                &job,
                act,
                block_reason,
                command,
                a.result_ref.as_ref().map(|r| r.0.clone()),
                evidence,
                reviewed_by,
                Some(&report),
                &mapped,
            )
            .await?;
        // A junior's job done with its pull request: the pipeline posts its review.
        if let JobsAnswer::Done(done) = &answer
            && done.job.status == JobStatus::Done
        {
            self.hand_off_review(&done.job, done.job.result_ref.as_deref(), &mapped)
                .await?;
        }
        Ok(answer)
    }

    /// The namespace's mapped repositories (`owner/name`); none when it cannot be read.
    async fn mapped_repos(&self, namespace: &str) -> Vec<String> {
        match self.namespaces.namespace(namespace).await {
            Ok(Some(row)) => stored_repos(namespace, row.repos.as_deref())
                .map(|l| l.into_iter().map(|e| e.repo).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The pull request's head commit, or why it could not be read.
    pub(super) async fn pull_head(&self, pr: &PrUrl) -> std::result::Result<String, String> {
        let repo = RepoRef {
            owner: pr.owner.clone(),
            name: pr.repo.clone(),
        };
        match &self.repo_host {
            None => Err("GitHub App not configured".to_owned()),
            Some(host) => host
                .pull_request(&repo, pr.number)
                .await
                .map(|p| p.head_sha)
                .map_err(|e| e.to_string()),
        }
    }

    /// The verdicts Capsid recorded for `pr`, newest first (a row whose verdict does not
    /// parse counts for nothing).
    async fn recorded_verdicts(&self, pr: &PrUrl) -> Result<Vec<RecordedVerdict>> {
        let rows = self
            .reviews
            .reviews(
                &pr.full_repo().to_ascii_lowercase(),
                pr.number,
                REVIEWS_READ,
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| RecordedVerdict {
                verdict: r.verdict,
                reviewer: r.reviewer,
                said: r.said,
                head_sha: r.head_sha,
                at: r.created_at,
            })
            .collect())
    }

    /// A CHANGES review: the job stays claimed by its holder, its summary becomes the review,
    /// and a correction is spent.
    async fn review_changes(
        &self,
        caller: &Caller,
        job: &Job,
        summary: String,
    ) -> Result<JobsAnswer> {
        let actor = caller.actor();
        let now = self.now();
        let act = JobsAction::Complete;
        let Ok(step) = step(JobStatus::Claimed, JobEvent::ReviewChanges) else {
            return self.holder_refusal(act, &job.id, &actor).await;
        };
        let t = JobTransition {
            id: job.id.clone(),
            expected: Some(job.clone()),
            step,
            holder: Some(actor.clone()),
            corrections: Some(job.corrections_count),
            patch: JobPatch {
                result_summary: Change::Set(summary.clone()),
                add_correction: true,
                ..JobPatch::default()
            },
            at: now,
            audit: job_audit(
                &actor,
                step.audit_action(),
                job,
                json!({"summary": summary}),
                now,
            ),
            outcome: None,
            mirror: mirror_fn(now),
        };
        match self.jobs.transition_job(t).await? {
            Some(updated) => Ok(
                JobRefused::new(act, changes_note(updated.corrections_count))
                    .with_job(updated)
                    .into(),
            ),
            None => self.holder_refusal(act, &job.id, &actor).await,
        }
    }

    /// Verifies evidence against the repository host: nothing is verified unless every PR
    /// named could be read.
    pub(crate) async fn outcome_for(
        &self,
        job: &Job,
        evidence: Option<&Evidence>,
    ) -> crate::jobs::outcome::Outcome {
        let mapped = self.mapped_repos(&job.namespace).await;
        self.outcome_against(job, evidence, &mapped).await
    }

    /// [`Self::outcome_for`] with the namespace's mapped repositories already read.
    async fn outcome_against(
        &self,
        job: &Job,
        evidence: Option<&Evidence>,
        mapped: &[String],
    ) -> crate::jobs::outcome::Outcome {
        let now = self.now();
        let plan = prs_to_verify(evidence, &job.namespace, mapped);
        let mut facts: Vec<Result<PrFacts, String>> = Vec::new();
        let mut ci: Option<Result<Vec<WorkflowRun>, String>> = None;
        if let Ok(prs) = &plan {
            for pr in prs {
                let repo = RepoRef {
                    owner: pr.owner.clone(),
                    name: pr.repo.clone(),
                };
                facts.push(match &self.repo_host {
                    None => Err("GitHub App not configured".into()),
                    Some(host) => host
                        .pull_request(&repo, pr.number)
                        .await
                        .map(|p| PrFacts {
                            merged: p.merged,
                            commits: p.commits,
                            changed_files: p.changed_files,
                            head_sha: p.head_sha,
                        })
                        .map_err(|e| e.to_string()),
                });
            }
            if let (Some(sha), Some(last), Some(host)) =
                (ci_head_to_check(&facts), prs.last(), &self.repo_host)
            {
                let repo = RepoRef {
                    owner: last.owner.clone(),
                    name: last.repo.clone(),
                };
                ci = Some(
                    host.workflow_runs(&repo, sha)
                        .await
                        .map(|runs| {
                            runs.into_iter()
                                .map(|r| WorkflowRun {
                                    status: r.status,
                                    conclusion: r.conclusion,
                                })
                                .collect()
                        })
                        .map_err(|e| e.to_string()),
                );
            }
        }
        let verdict = verify_evidence(evidence, &plan, &facts, ci.as_ref());
        build_outcome(job, verdict, now)
    }

    #[allow(clippy::too_many_arguments)]
    async fn commit_finish(
        &self,
        caller: &Caller,
        job: &Job,
        act: JobsAction,
        text: Option<String>,
        command: Option<&str>,
        result_ref: Option<String>,
        evidence: Option<Evidence>,
        reviewed_by: Option<String>,
        skills: Option<&super::skills::SkillReport>,
        mapped: &[String],
    ) -> Result<JobsAnswer> {
        let actor = caller.actor();
        let now = self.now();
        let (event, summary) = match act {
            JobsAction::Complete => (JobEvent::Complete, text.clone()),
            JobsAction::Fail => (JobEvent::Fail, text.clone()),
            _ => {
                let at_cap = at_correction_cap(job.corrections_count as f64);
                (
                    JobEvent::Block,
                    text.as_deref().map(|r| block_summary(r, command, at_cap)),
                )
            }
        };
        let Ok(step) = step(JobStatus::Claimed, event) else {
            return self.holder_refusal(act, &job.id, &actor).await;
        };
        let status = step.to;
        // The row as it will be after the transition, for the outcome's arithmetic.
        let mut after = job.clone();
        after.status = status;
        if let Some(r) = &result_ref {
            after.result_ref = Some(r.clone());
        }
        let outcome = if matches!(status, JobStatus::Done | JobStatus::Failed) {
            let mut outcome = self
                .outcome_against(&after, evidence.as_ref(), mapped)
                .await;
            outcome.row.reviewed_by = reviewed_by;
            if let Some(report) = skills {
                (outcome.row.skill_ids_offered, outcome.row.skill_ids_used) = report.columns();
                outcome.row.skill_verdict = report.signal.map(|s| s.name().to_owned());
            }
            Some(outcome)
        } else {
            None
        };
        // The job's cost is its ledger's when a model door metered it (what the evidence said
        // is set beside it when the two differ); a job no door metered keeps what its evidence
        // reported, as one ledger row, so its namespace's budget sees it.
        let mut reported_call = None;
        let mut outcome = outcome;
        if let Some(o) = outcome.as_mut() {
            let ledger = self.job_spend(&job.id).await?;
            if ledger.metered() {
                o.notes.extend(ledger.reported_note(o.row.cost_usd));
                o.row.cost_usd = Some(ledger.total.dollars());
            } else if ledger.total == Usd::ZERO
                && let Some(cost) = o.row.cost_usd.and_then(Usd::from_dollars)
            {
                reported_call = Some(LedgerCall::reported(&job.id, cost, now));
            }
        }
        let mut params = json!({ "status": status.as_str() });
        if let Some(s) = &summary {
            params["result_summary"] = json!(s);
        }
        if let Some(r) = &result_ref {
            params["result_ref"] = json!(r);
        }
        let t = JobTransition {
            id: job.id.clone(),
            expected: Some(job.clone()),
            step,
            holder: Some(actor.clone()),
            corrections: None,
            patch: JobPatch {
                result_summary: Change::set_if(summary.clone()),
                result_ref: Change::set_if(result_ref.clone()),
                lease_expires: Change::Clear,
                add_blocked: status == JobStatus::Blocked,
                ..JobPatch::default()
            },
            at: now,
            audit: job_audit(&actor, step.audit_action(), job, params, now),
            outcome: outcome.as_ref().map(|o| OutcomeRecord {
                row: o.row.clone(),
                pr_urls: evidence.as_ref().map(|e| e.prs.clone()).unwrap_or_default(),
                reported_call,
            }),
            mirror: mirror_fn(now),
        };
        let Some(updated) = self.jobs.transition_job(t).await? else {
            return self.holder_refusal(act, &job.id, &actor).await;
        };
        if matches!(status, JobStatus::Blocked | JobStatus::Failed)
            && let Some(notifier) = &self.notifier
        {
            notifier
                .notify(Notification {
                    event: if status == JobStatus::Blocked {
                        "job-blocked"
                    } else {
                        "job-failed"
                    }
                    .into(),
                    namespace: updated.namespace.clone(),
                    job_id: Some(updated.id.clone()),
                    title: Some(updated.title.clone()),
                    agent: None,
                    question: None,
                    reason: text.clone().unwrap_or_default(),
                    command: command.map(str::to_owned),
                    link: None,
                    at: now.to_string(),
                })
                .await;
        }
        // The job has finished: an alert that could not be worked out is said in the answer,
        // never turned into a failure of the call that finished it.
        let costed = outcome
            .as_ref()
            .and_then(|o| o.row.cost_usd)
            .is_some_and(|c| c > 0.0);
        let alert_error = if costed {
            self.budget_alerts(&updated.namespace)
                .await
                .err()
                .map(|e| format!("the budget alert could not be worked out: {e}"))
        } else {
            None
        };
        let act_name = if status == JobStatus::Blocked {
            JobsAction::Block
        } else {
            act
        };
        let settled = match skills.filter(|_| status != JobStatus::Blocked) {
            Some(report) => {
                let failed = (status == JobStatus::Failed).then_some(text.as_deref().unwrap_or(""));
                Some(
                    self.settle_skills(&actor, &updated, report, failed, now)
                        .await,
                )
            }
            None => None,
        };
        let mut out = JobDone::new(act_name, updated);
        out.outcome = outcome.map(|o| {
            let mut notes = o.notes;
            notes.extend(alert_error);
            JobOutcome::Recorded(OutcomeShown {
                row: o.row,
                notes: Some(notes),
            })
        });
        out.skills = settled;
        Ok(out.into())
    }
}
