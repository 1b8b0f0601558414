//! The improve loop's run totals and the skill store (skills, evaluations, keyed status
//! changes audited in their transaction, an accepted edit's version bump with its body).

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::ports::{
    AuditEntry, DocumentWrite, ImproveRunTotals, ImproveStore, SkillEditRow, SkillEvaluationRow,
    SkillFailureRow, SkillOfferRow, SkillRow, SkillStore, StoreResult,
};
use capsid_core::time::Timestamp;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteRow};
use sqlx::{QueryBuilder, Row};

use crate::documents::write::{apply_write, live_row};
use crate::error::{DbResult, conflict_or_backend};
use crate::rows::{self, insert_audit};
use crate::store::{SqliteStore, commit};

fn run_totals_row(row: &SqliteRow) -> Result<ImproveRunTotals, sqlx::Error> {
    Ok(ImproveRunTotals {
        namespace: row.try_get("namespace")?,
        runs: rows::count(row.try_get("runs")?),
        attempts: rows::count(row.try_get("attempts")?),
        kept: rows::count(row.try_get("kept")?),
        reverts: rows::count(row.try_get("reverts")?),
        cost_usd: row.try_get("cost_usd")?,
        ci_minutes: row.try_get("ci_minutes")?,
    })
}

fn skill_row(row: &SqliteRow) -> Result<SkillRow, sqlx::Error> {
    Ok(SkillRow {
        id: row.try_get("id")?,
        source_namespace: row.try_get("source_namespace")?,
        title: row.try_get("title")?,
        body_ref: row.try_get("body_ref")?,
        version: row.try_get("version")?,
        status: row.try_get("status")?,
        wins: row.try_get("wins")?,
        losses: row.try_get("losses")?,
        trigger_condition: row.try_get("trigger_condition")?,
        namespaces: row.try_get("namespaces")?,
    })
}

const SKILL_COLS: &str = "id, source_namespace, title, body_ref, version, status, wins, losses, trigger_condition, namespaces";

fn edit_row(row: &SqliteRow) -> Result<SkillEditRow, sqlx::Error> {
    Ok(SkillEditRow {
        skill: row.try_get("skill")?,
        from_version: row.try_get("from_version")?,
        to_version: row.try_get("to_version")?,
        ops: row.try_get("ops")?,
        accepted: row.try_get::<i64, _>("accepted")? != 0,
        reason: row.try_get("reason")?,
        evaluated_at: row.time("evaluated_at")?,
    })
}

fn failure_row(row: &SqliteRow) -> Result<SkillFailureRow, sqlx::Error> {
    Ok(SkillFailureRow {
        skill: row.try_get("skill")?,
        namespace: row.try_get("namespace")?,
        source_kind: row.try_get("source_kind")?,
        source_id: row.try_get("source_id")?,
        note: row.try_get("note")?,
        created_at: row.time("created_at")?,
    })
}

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn evaluation_row(row: &SqliteRow) -> Result<SkillEvaluationRow, sqlx::Error> {
    Ok(SkillEvaluationRow {
        skill: row.try_get("skill")?,
        version: row.try_get("version")?,
        namespace: row.try_get("namespace")?,
        probe_set_version: row.try_get("probe_set_version")?,
        delta: row.try_get("delta")?,
        runs: row.try_get("runs")?,
        verdict: row.try_get("verdict")?,
        evaluated_at: row.time("evaluated_at")?,
    })
}

/// Inserts one `skill_edits` row inside the caller's transaction.
async fn insert_edit(conn: &mut SqliteConnection, edit: &SkillEditRow) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO skill_edits (skill, from_version, to_version, ops, accepted, reason, evaluated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&edit.skill)
    .bind(edit.from_version)
    .bind(edit.to_version)
    .bind(&edit.ops)
    .bind(i64::from(edit.accepted))
    .bind(&edit.reason)
    .bind(edit.evaluated_at.to_string())
    .execute(conn)
    .await
    .db()?;
    Ok(())
}

