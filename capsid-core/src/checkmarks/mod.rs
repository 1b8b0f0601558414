//! Checkmarks and the log (SPEC 8; the sister design's sections 3.1, 3.3 and 3.4): every agent
//! keeps one current-state record per namespace (its checkmark: status, where it stopped, next
//! steps, open question, tests and build status) linked to an entry of an append-only log; a
//! person answers an open question and the agent resumes with the answer; a few entries are
//! marked `global` for readers of every namespace, and a small shared context holds standing
//! facts whose writes need `can_write_shared`.
//!
//! Pure rules only: the statuses and their table of transitions ([`state`]), what a checkpoint
//! may say and when an answer or a resume is accepted ([`rules`]), the log's cursor
//! ([`cursor`]), shared-context keys ([`shared`]) and the JSON every surface answers
//! ([`view`]). The service does the IO through [`crate::ports::CheckmarkStore`].

pub mod ci;
pub mod cursor;
pub mod rules;
pub mod shared;
pub mod state;
pub mod status;
pub mod view;

pub use state::{CheckmarkEvent, IllegalTransition, Step, step, transition};
pub use status::{AgentStatus, CiStatus, GateStatus, Visibility};

/// Audit action: an agent recorded a checkpoint (its checkmark and a log entry).
pub const AUDIT_CHECKPOINT: &str = "checkpoint";
/// Audit action: somebody answered an agent's open question.
pub const AUDIT_ANSWERED: &str = "checkmark-answered";
/// Audit action: somebody asked for an agent to be resumed (with its answer).
pub const AUDIT_RESUME_REQUESTED: &str = "checkmark-resume-requested";
/// Audit action: a shared-context key was set.
pub const AUDIT_SHARED_SET: &str = "shared-set";
/// Audit action: a log entry was promoted to `global` after it was written.
pub const AUDIT_PROMOTED: &str = "log-entry-promoted";
/// Audit action: a shared-context key was deleted.
pub const AUDIT_SHARED_DELETE: &str = "shared-delete";

/// Longest `where_it_stopped`.
pub const WHERE_IT_STOPPED_MAX: usize = 4096;
/// Longest single next step.
pub const NEXT_STEP_MAX: usize = 1024;
/// Most next steps in one checkmark.
pub const NEXT_STEPS_MAX: usize = 50;
/// Longest question.
pub const QUESTION_MAX: usize = 4096;
/// Longest answer.
pub const ANSWER_MAX: usize = 16_384;
/// Longest summary, and longest decisions text.
pub const SUMMARY_MAX: usize = 65_536;
/// Longest session id (a Claude Code session is a UUID).
pub const SESSION_ID_MAX: usize = 256;
/// Longest agent name (as minted).
pub const AGENT_NAME_MAX: usize = 64;
/// The largest cost one checkpoint may report, in US dollars.
pub const COST_USD_MAX: f64 = 1_000_000.0;
/// The most turns one checkpoint may report.
pub const TURNS_MAX: u32 = 1_000_000;
/// Log entries per page when the caller does not say.
pub const LOG_ROWS_DEFAULT: usize = 20;
/// Most log entries per page.
pub const LOG_ROWS_MAX: usize = 100;
/// Most checkmarks `list` answers for one namespace, and most shared keys `shared list` answers.
pub const LIST_ROWS_MAX: usize = 500;

/// The audit path of an agent's checkmark in its namespace.
pub fn audit_path(agent: &str) -> String {
    format!("checkmarks/{agent}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkmark's audit rows (checkpoint, answer, resume, the console's actions) are filed
    /// under `checkmarks/<agent>` in the agent's namespace: the activity filter and the audit
    /// trail of one agent find them there, apart from any document path.
    #[test]
    fn an_agents_audit_rows_are_filed_under_checkmarks_and_its_name() {
        assert_eq!(audit_path("d1"), "checkmarks/d1");
        assert_eq!(audit_path("builder-2"), "checkmarks/builder-2");
        assert_ne!(audit_path("a"), audit_path("b"));
    }
}
