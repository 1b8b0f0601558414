//! The improve loop's run totals (`ImproveStore`) and the skill store (`SkillStore`): skills,
//! evaluations, edits and failures each written with their audit row in one unit, keyed status
//! changes and credits audited only when their guard held, and an accepted edit's version bump
//! with its body document (written through the unit's own document write, [`crate::Tx::write_document`]).

use capsid_core::ports::{
    AuditEntry, DocumentWrite, ImproveRunTotals, SkillDeclared, SkillEditRow, SkillEvaluationRow,
    SkillFailureRow, SkillOfferRow, SkillRow, StoreError, StoreResult, WriteGuard,
};
use capsid_core::time::Timestamp;

use crate::engine::in_unit;
use crate::engine::{Engine, always, read_all};
use crate::row::Row;
use crate::stmt::Stmt;

/// Sums cast to the column's type, so both engines return a `BIGINT` or a double (Postgres's
/// `SUM` of a `BIGINT` is `NUMERIC`).
const RUN_TOTALS: &str = "SELECT namespace, COUNT(*) AS runs, \
     CAST(COALESCE(SUM(attempts), 0) AS BIGINT) AS attempts, \
     CAST(COALESCE(SUM(kept), 0) AS BIGINT) AS kept, \
     CAST(COALESCE(SUM(reverts), 0) AS BIGINT) AS reverts, \
     CAST(COALESCE(SUM(cost_usd), 0) AS DOUBLE PRECISION) AS cost_usd, \
     CAST(COALESCE(SUM(ci_minutes), 0) AS DOUBLE PRECISION) AS ci_minutes FROM improve_runs";
const SKILLS: &str = "SELECT id, source_namespace, title, body_ref, version, status, wins, losses, \
     trigger_condition, namespaces FROM improve_skills";
const INSERT_SKILL: &str = "INSERT INTO improve_skills (id, source_namespace, title, body_ref, \
     version, status, wins, losses, ts, trigger_condition, namespaces) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING RETURNING id";
const EVALUATIONS: &str = "SELECT skill, version, namespace, probe_set_version, delta, runs, \
     verdict, evaluated_at FROM skill_evaluations";
const INSERT_EVALUATION: &str = "INSERT INTO skill_evaluations \
     (skill, version, namespace, probe_set_version, delta, runs, verdict, evaluated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
/// `retired_at` records when a skill entered `retired`; other moves leave it alone.
const SET_STATUS: &str = "UPDATE improve_skills SET status = $3, \
     retired_at = CASE WHEN $3 = 'retired' THEN $4 ELSE retired_at END \
     WHERE id = $1 AND status = $2 RETURNING id";
const INSERT_EDIT: &str = "INSERT INTO skill_edits \
     (skill, from_version, to_version, ops, accepted, reason, evaluated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";
const EDITS: &str = "SELECT skill, from_version, to_version, ops, accepted, reason, evaluated_at \
     FROM skill_edits WHERE skill = $1 ORDER BY evaluated_at DESC, id DESC LIMIT $2";
/// An accepted edit's version bump, keyed on the version it was measured against.
const BUMP_VERSION: &str =
    "UPDATE improve_skills SET version = $3 WHERE id = $1 AND version = $2 RETURNING id";
const INSERT_FAILURE: &str = "INSERT INTO skill_failures \
     (skill, namespace, source_kind, source_id, note, created_at) VALUES ($1, $2, $3, $4, $5, $6)";
const FAILURES: &str = "SELECT skill, namespace, source_kind, source_id, note, created_at \
     FROM skill_failures WHERE skill = $1 ORDER BY created_at DESC, id DESC LIMIT $2";
/// A namespace's newest outcomes that were offered skills.
const OFFERS: &str = "SELECT skill_ids_offered, skill_ids_used FROM job_outcomes \
     WHERE namespace = $1 AND skill_ids_offered IS NOT NULL \
     ORDER BY recorded_at DESC, job_id DESC LIMIT $2";

fn totals(row: &Row) -> Result<ImproveRunTotals, sqlx::Error> {
    Ok(ImproveRunTotals {
        namespace: row.text("namespace")?,
        runs: row.count("runs")?,
        attempts: row.count("attempts")?,
        kept: row.count("kept")?,
        reverts: row.count("reverts")?,
        cost_usd: row.real("cost_usd")?,
        ci_minutes: row.real("ci_minutes")?,
    })
}

