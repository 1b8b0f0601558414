//! The `ImproveStore` port (run totals per namespace) and the `SkillStore` port (skills,
//! evaluations, keyed status changes audited in the same transaction, an accepted edit's
//! version bump with its body document).

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::ports::{
    AuditEntry, DocumentWrite, ImproveRunTotals, ImproveStore, SkillEditRow, SkillEvaluationRow,
    SkillFailureRow, SkillOfferRow, SkillRow, SkillStore, StoreResult, WriteGuard,
};
use capsid_core::time::Timestamp;
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgRow};

use crate::PgStore;
use crate::audit;
use crate::documents::write::write_in_tx;
use crate::error::{TxResult, always, count, finish, translate, with_retry};
use crate::sql::SqlText;

const RUN_TOTALS_SELECT: &str = "SELECT namespace, count(*) AS runs, coalesce(sum(attempts), 0)::bigint AS attempts, \
     coalesce(sum(kept), 0)::bigint AS kept, coalesce(sum(reverts), 0)::bigint AS reverts, \
     coalesce(sum(cost_usd), 0)::float8 AS cost_usd, coalesce(sum(ci_minutes), 0)::float8 AS ci_minutes \
     FROM improve_runs";

macro_rules! skill_cols {
    () => {
        "id, source_namespace, title, body_ref, version, status, wins, losses, trigger_condition, namespaces"
    };
}

const INSERT_SKILL: &str = "INSERT INTO improve_skills (id, source_namespace, title, body_ref, version, status, wins, losses, ts, \
     trigger_condition, namespaces) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
const SKILL: &str = concat!(
    "SELECT ",
    skill_cols!(),
    " FROM improve_skills WHERE id = $1"
);
const INSERT_EDIT: &str = "INSERT INTO skill_edits (skill, from_version, to_version, ops, accepted, reason, evaluated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";
const EDITS: &str = "SELECT skill, from_version, to_version, ops, accepted, reason, evaluated_at FROM skill_edits \
     WHERE skill = $1 ORDER BY evaluated_at DESC, id DESC LIMIT $2";
const INSERT_FAILURE: &str = "INSERT INTO skill_failures (skill, namespace, source_kind, source_id, note, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6)";
const FAILURES: &str = "SELECT skill, namespace, source_kind, source_id, note, created_at FROM skill_failures \
     WHERE skill = $1 ORDER BY created_at DESC, id DESC LIMIT $2";
const CREDIT_WIN: &str = "UPDATE improve_skills SET wins = wins + 1 WHERE id = $1 RETURNING id";
const CREDIT_LOSS: &str =
    "UPDATE improve_skills SET losses = losses + 1 WHERE id = $1 RETURNING id";
const SKILLS: &str = concat!(
    "SELECT ",
    skill_cols!(),
    " FROM improve_skills ORDER BY ts DESC, id"
);
const SKILLS_WITH_STATUS: &str = concat!(
    "SELECT ",
    skill_cols!(),
    " FROM improve_skills WHERE status = $1 ORDER BY ts DESC, id"
);
const INSERT_EVALUATION: &str = "INSERT INTO skill_evaluations \
     (skill, version, namespace, probe_set_version, delta, runs, verdict, evaluated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const EVALUATIONS: &str = "SELECT skill, version, namespace, probe_set_version, delta, runs, verdict, evaluated_at \
     FROM skill_evaluations WHERE skill = $1 ORDER BY evaluated_at DESC, id DESC";
/// `retired_at` is stamped when the skill retires.
const SET_STATUS: &str = "UPDATE improve_skills SET status = $3, \
     retired_at = CASE WHEN $3 = 'retired' THEN $4 ELSE retired_at END \
     WHERE id = $1 AND status = $2 RETURNING id";

/// An accepted edit's version bump, keyed on the version it was measured against.
const BUMP_VERSION: &str =
    "UPDATE improve_skills SET version = $3 WHERE id = $1 AND version = $2 RETURNING id";

