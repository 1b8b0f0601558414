//! Ports: the traits the outside world implements for the core.
//!
//! Store ports are small role traits ([`DocumentStore`], [`NamespaceStore`], [`AuditLog`],
//! [`AgentStore`], [`JobStore`], [`SettingsStore`], [`LeaderLease`], [`ImproveStore`],
//! [`SkillStore`], [`StoreHealth`], [`StoreGauges`], [`BackupStore`], [`CheckmarkStore`],
//! [`ReviewStore`], [`IntakeStore`]) with a composite [`Store`] for callers that need them all.
//! Every method that changes more than one row is one atomic unit of work: the adapter runs
//! it in one transaction, so the core never holds a transaction. Every conditional change is a
//! keyed `UPDATE ... RETURNING` (or an equivalent guard) whose loss is reported as
//! [`StoreError::Conflict`] or as an explicit "lost" outcome, never as a silent overwrite.
//!
//! Outside the store: [`RepoHost`] (GitHub), [`BlobStore`], [`Notifier`], [`Deadline`] (the
//! timer that bounds each periodic task), plus the
//! [`crate::time::Clock`] and [`crate::ids::Entropy`] ports.

mod abstraction;
mod agents;
mod backup;
mod blobs;
mod checkmarks;
mod ci;
mod deadline;
mod documents;
mod gauges;
mod improve;
mod intake;
mod jobs;
mod model;
mod notifier;
mod oauth;
mod repo_host;
mod reviews;
mod runs;
mod scratch;
mod settings;

pub use abstraction::{Proposed, ProposedSkill, SkillSource, SkillSourceStore};
pub use agents::{AgentRow, AgentStore, NewAgent};
pub use backup::{BackupStore, DumpSink, Pruned, RowSource, TransferError};
pub use blobs::{BlobError, BlobMeta, BlobReader, BlobStore, BlobWriter};
pub use checkmarks::{
    AnswerFill, CheckmarkRow, CheckmarkStore, CheckmarkTransition, CheckmarkView,
    CheckpointAuditFn, LogEntryRow, NewCheckpoint, SharedEntry,
};
pub use ci::{CiStore, PendingCi};
pub use deadline::{Deadline, TaskFuture};
#[cfg(test)]
pub use documents::MockNamespaceStore;
pub use documents::{
    Backlinks, DocFilter, DocWithActor, DocumentStore, DocumentWrite, EdgeTuple, Kinds,
    NamespaceBudget, NamespaceRow, NamespaceSpend, NamespaceStore, Order, Packet, PacketRows,
    Prefix, SearchHit, Selection, VersionRow, VersionSummary, WriteGuard, WriteReceipt,
};
pub use gauges::{AgentGaugeRow, JobGaugeRow, LedgerSpendRow, PoolUsage, StoreGauges};
pub use improve::{
    ImproveRunTotals, ImproveStore, SkillDeclared, SkillEditRow, SkillEvaluationRow,
    SkillFailureRow, SkillOfferRow, SkillRow, SkillStore,
};
pub use intake::{IntakeChange, IntakeIssueRow, IntakeStore, NewIntakeIssue};
pub use jobs::{
    Change, ClaimDecider, ClaimOutcome, ClaimRequest, ClaimTarget, ClaimVerdict, Holding,
    JobCounts, JobFilter, JobPatch, JobStore, JobTransition, MirrorFn, MonthSpend, NewJob,
    OutcomeRecord, StatusCount, SweepAuditFn,
};
pub use jobs::{DISPATCH_LIMIT, Dispatch};
pub use model::{
    ModelClient, ModelError, ModelMessage, ModelReply, ModelRequest, ModelRole, ModelUsage,
};
pub use notifier::{Notification, Notifier};
pub use oauth::{
    CodeRow, ConsoleSessionRow, LoginStateRow, NewGrant, NewToken, OAuthClientRow, OAuthStore,
    Redemption, Rotation, TokenKind, TokenRow,
};
pub use repo_host::{
    CheckRun, ClosedPull, CommitDetail, CommitSummary, Comparison, Contents, FileBlob, FileChange,
    FileCommit, FileWrite, GitTree, GitTreeItem, IssueComment, IssueFacts, MergeOutcome,
    OpenedPull, PostedComment, PullRequestFacts, PullSummary, RefHead, RepoFacts, RepoHost,
    RepoHostError, RepoRef, RepoResult, RunJob, RunQuery, RunStep, TreeEntry, WorkflowRun,
};
pub use reviews::{NewReview, ReviewRow, ReviewStore};
pub use runs::{
    Advance, Advanced, AttemptRow, AttemptUpdate, NewAttempt, NewRun, RunOpened, RunRow, RunStore,
    RunUpdate, ScoreRow,
};
pub use scratch::{ScratchStore, ScratchStores};
pub use settings::{Expect, LeaderLease, SettingChange, SettingsStore};

