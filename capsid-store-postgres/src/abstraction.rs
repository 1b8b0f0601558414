//! The `SkillSourceStore` port: unspent sources of skills (bounded, oldest first) and the
//! insert of a proposed candidate with its body document and audit rows in one transaction,
//! refused whole while its source is spent (the unique partial indexes on `source_attempt` and
//! `source_job` settle a race the check inside the transaction cannot see).

use async_trait::async_trait;
use capsid_core::ports::{
    Proposed, ProposedSkill, SkillSource, SkillSourceStore, StoreError, StoreResult, WriteGuard,
};
use capsid_core::skills::abstraction::SourceKind;
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::PgStore;
use crate::audit;
use crate::documents::write_in_tx;
use crate::error::{TxError, TxResult, finish, limit, translate, with_retry};
use crate::rows::TimeColumns;

const KEPT_ATTEMPTS: &str = "SELECT a.id, a.namespace, a.change_summary, a.diff_ref, a.ts FROM improve_attempts a \
     WHERE a.status = $1 AND ($2::text IS NULL OR a.id = $2) \
     AND NOT EXISTS (SELECT 1 FROM improve_skills s WHERE s.source_attempt = a.id) \
     AND NOT EXISTS (SELECT 1 FROM settings k WHERE k.key = $3 || a.id) \
     ORDER BY a.ts, a.id LIMIT $4";
const VERIFIED_JOBS: &str = "SELECT j.id, j.namespace, j.title, j.body, j.result_summary, o.recorded_at \
     FROM job_outcomes o JOIN jobs j ON j.id = o.job_id \
     WHERE j.status = $1 AND o.skill_verdict = $2 AND ($3::text IS NULL OR j.id = $3) \
     AND NOT EXISTS (SELECT 1 FROM improve_skills s WHERE s.source_job = j.id) \
     AND NOT EXISTS (SELECT 1 FROM settings k WHERE k.key = $4 || j.id) \
     ORDER BY o.recorded_at, o.job_id LIMIT $5";
const SPENT: &str = "SELECT (EXISTS (SELECT 1 FROM settings WHERE key = $1) \
     OR EXISTS (SELECT 1 FROM improve_skills WHERE source_attempt = $2 OR source_job = $3))";
/// A row whose source a concurrent insert took conflicts on its unique index and is skipped.
const INSERT: &str = "INSERT INTO improve_skills (id, source_namespace, title, body_ref, version, status, wins, losses, ts, \
     trigger_condition, namespaces, termination_test, composition_interface, source_attempt, source_job) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
     ON CONFLICT DO NOTHING RETURNING id";
const ID_TAKEN: &str = "SELECT EXISTS (SELECT 1 FROM improve_skills WHERE id = $1)";

fn attempt(row: &PgRow) -> Result<SkillSource, sqlx::Error> {
    Ok(SkillSource {
        kind: SourceKind::Attempt,
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        title: None,
        summary: row.try_get("change_summary")?,
        body: None,
        document: row.try_get("diff_ref")?,
        at: row.time("ts")?,
    })
}

fn job(row: &PgRow) -> Result<SkillSource, sqlx::Error> {
    Ok(SkillSource {
        kind: SourceKind::Job,
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        title: row.try_get("title")?,
        summary: row.try_get("result_summary")?,
        body: row.try_get("body")?,
        document: None,
        at: row.time("recorded_at")?,
    })
}

fn all(
    rows: &[PgRow],
    map: fn(&PgRow) -> Result<SkillSource, sqlx::Error>,
) -> StoreResult<Vec<SkillSource>> {
    rows.iter()
        .map(map)
        .collect::<Result<_, _>>()
        .map_err(translate)
}

async fn insert(conn: &mut sqlx::PgConnection, p: &ProposedSkill) -> TxResult<Proposed> {
    let spent: bool = sqlx::query_scalar(SPENT)
        .bind(&p.spent_key)
        .bind(&p.source_attempt)
        .bind(&p.source_job)
        .fetch_one(&mut *conn)
        .await?;
    if spent {
        return Ok(Proposed::Spent);
    }
    let s = &p.row;
    let inserted: Option<String> = sqlx::query_scalar(INSERT)
        .bind(&s.id)
        .bind(&s.source_namespace)
        .bind(&s.title)
        .bind(&s.body_ref)
        .bind(s.version)
        .bind(&s.status)
        .bind(s.wins)
        .bind(s.losses)
        .bind(p.body.at.to_string())
        .bind(&s.trigger_condition)
        .bind(&s.namespaces)
        .bind(&p.termination_test)
        .bind(&p.composition_interface)
        .bind(&p.source_attempt)
        .bind(&p.source_job)
        .fetch_optional(&mut *conn)
        .await?;
    if inserted.is_none() {
        let taken: bool = sqlx::query_scalar(ID_TAKEN)
            .bind(&s.id)
            .fetch_one(&mut *conn)
            .await?;
        if taken {
            return Err(TxError::Store(StoreError::Conflict(format!(
                "skill '{}' already exists",
                s.id
            ))));
        }
        return Ok(Proposed::Spent);
    }
    write_in_tx(&mut *conn, &p.body, &WriteGuard::Create).await?;
    for entry in &p.audits {
        audit::insert(&mut *conn, entry).await?;
    }
    Ok(Proposed::Inserted)
}

#[async_trait]
impl SkillSourceStore for PgStore {
    async fn kept_attempt_sources(
        &self,
        kept_status: &str,
        spent_prefix: &str,
        only: Option<&str>,
        n: usize,
    ) -> StoreResult<Vec<SkillSource>> {
        let rows = sqlx::query(KEPT_ATTEMPTS)
            .bind(kept_status)
            .bind(only)
            .bind(spent_prefix)
            .bind(limit(n))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        all(&rows, attempt)
    }

    async fn verified_job_sources(
        &self,
        done_status: &str,
        verdict: &str,
        spent_prefix: &str,
        only: Option<&str>,
        n: usize,
    ) -> StoreResult<Vec<SkillSource>> {
        let rows = sqlx::query(VERIFIED_JOBS)
            .bind(done_status)
            .bind(verdict)
            .bind(only)
            .bind(spent_prefix)
            .bind(limit(n))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        all(&rows, job)
    }

    async fn insert_proposed_skill(&self, p: ProposedSkill) -> StoreResult<Proposed> {
        let pool = &self.pool;
        let p = &p;
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = insert(&mut tx, p).await;
                finish(tx, result, |r| *r == Proposed::Inserted).await
            })
        })
        .await
    }
}
