//! The `RunStore` port: runs and attempts of the improve loop. Opening a run meets the partial
//! unique index `improve_runs_one_active`; every transition is `UPDATE … WHERE id = ? AND
//! status = ? RETURNING id` inside the unit's transaction, and a miss rolls the unit back.

use async_trait::async_trait;
use capsid_core::improve::machine::{AttemptStatus, RunStatus, RunTally};
use capsid_core::ports::{
    Advance, Advanced, AttemptRow, AttemptUpdate, AuditEntry, NewAttempt, NewRun, RunOpened,
    RunRow, RunStore, RunUpdate, ScoreRow, StoreError, StoreResult,
};
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteRow};
use sqlx::{QueryBuilder, Row};

use crate::error::{DbResult, backend, unique_violation};
use crate::rows::{self, TimeColumns, insert_audit};
use crate::store::{SqliteStore, commit};

const RUN_COLUMNS: &str = "id, namespace, mode, started, finished, attempts, kept, reverts, cost_usd, \
     ci_minutes, status, consecutive_reverts, current_attempt, base_sha, pr_url, note, condition, advanced_at";
const ATTEMPT_COLUMNS: &str = "id, namespace, run_id, status, change_summary, diff_ref, branch, head_sha, \
     base_sha, lineage_parent, skill_id, score_before, score_after, reason, anchors_json, secondary_json, \
     flag_reason, dispatched_at, ts";
const LIVE: &str = "status NOT IN ('done', 'paused')";

fn counter(row: &SqliteRow, column: &str) -> Result<u32, sqlx::Error> {
    let n: i64 = row.try_get(column)?;
    Ok(u32::try_from(n).unwrap_or(0))
}

