//! The CI follow-through port: pushed log entries whose CI verdict is still pending, and the
//! keyed backfill of `ci_status` / `ci_checked_at` on one of them (with its audit row, in the
//! same transaction, when the verdict resolves).

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::checkmarks::CiStatus;
use crate::time::Timestamp;

/// A pushed entry waiting on CI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingCi {
    /// The log entry.
    pub id: i64,
    /// Its namespace (whose primary repository CI runs in).
    pub namespace: String,
    /// The commit it pushed.
    pub push_sha: String,
    /// When it was written.
    pub created_at: Timestamp,
    /// When CI was last asked, if ever.
    pub ci_checked_at: Option<Timestamp>,
}

/// Pending CI verdicts.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait CiStore: Send + Sync {
    /// Entries with `ci_status = 'pending'` and a pushed commit, never asked first, then
    /// the least recently asked; at most `limit`.
    async fn pending_ci(&self, limit: usize) -> StoreResult<Vec<PendingCi>>;
    /// Records that CI was asked about entry `id` at `at` and said `status` (`pending`: not
    /// yet), only while the entry is still pending; `audit` is appended in the same
    /// transaction. `false`, with nothing written, when the entry is no longer pending.
    async fn record_ci(
        &self,
        id: i64,
        status: CiStatus,
        at: Timestamp,
        audit: Option<AuditEntry>,
    ) -> StoreResult<bool>;
}