fn skill(row: &Row) -> Result<SkillRow, sqlx::Error> {
    Ok(SkillRow {
        id: row.text("id")?,
        source_namespace: row.text("source_namespace")?,
        title: row.text("title")?,
        body_ref: row.text("body_ref")?,
        version: row.int("version")?,
        status: row.text("status")?,
        wins: row.int("wins")?,
        losses: row.int("losses")?,
        trigger_condition: row.opt_text("trigger_condition")?,
        namespaces: row.opt_text("namespaces")?,
    })
}

fn evaluation(row: &Row) -> Result<SkillEvaluationRow, sqlx::Error> {
    Ok(SkillEvaluationRow {
        skill: row.text("skill")?,
        version: row.int("version")?,
        namespace: row.text("namespace")?,
        probe_set_version: row.text("probe_set_version")?,
        delta: row.real("delta")?,
        runs: row.int("runs")?,
        verdict: row.text("verdict")?,
        evaluated_at: row.time("evaluated_at")?,
    })
}

fn edit(row: &Row) -> Result<SkillEditRow, sqlx::Error> {
    Ok(SkillEditRow {
        skill: row.text("skill")?,
        from_version: row.int("from_version")?,
        to_version: row.int("to_version")?,
        ops: row.text("ops")?,
        accepted: row.flag("accepted")?,
        reason: row.text("reason")?,
        evaluated_at: row.time("evaluated_at")?,
    })
}

fn failure(row: &Row) -> Result<SkillFailureRow, sqlx::Error> {
    Ok(SkillFailureRow {
        skill: row.text("skill")?,
        namespace: row.text("namespace")?,
        source_kind: row.text("source_kind")?,
        source_id: row.text("source_id")?,
        note: row.text("note")?,
        created_at: row.time("created_at")?,
    })
}

fn insert_edit(edit: &SkillEditRow) -> Stmt {
    Stmt::new(INSERT_EDIT)
        .bind(&edit.skill)
        .bind(edit.from_version)
        .bind(edit.to_version)
        .bind(&edit.ops)
        .bind(edit.accepted)
        .bind(&edit.reason)
        .bind(edit.evaluated_at)
}

/// Runs `stmt` and appends `audit`, in one unit.
async fn audited(engine: &impl Engine, stmt: Stmt, audit: &AuditEntry) -> StoreResult<()> {
    let stmt = &stmt;
    in_unit!(engine, always, |tx| async {
        tx.execute(stmt.clone()).await?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(())
    }
    .await)
}

/// Runs the keyed `UPDATE ... RETURNING` `stmt` and, when it matched, appends `audit` in the
/// same unit; `false` (nothing written) when it did not.
async fn guarded(engine: &impl Engine, stmt: Stmt, audit: &AuditEntry) -> StoreResult<bool> {
    let stmt = &stmt;
    in_unit!(engine, |changed| *changed, |tx| async {
        if tx.fetch_optional(stmt.clone()).await?.is_none() {
            return Ok(false);
        }
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(true)
    }
    .await)
}

/// `ImproveStore::run_totals`: per namespace, over runs started at or after `since`.
pub async fn run_totals(
    engine: &impl Engine,
    since: Option<Timestamp>,
) -> StoreResult<Vec<ImproveRunTotals>> {
    let stmt = match since {
        Some(since) => Stmt::new(format!("{RUN_TOTALS} WHERE started >= $1")).bind(since),
        None => Stmt::new(RUN_TOTALS),
    };
    let sql = format!("{} GROUP BY namespace ORDER BY namespace", stmt.sql);
    read_all(
        engine,
        Stmt {
            sql: sql.into(),
            ..stmt
        },
        totals,
    )
    .await
}

/// `SkillStore::insert_skill`: `Conflict` when the id is taken.
pub async fn insert_skill(
    engine: &impl Engine,
    skill: SkillRow,
    at: Timestamp,
    audit: AuditEntry,
) -> StoreResult<()> {
    let (s, audit) = (&skill, &audit);
    in_unit!(engine, always, |tx| async {
        let stmt = skill_insert(INSERT_SKILL, s, at);
        if tx.fetch_optional(stmt).await?.is_none() {
            return Err(skill_exists(&s.id).into());
        }
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(())
    }
    .await)
}

