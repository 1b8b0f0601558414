//! The `/metrics` aggregates: jobs grouped by namespace and status in one query, checkmarks
//! grouped by namespace, status, asked and answered in another, and the ledger's spend of the
//! jobs in one status per namespace in a third (the pools' usage is each engine's own,
//! [`Engine::pool_usage`]).

use capsid_core::checkmarks::AgentStatus;
use capsid_core::jobs::JobStatus;
use capsid_core::ports::{AgentGaugeRow, JobGaugeRow, LedgerSpendRow, StoreResult};
use capsid_core::time::Timestamp;

use crate::engine::{Engine, read_all};
use crate::stmt::Stmt;

/// One row per (namespace, status); the lapsed-lease predicate is the sweep's.
const JOB_GAUGES: &str = "SELECT namespace, status, COUNT(*) AS n, MIN(created_at) AS oldest, \
     SUM(CASE WHEN status = 'claimed' AND lease_expires IS NOT NULL AND lease_expires < $1 \
     THEN 1 ELSE 0 END) AS lapsed \
     FROM jobs GROUP BY namespace, status ORDER BY namespace, status";

/// One row per (namespace, status, asked, answered); which of them wait is the core's rule.
/// The flags are cast so both engines read them as integers.
const AGENT_GAUGES: &str = "SELECT c.namespace, c.status, \
     CAST(CASE WHEN c.open_question IS NULL THEN 0 ELSE 1 END AS BIGINT) AS asked, \
     CAST(CASE WHEN e.answer IS NULL THEN 0 ELSE 1 END AS BIGINT) AS answered, \
     COUNT(*) AS n, MIN(c.checkpoint_at) AS oldest \
     FROM checkmarks c JOIN log_entries e ON e.id = c.log_entry_id \
     GROUP BY c.namespace, c.status, asked, answered ORDER BY c.namespace, c.status";

/// The ledger's rows of the jobs in status `$1`, summed per namespace.
const LEDGER_SPEND: &str = "SELECT j.namespace, CAST(SUM(c.cost_micros) AS BIGINT) AS micros \
     FROM jobs j JOIN job_calls c ON c.job_id = j.id WHERE j.status = $1 \
     GROUP BY j.namespace ORDER BY j.namespace";

/// `StoreGauges::agent_gauges`.
pub async fn agent_gauges(engine: &impl Engine) -> StoreResult<Vec<AgentGaugeRow>> {
    read_all(engine, Stmt::new(AGENT_GAUGES), |row| {
        Ok(AgentGaugeRow {
            namespace: row.text("namespace")?,
            status: row.word("status", AgentStatus::parse)?,
            asked: row.flag("asked")?,
            answered: row.flag("answered")?,
            count: row.count("n")?,
            oldest_checkpoint: row.opt_time("oldest")?,
        })
    })
    .await
}

/// `StoreGauges::ledger_spend_by_status`.
pub async fn ledger_spend_by_status(
    engine: &impl Engine,
    status: JobStatus,
) -> StoreResult<Vec<LedgerSpendRow>> {
    read_all(
        engine,
        Stmt::new(LEDGER_SPEND).bind(status.as_str()),
        |row| {
            Ok(LedgerSpendRow {
                namespace: row.text("namespace")?,
                spent: crate::jobs::micros(row.int("micros")?),
            })
        },
    )
    .await
}

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
