//! The checkmark port: each agent's current-state record per namespace, the append-only log
//! its checkpoints write, the answer backfill, and the shared context. Every change is one
//! transaction with its audit row: a checkpoint inserts its log entry, upserts the checkmark
//! (keyed by namespace and agent) onto it and audits both; an answer or a resume is a keyed
//! conditional update of the checkmark (status and linked entry) and, for an answer, of the
//! entry (asked and not yet answered), so a lost race writes nothing; a promotion to `global`
//! is a keyed conditional update of the entry (still `project`) with its audit row.

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::checkmarks::{AgentStatus, CiStatus, GateStatus, Step, Visibility};
use crate::time::Timestamp;

/// A `checkmarks` row: one per (namespace, agent), overwritten by every checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckmarkRow {
    /// Row id (stable across checkpoints).
    pub id: i64,
    /// Namespace.
    pub namespace: String,
    /// The agent's name.
    pub agent: String,
    /// When the agent last checkpointed.
    pub checkpoint_at: Timestamp,
    /// Its status.
    pub status: AgentStatus,
    /// Where it stopped.
    pub where_it_stopped: Option<String>,
    /// What comes next (stored as a JSON list).
    pub next_steps: Vec<String>,
    /// The question it asked, if it waits on a human.
    pub open_question: Option<String>,
    /// The log entry this checkmark links to.
    pub log_entry_id: i64,
    /// What the test run said, and when.
    pub tests_status: GateStatus,
    /// When the tests ran.
    pub tested_at: Option<Timestamp>,
    /// What the build check said.
    pub build_status: GateStatus,
    /// When the build check ran.
    pub built_at: Option<Timestamp>,
    /// The job the work belongs to, if any.
    pub job_id: Option<String>,
    /// When somebody asked for the agent to be resumed (cleared by its next checkpoint).
    pub resume_requested_at: Option<Timestamp>,
    /// Who asked.
    pub resume_requested_by: Option<String>,
}

/// A `log_entries` row: insert-only, but for the one answer backfill (and the CI verdict a
/// poller records).
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntryRow {
    /// Row id (newest is largest).
    pub id: i64,
    /// Namespace.
    pub namespace: String,
    /// The agent's name.
    pub agent: String,
    /// When.
    pub created_at: Timestamp,
    /// The agent session that wrote it.
    pub session_id: Option<String>,
    /// The status it recorded.
    pub status: AgentStatus,
    /// What happened.
    pub summary: Option<String>,
    /// Decisions taken.
    pub decisions: Option<String>,
    /// The question asked.
    pub question: Option<String>,
    /// The answer, once given.
    pub answer: Option<String>,
    /// Who answered.
    pub answered_by: Option<String>,
    /// When.
    pub answered_at: Option<Timestamp>,
    /// Who may read it.
    pub visibility: Visibility,
    /// The commit it pushed.
    pub push_sha: Option<String>,
    /// CI's verdict on that commit.
    pub ci_status: CiStatus,
    /// When CI was last asked.
    pub ci_checked_at: Option<Timestamp>,
    /// The job the work belongs to.
    pub job_id: Option<String>,
    /// What the session cost, in US dollars.
    pub cost_usd: Option<f64>,
    /// How many turns the session took.
    pub turns: Option<i64>,
}

/// A checkmark with the entry it links to (read together in one query).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckmarkView {
    /// The checkmark.
    pub checkmark: CheckmarkRow,
    /// Its entry.
    pub entry: LogEntryRow,
}

/// A checkpoint to record: the checkmark's new state and its log entry.
#[derive(Clone, Debug, PartialEq)]
pub struct NewCheckpoint {
    /// Namespace.
    pub namespace: String,
    /// The agent's name.
    pub agent: String,
    /// When.
    pub at: Timestamp,
    /// Status.
    pub status: AgentStatus,
    /// Where it stopped.
    pub where_it_stopped: Option<String>,
    /// What comes next.
    pub next_steps: Vec<String>,
    /// The question it asks.
    pub question: Option<String>,
    /// Test gate.
    pub tests_status: GateStatus,
    /// When the tests ran (`None` when unknown).
    pub tested_at: Option<Timestamp>,
    /// Build gate.
    pub build_status: GateStatus,
    /// When the build check ran (`None` when unknown).
    pub built_at: Option<Timestamp>,
    /// The job, if any.
    pub job_id: Option<String>,
    /// Session.
    pub session_id: Option<String>,
    /// What happened.
    pub summary: Option<String>,
    /// Decisions.
    pub decisions: Option<String>,
    /// Visibility of the entry.
    pub visibility: Visibility,
    /// Pushed commit.
    pub push_sha: Option<String>,
    /// CI verdict at insert (`pending` when something was pushed).
    pub ci_status: CiStatus,
    /// Cost.
    pub cost_usd: Option<f64>,
    /// Turns.
    pub turns: Option<i64>,
}

