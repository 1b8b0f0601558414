//! What waits on the owner, the top of the console (the `attention` key of `/console.json`):
//! agents' open questions, blocked jobs with the exact command each waits on, recently failed
//! jobs with the tail of their failure, checkmarks whose tests or build fail, and namespaces
//! whose month of job spend has reached its budget (they claim nothing more). And the rule
//! that a checkmark's status follows its job: an agent that says it is working on a job that
//! has since failed or blocked is shown as the job is.

use serde_json::{Value, json};

use super::OwnerService;
use super::console::require_owner;
use crate::caller::Caller;
use crate::checkmarks::AgentStatus;
use crate::checkmarks::rules;
use crate::error::Result;
use crate::jobs::JobStatus;
use crate::jobs::block::command_from_summary;
use crate::jobs::model::Job;
use crate::ports::JobFilter;
use crate::time::DAY_MS;

/// Failed jobs stay on the owner's list this long after they failed.
pub const FAILED_SHOWN_MS: i64 = 7 * DAY_MS;
/// At most this many failed jobs are listed.
pub const FAILED_ROWS: usize = 20;
/// At most this many blocked jobs are listed.
pub const BLOCKED_ROWS: usize = 50;
/// The tail of a failure shown: its last lines, at most this many...
pub const TAIL_LINES: usize = 15;
/// ...and at most this many characters.
pub const TAIL_CHARS: usize = 2000;

/// The last `TAIL_LINES` lines (at most `TAIL_CHARS` characters) of a failure summary,
/// where a test run's or a build's verdict is.
pub fn failing_tail(summary: &str) -> String {
    let lines: Vec<&str> = summary.trim_end().lines().collect();
    let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    let count = tail.chars().count();
    if count <= TAIL_CHARS {
        return tail;
    }
    tail.chars().skip(count - TAIL_CHARS).collect()
}

/// Whether a checkmark waits for the owner's answer (the console's Answer forms).
pub fn waits_for_answer(c: &Value) -> bool {
    c["status"]
        .as_str()
        .and_then(AgentStatus::parse)
        .is_some_and(|status| {
            rules::waits_for_answer(
                status,
                c["open_question"].is_string(),
                !c["answer"].is_null(),
            )
        })
}

/// The status a checkmark shows, given the status of the job it names: `working` on a job
/// that failed or blocked shows as the job; anything else shows as the agent said.
pub fn status_following_job(checkmark_status: &str, job: Option<JobStatus>) -> &str {
    match (checkmark_status, job) {
        ("working", Some(JobStatus::Failed)) => "failed",
        ("working", Some(JobStatus::Blocked)) => "blocked",
        (said, _) => said,
    }
}

fn job_line(j: &Job) -> Value {
    json!({
        "id": j.id, "namespace": j.namespace, "title": j.title, "status": j.status.as_str(),
        "holder": j.claimed_by, "updated_at": j.updated_at,
    })
}

