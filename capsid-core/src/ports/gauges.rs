//! Aggregates for `/metrics`: job counts per namespace and status in one bounded grouped query,
//! checkmarks per namespace and status in another, the ledger's spend of jobs in one status, and
//! the connection pools' usage. Rows carry counts, sums and instants only, never a job's or a
//! checkmark's data.

use async_trait::async_trait;

use super::StoreResult;
use crate::checkmarks::AgentStatus;
use crate::drive::ledger::Usd;
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

/// One group of checkmarks: a namespace, a status, whether the checkmark asks a question and
/// whether the entry it links to holds an answer. Which groups wait on a person is the core's
/// rule ([`crate::checkmarks::rules::waits_for_answer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentGaugeRow {
    /// The namespace.
    pub namespace: String,
    /// The agents' status, as their checkmarks say.
    pub status: AgentStatus,
    /// Whether the checkmarks of the group hold an open question.
    pub asked: bool,
    /// Whether the entries they link to hold an answer.
    pub answered: bool,
    /// How many checkmarks.
    pub count: u64,
    /// The oldest `checkpoint_at` in the group.
    pub oldest_checkpoint: Option<Timestamp>,
}

/// What the ledger holds for one namespace's jobs in a given status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerSpendRow {
    /// The namespace.
    pub namespace: String,
    /// What their metered model calls cost so far.
    pub spent: Usd,
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
    /// Checkmarks grouped by namespace, status, asked and answered (`GROUP BY`: at most
    /// namespaces × statuses × 4 rows), with each group's oldest checkpoint.
    async fn agent_gauges(&self) -> StoreResult<Vec<AgentGaugeRow>>;
    /// The ledger's spend of the jobs now in `status`, per namespace (namespaces whose jobs in
    /// that status metered nothing are left out).
    async fn ledger_spend_by_status(&self, status: JobStatus) -> StoreResult<Vec<LedgerSpendRow>>;
    /// Every pool's usage, read from the pool without a query.
    fn pool_usage(&self) -> Vec<PoolUsage>;
}