fn run_row(row: &SqliteRow) -> Result<RunRow, sqlx::Error> {
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

fn attempt_row(row: &SqliteRow) -> Result<AttemptRow, sqlx::Error> {
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

fn score_row(row: &SqliteRow) -> Result<ScoreRow, sqlx::Error> {
    Ok(ScoreRow {
        namespace: row.try_get("namespace")?,
        run_id: row.try_get("run_id")?,
        attempt_id: row.try_get("attempt_id")?,
        metric: row.try_get("metric")?,
        value: row.try_get("value")?,
        ts: row.time("ts")?,
    })
}

fn push_tally(qb: &mut QueryBuilder<Sqlite>, joiner: &str, tally: &RunTally) {
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
async fn update_run(conn: &mut SqliteConnection, u: &RunUpdate) -> StoreResult<bool> {
    let mut qb = QueryBuilder::<Sqlite>::new("UPDATE improve_runs SET status = ");
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
    let hit: Option<String> = qb.build_query_scalar().fetch_optional(conn).await.db()?;
    Ok(hit.is_some())
}

/// The keyed update of an attempt; whether it matched.
async fn update_attempt(conn: &mut SqliteConnection, u: &AttemptUpdate) -> StoreResult<bool> {
    let to = u.step.to;
    let mut qb = QueryBuilder::<Sqlite>::new("UPDATE improve_attempts SET status = ");
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
    let hit: Option<String> = qb.build_query_scalar().fetch_optional(conn).await.db()?;
    Ok(hit.is_some())
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn open_run(&self, run: NewRun, audit: AuditEntry) -> StoreResult<RunOpened> {
        let mut tx = self.begin_write().await?;
        let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO improve_runs (id, namespace, mode, started, status, condition, base_sha, advanced_at) \
             VALUES (?, ?, ?, ?, 'opening', ?, ?, ?) RETURNING {RUN_COLUMNS}"
        )))
        .bind(&run.id)
        .bind(&run.namespace)
        .bind(&run.mode)
        .bind(run.started.to_string())
        .bind(&run.condition)
        .bind(&run.base_sha)
        .bind(run.started.to_string())
        .fetch_one(&mut *tx)
        .await;
        let row = match inserted {
            Ok(row) => row,
            Err(e) => {
                return match unique_violation(&e) {
                    Some(m) if m.contains("improve_runs.namespace") => Ok(RunOpened::LiveRunExists),
                    Some(_) => Err(StoreError::Conflict(format!(
                        "a run with id '{}' already exists",
                        run.id
                    ))),
                    None => Err(backend(e)),
                };
            }
        };
        let opened = run_row(&row).db()?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(RunOpened::Opened(Box::new(opened)))
    }

    async fn add_attempt(
        &self,
        attempt: NewAttempt,
        run: RunUpdate,
        audit: AuditEntry,
    ) -> StoreResult<Advanced> {
        let mut tx = self.begin_write().await?;
        if !update_run(&mut tx, &run).await? {
            return Ok(Advanced::Lost);
        }
        sqlx::query(
            "INSERT INTO improve_attempts (id, namespace, run_id, change_summary, diff_ref, branch, base_sha, \
             lineage_parent, skill_id, status, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
        )
        .bind(&attempt.id)
        .bind(&attempt.namespace)
        .bind(&attempt.run_id)
        .bind(&attempt.change_summary)
        .bind(&attempt.diff_ref)
        .bind(&attempt.branch)
        .bind(&attempt.base_sha)
        .bind(&attempt.lineage_parent)
        .bind(&attempt.skill_id)
        .bind(attempt.ts.to_string())
        .execute(&mut *tx)
        .await
        .map_err(|e| {
            crate::error::conflict_or_backend(e, |_| {
                format!("an attempt with id '{}' already exists", attempt.id)
            })
        })?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(Advanced::Applied)
    }

    async fn advance(&self, advance: Advance) -> StoreResult<Advanced> {
        let mut tx = self.begin_write().await?;
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
            sqlx::query(
                "INSERT INTO improve_scores (namespace, metric, value, run_id, attempt_id, ts) VALUES (?, ?, ?, ?, ?, ?)",
            )
            .bind(&s.namespace)
            .bind(&s.metric)
            .bind(s.value)
            .bind(&s.run_id)
            .bind(&s.attempt_id)
            .bind(s.ts.to_string())
            .execute(&mut *tx)
            .await
            .db()?;
        }
        if let Some((key, value)) = &advance.setting {
            sqlx::query(
                "INSERT INTO settings (key, value, expires_at) VALUES (?, ?, NULL) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = NULL",
            )
            .bind(key)
            .bind(value)
            .execute(&mut *tx)
            .await
            .db()?;
        }
        for audit in &advance.audits {
            insert_audit(&mut tx, audit).await.db()?;
        }
        commit(tx).await?;
        Ok(Advanced::Applied)
    }

    async fn run(&self, id: &str) -> StoreResult<Option<RunRow>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM improve_runs WHERE id = ?"
        )))
        .bind(id)
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(run_row).transpose().db()
    }

    async fn live_run(&self, namespace: &str) -> StoreResult<Option<RunRow>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM improve_runs WHERE namespace = ? AND {LIVE}"
        )))
        .bind(namespace)
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(run_row).transpose().db()
    }

    async fn runs(&self, namespace: Option<&str>, limit: usize) -> StoreResult<Vec<RunRow>> {
        let mut qb = QueryBuilder::<Sqlite>::new(format!("SELECT {RUN_COLUMNS} FROM improve_runs"));
        if let Some(ns) = namespace {
            qb.push(" WHERE namespace = ").push_bind(ns.to_owned());
        }
        qb.push(" ORDER BY started DESC, id DESC LIMIT ")
            .push_bind(i64::try_from(limit).unwrap_or(i64::MAX));
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(&found, run_row).db()
    }

    async fn attempt(&self, id: &str) -> StoreResult<Option<AttemptRow>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {ATTEMPT_COLUMNS} FROM improve_attempts WHERE id = ?"
        )))
        .bind(id)
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(attempt_row).transpose().db()
    }

    async fn attempts(&self, run_id: &str) -> StoreResult<Vec<AttemptRow>> {
        let found = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {ATTEMPT_COLUMNS} FROM improve_attempts WHERE run_id = ? ORDER BY ts, id"
        )))
        .bind(run_id)
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, attempt_row).db()
    }

    async fn scores(&self, run_id: &str, attempt_id: Option<&str>) -> StoreResult<Vec<ScoreRow>> {
        let found = sqlx::query(
            "SELECT namespace, run_id, attempt_id, metric, value, ts FROM improve_scores \
             WHERE run_id = ? AND attempt_id IS ? ORDER BY metric, id",
        )
        .bind(run_id)
        .bind(attempt_id)
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, score_row).db()
    }
}
