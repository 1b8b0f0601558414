//! The jobs port: the SQL both engines share (the job and outcome rows, the reads of a job,
//! the claim an agent holds, listings, counts and outcomes, and the write-once outcome
//! record) and [`JobEngine`], the posts, claims, transitions and lease sweep each adapter
//! still runs its own way: SQLite's as a few statements under its one writer, Postgres's as
//! one statement each, with its row locks, audit row and mirror carried as CTEs.

use async_trait::async_trait;
use capsid_core::drive::ledger::Usd;
use capsid_core::jobs::outcome::{OutcomeRow, ResultKind};
use capsid_core::jobs::paths::LiveLease;
use capsid_core::jobs::{Job, JobStatus};
use capsid_core::ports::{
    AuditEntry, ClaimOutcome, ClaimRequest, Holding, JobCounts, JobFilter, JobTransition, MirrorFn,
    MonthSpend, NewJob, OutcomeRecord, StatusCount, StoreResult, SweepAuditFn,
};
use capsid_core::time::Timestamp;

use crate::engine::{Engine, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::Stmt;

/// What the jobs port does differently on each engine, which each adapter implements beside
/// its [`Engine`]; [`sql_ports!`](crate::sql_ports) implements `JobStore` from these and this
/// module's shared functions. Postgres runs each as few statements as it can under row locks
/// (a claim with `FOR UPDATE SKIP LOCKED`, the audit row and the mirror as CTEs), retried;
/// SQLite as a few statements under its one writer.
#[async_trait]
pub trait JobEngine: Engine {
    /// `JobStore::post_job`.
    async fn post_job(&self, job: NewJob, audit: AuditEntry, mirror: MirrorFn) -> StoreResult<Job>;

    /// `JobStore::claim_job`.
    async fn claim_job(&self, request: ClaimRequest<'_>) -> StoreResult<ClaimOutcome>;

    /// `JobStore::transition_job`.
    async fn transition_job(&self, transition: JobTransition) -> StoreResult<Option<Job>>;

    /// `JobStore::sweep_expired_leases`.
    async fn sweep_expired_leases(
        &self,
        now: Timestamp,
        audit: &SweepAuditFn,
        mirror: MirrorFn,
    ) -> StoreResult<Vec<Job>>;
}

/// The `jobs` columns a [`Job`] is read from.
#[macro_export]
macro_rules! job_columns {
    () => {
        "id, namespace, title, body, priority, status, posted_by, claimed_by, claimed_at, lease_expires, \
         result_ref, result_summary, gate_required, review_required, blocked_count, resumed_count, \
         corrections_count, required_scopes, min_record, created_at, updated_at, parent_id, \
         requested_by, depth, max_cost_micros, runtime, role, paths, leased"
    };
}

/// `job`: one job by id.
pub const JOB: &str = concat!("SELECT ", job_columns!(), " FROM jobs WHERE id = $1");

/// The claimed job an agent holds (index `jobs_one_claim`).
pub const HELD: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM jobs WHERE claimed_by = $1 AND status = 'claimed' LIMIT 1"
);

const JOB_COUNTS: &str = "SELECT count(CASE WHEN status = 'queued' THEN 1 END) AS queued, \
     count(CASE WHEN status = 'claimed' THEN 1 END) AS claimed, \
     count(CASE WHEN status = 'blocked' THEN 1 END) AS blocked, \
     count(CASE WHEN status = 'done' AND updated_at >= $2 THEN 1 END) AS done_today \
     FROM jobs WHERE namespace = $1";

const STATUS_COUNTS: &str = "SELECT claimed_by, status, count(*) AS n FROM jobs \
     WHERE claimed_by IS NOT NULL GROUP BY claimed_by, status ORDER BY claimed_by, status";

const OUTCOMES: &str = "SELECT job_id, agent, namespace, prs_opened, prs_merged, commits, \
     files_changed, tests_added, ci_green, blocked_count, resumed_count, duration_minutes, \
     result_kind, verified, recorded_at, reviewed_by, skill_ids_offered, skill_ids_used, \
     skill_verdict, cost_usd, turns, duration_ms FROM job_outcomes";

/// Inserts an outcome row unless the job has one (write-once), returning its id when new.
pub const INSERT_OUTCOME: &str = "INSERT INTO job_outcomes (job_id, agent, namespace, prs_opened, \
     prs_merged, commits, files_changed, tests_added, ci_green, blocked_count, resumed_count, \
     duration_minutes, result_kind, verified, recorded_at, reviewed_by, skill_ids_offered, \
     skill_ids_used, skill_verdict, cost_usd, turns, duration_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
     $19, $20, $21, $22) ON CONFLICT (job_id) DO NOTHING RETURNING job_id";

