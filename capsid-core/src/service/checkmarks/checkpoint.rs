//! `checkpoint`: the caller records its own checkmark in a namespace and appends a log entry,
//! in one transaction with the audit row (a `job_id` only of a job the caller holds, any for
//! the admin: `rules::may_name_job`); an agent that asks a question or blocks is
//! announced to the notifier.

use serde_json::json;

use super::CheckmarksCx;
use super::args::CheckpointArgs;
use crate::caller::Caller;
use crate::checkmarks::rules::{CheckpointClaims, check_checkpoint, may_name_job};
use crate::checkmarks::view::{CheckmarkJson, EntryView, checkmark_view, console_path, entry_view};
use crate::checkmarks::{
    AgentStatus, CheckmarkEvent, CiStatus, GateStatus, Visibility, audit_path,
};
use crate::error::{Error, Result};
use crate::ports::{LogEntryRow, NewCheckpoint, Notification};
use crate::service::{Area, require_namespace};

/// Trimmed text, `None` when blank.
fn text<const N: usize>(v: Option<crate::service::args::Bounded<N>>) -> Option<String> {
    v.map(|b| b.0.trim().to_owned()).filter(|t| !t.is_empty())
}

/// The `checkpoint` answer: both ids, the checkmark and the entry appended.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Checkpointed {
    /// The checkmark's id.
    pub checkmark_id: i64,
    /// The new entry's id.
    pub log_entry_id: i64,
    /// The checkmark now.
    pub checkmark: CheckmarkJson,
    /// The entry appended.
    pub log_entry: EntryView,
}

impl CheckmarksCx<'_> {
    pub(crate) async fn checkpoint(
        &self,
        caller: &Caller,
        a: CheckpointArgs,
    ) -> Result<Checkpointed> {
        let namespace = a.namespace.as_str().to_owned();
        let next_steps: Vec<String> = a
            .next_steps
            .map(|n| n.0.into_iter().map(|s| s.0.trim().to_owned()).collect())
            .unwrap_or_default();
        let question = text(a.question);
        let tests_status = a.tests_status.unwrap_or(GateStatus::Unknown);
        let build_status = a.build_status.unwrap_or(GateStatus::Unknown);
        let push_sha = text(a.push_sha).map(|s| s.to_ascii_lowercase());
        let cost_usd = a.cost_usd;
        check_checkpoint(&CheckpointClaims {
            status: a.status,
            question: question.as_deref(),
            tests_status,
            clean_tree: a.clean_tree == Some(true),
            push_sha: push_sha.as_deref(),
            next_steps: &next_steps,
            cost_usd,
        })
        .map_err(|e| Error::Invalid(format!("checkpoint: {e}")))?;
        // The table accepts a checkpoint from every state and leads it to the status it
        // records, so the upsert needs no guard on the current status.
        let status = a.status;
        let agent = self
            .writer_for(caller, a.agent.as_ref().map(|n| n.as_str()), &namespace)
            .await?;
        require_namespace(self.namespaces, &namespace).await?;
        let mut job_id = text(a.job_id);
        if let Some(run_job) = caller.run_job() {
            if job_id.as_deref().is_some_and(|j| j != run_job) {
                return Err(Error::Forbidden(format!(
                    "checkpoint: a run credential records only its own job ({run_job}); job_id {} is not it",
                    job_id.unwrap_or_default()
                )));
            }
            if status == AgentStatus::Done {
                return Err(Error::Forbidden(
                    "checkpoint: a run credential may not mark the checkmark done; the driver does, once its own test gate passed".into(),
                ));
            }
            // Its words stay in its own namespace's feed, never every namespace's.
            if a.visibility == Some(Visibility::Global) {
                return Err(Error::Forbidden(
                    "checkpoint: a run credential writes with visibility project only; global entries reach every namespace's feed, and only the driver or a person may write those".into(),
                ));
            }
            job_id = Some(run_job.to_owned());
        }
        if let Some(id) = &job_id {
            match self.jobs.job(id).await? {
                Some(job) if job.namespace == namespace => {
                    // A run credential holds its job through its driver.
                    may_name_job(
                        &caller.holder_actor(),
                        caller.is_admin(),
                        id,
                        job.claimed_by.as_deref(),
                    )
                    .map_err(|e| Error::Forbidden(format!("checkpoint: {e}")))?;
                }
                _ => {
                    return Err(Error::NotFound(format!(
                        "checkpoint: job_id {id} is not a job of namespace {namespace}"
                    )));
                }
            }
        }
        let now = self.now();
        let ran = |g: GateStatus| (g != GateStatus::Unknown).then_some(now);
        let checkpoint = NewCheckpoint {
            namespace: namespace.clone(),
            agent: agent.clone(),
            at: now,
            status,
            where_it_stopped: text(a.where_it_stopped),
            next_steps,
            question,
            tests_status,
            tested_at: ran(tests_status),
            build_status,
            built_at: ran(build_status),
            job_id,
            session_id: text(a.session_id),
            summary: text(a.summary),
            decisions: text(a.decisions),
            visibility: a.visibility.unwrap_or(Visibility::Project),
            ci_status: if push_sha.is_some() {
                CiStatus::Pending
            } else {
                CiStatus::NotApplicable
            },
            push_sha,
            cost_usd,
            turns: a.turns.map(i64::from),
        };
        let base = self.audit(
            caller,
            CheckmarkEvent::Checkpoint(status).audit_action(),
            Some(&namespace),
            Some(&audit_path(&agent)),
            json!({
                "agent": agent,
                "status": status.as_str(),
                "tests_status": tests_status.as_str(),
                "build_status": build_status.as_str(),
                "visibility": checkpoint.visibility.as_str(),
                "job_id": checkpoint.job_id,
                "push_sha": checkpoint.push_sha,
                "asks": checkpoint.question.is_some(),
            }),
        );
        let audit = Box::new(move |entry: &LogEntryRow| {
            let mut row = base.clone();
            row.params["log_entry_id"] = json!(entry.id);
            row
        });
        let view = self.checkmarks.checkpoint(checkpoint, audit).await?;
        if status.waits_on_a_human() {
            self.announce(&view.entry, view.checkmark.where_it_stopped.as_deref())
                .await;
        }
        Ok(Checkpointed {
            checkmark_id: view.checkmark.id,
            log_entry_id: view.entry.id,
            checkmark: checkmark_view(&view),
            log_entry: entry_view(&view.entry),
        })
    }

    /// Tells the notifier that an agent asks a question or blocks (best effort).
    async fn announce(&self, entry: &LogEntryRow, where_it_stopped: Option<&str>) {
        let Some(notifier) = self.notifier else {
            return;
        };
        let event = match entry.status {
            AgentStatus::PausedForInput => "checkmark-paused_for_input",
            _ => "checkmark-blocked",
        };
        notifier
            .notify(Notification {
                event: event.to_owned(),
                namespace: entry.namespace.clone(),
                job_id: entry.job_id.clone(),
                title: None,
                agent: Some(entry.agent.clone()),
                question: entry.question.clone(),
                reason: where_it_stopped.unwrap_or_default().to_owned(),
                command: None,
                link: Some(console_path(&entry.namespace, &entry.agent)),
                at: entry.created_at.to_string(),
            })
            .await;
    }
}
