//! The `/metrics` aggregates: jobs grouped by namespace and status in one query, and the
//! pool's usage.

use async_trait::async_trait;
use capsid_core::jobs::JobStatus;
use capsid_core::ports::{JobGaugeRow, PoolUsage, StoreError, StoreGauges, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::Row;

use crate::PgStore;
use crate::error::{count, translate};

/// One row per (namespace, status); the lapsed-lease predicate is the sweep's.
const JOB_GAUGES: &str = "SELECT namespace, status, count(*) AS n, min(created_at) AS oldest, \
     count(*) FILTER (WHERE status = 'claimed' AND lease_expires IS NOT NULL AND lease_expires < $1) AS lapsed \
     FROM jobs GROUP BY namespace, status ORDER BY namespace, status";

#[async_trait]
impl StoreGauges for PgStore {
    async fn job_gauges(&self, now: Timestamp) -> StoreResult<Vec<JobGaugeRow>> {
        let rows = sqlx::query(JOB_GAUGES)
            .bind(now.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(translate)?;
        rows.iter()
            .map(|row| {
                let status: String = row.try_get("status").map_err(translate)?;
                let oldest: Option<String> = row.try_get("oldest").map_err(translate)?;
                Ok(JobGaugeRow {
                    namespace: row.try_get("namespace").map_err(translate)?,
                    status: JobStatus::parse(&status).ok_or_else(|| {
                        StoreError::Backend(format!("unknown job status {status:?}"))
                    })?,
                    count: count(row.try_get("n").map_err(translate)?),
                    oldest_created: oldest.as_deref().and_then(Timestamp::parse),
                    lapsed_leases: count(row.try_get("lapsed").map_err(translate)?),
                })
            })
            .collect()
    }

    fn pool_usage(&self) -> Vec<PoolUsage> {
        let pool = self.pool();
        let open = pool.size();
        let idle = u32::try_from(pool.num_idle()).unwrap_or(open).min(open);
        vec![PoolUsage {
            pool: "main",
            in_use: open - idle,
            idle,
            max: pool.options().get_max_connections(),
        }]
    }
}
