//! The CI follow-through port: pending pushed entries, and the keyed backfill of their CI
//! verdict with its audit row in one transaction.

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::checkmarks::CiStatus;
use capsid_core::ports::{AuditEntry, CiStore, PendingCi, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::Row;

use crate::PgStore;
use crate::audit;
use crate::error::{always, finish, limit, translate, with_retry};

const PENDING: &str = "SELECT id, namespace, push_sha, created_at, ci_checked_at FROM log_entries \
     WHERE ci_status = 'pending' AND push_sha IS NOT NULL \
     ORDER BY ci_checked_at NULLS FIRST, id LIMIT $1";
const RECORD: &str = "UPDATE log_entries SET ci_status = $2, ci_checked_at = $3 \
     WHERE id = $1 AND ci_status = 'pending' RETURNING id";

#[async_trait]
impl CiStore for PgStore {
    async fn pending_ci(&self, max: usize) -> StoreResult<Vec<PendingCi>> {
        let rows = sqlx::query(PENDING)
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
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
            .map_err(translate)
    }

    async fn record_ci(
        &self,
        id: i64,
        status: CiStatus,
        at: Timestamp,
        audit: Option<AuditEntry>,
    ) -> StoreResult<bool> {
        let pool = &self.pool;
        let audit = &audit;
        let at = at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let updated: Option<i64> = sqlx::query_scalar(RECORD)
                        .bind(id)
                        .bind(status.as_str())
                        .bind(at)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if updated.is_none() {
                        return Ok(false);
                    }
                    if let Some(a) = audit {
                        audit::insert(&mut tx, a).await?;
                    }
                    Ok(true)
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }
}
