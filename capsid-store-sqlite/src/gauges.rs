//! The `/metrics` aggregates: jobs grouped by namespace and status in one query on a reader,
//! and both pools' usage.

use async_trait::async_trait;
use capsid_core::jobs::JobStatus;
use capsid_core::ports::{JobGaugeRow, PoolUsage, StoreError, StoreGauges, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::Row;
use sqlx::sqlite::SqlitePool;

use crate::error::DbResult;
use crate::rows::count;
use crate::store::SqliteStore;

/// One row per (namespace, status); the lapsed-lease predicate is the sweep's.
const JOB_GAUGES_SQL: &str = "SELECT namespace, status, COUNT(*) AS n, MIN(created_at) AS oldest, \
     SUM(CASE WHEN status = 'claimed' AND lease_expires IS NOT NULL AND lease_expires < ?1 THEN 1 ELSE 0 END) AS lapsed \
     FROM jobs GROUP BY namespace, status ORDER BY namespace, status";

fn usage(pool: &'static str, p: &SqlitePool) -> PoolUsage {
    let open = p.size();
    let idle = u32::try_from(p.num_idle()).unwrap_or(open).min(open);
    PoolUsage {
        pool,
        in_use: open - idle,
        idle,
        max: p.options().get_max_connections(),
    }
}

#[async_trait]
impl StoreGauges for SqliteStore {
    async fn job_gauges(&self, now: Timestamp) -> StoreResult<Vec<JobGaugeRow>> {
        let rows = sqlx::query(JOB_GAUGES_SQL)
            .bind(now.to_string())
            .fetch_all(self.reader())
            .await
            .db()?;
        rows.iter()
            .map(|row| {
                let status: String = row.try_get("status").db()?;
                let oldest: Option<String> = row.try_get("oldest").db()?;
                Ok(JobGaugeRow {
                    namespace: row.try_get("namespace").db()?,
                    status: JobStatus::parse(&status).ok_or_else(|| {
                        StoreError::Backend(format!("unknown job status {status:?}"))
                    })?,
                    count: count(row.try_get("n").db()?),
                    oldest_created: oldest.as_deref().and_then(Timestamp::parse),
                    lapsed_leases: count(
                        row.try_get::<Option<i64>, _>("lapsed").db()?.unwrap_or(0),
                    ),
                })
            })
            .collect()
    }

    fn pool_usage(&self) -> Vec<PoolUsage> {
        vec![
            usage("writer", self.writer()),
            usage("reader", self.reader()),
        ]
    }
}
