//! Aggregates for `/metrics`: job counts per namespace and status in one bounded grouped query,
//! and the connection pools' usage. Rows carry counts and instants only, never a job's data.

use async_trait::async_trait;

use super::StoreResult;
use crate::jobs::JobStatus;
use crate::time::Timestamp;

/// One group of jobs: a namespace and a status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobGaugeRow {
    /// The namespace.
    pub namespace: String,
    /// The status.
    pub status: JobStatus,
    /// How many jobs.
    pub count: u64,
    /// The oldest `created_at` in the group (`None` when unreadable).
    pub oldest_created: Option<Timestamp>,
    /// Claimed jobs of the group whose lease ran out before the instant asked about (0 for
    /// other statuses): held by nobody live, waiting for the sweep.
    pub lapsed_leases: u64,
}

/// One connection pool's usage at the moment it is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolUsage {
    /// Which pool (`writer`, `reader` for SQLite; `main` for Postgres).
    pub pool: &'static str,
    /// Connections handed out.
    pub in_use: u32,
    /// Connections open and idle.
    pub idle: u32,
    /// The pool's maximum.
    pub max: u32,
}

/// What `/metrics` reads from the store.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait StoreGauges: Send + Sync {
    /// Jobs grouped by namespace and status (`GROUP BY`: at most namespaces × statuses rows),
    /// with each group's oldest `created_at` and its claimed jobs whose lease expired before
    /// `now`.
    async fn job_gauges(&self, now: Timestamp) -> StoreResult<Vec<JobGaugeRow>>;
    /// Every pool's usage, read from the pool without a query.
    fn pool_usage(&self) -> Vec<PoolUsage>;
}