/// The refusal of a skill whose id is taken.
pub(crate) fn skill_exists(id: &str) -> StoreError {
    StoreError::Conflict(format!("skill '{id}' already exists"))
}

/// `SkillStore::skills`: newest first, of one status when given.
pub async fn skills(engine: &impl Engine, status: Option<&str>) -> StoreResult<Vec<SkillRow>> {
    let stmt = match status {
        Some(status) => {
            Stmt::new(format!("{SKILLS} WHERE status = $1 ORDER BY ts DESC, id")).bind(status)
        }
        None => Stmt::new(format!("{SKILLS} ORDER BY ts DESC, id")),
    };
    read_all(engine, stmt, skill).await
}

/// `SkillStore::skills_in`: the skills of each of `statuses` in one statement, grouped in the
/// order the statuses are given, newest first within a status.
pub async fn skills_in(engine: &impl Engine, statuses: &[&str]) -> StoreResult<Vec<SkillRow>> {
    if statuses.is_empty() {
        return Ok(Vec::new());
    }
    let places: Vec<String> = (1..=statuses.len()).map(|i| format!("${i}")).collect();
    let mut stmt = Stmt::new(format!(
        "{SKILLS} WHERE status IN ({}) ORDER BY ts DESC, id",
        places.join(", ")
    ));
    for status in statuses {
        stmt = stmt.bind(*status);
    }
    let mut rows = read_all(engine, stmt, skill).await?;
    // A stable sort keeps each status's rows newest first.
    rows.sort_by_key(|row| statuses.iter().position(|s| *s == row.status));
    Ok(rows)
}

/// `SkillStore::skill`.
pub async fn skill_by_id(engine: &impl Engine, id: &str) -> StoreResult<Option<SkillRow>> {
    let stmt = Stmt::new(format!("{SKILLS} WHERE id = $1")).bind(id);
    Ok(read_all(engine, stmt, skill).await?.pop())
}

/// `SkillStore::skill_declared`.
pub async fn skill_declared(engine: &impl Engine, id: &str) -> StoreResult<Option<SkillDeclared>> {
    let stmt = Stmt::new(
        "SELECT termination_test, composition_interface FROM improve_skills WHERE id = $1",
    )
    .bind(id);
    let declared = |row: &Row| -> Result<SkillDeclared, sqlx::Error> {
        Ok(SkillDeclared {
            termination_test: row.opt_text("termination_test")?,
            composition_interface: row.opt_text("composition_interface")?,
        })
    };
    Ok(read_all(engine, stmt, declared).await?.pop())
}

/// `SkillStore::record_evaluation`.
pub async fn record_evaluation(
    engine: &impl Engine,
    e: SkillEvaluationRow,
    audit: AuditEntry,
) -> StoreResult<()> {
    let stmt = Stmt::new(INSERT_EVALUATION)
        .bind(&e.skill)
        .bind(e.version)
        .bind(&e.namespace)
        .bind(&e.probe_set_version)
        .bind(e.delta)
        .bind(e.runs)
        .bind(&e.verdict)
        .bind(e.evaluated_at);
    audited(engine, stmt, &audit).await
}

/// `SkillStore::evaluations`: newest first.
pub async fn evaluations(
    engine: &impl Engine,
    skill: &str,
) -> StoreResult<Vec<SkillEvaluationRow>> {
    let sql = format!("{EVALUATIONS} WHERE skill = $1 ORDER BY evaluated_at DESC, id DESC");
    read_all(engine, Stmt::new(sql).bind(skill), evaluation).await
}

/// `SkillStore::last_evaluation`: a namespace's newest.
pub async fn last_evaluation(
    engine: &impl Engine,
    namespace: &str,
) -> StoreResult<Option<SkillEvaluationRow>> {
    let sql =
        format!("{EVALUATIONS} WHERE namespace = $1 ORDER BY evaluated_at DESC, id DESC LIMIT 1");
    Ok(read_all(engine, Stmt::new(sql).bind(namespace), evaluation)
        .await?
        .pop())
}

