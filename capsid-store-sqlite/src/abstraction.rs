//! The `SkillSourceStore` port: unspent sources of skills (bounded, oldest first) and the
//! insert of a proposed candidate with its body document and audit rows in one
//! `BEGIN IMMEDIATE` transaction, refused whole while its source is spent.

use async_trait::async_trait;
use capsid_core::ports::{
    Proposed, ProposedSkill, SkillSource, SkillSourceStore, StoreError, StoreResult,
};
use capsid_core::skills::abstraction::SourceKind;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::documents::{apply_write, live_row};
use crate::error::DbResult;
use crate::rows::{self, TimeColumns, insert_audit};
use crate::store::{SqliteStore, commit};

const KEPT_ATTEMPTS: &str = "SELECT a.id, a.namespace, a.change_summary, a.diff_ref, a.ts FROM improve_attempts a \
     WHERE a.status = ?1 AND (?2 IS NULL OR a.id = ?2) \
     AND NOT EXISTS (SELECT 1 FROM improve_skills s WHERE s.source_attempt = a.id) \
     AND NOT EXISTS (SELECT 1 FROM settings k WHERE k.key = ?3 || a.id) \
     ORDER BY a.ts, a.id LIMIT ?4";
const VERIFIED_JOBS: &str = "SELECT j.id, j.namespace, j.title, j.body, j.result_summary, o.recorded_at \
     FROM job_outcomes o JOIN jobs j ON j.id = o.job_id \
     WHERE j.status = ?1 AND o.skill_verdict = ?2 AND (?3 IS NULL OR j.id = ?3) \
     AND NOT EXISTS (SELECT 1 FROM improve_skills s WHERE s.source_job = j.id) \
     AND NOT EXISTS (SELECT 1 FROM settings k WHERE k.key = ?4 || j.id) \
     ORDER BY o.recorded_at, o.job_id LIMIT ?5";
const SPENT: &str = "SELECT (EXISTS (SELECT 1 FROM settings WHERE key = ?1) \
     OR EXISTS (SELECT 1 FROM improve_skills WHERE source_attempt = ?2 OR source_job = ?3))";
const INSERT: &str = "INSERT INTO improve_skills (id, source_namespace, title, body_ref, version, status, wins, losses, ts, \
     trigger_condition, namespaces, termination_test, composition_interface, source_attempt, source_job) \
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

fn attempt(row: &SqliteRow) -> Result<SkillSource, sqlx::Error> {
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

fn job(row: &SqliteRow) -> Result<SkillSource, sqlx::Error> {
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

#[async_trait]
impl SkillSourceStore for SqliteStore {
    async fn kept_attempt_sources(
        &self,
        kept_status: &str,
        spent_prefix: &str,
        only: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<SkillSource>> {
        let found = sqlx::query(KEPT_ATTEMPTS)
            .bind(kept_status)
            .bind(only)
            .bind(spent_prefix)
            .bind(rows::limit(limit))
            .fetch_all(self.reader())
            .await
            .db()?;
        rows::all(&found, attempt).db()
    }

    async fn verified_job_sources(
        &self,
        done_status: &str,
        verdict: &str,
        spent_prefix: &str,
        only: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<SkillSource>> {
        let found = sqlx::query(VERIFIED_JOBS)
            .bind(done_status)
            .bind(verdict)
            .bind(only)
            .bind(spent_prefix)
            .bind(rows::limit(limit))
            .fetch_all(self.reader())
            .await
            .db()?;
        rows::all(&found, job).db()
    }

    async fn insert_proposed_skill(&self, p: ProposedSkill) -> StoreResult<Proposed> {
        let mut tx = self.begin_write().await?;
        // BEGIN IMMEDIATE serializes writers, so this check holds until the commit.
        let spent: bool = sqlx::query_scalar(SPENT)
            .bind(&p.spent_key)
            .bind(&p.source_attempt)
            .bind(&p.source_job)
            .fetch_one(&mut *tx)
            .await
            .db()?;
        if spent {
            return Ok(Proposed::Spent);
        }
        if live_row(&mut tx, &p.body.namespace, &p.body.path)
            .await?
            .is_some()
        {
            return Err(StoreError::Conflict(format!(
                "create collision: {}/{} already exists; nothing was written",
                p.body.namespace, p.body.path
            )));
        }
        let s = &p.row;
        sqlx::query(INSERT)
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
            .execute(&mut *tx)
            .await
            .map_err(|e| {
                crate::error::conflict_or_backend(e, |_| format!("skill '{}' already exists", s.id))
            })?;
        apply_write(&mut tx, &p.body, false).await?;
        for entry in &p.audits {
            insert_audit(&mut tx, entry).await.db()?;
        }
        commit(tx).await?;
        Ok(Proposed::Inserted)
    }
}