impl OwnerService {
    /// The owner's list (see the module), and every checkmark of `checkmarks` (the panel's
    /// object) with its status following its job.
    pub async fn console_attention(
        &self,
        caller: &Caller,
        checkmarks: &mut Value,
    ) -> Result<Value> {
        require_owner(caller)?;
        let now = self.now();
        let blocked: Vec<Value> = self
            .jobs
            .jobs(
                &JobFilter {
                    namespace: None,
                    status: Some(JobStatus::Blocked),
                },
                BLOCKED_ROWS,
            )
            .await?
            .iter()
            .map(|j| {
                let mut line = job_line(j);
                let summary = j.result_summary.as_deref().unwrap_or("");
                line["waiting_on"] = json!(command_from_summary(summary));
                line["reason"] = json!(summary);
                line["blocked_times"] = json!(j.blocked_count);
                line
            })
            .collect();
        let mut failed: Vec<Job> = self
            .jobs
            .jobs(
                &JobFilter {
                    namespace: None,
                    status: Some(JobStatus::Failed),
                },
                FAILED_ROWS * 5,
            )
            .await?
            .into_iter()
            .filter(|j| now.millis_since(j.updated_at) <= FAILED_SHOWN_MS)
            .collect();
        failed.sort_by_key(|j| std::cmp::Reverse(j.updated_at));
        // A failure the owner dismissed is off the list (until its setting expires).
        let settings = self.tools.store();
        let mut kept = Vec::with_capacity(failed.len());
        for j in failed {
            let key = super::console::dismissed_key(&j.id);
            if settings.setting(&key, now).await?.is_none() {
                kept.push(j);
            }
        }
        let mut failed = kept;
        failed.truncate(FAILED_ROWS);
        let failed: Vec<Value> = failed
            .iter()
            .map(|j| {
                let mut line = job_line(j);
                line["tail"] = json!(failing_tail(j.result_summary.as_deref().unwrap_or("")));
                line
            })
            .collect();
        let mut questions = Vec::new();
        let mut failing = Vec::new();
        for ns in checkmarks["namespaces"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            for c in ns["agents"].as_array_mut().into_iter().flatten() {
                self.follow_job(c).await?;
                let who = json!({"namespace": c["namespace"], "agent": c["agent"]});
                if waits_for_answer(c) {
                    let mut q = who.clone();
                    q["question"] = c["open_question"].clone();
                    q["where_it_stopped"] = c["where_it_stopped"].clone();
                    q["status"] = c["status"].clone();
                    questions.push(q);
                }
                if c["tests_status"] == "fail" || c["build_status"] == "fail" {
                    let mut f = who;
                    f["tests_status"] = c["tests_status"].clone();
                    f["build_status"] = c["build_status"].clone();
                    f["job_id"] = c["job_id"].clone();
                    failing.push(f);
                }
            }
        }
        // A namespace whose month is spent claims and resumes nothing until its budget rises.
        let over_budget: Vec<Value> = crate::service::budget_states(
            &**self.tools.store(),
            self.tools.config.default_monthly_budget_usd,
            now,
        )
        .await?
        .into_iter()
        .filter(|b| b.exhausted())
        .map(|b| {
            json!({"namespace": b.namespace, "month": b.month, "spent_usd": b.spent_usd,
                   "budget_usd": b.budget_usd, "source": b.source})
        })
        .collect();
        let count =
            questions.len() + blocked.len() + failed.len() + failing.len() + over_budget.len();
        Ok(json!({
            "count": count,
            "questions": questions,
            "blocked_jobs": blocked,
            "failed_jobs": failed,
            "failing_checks": failing,
            "over_budget": over_budget,
        }))
    }

    /// Sets a checkmark's shown `status` from its job (keeping the agent's own word as
    /// `checkmark_status` and the job's as `job_status`).
    async fn follow_job(&self, c: &mut Value) -> Result<()> {
        let said = c["status"].as_str().unwrap_or_default().to_owned();
        let job = match c["job_id"].as_str() {
            Some(id) if said == "working" => self.jobs.job(id).await?,
            _ => None,
        };
        let shown = status_following_job(&said, job.as_ref().map(|j| j.status));
        if shown != said {
            c["checkmark_status"] = json!(said);
            c["job_status"] = json!(job.map(|j| j.status.as_str()));
            c["status"] = json!(shown);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_shows_its_last_lines_bounded() {
        let summary: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let tail = failing_tail(&summary);
        assert!(
            tail.starts_with("line 26\n") && tail.ends_with("line 40"),
            "{tail}"
        );
        assert_eq!(failing_tail("one line"), "one line");
        let long = "x".repeat(TAIL_CHARS * 2);
        assert_eq!(failing_tail(&long).chars().count(), TAIL_CHARS);
        assert_eq!(failing_tail(""), "");
    }

    #[test]
    fn a_working_checkmark_follows_its_failed_or_blocked_job() {
        assert_eq!(
            status_following_job("working", Some(JobStatus::Failed)),
            "failed"
        );
        assert_eq!(
            status_following_job("working", Some(JobStatus::Blocked)),
            "blocked"
        );
        assert_eq!(
            status_following_job("working", Some(JobStatus::Claimed)),
            "working"
        );
        assert_eq!(status_following_job("working", None), "working");
        assert_eq!(
            status_following_job("done", Some(JobStatus::Failed)),
            "done",
            "only a claim of work is corrected"
        );
    }

    #[test]
    fn only_an_unanswered_question_of_a_paused_agent_waits() {
        let q = json!({"status": "paused_for_input", "open_question": "which?", "answer": null});
        assert!(waits_for_answer(&q));
        let mut answered = q.clone();
        answered["answer"] = json!("this");
        assert!(!waits_for_answer(&answered));
        let mut working = q;
        working["status"] = json!("working");
        assert!(!waits_for_answer(&working));
    }
}
