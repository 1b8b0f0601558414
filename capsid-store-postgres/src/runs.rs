//! The `RunStore` port: runs and attempts of the improve loop. Opening a run meets the partial
//! unique index `improve_runs_one_active`; every transition is `UPDATE … WHERE id = $ AND
//! status = $ RETURNING id` inside the unit's transaction (read committed: a second writer
//! waits for the first and then matches no row), and a miss rolls the unit back.

use async_trait::async_trait;
use capsid_core::improve::machine::{AttemptStatus, RunStatus, RunTally};
use capsid_core::ports::{
    Advance, Advanced, AttemptRow, AttemptUpdate, AuditEntry, NewAttempt, NewRun, RunOpened,
    RunRow, RunStore, RunUpdate, ScoreRow, StoreError, StoreResult,
};
use sqlx::postgres::{PgConnection, PgRow, Postgres};
use sqlx::{QueryBuilder, Row};

use crate::PgStore;
use crate::audit;
use crate::error::{TxError, TxResult, finish, limit, translate, unique_violation, with_retry};
use crate::rows::{self, TimeColumns};

macro_rules! run_cols {
    () => {
        "id, namespace, mode, started, finished, attempts, kept, reverts, cost_usd, ci_minutes, status, \
         consecutive_reverts, current_attempt, base_sha, pr_url, note, condition, advanced_at"
    };
}
macro_rules! attempt_cols {
    () => {
        "id, namespace, run_id, status, change_summary, diff_ref, branch, head_sha, base_sha, lineage_parent, \
         skill_id, score_before, score_after, reason, anchors_json, secondary_json, flag_reason, dispatched_at, ts"
    };
}

const OPEN_RUN: &str = concat!(
    "INSERT INTO improve_runs (id, namespace, mode, started, status, condition, base_sha, advanced_at) \
     VALUES ($1, $2, $3, $4, 'opening', $5, $6, $4) RETURNING ",
    run_cols!()
);
const INSERT_ATTEMPT: &str = "INSERT INTO improve_attempts (id, namespace, run_id, change_summary, diff_ref, \
     branch, base_sha, lineage_parent, skill_id, status, ts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10)";
const INSERT_SCORE: &str = "INSERT INTO improve_scores (namespace, metric, value, run_id, attempt_id, ts) \
     VALUES ($1, $2, $3, $4, $5, $6)";
const PUT_SETTING: &str = "INSERT INTO settings (key, value, expires_at) VALUES ($1, $2, NULL) \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = NULL";
const RUN: &str = concat!("SELECT ", run_cols!(), " FROM improve_runs WHERE id = $1");
const LIVE_RUN: &str = concat!(
    "SELECT ",
    run_cols!(),
    " FROM improve_runs WHERE namespace = $1 AND status NOT IN ('done', 'paused')"
);
const RUNS: &str = concat!(
    "SELECT ",
    run_cols!(),
    " FROM improve_runs ORDER BY started DESC, id DESC LIMIT $1"
);
const RUNS_OF: &str = concat!(
    "SELECT ",
    run_cols!(),
    " FROM improve_runs WHERE namespace = $1 ORDER BY started DESC, id DESC LIMIT $2"
);
const ATTEMPT: &str = concat!(
    "SELECT ",
    attempt_cols!(),
    " FROM improve_attempts WHERE id = $1"
);
const ATTEMPTS: &str = concat!(
    "SELECT ",
    attempt_cols!(),
    " FROM improve_attempts WHERE run_id = $1 ORDER BY ts, id"
);
const SCORES: &str = "SELECT namespace, run_id, attempt_id, metric, value, ts FROM improve_scores \
     WHERE run_id = $1 AND attempt_id IS NOT DISTINCT FROM $2 ORDER BY metric, id";

fn counter(row: &PgRow, column: &str) -> Result<u32, sqlx::Error> {
    let n: i64 = row.try_get(column)?;
    Ok(u32::try_from(n).unwrap_or(0))
}