/// Inserts one `skill_edits` row inside the caller's transaction.
async fn insert_edit(conn: &mut PgConnection, row: &SkillEditRow, at: &str) -> TxResult<()> {
    sqlx::query(INSERT_EDIT)
        .bind(&row.skill)
        .bind(row.from_version)
        .bind(row.to_version)
        .bind(&row.ops)
        .bind(i64::from(row.accepted))
        .bind(&row.reason)
        .bind(at)
        .execute(conn)
        .await?;
    Ok(())
}

fn totals(row: &PgRow) -> Result<ImproveRunTotals, sqlx::Error> {
    Ok(ImproveRunTotals {
        namespace: row.try_get("namespace")?,
        runs: count(row.try_get("runs")?),
        attempts: count(row.try_get("attempts")?),
        kept: count(row.try_get("kept")?),
        reverts: count(row.try_get("reverts")?),
        cost_usd: row.try_get("cost_usd")?,
        ci_minutes: row.try_get("ci_minutes")?,
    })
}

fn skill(row: &PgRow) -> Result<SkillRow, sqlx::Error> {
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

fn edit(row: &PgRow) -> Result<SkillEditRow, sqlx::Error> {
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

fn failure(row: &PgRow) -> Result<SkillFailureRow, sqlx::Error> {
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

fn evaluation(row: &PgRow) -> Result<SkillEvaluationRow, sqlx::Error> {
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

#[async_trait]
impl ImproveStore for PgStore {
    async fn run_totals(&self, since: Option<Timestamp>) -> StoreResult<Vec<ImproveRunTotals>> {
        let mut sql = SqlText::new(RUN_TOTALS_SELECT);
        if since.is_some() {
            sql.and("started >= $?");
        }
        sql.push(" GROUP BY namespace ORDER BY namespace");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.finish()));
        if let Some(since) = since {
            query = query.bind(since.to_string());
        }
        let rows = query.fetch_all(&self.pool).await.map_err(translate)?;
        rows.iter()
            .map(totals)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }
}

#[async_trait]
impl SkillStore for PgStore {
    async fn insert_skill(
        &self,
        row: SkillRow,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let pool = &self.pool;
        let (row, audit) = (&row, &audit);
        let at = at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<()> = async {
                    sqlx::query(INSERT_SKILL)
                        .bind(&row.id)
                        .bind(&row.source_namespace)
                        .bind(&row.title)
                        .bind(&row.body_ref)
                        .bind(row.version)
                        .bind(&row.status)
                        .bind(row.wins)
                        .bind(row.losses)
                        .bind(at)
                        .bind(&row.trigger_condition)
                        .bind(&row.namespaces)
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, audit).await
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn skills(&self, status: Option<&str>) -> StoreResult<Vec<SkillRow>> {
        let rows = match status {
            Some(status) => {
                sqlx::query(SKILLS_WITH_STATUS)
                    .bind(status)
                    .fetch_all(&self.pool)
                    .await
            }
            None => sqlx::query(SKILLS).fetch_all(&self.pool).await,
        }
        .map_err(translate)?;
        rows.iter()
            .map(skill)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn record_evaluation(
        &self,
        row: SkillEvaluationRow,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let pool = &self.pool;
        let (row, audit) = (&row, &audit);
        let at = row.evaluated_at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<()> = async {
                    sqlx::query(INSERT_EVALUATION)
                        .bind(&row.skill)
                        .bind(row.version)
                        .bind(&row.namespace)
                        .bind(&row.probe_set_version)
                        .bind(row.delta)
                        .bind(row.runs)
                        .bind(&row.verdict)
                        .bind(at)
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, audit).await
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn evaluations(&self, skill_id: &str) -> StoreResult<Vec<SkillEvaluationRow>> {
        let rows = sqlx::query(EVALUATIONS)
            .bind(skill_id)
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(evaluation)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn set_skill_status(
        &self,
        skill_id: &str,
        from: &str,
        to: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<bool> {
        let pool = &self.pool;
        let audit = &audit;
        let at = at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let changed: Option<String> = sqlx::query_scalar(SET_STATUS)
                        .bind(skill_id)
                        .bind(from)
                        .bind(to)
                        .bind(at)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if changed.is_none() {
                        return Ok(false);
                    }
                    audit::insert(&mut tx, audit).await?;
                    Ok(true)
                }
                .await;
                finish(tx, result, |changed| *changed).await
            })
        })
        .await
    }

    async fn skill(&self, id: &str) -> StoreResult<Option<SkillRow>> {
        let row = sqlx::query(SKILL)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref().map(skill).transpose().map_err(translate)
    }

    async fn record_skill_edit(&self, row: SkillEditRow, audit: AuditEntry) -> StoreResult<()> {
        let pool = &self.pool;
        let (row, audit) = (&row, &audit);
        let at = row.evaluated_at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<()> = async {
                    insert_edit(&mut tx, row, at).await?;
                    audit::insert(&mut tx, audit).await
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn accept_skill_edit(
        &self,
        edit: SkillEditRow,
        body: DocumentWrite,
        audit: AuditEntry,
    ) -> StoreResult<bool> {
        let pool = &self.pool;
        let (edit, body, audit) = (&edit, &body, &audit);
        let at = edit.evaluated_at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<bool> = async {
                    let bumped: Option<String> = sqlx::query_scalar(BUMP_VERSION)
                        .bind(&edit.skill)
                        .bind(edit.from_version)
                        .bind(edit.to_version)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if bumped.is_none() {
                        return Ok(false);
                    }
                    insert_edit(&mut tx, edit, at).await?;
                    write_in_tx(&mut tx, body, &WriteGuard::Upsert).await?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(true)
                }
                .await;
                finish(tx, result, |bumped| *bumped).await
            })
        })
        .await
    }

    async fn skill_edits(&self, skill_id: &str, n: usize) -> StoreResult<Vec<SkillEditRow>> {
        let rows = sqlx::query(EDITS)
            .bind(skill_id)
            .bind(limit(n))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(edit)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn record_skill_failure(
        &self,
        row: SkillFailureRow,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let pool = &self.pool;
        let (row, audit) = (&row, &audit);
        let at = row.created_at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result: TxResult<()> = async {
                    sqlx::query(INSERT_FAILURE)
                        .bind(&row.skill)
                        .bind(&row.namespace)
                        .bind(&row.source_kind)
                        .bind(&row.source_id)
                        .bind(&row.note)
                        .bind(at)
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, audit).await
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn skill_failures(&self, skill_id: &str, n: usize) -> StoreResult<Vec<SkillFailureRow>> {
        let rows = sqlx::query(FAILURES)
            .bind(skill_id)
            .bind(limit(n))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(failure)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn credit_skill(
        &self,
        skill_id: &str,
        win: bool,
        audit: AuditEntry,
    ) -> StoreResult<bool> {
        let pool = &self.pool;
        let audit = &audit;
        let sql = if win { CREDIT_WIN } else { CREDIT_LOSS };
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let changed: Option<String> = sqlx::query_scalar(sql)
                        .bind(skill_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if changed.is_none() {
                        return Ok(false);
                    }
                    audit::insert(&mut tx, audit).await?;
                    Ok(true)
                }
                .await;
                finish(tx, result, |changed| *changed).await
            })
        })
        .await
    }

    async fn last_evaluation(&self, namespace: &str) -> StoreResult<Option<SkillEvaluationRow>> {
        let row = sqlx::query(LAST_EVALUATION)
            .bind(namespace)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref().map(evaluation).transpose().map_err(translate)
    }

    async fn skill_offers(&self, namespace: &str, n: usize) -> StoreResult<Vec<SkillOfferRow>> {
        let rows = sqlx::query(OFFERS)
            .bind(namespace)
            .bind(limit(n))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(|r| {
                Ok(SkillOfferRow {
                    offered: r.try_get("skill_ids_offered")?,
                    used: r.try_get("skill_ids_used")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(translate)
    }
}

/// A namespace's newest evaluation.
const LAST_EVALUATION: &str = "SELECT skill, version, namespace, probe_set_version, delta, runs, verdict, evaluated_at \
     FROM skill_evaluations WHERE namespace = $1 ORDER BY evaluated_at DESC, id DESC LIMIT 1";
/// A namespace's newest outcomes that were offered skills.
const OFFERS: &str = "SELECT skill_ids_offered, skill_ids_used FROM job_outcomes \
     WHERE namespace = $1 AND skill_ids_offered IS NOT NULL ORDER BY recorded_at DESC, job_id DESC LIMIT $2";
