//! The CI follow-through port: pending pushed entries (never checked first, then the
//! longest unchecked), and the keyed backfill of one entry's CI verdict with its audit row
//! in one unit of work.

use capsid_core::checkmarks::CiStatus;
use capsid_core::ports::{AuditEntry, PendingCi, StoreResult};
use capsid_core::time::Timestamp;

use crate::engine::in_unit;
use crate::engine::{Engine, always, read_all};
use crate::stmt::Stmt;

const PENDING: &str = "SELECT id, namespace, push_sha, created_at, ci_checked_at FROM log_entries \
     WHERE ci_status = 'pending' AND push_sha IS NOT NULL \
     ORDER BY ci_checked_at NULLS FIRST, id LIMIT $1";
const RECORD: &str = "UPDATE log_entries SET ci_status = $2, ci_checked_at = $3 \
     WHERE id = $1 AND ci_status = 'pending' RETURNING id";

/// `CiStore::pending_ci`.
pub async fn pending_ci(engine: &impl Engine, limit: usize) -> StoreResult<Vec<PendingCi>> {
    read_all(engine, Stmt::new(PENDING).bind(limit), |r| {
        Ok(PendingCi {
            id: r.int("id")?,
            namespace: r.text("namespace")?,
            push_sha: r.text("push_sha")?,
            created_at: r.time("created_at")?,
            ci_checked_at: r.opt_time("ci_checked_at")?,
        })
    })
    .await
}

/// `CiStore::record_ci`: `false` (nothing written) when the entry is no longer pending.
pub async fn record_ci(
    engine: &impl Engine,
    id: i64,
    status: CiStatus,
    at: Timestamp,
    audit: Option<AuditEntry>,
) -> StoreResult<bool> {
    let audit = &audit;
    in_unit!(engine, always, |tx| async {
        let stmt = Stmt::new(RECORD).bind(id).bind(status.as_str()).bind(at);
        if tx.fetch_optional(stmt).await?.is_none() {
            return Ok(false);
        }
        if let Some(a) = audit {
            crate::audit::insert(&mut *tx, a).await?;
        }
        Ok(true)
    }
    .await)
}