fn run_row(row: &PgRow) -> Result<RunRow, sqlx::Error> {
    Ok(RunRow {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        mode: row.try_get("mode")?,
        started: row.time("started")?,
        finished: row.time("finished")?,
        status: rows::word(row, "status", RunStatus::parse)?,
        tally: RunTally {
            attempts: counter(row, "attempts")?,
            kept: counter(row, "kept")?,
            reverts: counter(row, "reverts")?,
            consecutive_reverts: counter(row, "consecutive_reverts")?,
        },
        cost_usd: row.try_get("cost_usd")?,
        ci_minutes: row.try_get("ci_minutes")?,
        current_attempt: row.try_get("current_attempt")?,
        base_sha: row.try_get("base_sha")?,
        pr_url: row.try_get("pr_url")?,
        note: row.try_get("note")?,
        condition: row.try_get("condition")?,
        advanced_at: row.time("advanced_at")?,
    })
}

fn attempt_row(row: &PgRow) -> Result<AttemptRow, sqlx::Error> {
    Ok(AttemptRow {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        run_id: row.try_get("run_id")?,
        status: rows::word(row, "status", AttemptStatus::parse)?,
        change_summary: row.try_get("change_summary")?,
        diff_ref: row.try_get("diff_ref")?,
        branch: row.try_get("branch")?,
        head_sha: row.try_get("head_sha")?,
        base_sha: row.try_get("base_sha")?,
        lineage_parent: row.try_get("lineage_parent")?,
        skill_id: row.try_get("skill_id")?,
        score_before: row.try_get("score_before")?,
        score_after: row.try_get("score_after")?,
        reason: row.try_get("reason")?,
        anchors_json: row.try_get("anchors_json")?,
        secondary_json: row.try_get("secondary_json")?,
        flag_reason: row.try_get("flag_reason")?,
        dispatched_at: row.time("dispatched_at")?,
        ts: row.time("ts")?,
    })
}

fn score_row(row: &PgRow) -> Result<ScoreRow, sqlx::Error> {
    Ok(ScoreRow {
        namespace: row.try_get("namespace")?,
        run_id: row.try_get("run_id")?,
        attempt_id: row.try_get("attempt_id")?,
        metric: row.try_get("metric")?,
        value: row.try_get("value")?,
        ts: row.time("ts")?,
    })
}

fn push_tally(qb: &mut QueryBuilder<Postgres>, joiner: &str, tally: &RunTally) {
    qb.push(joiner)
        .push("attempts = ")
        .push_bind(i64::from(tally.attempts));
    qb.push(joiner)
        .push("kept = ")
        .push_bind(i64::from(tally.kept));
    qb.push(joiner)
        .push("reverts = ")
        .push_bind(i64::from(tally.reverts));
    qb.push(joiner)
        .push("consecutive_reverts = ")
        .push_bind(i64::from(tally.consecutive_reverts));
}

/// The keyed update of a run; whether it matched.
async fn update_run(conn: &mut PgConnection, u: &RunUpdate) -> TxResult<bool> {
    let mut qb = QueryBuilder::<Postgres>::new("UPDATE improve_runs SET status = ");
    qb.push_bind(u.to.as_str())
        .push(", advanced_at = ")
        .push_bind(u.at.to_string())
        .push(", ci_minutes = ci_minutes + ")
        .push_bind(u.add_ci_minutes)
        .push(", cost_usd = cost_usd + ")
        .push_bind(u.add_cost_usd);
    if let Some(tally) = &u.tally {
        push_tally(&mut qb, ", ", tally);
    }
    if u.current_attempt.changes() {
        qb.push(", current_attempt = ")
            .push_bind(u.current_attempt.stored());
    }
    if u.note.changes() {
        qb.push(", note = ").push_bind(u.note.stored());
    }
    if let Some(finished) = u.finished {
        qb.push(", finished = ").push_bind(finished.to_string());
    }
    qb.push(" WHERE id = ")
        .push_bind(u.id.clone())
        .push(" AND status = ")
        .push_bind(u.from.as_str());
    if let Some(before) = &u.tally_before {
        push_tally(&mut qb, " AND ", before);
    }
    qb.push(" RETURNING id");
    let hit: Option<String> = qb.build_query_scalar().fetch_optional(conn).await?;
    Ok(hit.is_some())
}

