//! The intake port: which tracker issues became which job. One row per issue, keyed on
//! `(repo, number)` (and the job id unique), inserted before the job is posted with the job's
//! id chosen then, so concurrent ticks or replicas agree on one job per issue; every later
//! change is keyed on the state it leaves, with its audit row in the same unit of work.

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::time::Timestamp;

/// An issue taken in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewIntakeIssue {
    /// `owner/name`, lower-cased (GitHub's names are case-insensitive).
    pub repo: String,
    /// The issue's number.
    pub number: u64,
    /// GitHub's id of the issue.
    pub issue_id: u64,
    /// The namespace whose mapping reached the repository.
    pub namespace: String,
    /// The job the issue becomes (posted after this row is recorded).
    pub job_id: String,
    /// The SHA-256 of the issue body the job is made from.
    pub body_sha256: String,
    /// When.
    pub at: Timestamp,
}

/// A recorded issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntakeIssueRow {
    /// See [`NewIntakeIssue`].
    pub repo: String,
    /// See [`NewIntakeIssue`].
    pub number: u64,
    /// See [`NewIntakeIssue`].
    pub issue_id: u64,
    /// See [`NewIntakeIssue`].
    pub namespace: String,
    /// See [`NewIntakeIssue`].
    pub job_id: String,
    /// See [`NewIntakeIssue`].
    pub body_sha256: String,
    /// The digest of the newest body the intake noted (the posted one until an edit).
    pub noted_sha256: String,
    /// When the issue was told its job's id.
    pub commented_at: Option<Timestamp>,
    /// When the loop between issue and job closed.
    pub closed_at: Option<Timestamp>,
    /// How it closed.
    pub outcome: Option<String>,
    /// When recorded.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
}

/// A keyed change of a recorded issue: each applies only from the state it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntakeChange {
    /// The job's id is about to be commented on the issue (only when not yet commented).
    Commented,
    /// The comment failed: it may be tried again (only when commented).
    Uncommented,
    /// An edited body was noted (only when `sha256` is not the noted one).
    Noted {
        /// The edited body's digest.
        sha256: String,
    },
    /// The loop closed (only while open).
    Closed {
        /// How.
        outcome: String,
    },
    /// Closing's comment failed: the loop is open again (only while closed).
    Reopened,
}

/// Issues taken in from the tracker.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait IntakeStore: Send + Sync {
    /// Records `issue` with its audit row: `false`, and nothing written, when the issue (or the
    /// job id) is already recorded.
    async fn record_intake(&self, issue: NewIntakeIssue, audit: AuditEntry) -> StoreResult<bool>;
    /// The recorded issue `number` of `repo` (lower-cased), if any.
    async fn intake_issue(&self, repo: &str, number: u64) -> StoreResult<Option<IntakeIssueRow>>;
    /// Recorded issues whose loop is still open, oldest first, at most `limit`.
    async fn open_intake(&self, limit: usize) -> StoreResult<Vec<IntakeIssueRow>>;
    /// Applies `change` to issue `number` of `repo` with its audit row (when given) in one unit
    /// of work: `false`, and nothing written, when the row is not in the state the change
    /// applies from (another tick made it first).
    async fn update_intake(
        &self,
        repo: &str,
        number: u64,
        change: IntakeChange,
        at: Timestamp,
        audit: Option<AuditEntry>,
    ) -> StoreResult<bool>;
}