const INSERT_OUTCOME_PR: &str = "INSERT INTO job_outcome_prs (job_id, pr_url, recorded_at) \
     VALUES ($1, $2, $3) ON CONFLICT (job_id, pr_url) DO NOTHING";

/// A [`Job`] from a row selected with [`job_columns`].
pub fn job_row(row: &Row) -> Result<Job, sqlx::Error> {
    Ok(Job {
        id: row.text("id")?,
        namespace: row.text("namespace")?,
        title: row.text("title")?,
        body: row.text("body")?,
        priority: row.int("priority")?,
        status: row.word("status", JobStatus::parse)?,
        posted_by: row.text("posted_by")?,
        claimed_by: row.opt_text("claimed_by")?,
        claimed_at: row.opt_time("claimed_at")?,
        lease_expires: row.opt_time("lease_expires")?,
        result_ref: row.opt_text("result_ref")?,
        result_summary: row.opt_text("result_summary")?,
        gate_required: row.flag("gate_required")?,
        review_required: row.flag("review_required")?,
        blocked_count: row.int("blocked_count")?,
        resumed_count: row.int("resumed_count")?,
        corrections_count: row.int("corrections_count")?,
        required_scopes: row.opt_text("required_scopes")?,
        min_record: row.opt_text("min_record")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
        parent_id: row.opt_text("parent_id")?,
        requested_by: row.opt_text("requested_by")?,
        depth: row.int("depth")?,
        max_cost_usd: row.opt_int("max_cost_micros")?.map(micros),
        runtime: row.opt_text("runtime")?,
        role: row.opt_text("role")?,
        paths: json_list(row, "paths")?,
        leased: json_list(row, "leased")?,
        waiting_on: None,
    })
}