/// Builds a checkpoint's audit row once its entry id is known.
pub type CheckpointAuditFn = Box<dyn Fn(&LogEntryRow) -> AuditEntry + Send + Sync>;

/// An answer to write into the entry that asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnswerFill {
    /// The answer.
    pub answer: String,
    /// Who answered.
    pub by: String,
}

/// An answer or a resume: a keyed conditional update of one checkmark.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckmarkTransition {
    /// Namespace.
    pub namespace: String,
    /// The agent's name.
    pub agent: String,
    /// The step (the status the checkmark must be in, and the one it takes).
    pub step: Step,
    /// The entry the checkmark must still link to.
    pub entry_id: i64,
    /// The answer to fill (only into an entry that asked and has no answer yet).
    pub answer: Option<AnswerFill>,
    /// Who asked for a resume, when the step resumes.
    pub resume_by: Option<String>,
    /// When.
    pub at: Timestamp,
    /// Its audit row.
    pub audit: AuditEntry,
}

/// One shared-context key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedEntry {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// The actor who set it.
    pub set_by: String,
    /// When.
    pub updated_at: Timestamp,
}

/// Checkmarks, the log and the shared context.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait CheckmarkStore: Send + Sync {
    /// Inserts the entry, upserts the checkmark keyed by (namespace, agent) onto it (clearing
    /// any resume request) and appends the audit row `audit` builds, in one transaction.
    async fn checkpoint(
        &self,
        checkpoint: NewCheckpoint,
        audit: CheckpointAuditFn,
    ) -> StoreResult<CheckmarkView>;
    /// The checkmark of `agent` in `namespace`, with its entry.
    async fn checkmark(&self, namespace: &str, agent: &str) -> StoreResult<Option<CheckmarkView>>;
    /// Every checkmark of `namespace` with its entry, by agent name, at most `limit` (one query).
    async fn checkmarks(&self, namespace: &str, limit: usize) -> StoreResult<Vec<CheckmarkView>>;
    /// The entries of `agent` in `namespace`, newest first, below id `before` when given.
    async fn log_entries(
        &self,
        namespace: &str,
        agent: &str,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LogEntryRow>>;
    /// The `global` entries (of `namespace` only, when given), newest first, below `before`.
    async fn global_entries(
        &self,
        namespace: Option<&str>,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LogEntryRow>>;
    /// Entry `id` of `namespace`.
    async fn log_entry(&self, namespace: &str, id: i64) -> StoreResult<Option<LogEntryRow>>;
    /// Turns entry `id` of `namespace` from `project` to `global` and appends `audit`, in one
    /// transaction: the entry as it now is, or `None` (nothing written) when it is not there or
    /// is not `project` any more.
    async fn promote_entry(
        &self,
        namespace: &str,
        id: i64,
        audit: AuditEntry,
    ) -> StoreResult<Option<LogEntryRow>>;
    /// Applies an answer or a resume: the entry (when answering) only if it asked and has no
    /// answer, the checkmark only if it is in `step.from` and links to `entry_id`; then the
    /// audit row. `None`, with nothing written, when either guard lost.
    async fn transition_checkmark(
        &self,
        transition: CheckmarkTransition,
    ) -> StoreResult<Option<CheckmarkView>>;
    /// One shared-context key.
    async fn shared_entry(&self, key: &str) -> StoreResult<Option<SharedEntry>>;
    /// Shared-context keys in key order, at most `limit`.
    async fn shared_entries(&self, limit: usize) -> StoreResult<Vec<SharedEntry>>;
    /// Sets a key (last writer wins) and appends `audit`, in one transaction; the previous
    /// entry, if any.
    async fn set_shared(
        &self,
        entry: SharedEntry,
        audit: AuditEntry,
    ) -> StoreResult<Option<SharedEntry>>;
    /// Deletes a key and appends `audit` in one transaction; the deleted entry, or `None`
    /// (nothing written) when there was none.
    async fn delete_shared(&self, key: &str, audit: AuditEntry)
    -> StoreResult<Option<SharedEntry>>;
}