/// The keyed update of an attempt; whether it matched.
async fn update_attempt(conn: &mut PgConnection, u: &AttemptUpdate) -> TxResult<bool> {
    let to = u.step.to;
    let mut qb = QueryBuilder::<Postgres>::new("UPDATE improve_attempts SET status = ");
    qb.push_bind(to.as_str())
        .push(", kept = ")
        .push_bind(i64::from(to == AttemptStatus::Kept))
        .push(", flagged = ")
        .push_bind(i64::from(to == AttemptStatus::Flagged));
    if u.head_sha.changes() {
        qb.push(", head_sha = ").push_bind(u.head_sha.stored());
    }
    if let Some(at) = u.dispatched_at {
        qb.push(", dispatched_at = ").push_bind(at.to_string());
    }
    if let Some(v) = u.score_before {
        qb.push(", score_before = ").push_bind(v);
    }
    if let Some(v) = u.score_after {
        qb.push(", score_after = ").push_bind(v);
    }
    if u.reason.changes() {
        qb.push(", reason = ").push_bind(u.reason.stored());
    }
    if let Some(v) = &u.anchors_json {
        qb.push(", anchors_json = ").push_bind(v.clone());
    }
    if let Some(v) = &u.secondary_json {
        qb.push(", secondary_json = ").push_bind(v.clone());
    }
    if let Some(v) = &u.flag_reason {
        qb.push(", flag_reason = ").push_bind(v.clone());
    }
    qb.push(" WHERE id = ")
        .push_bind(u.id.clone())
        .push(" AND status = ")
        .push_bind(u.step.from.as_str())
        .push(" RETURNING id");
    let hit: Option<String> = qb.build_query_scalar().fetch_optional(conn).await?;
    Ok(hit.is_some())
}

