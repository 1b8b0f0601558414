//! The JSON every surface answers for checkmarks and log entries (the tools, the Handler API
//! and the console show the same objects).

use schemars::JsonSchema;
use serde::Serialize;

use crate::ports::{CheckmarkView, LogEntryRow, SharedEntry};
use crate::time::Timestamp;

/// A log entry as callers read it.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct EntryView {
    /// Entry id.
    pub id: i64,
    /// Namespace.
    pub namespace: String,
    /// The agent that wrote it.
    pub agent: String,
    /// When.
    pub created_at: Timestamp,
    /// The agent's status then.
    pub status: &'static str,
    /// The agent's session.
    pub session_id: Option<String>,
    /// What happened.
    pub summary: Option<String>,
    /// Decisions taken.
    pub decisions: Option<String>,
    /// The open question, if any.
    pub question: Option<String>,
    /// Its answer.
    pub answer: Option<String>,
    /// Who answered.
    pub answered_by: Option<String>,
    /// When.
    pub answered_at: Option<Timestamp>,
    /// `private` or `global`.
    pub visibility: &'static str,
    /// The commit pushed.
    pub push_sha: Option<String>,
    /// CI's verdict on it.
    pub ci_status: &'static str,
    /// When CI was last asked.
    pub ci_checked_at: Option<Timestamp>,
    /// The job it worked on.
    pub job_id: Option<String>,
    /// What the session cost.
    pub cost_usd: Option<f64>,
    /// Model turns.
    pub turns: Option<i64>,
}

/// A log entry as callers read it.
pub fn entry_view(e: &LogEntryRow) -> EntryView {
    EntryView {
        id: e.id,
        namespace: e.namespace.clone(),
        agent: e.agent.clone(),
        created_at: e.created_at,
        status: e.status.as_str(),
        session_id: e.session_id.clone(),
        summary: e.summary.clone(),
        decisions: e.decisions.clone(),
        question: e.question.clone(),
        answer: e.answer.clone(),
        answered_by: e.answered_by.clone(),
        answered_at: e.answered_at,
        visibility: e.visibility.as_str(),
        push_sha: e.push_sha.clone(),
        ci_status: e.ci_status.as_str(),
        ci_checked_at: e.ci_checked_at,
        job_id: e.job_id.clone(),
        cost_usd: e.cost_usd,
        turns: e.turns,
    }
}

/// A pending resume: what a driver consumes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ResumeView {
    /// When the resume was asked.
    pub requested_at: Timestamp,
    /// By whom.
    pub requested_by: Option<String>,
    /// The answer to resume with.
    pub answer: Option<String>,
    /// The session to resume.
    pub session_id: Option<String>,
}

/// A checkmark as callers read it.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct CheckmarkJson {
    /// Checkmark id.
    pub id: i64,
    /// Namespace.
    pub namespace: String,
    /// The agent.
    pub agent: String,
    /// Its status.
    pub status: &'static str,
    /// When it last checkpointed.
    pub checkpoint_at: Timestamp,
    /// Where it stopped.
    pub where_it_stopped: Option<String>,
    /// What it means to do next.
    pub next_steps: Vec<String>,
    /// Its open question.
    pub open_question: Option<String>,
    /// The answer, from the linked entry.
    pub answer: Option<String>,
    /// Who answered.
    pub answered_by: Option<String>,
    /// When.
    pub answered_at: Option<Timestamp>,
    /// Its test gate.
    pub tests_status: &'static str,
    /// When tested.
    pub tested_at: Option<Timestamp>,
    /// Its build gate.
    pub build_status: &'static str,
    /// When built.
    pub built_at: Option<Timestamp>,
    /// Its job.
    pub job_id: Option<String>,
    /// The entry it links to.
    pub log_entry_id: i64,
    /// That entry's summary.
    pub summary: Option<String>,
    /// That entry's session.
    pub session_id: Option<String>,
    /// The pending resume, or null.
    pub resume: Option<ResumeView>,
}

/// A checkmark as callers read it: its own fields, the question and answer of the entry it
/// links to, that entry's summary, and the pending resume (what a driver consumes).
pub fn checkmark_view(v: &CheckmarkView) -> CheckmarkJson {
    let c = &v.checkmark;
    let e = &v.entry;
    let resume = c.resume_requested_at.map(|at| ResumeView {
        requested_at: at,
        requested_by: c.resume_requested_by.clone(),
        answer: e.answer.clone(),
        session_id: e.session_id.clone(),
    });
    CheckmarkJson {
        id: c.id,
        namespace: c.namespace.clone(),
        agent: c.agent.clone(),
        status: c.status.as_str(),
        checkpoint_at: c.checkpoint_at,
        where_it_stopped: c.where_it_stopped.clone(),
        next_steps: c.next_steps.clone(),
        open_question: c.open_question.clone(),
        answer: e.answer.clone(),
        answered_by: e.answered_by.clone(),
        answered_at: e.answered_at,
        tests_status: c.tests_status.as_str(),
        tested_at: c.tested_at,
        build_status: c.build_status.as_str(),
        built_at: c.built_at,
        job_id: c.job_id.clone(),
        log_entry_id: c.log_entry_id,
        summary: e.summary.clone(),
        session_id: e.session_id.clone(),
        resume,
    }
}

/// A shared-context entry as callers read it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SharedView {
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: String,
    /// Who set it.
    pub set_by: String,
    /// When.
    pub updated_at: Timestamp,
}

/// A shared-context entry as callers read it.
pub fn shared_view(s: &SharedEntry) -> SharedView {
    SharedView {
        key: s.key.clone(),
        value: s.value.clone(),
        set_by: s.set_by.clone(),
        updated_at: s.updated_at,
    }
}

/// The console page that shows `agent`'s checkmark and log in `namespace` (a path; the HTTP
/// adapter makes it absolute).
pub fn console_path(namespace: &str, agent: &str) -> String {
    format!(
        "/console?log_namespace={}&log_agent={}#checkmarks",
        query_escape(namespace),
        query_escape(agent)
    )
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_paths_escape_names() {
        assert_eq!(
            console_path("alpha", "d1"),
            "/console?log_namespace=alpha&log_agent=d1#checkmarks"
        );
        assert_eq!(
            console_path("a b&c", "ü"),
            "/console?log_namespace=a%20b%26c&log_agent=%C3%BC#checkmarks"
        );
    }
}