/// `SkillStore::set_skill_status`: only from `from`.
pub async fn set_skill_status(
    engine: &impl Engine,
    skill: &str,
    from: &str,
    to: &str,
    at: Timestamp,
    audit: AuditEntry,
) -> StoreResult<bool> {
    let stmt = Stmt::new(SET_STATUS)
        .bind(skill)
        .bind(from)
        .bind(to)
        .bind(at);
    guarded(engine, stmt, &audit).await
}

/// `SkillStore::credit_skill`: a win or a loss.
pub async fn credit_skill(
    engine: &impl Engine,
    skill: &str,
    win: bool,
    audit: AuditEntry,
) -> StoreResult<bool> {
    let column = if win { "wins" } else { "losses" };
    let sql =
        format!("UPDATE improve_skills SET {column} = {column} + 1 WHERE id = $1 RETURNING id");
    guarded(engine, Stmt::new(sql).bind(skill), &audit).await
}

/// `SkillStore::record_skill_edit`.
pub async fn record_skill_edit(
    engine: &impl Engine,
    edit: SkillEditRow,
    audit: AuditEntry,
) -> StoreResult<()> {
    audited(engine, insert_edit(&edit), &audit).await
}

/// `SkillStore::accept_skill_edit`: `false` (nothing written) when the skill is no longer at
/// the edit's `from_version`.
pub async fn accept_skill_edit(
    engine: &impl Engine,
    edit: SkillEditRow,
    body: DocumentWrite,
    audit: AuditEntry,
) -> StoreResult<bool> {
    let (edit, body, audit) = (&edit, &body, &audit);
    in_unit!(engine, |bumped| *bumped, |tx| async {
        let bump = Stmt::new(BUMP_VERSION)
            .bind(&edit.skill)
            .bind(edit.from_version)
            .bind(edit.to_version);
        if tx.fetch_optional(bump).await?.is_none() {
            return Ok(false);
        }
        tx.execute(insert_edit(edit)).await?;
        tx.write_document(body, &WriteGuard::Upsert).await?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(true)
    }
    .await)
}

/// `SkillStore::skill_edits`: newest first.
pub async fn skill_edits(
    engine: &impl Engine,
    skill: &str,
    limit: usize,
) -> StoreResult<Vec<SkillEditRow>> {
    read_all(engine, Stmt::new(EDITS).bind(skill).bind(limit), edit).await
}

/// `SkillStore::record_skill_failure`.
pub async fn record_skill_failure(
    engine: &impl Engine,
    f: SkillFailureRow,
    audit: AuditEntry,
) -> StoreResult<()> {
    let stmt = Stmt::new(INSERT_FAILURE)
        .bind(&f.skill)
        .bind(&f.namespace)
        .bind(&f.source_kind)
        .bind(&f.source_id)
        .bind(&f.note)
        .bind(f.created_at);
    audited(engine, stmt, &audit).await
}

/// `SkillStore::skill_failures`: newest first.
pub async fn skill_failures(
    engine: &impl Engine,
    skill: &str,
    limit: usize,
) -> StoreResult<Vec<SkillFailureRow>> {
    read_all(engine, Stmt::new(FAILURES).bind(skill).bind(limit), failure).await
}

/// `SkillStore::skill_offers`: newest first.
pub async fn skill_offers(
    engine: &impl Engine,
    namespace: &str,
    limit: usize,
) -> StoreResult<Vec<SkillOfferRow>> {
    let stmt = Stmt::new(OFFERS).bind(namespace).bind(limit);
    read_all(engine, stmt, |r| {
        Ok(SkillOfferRow {
            offered: r.text("skill_ids_offered")?,
            used: r.opt_text("skill_ids_used")?,
        })
    })
    .await
}

/// `sql` (an insert into `improve_skills` whose first eleven columns are the skill's own, as
/// [`INSERT_SKILL`]'s) with those bound from `s`, created at `at`; a proposed skill binds its
/// four more after them.
pub(crate) fn skill_insert(sql: &'static str, s: &SkillRow, at: Timestamp) -> Stmt {
    Stmt::new(sql)
        .bind(&s.id)
        .bind(&s.source_namespace)
        .bind(&s.title)
        .bind(&s.body_ref)
        .bind(s.version)
        .bind(&s.status)
        .bind(s.wins)
        .bind(s.losses)
        .bind(at)
        .bind(s.trigger_condition.as_deref())
        .bind(s.namespaces.as_deref())
}
