//! The intake port: one row per tracker issue taken in, keyed on `(repo, number)` with the job
//! id unique; the insert does nothing on either conflict (a second tick finds the first one's
//! row), and every later change is an `UPDATE ... RETURNING` keyed on the state it leaves,
//! with its audit row in the same unit of work.

use capsid_core::ports::{AuditEntry, IntakeChange, IntakeIssueRow, NewIntakeIssue, StoreResult};
use capsid_core::time::Timestamp;

use crate::engine::in_unit;
use crate::engine::{Engine, always, read_all};
use crate::row::Row;
use crate::stmt::Stmt;

const INSERT: &str = "INSERT INTO intake_issues (repo, number, issue_id, namespace, job_id, \
     body_sha256, noted_sha256, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $7) ON CONFLICT DO NOTHING RETURNING repo";
const COLUMNS: &str = "SELECT repo, number, issue_id, namespace, job_id, body_sha256, noted_sha256, \
     commented_at, closed_at, outcome, created_at, updated_at FROM intake_issues";
const KEY: &str = "WHERE repo = $1 AND number = $2";

fn issue(row: &Row) -> Result<IntakeIssueRow, sqlx::Error> {
    Ok(IntakeIssueRow {
        repo: row.text("repo")?,
        number: row.count("number")?,
        issue_id: row.count("issue_id")?,
        namespace: row.text("namespace")?,
        job_id: row.text("job_id")?,
        body_sha256: row.text("body_sha256")?,
        noted_sha256: row.text("noted_sha256")?,
        commented_at: row.opt_time("commented_at")?,
        closed_at: row.opt_time("closed_at")?,
        outcome: row.opt_text("outcome")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
    })
}

/// `IntakeStore::record_intake`: `false` (nothing written, no audit row) when recorded already.
pub async fn record_intake(
    engine: &impl Engine,
    new: NewIntakeIssue,
    audit: AuditEntry,
) -> StoreResult<bool> {
    let (new, audit) = (&new, &audit);
    in_unit!(engine, always, |tx| async {
        let stmt = Stmt::new(INSERT)
            .bind(&new.repo)
            .bind(new.number)
            .bind(new.issue_id)
            .bind(&new.namespace)
            .bind(&new.job_id)
            .bind(&new.body_sha256)
            .bind(new.at);
        if tx.fetch_optional(stmt).await?.is_none() {
            return Ok(false);
        }
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(true)
    }
    .await)
}

/// `IntakeStore::intake_issue`.
pub async fn intake_issue(
    engine: &impl Engine,
    repo: &str,
    number: u64,
) -> StoreResult<Option<IntakeIssueRow>> {
    let stmt = Stmt::new(format!("{COLUMNS} {KEY}"))
        .bind(repo)
        .bind(number);
    Ok(read_all(engine, stmt, issue).await?.into_iter().next())
}

/// `IntakeStore::open_intake`: oldest first.
pub async fn open_intake(engine: &impl Engine, limit: usize) -> StoreResult<Vec<IntakeIssueRow>> {
    let sql =
        format!("{COLUMNS} WHERE closed_at IS NULL ORDER BY created_at, repo, number LIMIT $1");
    read_all(engine, Stmt::new(sql).bind(limit), issue).await
}

/// The keyed statement of `change`: its `SET`, the state it applies from, and its own value.
fn change_stmt(change: &IntakeChange) -> (&'static str, &'static str, Option<&str>) {
    match change {
        IntakeChange::Commented => (
            "commented_at = $3",
            "commented_at IS NULL AND closed_at IS NULL",
            None,
        ),
        IntakeChange::Uncommented => ("commented_at = NULL", "commented_at IS NOT NULL", None),
        IntakeChange::Noted { sha256 } => (
            "noted_sha256 = $4",
            "noted_sha256 <> $4",
            Some(sha256.as_str()),
        ),
        IntakeChange::Closed { outcome } => (
            "closed_at = $3, outcome = $4",
            "closed_at IS NULL",
            Some(outcome.as_str()),
        ),
        IntakeChange::Reopened => (
            "closed_at = NULL, outcome = NULL",
            "closed_at IS NOT NULL",
            None,
        ),
    }
}

/// `IntakeStore::update_intake`: `false` (nothing written) when the row is not in the state
/// the change applies from.
pub async fn update_intake(
    engine: &impl Engine,
    repo: &str,
    number: u64,
    change: IntakeChange,
    at: Timestamp,
    audit: Option<AuditEntry>,
) -> StoreResult<bool> {
    let (change, audit) = (&change, &audit);
    in_unit!(engine, always, |tx| async {
        let (set, from, value) = change_stmt(change);
        let sql = format!(
            "UPDATE intake_issues SET {set}, updated_at = $3 {KEY} AND {from} RETURNING repo"
        );
        let mut stmt = Stmt::new(sql).bind(repo).bind(number).bind(at);
        if let Some(v) = value {
            stmt = stmt.bind(v);
        }
        if tx.fetch_optional(stmt).await?.is_none() {
            return Ok(false);
        }
        if let Some(a) = audit {
            crate::audit::insert(&mut *tx, a).await?;
        }
        Ok(true)
    }
    .await)
}