/// A JSON array of strings in text column `column` (NULL: `None`).
fn json_list(row: &Row, column: &str) -> Result<Option<Vec<String>>, sqlx::Error> {
    row.opt_text(column)?
        .map(|text| serde_json::from_str::<Vec<String>>(&text))
        .transpose()
        .map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// The stored text of what a claim of `job` leases (`None`: nothing).
pub fn leased_text(job: &Job, driven: bool) -> Option<String> {
    capsid_core::jobs::paths::lease_for_claim(job, driven).map(|l| serde_json::json!(l).to_string())
}

/// Locks the namespace's row for the rest of the transaction (Postgres).
const LOCK_NAMESPACE: &str = "SELECT 1 FROM namespaces WHERE namespace = $1 FOR UPDATE";

/// The namespace's claimed jobs but `$2`, with their own caps and what their ledgers hold
/// (index `jobs_claimable`, then `job_calls_job` per job).
const HOLDING: &str = "SELECT j.id, j.max_cost_micros, \
     (SELECT CAST(COALESCE(SUM(c.cost_micros), 0) AS BIGINT) FROM job_calls c \
      WHERE c.job_id = j.id) AS spent_micros \
     FROM jobs j WHERE j.namespace = $1 AND j.status = 'claimed' AND j.id <> $2 ORDER BY j.id";

/// What job `$1`'s ledger holds.
const JOB_SPENT: &str = "SELECT CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT) AS spent_micros \
     FROM job_calls WHERE job_id = $1";

/// Sets an open job's cap (`$2`, micro-dollars) at `$3`.
const SET_CAP: &str = concat!(
    "UPDATE jobs SET max_cost_micros = $2, updated_at = $3 ",
    "WHERE id = $1 AND status IN ('queued', 'claimed', 'blocked') RETURNING ",
    job_columns!()
);

/// `JobStore::set_job_cap`: the job's new cap and its audit row in one unit.
pub async fn set_job_cap(
    engine: &impl Engine,
    id: &str,
    cap: Usd,
    at: Timestamp,
    audit: AuditEntry,
) -> StoreResult<Option<Job>> {
    let audit = &audit;
    let micros = i64::try_from(cap.micros()).unwrap_or(i64::MAX);
    crate::engine::in_unit!(engine, |j: &Option<Job>| j.is_some(), |tx| async {
        let stmt = Stmt::new(SET_CAP).bind(id).bind(micros).bind(at);
        let Some(row) = tx.fetch_optional(stmt).await? else {
            return Ok(None);
        };
        let job = job_row(&row)?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(Some(job))
    }
    .await)
}

/// `JobStore::month_spend`: [`month_spend`] on a read connection, without a lock.
pub async fn read_month_spend(
    engine: &impl Engine,
    job: &Job,
    since: Timestamp,
) -> StoreResult<MonthSpend> {
    let budget = read_all(
        engine,
        Stmt::new(crate::namespaces::BUDGET)
            .bind(&job.namespace)
            .bind(since),
        |row| {
            Ok((
                row.opt_real("monthly_budget_usd")?,
                crate::namespaces::dollars(row.int("spent_micros")?),
            ))
        },
    )
    .await?;
    let (budget_usd, spent_usd) = budget.first().copied().unwrap_or((None, 0.0));
    let holding = read_all(
        engine,
        Stmt::new(HOLDING).bind(&job.namespace).bind(&job.id),
        holding_row,
    )
    .await?;
    let job_spent = read_all(engine, Stmt::new(JOB_SPENT).bind(&job.id), |row| {
        Ok(micros(row.int("spent_micros")?))
    })
    .await?;
    Ok(MonthSpend {
        budget_usd,
        spent_usd,
        holding,
        job_spent: job_spent.first().copied().unwrap_or_default(),
    })
}

/// A stored micro-dollar amount (never negative: the core writes only [`Usd`]).
pub(crate) fn micros(m: i64) -> Usd {
    Usd::from_micros(u64::try_from(m).unwrap_or(0))
}

fn holding_row(row: &Row) -> Result<Holding, sqlx::Error> {
    Ok(Holding {
        id: row.text("id")?,
        cap: row.opt_int("max_cost_micros")?.map(micros),
        spent: micros(row.int("spent_micros")?),
    })
}

/// The live leases of namespace `$1` (issue 51): its blocked jobs, and its claimed ones whose
/// lease has not run out at `$2` (index `jobs_claimable`).
const LIVE_LEASES: &str = "SELECT id, title, leased FROM jobs WHERE namespace = $1 \
     AND status IN ('claimed', 'blocked') AND leased IS NOT NULL \
     AND (status = 'blocked' OR lease_expires IS NULL OR lease_expires >= $2)";

/// The live leases of `namespace` at `now`, read inside a claim's transaction on `x`, once
/// for its whole walk (nothing else claims meanwhile). Postgres callers hold the namespace's
/// lease lock first ([`LEASE_LOCK`]), so two claims of one namespace decide one after the
/// other; SQLite has one writer. The core decides each candidate against them
/// ([`capsid_core::jobs::paths::waiting_on`]).
pub async fn live_leases_in(
    x: &mut (impl Exec + ?Sized),
    namespace: &str,
    now: Timestamp,
) -> Result<Vec<LiveLease>, sqlx::Error> {
    let mut live = x
        .fetch_all(Stmt::new(LIVE_LEASES).bind(namespace).bind(now))
        .await?
        .iter()
        .map(live_lease)
        .collect::<Result<Vec<_>, _>>()?;
    live.sort_unstable_by(|a, b| a.job_id.cmp(&b.job_id));
    Ok(live)
}

fn live_lease(row: &Row) -> Result<LiveLease, sqlx::Error> {
    Ok(LiveLease {
        job_id: row.text("id")?,
        title: row.text("title")?,
        leased: json_list(row, "leased")?.unwrap_or_default(),
    })
}

/// `JobStore::live_leases`: the live leases of `namespace` at `now`, read outside any claim.
pub async fn read_live_leases(
    engine: &impl Engine,
    namespace: &str,
    now: Timestamp,
) -> StoreResult<Vec<LiveLease>> {
    let mut live = read_all(
        engine,
        Stmt::new(LIVE_LEASES).bind(namespace).bind(now),
        live_lease,
    )
    .await?;
    live.sort_unstable_by(|a, b| a.job_id.cmp(&b.job_id));
    Ok(live)
}

/// Postgres: the transaction-scoped lock a claim takes on its namespace's leases before it
/// reads them (an advisory lock: a namespace without a `namespaces` row locks as well).
pub const LEASE_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('capsid-leases:' || $1, 0))";

