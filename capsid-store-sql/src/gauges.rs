//! The `/metrics` aggregates: jobs grouped by namespace and status in one query (the pools'
//! usage is each engine's own, [`Engine::pool_usage`]).

use capsid_core::jobs::JobStatus;
use capsid_core::ports::{JobGaugeRow, StoreResult};
use capsid_core::time::Timestamp;

use crate::engine::{Engine, read_all};
use crate::stmt::Stmt;

/// One row per (namespace, status); the lapsed-lease predicate is the sweep's.
const JOB_GAUGES: &str = "SELECT namespace, status, COUNT(*) AS n, MIN(created_at) AS oldest, \
     SUM(CASE WHEN status = 'claimed' AND lease_expires IS NOT NULL AND lease_expires < $1 \
     THEN 1 ELSE 0 END) AS lapsed \
     FROM jobs GROUP BY namespace, status ORDER BY namespace, status";

/// `StoreGauges::job_gauges`.
pub async fn job_gauges(engine: &impl Engine, now: Timestamp) -> StoreResult<Vec<JobGaugeRow>> {
    read_all(engine, Stmt::new(JOB_GAUGES).bind(now), |row| {
        Ok(JobGaugeRow {
            namespace: row.text("namespace")?,
            status: row.word("status", JobStatus::parse)?,
            count: row.count("n")?,
            oldest_created: row.opt_time("oldest")?,
            lapsed_leases: u64::try_from(row.opt_int("lapsed")?.unwrap_or(0)).unwrap_or(0),
        })
    })
    .await
}
