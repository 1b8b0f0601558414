//! The skill-source port: unspent sources of skills (bounded, oldest first) and the insert of
//! a proposed candidate with its body document and audit rows in one unit, refused whole while
//! its source is spent (the unique partial indexes on `source_attempt` and `source_job` settle
//! a race the check inside the unit cannot see: the insert then does nothing).

use capsid_core::ports::{Proposed, ProposedSkill, SkillSource, StoreResult, WriteGuard};
use capsid_core::skills::abstraction::SourceKind;

use crate::engine::in_unit;
use crate::engine::{Engine, TxResult, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::Stmt;

/// `CAST($n AS TEXT) IS NULL` types the optional id on Postgres and reads alike on SQLite.
const KEPT_ATTEMPTS: &str = "SELECT a.id, a.namespace, a.change_summary, a.diff_ref, a.ts \
     FROM improve_attempts a WHERE a.status = $1 AND (CAST($2 AS TEXT) IS NULL OR a.id = $2) \
     AND NOT EXISTS (SELECT 1 FROM improve_skills s WHERE s.source_attempt = a.id) \
     AND NOT EXISTS (SELECT 1 FROM settings k WHERE k.key = $3 || a.id) \
     ORDER BY a.ts, a.id LIMIT $4";
const VERIFIED_JOBS: &str = "SELECT j.id, j.namespace, j.title, j.body, j.result_summary, \
     o.recorded_at FROM job_outcomes o JOIN jobs j ON j.id = o.job_id \
     WHERE j.status = $1 AND o.skill_verdict = $2 AND (CAST($3 AS TEXT) IS NULL OR j.id = $3) \
     AND NOT EXISTS (SELECT 1 FROM improve_skills s WHERE s.source_job = j.id) \
     AND NOT EXISTS (SELECT 1 FROM settings k WHERE k.key = $4 || j.id) \
     ORDER BY o.recorded_at, o.job_id LIMIT $5";
/// Counts (a `BIGINT` on both engines) of what marks the source spent.
const SPENT: &str = "SELECT (SELECT COUNT(*) FROM settings WHERE key = $1) \
     + (SELECT COUNT(*) FROM improve_skills WHERE source_attempt = $2 OR source_job = $3) AS n";
const INSERT: &str = "INSERT INTO improve_skills (id, source_namespace, title, body_ref, version, \
     status, wins, losses, ts, trigger_condition, namespaces, termination_test, \
     composition_interface, source_attempt, source_job) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
     ON CONFLICT DO NOTHING RETURNING id";
/// A read-back's marker, set in the unit; a second insert of the same key is a conflict.
const MARK_SPENT: &str = "INSERT INTO settings (key, value, expires_at) VALUES ($1, $2, NULL)";
const ID_TAKEN: &str = "SELECT COUNT(*) AS n FROM improve_skills WHERE id = $1";

fn attempt(row: &Row) -> Result<SkillSource, sqlx::Error> {
    Ok(SkillSource {
        kind: SourceKind::Attempt,
        id: row.text("id")?,
        namespace: row.text("namespace")?,
        title: None,
        summary: row.opt_text("change_summary")?,
        body: None,
        document: row.opt_text("diff_ref")?,
        at: row.time("ts")?,
    })
}

fn job(row: &Row) -> Result<SkillSource, sqlx::Error> {
    Ok(SkillSource {
        kind: SourceKind::Job,
        id: row.text("id")?,
        namespace: row.text("namespace")?,
        title: row.opt_text("title")?,
        summary: row.opt_text("result_summary")?,
        body: row.opt_text("body")?,
        document: None,
        at: row.time("recorded_at")?,
    })
}

/// `SkillSourceStore::kept_attempt_sources`.
pub async fn kept_attempt_sources(
    engine: &impl Engine,
    kept_status: &str,
    spent_prefix: &str,
    only: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<SkillSource>> {
    let stmt = Stmt::new(KEPT_ATTEMPTS)
        .bind(kept_status)
        .bind(only)
        .bind(spent_prefix)
        .bind(limit);
    read_all(engine, stmt, attempt).await
}

/// `SkillSourceStore::verified_job_sources`.
pub async fn verified_job_sources(
    engine: &impl Engine,
    done_status: &str,
    verdict: &str,
    spent_prefix: &str,
    only: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<SkillSource>> {
    let stmt = Stmt::new(VERIFIED_JOBS)
        .bind(done_status)
        .bind(verdict)
        .bind(only)
        .bind(spent_prefix)
        .bind(limit);
    read_all(engine, stmt, job).await
}

/// Whether `stmt`, a count, counts anything.
async fn any(x: &mut dyn Exec, stmt: Stmt) -> TxResult<bool> {
    match x.fetch_optional(stmt).await? {
        Some(row) => Ok(row.count("n")? > 0),
        None => Ok(false),
    }
}

/// `SkillSourceStore::insert_proposed_skill`: committed only when inserted.
pub async fn insert_proposed_skill(
    engine: &impl Engine,
    p: ProposedSkill,
) -> StoreResult<Proposed> {
    let p = &p;
    in_unit!(engine, |r| *r == Proposed::Inserted, |tx| async {
        let spent = Stmt::new(SPENT)
            .bind(&p.spent_key)
            .bind(p.source_attempt.as_deref())
            .bind(p.source_job.as_deref());
        if any(&mut *tx, spent).await? {
            return Ok(Proposed::Spent);
        }
        let s = &p.row;
        let insert = crate::improve::skill_insert(INSERT, s, p.body.at)
            .bind(p.termination_test.as_deref())
            .bind(p.composition_interface.as_deref())
            .bind(p.source_attempt.as_deref())
            .bind(p.source_job.as_deref());
        if tx.fetch_optional(insert).await?.is_none() {
            if any(&mut *tx, Stmt::new(ID_TAKEN).bind(&s.id)).await? {
                return Err(crate::improve::skill_exists(&s.id).into());
            }
            return Ok(Proposed::Spent);
        }
        tx.write_document(&p.body, &WriteGuard::Create).await?;
        if let Some(value) = &p.spent_value {
            tx.execute(Stmt::new(MARK_SPENT).bind(&p.spent_key).bind(value))
                .await?;
        }
        for entry in &p.audits {
            crate::audit::insert(&mut *tx, entry).await?;
        }
        Ok(Proposed::Inserted)
    }
    .await)
}