/// What a claim of `job` reads of its namespace's month on `x`, inside the claim's
/// transaction: the budget row (locked with `FOR UPDATE` when `lock`, so two claims in one
/// namespace decide one after the other), the spend since `since`, and what the namespace's
/// other claimed jobs reserve.
pub async fn month_spend(
    x: &mut (impl Exec + ?Sized),
    job: &Job,
    since: Timestamp,
    lock: bool,
) -> Result<MonthSpend, sqlx::Error> {
    if lock {
        x.fetch_optional(Stmt::new(LOCK_NAMESPACE).bind(&job.namespace))
            .await?;
    }
    let found = x
        .fetch_optional(
            Stmt::new(crate::namespaces::BUDGET)
                .bind(&job.namespace)
                .bind(since),
        )
        .await?;
    let (budget_usd, spent_usd) = match found {
        Some(row) => (
            row.opt_real("monthly_budget_usd")?,
            crate::namespaces::dollars(row.int("spent_micros")?),
        ),
        None => (None, 0.0),
    };
    let holding = x
        .fetch_all(Stmt::new(HOLDING).bind(&job.namespace).bind(&job.id))
        .await?
        .iter()
        .map(holding_row)
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    let job_spent = match x.fetch_optional(Stmt::new(JOB_SPENT).bind(&job.id)).await? {
        Some(row) => micros(row.int("spent_micros")?),
        None => Usd::ZERO,
    };
    Ok(MonthSpend {
        budget_usd,
        spent_usd,
        holding,
        job_spent,
    })
}

/// The stored spelling of a [`ResultKind`].
pub fn result_kind_text(kind: ResultKind) -> &'static str {
    match kind {
        ResultKind::Pr => "pr",
        ResultKind::Doc => "doc",
        ResultKind::None => "none",
    }
}

fn result_kind(text: &str) -> Option<ResultKind> {
    [ResultKind::Pr, ResultKind::Doc, ResultKind::None]
        .into_iter()
        .find(|kind| result_kind_text(*kind) == text)
}

/// An [`OutcomeRow`] from a `job_outcomes` row.
pub fn outcome_row(row: &Row) -> Result<OutcomeRow, sqlx::Error> {
    Ok(OutcomeRow {
        job_id: row.text("job_id")?,
        agent: row.text("agent")?,
        namespace: row.text("namespace")?,
        prs_opened: row.opt_int("prs_opened")?,
        prs_merged: row.opt_int("prs_merged")?,
        commits: row.opt_int("commits")?,
        files_changed: row.opt_int("files_changed")?,
        tests_added: row.opt_int("tests_added")?,
        ci_green: row.opt_int("ci_green")?,
        blocked_count: row.int("blocked_count")?,
        resumed_count: row.int("resumed_count")?,
        duration_minutes: row.opt_int("duration_minutes")?,
        result_kind: row.word("result_kind", result_kind)?,
        verified: row.text("verified")?,
        recorded_at: row.time("recorded_at")?,
        reviewed_by: row.opt_text("reviewed_by")?,
        skill_ids_offered: row.opt_text("skill_ids_offered")?,
        skill_ids_used: row.opt_text("skill_ids_used")?,
        skill_verdict: row.opt_text("skill_verdict")?,
        cost_usd: row.opt_real("cost_usd")?,
        turns: row.opt_int("turns")?,
        duration_ms: row.opt_int("duration_ms")?,
    })
}

/// `sql` (a job select keyed by one text value) bound to `key`.
fn keyed(sql: &'static str, key: &str) -> Stmt {
    Stmt::new(sql).bind(key)
}

/// One job read on `x` (inside a unit of work) with `sql` keyed by `key`.
pub async fn fetch_job(
    x: &mut (impl Exec + ?Sized),
    sql: &'static str,
    key: &str,
) -> Result<Option<Job>, sqlx::Error> {
    x.fetch_optional(keyed(sql, key))
        .await?
        .as_ref()
        .map(job_row)
        .transpose()
}

/// `JobStore::job` (`sql` [`JOB`]) and `JobStore::held_job` (`sql` [`HELD`]).
pub async fn one_job(
    engine: &impl Engine,
    sql: &'static str,
    key: &str,
) -> StoreResult<Option<Job>> {
    let found = read_all(engine, keyed(sql, key), job_row).await?;
    Ok(found.into_iter().next())
}