#[async_trait]
impl RunStore for PgStore {
    async fn open_run(&self, run: NewRun, audit: AuditEntry) -> StoreResult<RunOpened> {
        let pool = &self.pool;
        let (run, audit) = (&run, &audit);
        let started = run.started.to_string();
        let started = started.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<RunOpened> = async {
                    let inserted = sqlx::query(OPEN_RUN)
                        .bind(&run.id)
                        .bind(&run.namespace)
                        .bind(&run.mode)
                        .bind(started)
                        .bind(&run.condition)
                        .bind(&run.base_sha)
                        .fetch_one(&mut *tx)
                        .await;
                    let row = match inserted {
                        Ok(row) => row,
                        Err(e) => {
                            return match unique_violation(&e) {
                                Some("improve_runs_one_active") => Ok(RunOpened::LiveRunExists),
                                Some(_) => Err(TxError::Store(StoreError::Conflict(format!(
                                    "a run with id '{}' already exists",
                                    run.id
                                )))),
                                None => Err(TxError::Db(e)),
                            };
                        }
                    };
                    let opened = run_row(&row)?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(RunOpened::Opened(Box::new(opened)))
                }
                .await;
                finish(tx, result, |o| matches!(o, RunOpened::Opened(_))).await
            })
        })
        .await
    }

    async fn add_attempt(
        &self,
        attempt: NewAttempt,
        run: RunUpdate,
        audit: AuditEntry,
    ) -> StoreResult<Advanced> {
        let pool = &self.pool;
        let (attempt, run, audit) = (&attempt, &run, &audit);
        let ts = attempt.ts.to_string();
        let ts = ts.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<Advanced> = async {
                    if !update_run(&mut tx, run).await? {
                        return Ok(Advanced::Lost);
                    }
                    let inserted = sqlx::query(INSERT_ATTEMPT)
                        .bind(&attempt.id)
                        .bind(&attempt.namespace)
                        .bind(&attempt.run_id)
                        .bind(&attempt.change_summary)
                        .bind(&attempt.diff_ref)
                        .bind(&attempt.branch)
                        .bind(&attempt.base_sha)
                        .bind(&attempt.lineage_parent)
                        .bind(&attempt.skill_id)
                        .bind(ts)
                        .execute(&mut *tx)
                        .await;
                    if let Err(e) = inserted {
                        return Err(match unique_violation(&e) {
                            Some(_) => TxError::Store(StoreError::Conflict(format!(
                                "an attempt with id '{}' already exists",
                                attempt.id
                            ))),
                            None => TxError::Db(e),
                        });
                    }
                    audit::insert(&mut tx, audit).await?;
                    Ok(Advanced::Applied)
                }
                .await;
                finish(tx, result, |a| *a == Advanced::Applied).await
            })
        })
        .await
    }

    async fn advance(&self, advance: Advance) -> StoreResult<Advanced> {
        let pool = &self.pool;
        let advance = &advance;
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<Advanced> = async {
                    if let Some(u) = &advance.attempt
                        && !update_attempt(&mut tx, u).await?
                    {
                        return Ok(Advanced::Lost);
                    }
                    if let Some(u) = &advance.run
                        && !update_run(&mut tx, u).await?
                    {
                        return Ok(Advanced::Lost);
                    }
                    for s in &advance.scores {
                        sqlx::query(INSERT_SCORE)
                            .bind(&s.namespace)
                            .bind(&s.metric)
                            .bind(s.value)
                            .bind(&s.run_id)
                            .bind(&s.attempt_id)
                            .bind(s.ts.to_string())
                            .execute(&mut *tx)
                            .await?;
                    }
                    if let Some((key, value)) = &advance.setting {
                        sqlx::query(PUT_SETTING)
                            .bind(key)
                            .bind(value)
                            .execute(&mut *tx)
                            .await?;
                    }
                    audit::insert_all(&mut tx, &advance.audits).await?;
                    Ok(Advanced::Applied)
                }
                .await;
                finish(tx, result, |a| *a == Advanced::Applied).await
            })
        })
        .await
    }

    async fn run(&self, id: &str) -> StoreResult<Option<RunRow>> {
        let row = sqlx::query(RUN)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref().map(run_row).transpose().map_err(translate)
    }

    async fn live_run(&self, namespace: &str) -> StoreResult<Option<RunRow>> {
        let row = sqlx::query(LIVE_RUN)
            .bind(namespace)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref().map(run_row).transpose().map_err(translate)
    }

    async fn runs(&self, namespace: Option<&str>, n: usize) -> StoreResult<Vec<RunRow>> {
        let found = match namespace {
            Some(ns) => {
                sqlx::query(RUNS_OF)
                    .bind(ns)
                    .bind(limit(n))
                    .fetch_all(&self.pool)
                    .await
            }
            None => sqlx::query(RUNS).bind(limit(n)).fetch_all(&self.pool).await,
        }
        .map_err(translate)?;
        found
            .iter()
            .map(run_row)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn attempt(&self, id: &str) -> StoreResult<Option<AttemptRow>> {
        let row = sqlx::query(ATTEMPT)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref().map(attempt_row).transpose().map_err(translate)
    }

    async fn attempts(&self, run_id: &str) -> StoreResult<Vec<AttemptRow>> {
        let found = sqlx::query(ATTEMPTS)
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        found
            .iter()
            .map(attempt_row)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn scores(&self, run_id: &str, attempt_id: Option<&str>) -> StoreResult<Vec<ScoreRow>> {
        let found = sqlx::query(SCORES)
            .bind(run_id)
            .bind(attempt_id)
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        found
            .iter()
            .map(score_row)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }
}
