//! The CI follow-through port: pending pushed entries, and the keyed backfill of their CI
//! verdict with its audit row in one transaction.

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::checkmarks::CiStatus;
use capsid_core::ports::{AuditEntry, CiStore, PendingCi, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::Row;

use crate::error::DbResult;
use crate::rows::{insert_audit, limit as sql_limit};
use crate::store::{SqliteStore, commit};

#[async_trait]
impl CiStore for SqliteStore {
    async fn pending_ci(&self, limit: usize) -> StoreResult<Vec<PendingCi>> {
        let rows = sqlx::query(
            "SELECT id, namespace, push_sha, created_at, ci_checked_at FROM log_entries \
             WHERE ci_status = 'pending' AND push_sha IS NOT NULL \
             ORDER BY ci_checked_at IS NOT NULL, ci_checked_at, id LIMIT ?",
        )
        .bind(sql_limit(limit))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows.iter()
            .map(|r| {
                Ok(PendingCi {
                    id: r.try_get("id")?,
                    namespace: r.try_get("namespace")?,
                    push_sha: r.try_get("push_sha")?,
                    created_at: r.time("created_at")?,
                    ci_checked_at: r.time("ci_checked_at")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .db()
    }

    async fn record_ci(
        &self,
        id: i64,
        status: CiStatus,
        at: Timestamp,
        audit: Option<AuditEntry>,
    ) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let updated: Option<i64> = sqlx::query_scalar(
            "UPDATE log_entries SET ci_status = ?, ci_checked_at = ? \
             WHERE id = ? AND ci_status = 'pending' RETURNING id",
        )
        .bind(status.as_str())
        .bind(at.to_string())
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        if updated.is_none() {
            return Ok(false);
        }
        if let Some(a) = &audit {
            insert_audit(&mut tx, a).await.db()?;
        }
        commit(tx).await?;
        Ok(true)
    }
}
