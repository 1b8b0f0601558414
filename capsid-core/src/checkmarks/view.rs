//! The JSON every surface answers for checkmarks and log entries (the tools, the Handler API
//! and the console show the same objects).

use serde_json::{Value, json};

use crate::ports::{CheckmarkView, LogEntryRow, SharedEntry};

/// A log entry as callers read it.
pub fn entry_json(e: &LogEntryRow) -> Value {
    json!({
        "id": e.id,
        "namespace": e.namespace,
        "agent": e.agent,
        "created_at": e.created_at,
        "status": e.status.as_str(),
        "session_id": e.session_id,
        "summary": e.summary,
        "decisions": e.decisions,
        "question": e.question,
        "answer": e.answer,
        "answered_by": e.answered_by,
        "answered_at": e.answered_at,
        "visibility": e.visibility.as_str(),
        "push_sha": e.push_sha,
        "ci_status": e.ci_status.as_str(),
        "ci_checked_at": e.ci_checked_at,
        "job_id": e.job_id,
        "cost_usd": e.cost_usd,
        "turns": e.turns,
    })
}

/// A checkmark as callers read it: its own fields, the question and answer of the entry it
/// links to, that entry's summary, and the pending resume (what a driver consumes).
pub fn checkmark_json(v: &CheckmarkView) -> Value {
    let c = &v.checkmark;
    let e = &v.entry;
    let resume = c.resume_requested_at.as_ref().map(|at| {
        json!({
            "requested_at": at,
            "requested_by": c.resume_requested_by,
            "answer": e.answer,
            "session_id": e.session_id,
        })
    });
    json!({
        "id": c.id,
        "namespace": c.namespace,
        "agent": c.agent,
        "status": c.status.as_str(),
        "checkpoint_at": c.checkpoint_at,
        "where_it_stopped": c.where_it_stopped,
        "next_steps": c.next_steps,
        "open_question": c.open_question,
        "answer": e.answer,
        "answered_by": e.answered_by,
        "answered_at": e.answered_at,
        "tests_status": c.tests_status.as_str(),
        "tested_at": c.tested_at,
        "build_status": c.build_status.as_str(),
        "built_at": c.built_at,
        "job_id": c.job_id,
        "log_entry_id": c.log_entry_id,
        "summary": e.summary,
        "session_id": e.session_id,
        "resume": resume,
    })
}

/// A shared-context entry as callers read it.
pub fn shared_json(s: &SharedEntry) -> Value {
    json!({
        "key": s.key,
        "value": s.value,
        "set_by": s.set_by,
        "updated_at": s.updated_at,
    })
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
