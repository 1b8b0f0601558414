//! `resume`: a blocked job back into a claim for the caller, after a human acted. It asks
//! what a claim asks (flags, record, signature), spends a correction unless an admin resumes,
//! and may be pre-approved by the signed gate policy for the exact command the job waits on.

use super::JobsCx;
use crate::service::Area;
use serde_json::{Value, json};

use crate::autonomy::anchor::{POLICY_SIGNED_ACTION, signed_by_the_admin};
use crate::autonomy::gates::{
    Approval, PreApproval, approve_migration, approve_migration_folder, is_forward_migration,
    pre_approve,
};
use crate::autonomy::policy::{GATE_POLICY_PATH, POLICY_NAMESPACE, parse_gate_policy};
use crate::caller::Caller;
use crate::drive::runner::RunnerSettings;
use crate::error::Result;
use crate::jobs::block::{at_correction_cap, command_from_summary};
use crate::jobs::lease::{actor_may_hold_jobs, lease_expiry};
use crate::jobs::record::min_record_refusal;
use crate::jobs::requirements::{JobRequirements, missing_for_job};
use crate::jobs::signature::{SignatureError, verify_job, verify_task};
use crate::jobs::state::{JobEvent, step};
use crate::jobs::{Job, JobStatus};
use crate::ports::{Change, JobPatch, JobTransition, StoreError};
use crate::repos::{resolve_repo, stored_repos};
use crate::service::jobs::{
    JobDone, JobRefused, JobsAction, JobsAnswer, JobsArgs, job_audit, mirror_fn, refuse,
};

/// Where a resumed job goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResumeTo {
    /// The `jobs` tool: the caller takes the lease (reference 6.5).
    Caller,
    /// The console (SPEC 8): back to `queued`, holder and lease cleared, so the driver that
    /// blocked it (or any driver able to) claims it on its next poll; the admin never holds it.
    Queue,
}