use serde_json::Value;

use crate::time::Timestamp;

/// Why a store call failed. Adapters translate driver errors into these; the core never sees
/// a driver type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The row the call is keyed on does not exist (or vanished in flight).
    #[error("not found: {0}")]
    NotFound(String),
    /// A uniqueness rule or a commit-time guard refused the change; nothing was written.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The store failed; the message is for logs, not for callers.
    #[error("storage error: {0}")]
    Backend(String),
    /// The store cannot serve the call now (connection lost, no pooled connection in time,
    /// disk full); nothing was written and the call may be retried. The message names the
    /// condition in words a caller may read (never a URL or a driver's detail).
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

/// Shorthand for store results.
pub type StoreResult<T> = Result<T, StoreError>;

/// One audit row. Written in the same transaction as the change it records.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditEntry {
    /// `agent:<name>`, `opkey:<12 hex>`, `github:<login>` or `improve-loop`.
    pub actor: String,
    /// The action name (reference appendix A).
    pub action: String,
    /// Namespace touched, if any.
    pub namespace: Option<String>,
    /// Path touched, if any.
    pub path: Option<String>,
    /// Parameters, as JSON (never secrets).
    pub params: Value,
    /// When.
    pub at: Timestamp,
}

/// A stored audit row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AuditRow {
    /// Row id (newest is largest).
    pub id: i64,
    /// Actor string.
    pub actor: Option<String>,
    /// Action name.
    pub action: Option<String>,
    /// Namespace.
    pub namespace: Option<String>,
    /// Path.
    pub path: Option<String>,
    /// Parameters as stored JSON text.
    pub params: Option<String>,
    /// When.
    pub at: Timestamp,
}

/// Filter for recent audit rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this namespace.
    pub namespace: Option<String>,
    /// Only this actor.
    pub actor: Option<String>,
}

/// The append-only audit log.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait::async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends one row on its own (repo mutations, console clicks, settings changes).
    async fn append_audit(&self, entry: AuditEntry) -> StoreResult<()>;
    /// The newest rows matching `filter`, newest first, at most `limit`.
    async fn recent_audit(&self, filter: &AuditFilter, limit: usize) -> StoreResult<Vec<AuditRow>>;
    /// The newest row with `action` on `namespace`/`path` (e.g. the `policy-signed` row of a
    /// policy document), if any.
    async fn newest_audit(
        &self,
        action: &str,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<AuditRow>>;
}

/// Liveness probes for `/health` and `capsid doctor`.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait::async_trait]
pub trait StoreHealth: Send + Sync {
    /// A trivial query (`SELECT 1`).
    async fn ping(&self) -> StoreResult<()>;
    /// A full-text probe: the number of documents matching the word `term`.
    async fn fts_probe(&self, term: &str) -> StoreResult<u64>;
    /// The newest applied migration, e.g. `0001_init`.
    async fn schema_version(&self) -> StoreResult<Option<String>>;
    /// The newest migration this build of the store carries (the watcher's "schema behind").
    fn newest_migration(&self) -> Option<String>;
    /// Why the store cannot be reached now, in words a caller may read (e.g. "connection
    /// refused at 127.0.0.1:5432"), asked after a call failed as [`StoreError::Unavailable`]
    /// with a vaguer reason (a pool that gave no connection in time). `None`: it can be
    /// reached, or the store cannot tell. Answers within the store's connect timeout.
    async fn outage_cause(&self) -> Option<String> {
        None
    }
    /// What the store runs without that it would use if it could, each in words an operator
    /// can act on (e.g. Postgres search indexes without the namespace, where `btree_gin` could
    /// not be created). Empty when nothing is missing. Not a failure: the store answers the
    /// same, only slower.
    async fn limitations(&self) -> StoreResult<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Every store port at once, for the application service.
pub trait Store:
    DocumentStore
    + NamespaceStore
    + AuditLog
    + AgentStore
    + JobStore
    + SettingsStore
    + LeaderLease
    + ImproveStore
    + SkillStore
    + SkillSourceStore
    + StoreHealth
    + OAuthStore
    + StoreGauges
    + BackupStore
    + CheckmarkStore
    + CiStore
    + ReviewStore
    + RunStore
    + IntakeStore
{
}

impl<T> Store for T where
    T: DocumentStore
        + NamespaceStore
        + AuditLog
        + AgentStore
        + JobStore
        + SettingsStore
        + LeaderLease
        + ImproveStore
        + SkillStore
        + SkillSourceStore
        + StoreHealth
        + OAuthStore
        + StoreGauges
        + BackupStore
        + CheckmarkStore
        + CiStore
        + ReviewStore
        + RunStore
        + IntakeStore
{
}