#[async_trait]
impl ImproveStore for SqliteStore {
    async fn run_totals(&self, since: Option<Timestamp>) -> StoreResult<Vec<ImproveRunTotals>> {
        let mut qb = QueryBuilder::<Sqlite>::new(
            "SELECT namespace, COUNT(*) AS runs, COALESCE(SUM(attempts), 0) AS attempts, \
             COALESCE(SUM(kept), 0) AS kept, COALESCE(SUM(reverts), 0) AS reverts, \
             TOTAL(cost_usd) AS cost_usd, TOTAL(ci_minutes) AS ci_minutes FROM improve_runs",
        );
        if let Some(since) = since {
            qb.push(" WHERE started >= ").push_bind(since.to_string());
        }
        qb.push(" GROUP BY namespace ORDER BY namespace");
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(&found, run_totals_row).db()
    }
}

#[async_trait]
impl SkillStore for SqliteStore {
    async fn insert_skill(
        &self,
        skill: SkillRow,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO improve_skills (id, source_namespace, title, body_ref, version, status, wins, losses, ts, \
             trigger_condition, namespaces) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&skill.id)
        .bind(&skill.source_namespace)
        .bind(&skill.title)
        .bind(&skill.body_ref)
        .bind(skill.version)
        .bind(&skill.status)
        .bind(skill.wins)
        .bind(skill.losses)
        .bind(at.to_string())
        .bind(&skill.trigger_condition)
        .bind(&skill.namespaces)
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict_or_backend(e, |_| format!("skill '{}' already exists", skill.id)))?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await
    }

    async fn skills(&self, status: Option<&str>) -> StoreResult<Vec<SkillRow>> {
        let mut qb =
            QueryBuilder::<Sqlite>::new(format!("SELECT {SKILL_COLS} FROM improve_skills"));
        if let Some(status) = status {
            qb.push(" WHERE status = ").push_bind(status.to_owned());
        }
        qb.push(" ORDER BY ts DESC, id");
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(&found, skill_row).db()
    }

    async fn record_evaluation(
        &self,
        evaluation: SkillEvaluationRow,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO skill_evaluations (skill, version, namespace, probe_set_version, delta, runs, verdict, \
             evaluated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&evaluation.skill)
        .bind(evaluation.version)
        .bind(&evaluation.namespace)
        .bind(&evaluation.probe_set_version)
        .bind(evaluation.delta)
        .bind(evaluation.runs)
        .bind(&evaluation.verdict)
        .bind(evaluation.evaluated_at.to_string())
        .execute(&mut *tx)
        .await
        .db()?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await
    }

    async fn evaluations(&self, skill: &str) -> StoreResult<Vec<SkillEvaluationRow>> {
        let found = sqlx::query(
            "SELECT skill, version, namespace, probe_set_version, delta, runs, verdict, evaluated_at \
             FROM skill_evaluations WHERE skill = ? ORDER BY evaluated_at DESC, id DESC",
        )
        .bind(skill)
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, evaluation_row).db()
    }

    async fn set_skill_status(
        &self,
        skill: &str,
        from: &str,
        to: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        // `retired_at` records when a skill entered `retired`; other moves leave it alone.
        let changed: Option<String> = sqlx::query_scalar(
            "UPDATE improve_skills SET status = ?1, retired_at = CASE WHEN ?1 = 'retired' THEN ?2 ELSE retired_at END \
             WHERE id = ?3 AND status = ?4 RETURNING id",
        )
        .bind(to)
        .bind(at.to_string())
        .bind(skill)
        .bind(from)
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        if changed.is_none() {
            return Ok(false);
        }
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(true)
    }

    async fn skill(&self, id: &str) -> StoreResult<Option<SkillRow>> {
        let found = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SKILL_COLS} FROM improve_skills WHERE id = ?"
        )))
        .bind(id)
        .fetch_optional(self.reader())
        .await
        .db()?;
        found.as_ref().map(skill_row).transpose().db()
    }

    async fn record_skill_edit(&self, edit: SkillEditRow, audit: AuditEntry) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        insert_edit(&mut tx, &edit).await?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await
    }

    async fn accept_skill_edit(
        &self,
        edit: SkillEditRow,
        body: DocumentWrite,
        audit: AuditEntry,
    ) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let bumped: Option<String> = sqlx::query_scalar(
            "UPDATE improve_skills SET version = ? WHERE id = ? AND version = ? RETURNING id",
        )
        .bind(edit.to_version)
        .bind(&edit.skill)
        .bind(edit.from_version)
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        if bumped.is_none() {
            return Ok(false);
        }
        insert_edit(&mut tx, &edit).await?;
        let exists = live_row(&mut tx, &body.namespace, &body.path)
            .await?
            .is_some();
        apply_write(&mut tx, &body, exists).await?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(true)
    }

    async fn skill_edits(&self, skill: &str, n: usize) -> StoreResult<Vec<SkillEditRow>> {
        let found = sqlx::query(
            "SELECT skill, from_version, to_version, ops, accepted, reason, evaluated_at FROM skill_edits \
             WHERE skill = ? ORDER BY evaluated_at DESC, id DESC LIMIT ?",
        )
        .bind(skill)
        .bind(limit(n))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, edit_row).db()
    }

    async fn record_skill_failure(
        &self,
        failure: SkillFailureRow,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO skill_failures (skill, namespace, source_kind, source_id, note, created_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&failure.skill)
        .bind(&failure.namespace)
        .bind(&failure.source_kind)
        .bind(&failure.source_id)
        .bind(&failure.note)
        .bind(failure.created_at.to_string())
        .execute(&mut *tx)
        .await
        .db()?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await
    }

    async fn skill_failures(&self, skill: &str, n: usize) -> StoreResult<Vec<SkillFailureRow>> {
        let found = sqlx::query(
            "SELECT skill, namespace, source_kind, source_id, note, created_at FROM skill_failures \
             WHERE skill = ? ORDER BY created_at DESC, id DESC LIMIT ?",
        )
        .bind(skill)
        .bind(limit(n))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, failure_row).db()
    }

    async fn credit_skill(&self, skill: &str, win: bool, audit: AuditEntry) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let column = if win { "wins" } else { "losses" };
        let changed: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "UPDATE improve_skills SET {column} = {column} + 1 WHERE id = ? RETURNING id"
        )))
        .bind(skill)
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        if changed.is_none() {
            return Ok(false);
        }
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(true)
    }

    async fn last_evaluation(&self, namespace: &str) -> StoreResult<Option<SkillEvaluationRow>> {
        let found = sqlx::query(
            "SELECT skill, version, namespace, probe_set_version, delta, runs, verdict, evaluated_at \
             FROM skill_evaluations WHERE namespace = ? ORDER BY evaluated_at DESC, id DESC LIMIT 1",
        )
        .bind(namespace)
        .fetch_optional(self.reader())
        .await
        .db()?;
        found.as_ref().map(evaluation_row).transpose().db()
    }

    async fn skill_offers(&self, namespace: &str, limit: usize) -> StoreResult<Vec<SkillOfferRow>> {
        let found = sqlx::query(
            "SELECT skill_ids_offered, skill_ids_used FROM job_outcomes \
             WHERE namespace = ? AND skill_ids_offered IS NOT NULL \
             ORDER BY recorded_at DESC, job_id DESC LIMIT ?",
        )
        .bind(namespace)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.reader())
        .await
        .db()?;
        found
            .iter()
            .map(|r| {
                Ok(SkillOfferRow {
                    offered: r.try_get("skill_ids_offered")?,
                    used: r.try_get("skill_ids_used")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .db()
    }
}