impl JobsCx<'_> {
    pub(crate) async fn resume(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        self.resume_to(caller, a, ResumeTo::Caller).await
    }

    /// The one resume: every check of the tool's resume runs, whichever way the job goes.
    /// Returning it to the queue skips only what concerns a holder (the caller's held claim,
    /// flags and track record): the claimer is checked again at claim.
    pub(crate) async fn resume_to(
        &self,
        caller: &Caller,
        a: JobsArgs,
        to: ResumeTo,
    ) -> Result<JobsAnswer> {
        let act = JobsAction::Resume;
        let actor = caller.actor();
        if !actor_may_hold_jobs(&actor) {
            return Ok(refuse(
                act,
                format!(
                    "'{actor}' is not a caller identity this queue can hold a lease for. A claim is recorded against a github: login, an opkey: fingerprint, or an agent: name."
                ),
            ));
        }
        let Some(reason) = a
            .reason
            .as_ref()
            .map(|r| r.as_str().trim().to_owned())
            .filter(|r| !r.is_empty())
        else {
            return Ok(refuse(
                act,
                "resume needs a reason: what the human approved. A job that came back off a gate with no record of who cleared it is a gate that did not happen.",
            ));
        };
        if to == ResumeTo::Caller
            && let Some(held) = self.jobs.held_job(&actor).await?
        {
            return Ok(refuse(
                act,
                format!(
                    "{actor} already holds {} ('{}' in {}), leased until {}. Finish it before resuming another.",
                    held.id,
                    held.title,
                    held.namespace,
                    held.lease_expires
                        .map_or_else(|| "(no lease)".to_owned(), |t| t.to_string())
                ),
            ));
        }
        let job = match self.job_for(act, a.id.as_ref()).await? {
            Ok(job) => job,
            Err(refused) => return Ok(refused),
        };
        if job.status != JobStatus::Blocked {
            return Ok(refuse(
                act,
                format!(
                    "{} is {}, not blocked. Resume is how a job comes back off a gate; a queued job is claimed and a done or failed one is finished.",
                    job.id, job.status
                ),
            ));
        }
        // A resume starts another paid session: a namespace whose month's budget is spent
        // resumes nothing into a holder (the console's return to the queue is checked again
        // by the claim).
        if to == ResumeTo::Caller
            && let Some(why) = self.resume_budget_refusal(&job).await?
        {
            return Ok(refuse(act, format!("{}: {why}", job.id)));
        }
        let requirements = match JobRequirements::from_stored(
            job.required_scopes.as_deref(),
            job.min_record.as_deref(),
        ) {
            Ok(r) => r,
            Err(corrupt) => {
                return Ok(refuse(
                    act,
                    format!(
                        "{}'s stored requirement could not be read ({corrupt}); it stays blocked until an admin fails it.",
                        job.id
                    ),
                ));
            }
        };
        if to == ResumeTo::Caller
            && let Err(missing) = missing_for_job(&caller.scopes, &job.namespace, &requirements)
        {
            return Ok(refuse(
                act,
                format!(
                    "{actor} cannot resume {} ('{}'): {missing} It stays blocked for a driver that can finish it.",
                    job.id, job.title
                ),
            ));
        }
        if let Some(bar) = requirements
            .min_prs_merged
            .filter(|b| *b > 0 && to == ResumeTo::Caller)
        {
            let record = self.record_of(caller).await?;
            if let Some(short) = min_record_refusal(bar, &record) {
                return Ok(refuse(
                    act,
                    format!(
                        "{actor} cannot resume {} ('{}'): {short} It stays blocked for a driver that can finish it.",
                        job.id, job.title
                    ),
                ));
            }
        }
        let admin = caller.is_admin();
        if !admin && at_correction_cap(job.corrections_count as f64) {
            return Ok(refuse(
                act,
                format!(
                    "retry cap: {} has spent {} corrections, the most a non-admin may spend; a human decision is required (an admin resume lifts the cap).",
                    job.id, job.corrections_count
                ),
            ));
        }
        match verify_job(
            self.config.signing_secret().unwrap_or(""),
            &job.body,
            &job.terms(),
        ) {
            Ok(_) => {}
            Err(SignatureError::NotConfigured) => {
                return Ok(refuse(
                    act,
                    "job signing is not configured on this server (CAPSID_SIGNING_SECRET), so the job body cannot be verified; it stays blocked",
                ));
            }
            Err(e) => return self.fail_tampered(caller, &job, e.to_string()).await,
        }
        let approval = match &a.approved_by_policy {
            None => None,
            Some(version) => match self.policy_approval(&job, version.as_str()).await? {
                Ok(approval) => Some(approval),
                Err(why) => {
                    return Ok(refuse(
                        act,
                        format!(
                            "{} stays blocked: the gate policy does not approve it: {why}",
                            job.id
                        ),
                    ));
                }
            },
        };
        let now = self.now();
        let lease = lease_expiry(now);
        let corrections_after = job.corrections_count + i64::from(!admin);
        let mut params = json!({
            "approved": reason,
            "lease_expires": lease.to_string(),
            "resumed_count": job.resumed_count + 1,
            "corrections_count": corrections_after,
        });
        if admin && at_correction_cap(job.corrections_count as f64) {
            params["cap_lifted_by_admin"] = json!(true);
        }
        if to == ResumeTo::Queue {
            params["returned_to_queue"] = json!(true);
            params["previous_holder"] = json!(job.claimed_by);
            params["lease_expires"] = Value::Null;
        }
        if let Some(ap) = &approval {
            params["approved_by_policy"] = json!(ap.policy_version);
            params["policy_class"] = json!(ap.class.name());
            params["policy_detail"] = json!(ap.detail);
        }
        let event = match to {
            ResumeTo::Caller => JobEvent::Resume,
            ResumeTo::Queue => JobEvent::ResumeToQueue,
        };
        let step = step(JobStatus::Blocked, event)?;
        let t = JobTransition {
            id: job.id.clone(),
            expected: Some(job.clone()),
            step,
            holder: None,
            corrections: Some(job.corrections_count),
            patch: match to {
                ResumeTo::Caller => JobPatch {
                    claimed_by: Change::Set(actor.clone()),
                    claimed_at: Change::Set(now),
                    lease_expires: Change::Set(lease),
                    add_resumed: true,
                    add_correction: !admin,
                    ..JobPatch::default()
                },
                ResumeTo::Queue => JobPatch {
                    claimed_by: Change::Clear,
                    claimed_at: Change::Clear,
                    lease_expires: Change::Clear,
                    add_resumed: true,
                    add_correction: !admin,
                    ..JobPatch::default()
                },
            },
            at: now,
            audit: job_audit(&actor, step.audit_action(), &job, params, now),
            outcome: None,
            mirror: mirror_fn(now),
        };
        match self.jobs.transition_job(t).await {
            Ok(Some(updated)) => {
                let mut out = JobDone::new(act, updated);
                self.attach_run_terms(caller, &mut out).await?;
                Ok(out.into())
            }
            Ok(None) => Ok(refuse(
                act,
                format!(
                    "{} left blocked between reading it and resuming it. Ask again.",
                    job.id
                ),
            )),
            // Both stores name the index that refused: an open title taken meanwhile is not a
            // second claim (a blocked job does not hold its title).
            Err(StoreError::Conflict(why)) if to == ResumeTo::Queue || why.contains("title") => {
                Ok(refuse(
                    act,
                    format!(
                        "{} cannot be resumed: {} already has an open job titled '{}'. Finish or fail that one first.",
                        job.id, job.namespace, job.title
                    ),
                ))
            }
            Err(StoreError::Conflict(_)) => Ok(refuse(
                act,
                format!("{actor} already holds another job. Finish it before resuming another."),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// A tampered body at resume: blocked → failed, recorded as a signature refusal.
    async fn fail_tampered(&self, caller: &Caller, job: &Job, why: String) -> Result<JobsAnswer> {
        let act = JobsAction::Resume;
        let now = self.now();
        let step = step(JobStatus::Blocked, JobEvent::ResumeSignatureRefused)?;
        let t = JobTransition {
            id: job.id.clone(),
            expected: Some(job.clone()),
            step,
            holder: None,
            corrections: None,
            patch: JobPatch {
                result_summary: Change::Set(why.clone()),
                lease_expires: Change::Clear,
                ..JobPatch::default()
            },
            at: now,
            audit: job_audit(
                &caller.actor(),
                step.audit_action(),
                job,
                json!({"reason": why, "at": "resume"}),
                now,
            ),
            outcome: None,
            mirror: mirror_fn(now),
        };
        let updated = self.jobs.transition_job(t).await?;
        let mut out = JobRefused::new(
            act,
            format!(
                "{} failed its signature check and has been marked failed: {why}",
                job.id
            ),
        );
        out.job = updated;
        Ok(out.into())
    }

    /// Whether the signed gate policy pre-approves the command `job` waits on.
    async fn policy_approval(
        &self,
        job: &Job,
        requested: &str,
    ) -> Result<std::result::Result<Approval, String>> {
        let Some(doc) = self
            .docs
            .document(POLICY_NAMESPACE, GATE_POLICY_PATH)
            .await?
        else {
            return Ok(Err(format!(
                "there is no {POLICY_NAMESPACE}/{GATE_POLICY_PATH}"
            )));
        };
        let body = match verify_task(self.config.signing_secret().unwrap_or(""), doc.body_text()) {
            Ok(body) => body.to_owned(),
            Err(e) => {
                return Ok(Err(format!(
                    "the gate policy is not validly signed ({e}); an unsigned or edited policy authorizes nothing"
                )));
            }
        };
        // A valid envelope is not enough: job bodies share it. The signature must be the one
        // the newest signing of this path recorded.
        let signed = self
            .audit_log
            .newest_audit(POLICY_SIGNED_ACTION, POLICY_NAMESPACE, GATE_POLICY_PATH)
            .await?;
        if let Err(why) = signed_by_the_admin(
            doc.body_text(),
            signed.as_ref().and_then(|row| row.params.as_deref()),
        ) {
            return Ok(Err(format!(
                "the gate policy is {why}; it authorizes nothing"
            )));
        }
        let policy = match parse_gate_policy(&body) {
            Ok(p) => p,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let command = job.result_summary.as_deref().and_then(command_from_summary);
        // The migration tools the namespace's runner settings name (unset: d1, the Worker's).
        let tools = self
            .namespaces
            .namespace_runner(&job.namespace)
            .await?
            .map(|json| RunnerSettings::stored(Some(&json)))
            .unwrap_or_default()
            .migration_tools();
        let pre = match pre_approve(&policy, requested, command, &tools) {
            Ok(pre) => pre,
            Err(e) => return Ok(Err(e.to_string())),
        };
        Ok(match pre {
            PreApproval::Approved(approval) => Ok(approval),
            PreApproval::ReadMigration {
                path,
                policy_version,
            } => {
                let sql = self.read_primary_file(&job.namespace, &path).await;
                approve_migration(&policy_version, &path, sql.as_deref()).map_err(|e| e.to_string())
            }
            PreApproval::ReadMigrationFolder {
                dir,
                policy_version,
            } => match self.read_primary_migrations(&job.namespace, &dir).await {
                Some(files) => approve_migration_folder(&policy_version, &dir, &files)
                    .map_err(|e| e.to_string()),
                None => Err(format!(
                    "{dir} could not be listed, so its migrations could not be checked; a migration nobody parsed is not pre-approved"
                )),
            },
        })
    }

    /// Every forward migration of `dir` in the namespace's primary repository, each with its
    /// text (`None`: unreadable), in name order; `None` when the folder cannot be listed.
    async fn read_primary_migrations(
        &self,
        namespace: &str,
        dir: &str,
    ) -> Option<Vec<(String, Option<String>)>> {
        let host = self.repo_host.as_ref()?;
        let row = self.namespaces.namespace(namespace).await.ok()??;
        let list = stored_repos(namespace, row.repos.as_deref()).ok()?;
        let repo = resolve_repo(namespace, &list, None).ok()?;
        let crate::ports::Contents::Dir(entries) = host.contents(&repo, dir, None).await.ok()?
        else {
            return None;
        };
        let mut paths: Vec<String> = entries
            .into_iter()
            .filter(|e| e.kind == "file")
            .filter(|e| is_forward_migration(e.path.rsplit('/').next().unwrap_or("")))
            .map(|e| e.path)
            .collect();
        paths.sort();
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let sql = host.file_text(&repo, &path, None).await.ok();
            files.push((path, sql));
        }
        Some(files)
    }

    /// A file of the namespace's primary repository, or `None` when it cannot be read.
    async fn read_primary_file(&self, namespace: &str, path: &str) -> Option<String> {
        let host = self.repo_host.as_ref()?;
        let row = self.namespaces.namespace(namespace).await.ok()??;
        let list = stored_repos(namespace, row.repos.as_deref()).ok()?;
        let repo = resolve_repo(namespace, &list, None).ok()?;
        host.file_text(&repo, path, None).await.ok()
    }
}