/// `JobStore::jobs`: newest first, filtered by namespace and status when given.
pub async fn jobs(engine: &impl Engine, filter: &JobFilter, limit: usize) -> StoreResult<Vec<Job>> {
    let mut sql = concat!("SELECT ", job_columns!(), " FROM jobs WHERE 1 = 1").to_owned();
    let mut args = Vec::new();
    if let Some(namespace) = &filter.namespace {
        args.push(namespace.as_str());
        sql.push_str(&format!(" AND namespace = ${}", args.len()));
    }
    if let Some(status) = filter.status {
        args.push(status.as_str());
        sql.push_str(&format!(" AND status = ${}", args.len()));
    }
    sql.push_str(&format!(
        " ORDER BY created_at DESC, id DESC LIMIT ${}",
        args.len() + 1
    ));
    let stmt = args.into_iter().fold(Stmt::new(sql), Stmt::bind);
    read_all(engine, stmt.bind(limit), job_row).await
}

/// `JobStore::job_counts`.
pub async fn job_counts(
    engine: &impl Engine,
    namespace: &str,
    day_start: Timestamp,
) -> StoreResult<JobCounts> {
    let stmt = Stmt::new(JOB_COUNTS).bind(namespace).bind(day_start);
    let found = read_all(engine, stmt, |row| {
        Ok(JobCounts {
            queued: row.count("queued")?,
            claimed: row.count("claimed")?,
            blocked: row.count("blocked")?,
            done_today: row.count("done_today")?,
        })
    })
    .await?;
    Ok(found.into_iter().next().unwrap_or_default())
}

/// `JobStore::job_status_counts`.
pub async fn job_status_counts(engine: &impl Engine) -> StoreResult<Vec<StatusCount>> {
    read_all(engine, Stmt::new(STATUS_COUNTS), |row| {
        Ok(StatusCount {
            claimed_by: row.text("claimed_by")?,
            status: row.word("status", JobStatus::parse)?,
            count: row.count("n")?,
        })
    })
    .await
}

/// `JobStore::outcomes`: in recording order, one agent's when given.
pub async fn outcomes(engine: &impl Engine, agent: Option<&str>) -> StoreResult<Vec<OutcomeRow>> {
    let stmt = match agent {
        Some(agent) => Stmt::new(format!(
            "{OUTCOMES} WHERE agent = $1 ORDER BY recorded_at, job_id"
        ))
        .bind(agent),
        None => Stmt::new(format!("{OUTCOMES} ORDER BY recorded_at, job_id")),
    };
    read_all(engine, stmt, outcome_row).await
}

/// `stmt` with an outcome row's twenty-two values bound, in `job_outcomes`' column order.
pub fn bind_outcome(stmt: Stmt, row: &OutcomeRow) -> Stmt {
    stmt.bind(&row.job_id)
        .bind(&row.agent)
        .bind(&row.namespace)
        .bind(row.prs_opened)
        .bind(row.prs_merged)
        .bind(row.commits)
        .bind(row.files_changed)
        .bind(row.tests_added)
        .bind(row.ci_green)
        .bind(row.blocked_count)
        .bind(row.resumed_count)
        .bind(row.duration_minutes)
        .bind(result_kind_text(row.result_kind))
        .bind(&row.verified)
        .bind(row.recorded_at)
        .bind(row.reviewed_by.as_deref())
        .bind(row.skill_ids_offered.as_deref())
        .bind(row.skill_ids_used.as_deref())
        .bind(row.skill_verdict.as_deref())
        .bind(row.cost_usd)
        .bind(row.turns)
        .bind(row.duration_ms)
}

/// Records the write-once outcome row on `x` (inside the change's unit) and, when it is new,
/// its PR rows in the record's order (a second record for the job is ignored, PR rows too).
pub async fn record_outcome(
    x: &mut (impl Exec + ?Sized),
    record: &OutcomeRecord,
) -> Result<(), sqlx::Error> {
    let row = &record.row;
    let stmt = bind_outcome(Stmt::new(INSERT_OUTCOME), row);
    if x.fetch_optional(stmt).await?.is_none() {
        return Ok(());
    }
    if let Some(call) = &record.reported_call {
        let of = crate::spend::RowOf {
            job_id: &row.job_id,
            namespace: &row.namespace,
            agent: &row.agent,
        };
        crate::spend::insert_call(&mut *x, of, call, row.recorded_at).await?;
    }
    for url in &record.pr_urls {
        let stmt = Stmt::new(INSERT_OUTCOME_PR)
            .bind(&row.job_id)
            .bind(url)
            .bind(row.recorded_at);
        x.execute(stmt).await?;
    }
    Ok(())
}
