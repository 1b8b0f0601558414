//! Explicit row mapping: the column lists the queries select and the functions that turn a
//! `SqliteRow` into the core's row types (decode failures are errors, never panics).

use capsid_core::docs::document::{Document, DocumentSummary};
use capsid_core::jobs::outcome::{OutcomeRow, ResultKind};
use capsid_core::jobs::{Job, JobStatus};
use capsid_core::ports::AuditEntry;
use capsid_core::time::Timestamp;
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{Error, Row};

/// The `documents` columns a [`Document`] is read from.
macro_rules! doc_columns {
    () => {
        "id, namespace, path, title, type, status, tags, created_at, updated_at, body"
    };
}
/// The `documents` columns a [`DocumentSummary`] is read from.
macro_rules! summary_columns {
    () => {
        "id, namespace, path, title, type, status, tags, created_at, updated_at"
    };
}
/// The `jobs` columns a [`Job`] is read from.
macro_rules! job_columns {
    () => {
        "id, namespace, title, body, priority, status, posted_by, claimed_by, claimed_at, lease_expires, \
         result_ref, result_summary, gate_required, review_required, blocked_count, resumed_count, \
         corrections_count, required_scopes, min_record, created_at, updated_at, parent_id, \
         requested_by, depth"
    };
}
pub(crate) use {doc_columns, job_columns, summary_columns};

fn corrupt(what: String) -> Error {
    Error::Decode(what.into())
}

/// A [`Document`] from a row selected with [`doc_columns`].
pub(crate) fn document(row: &SqliteRow) -> Result<Document, Error> {
    Ok(Document {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        path: row.try_get("path")?,
        title: row.try_get("title")?,
        doc_type: row.try_get("type")?,
        status: row.try_get("status")?,
        tags: row.try_get("tags")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
        body: row.try_get("body")?,
    })
}

/// A [`DocumentSummary`] from a row selected with [`summary_columns`].
pub(crate) fn summary(row: &SqliteRow) -> Result<DocumentSummary, Error> {
    Ok(DocumentSummary {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        path: row.try_get("path")?,
        title: row.try_get("title")?,
        doc_type: row.try_get("type")?,
        status: row.try_get("status")?,
        tags: row.try_get("tags")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
    })
}

/// A [`Job`] from a row selected with [`job_columns`].
pub(crate) fn job(row: &SqliteRow) -> Result<Job, Error> {
    let status: String = row.try_get("status")?;
    let status = JobStatus::parse(&status)
        .ok_or_else(|| corrupt(format!("unknown job status {status:?}")))?;
    Ok(Job {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        title: row.try_get("title")?,
        body: row.try_get("body")?,
        priority: row.try_get("priority")?,
        status,
        posted_by: row.try_get("posted_by")?,
        claimed_by: row.try_get("claimed_by")?,
        claimed_at: row.time("claimed_at")?,
        lease_expires: row.time("lease_expires")?,
        result_ref: row.try_get("result_ref")?,
        result_summary: row.try_get("result_summary")?,
        gate_required: row.try_get::<i64, _>("gate_required")? != 0,
        review_required: row.try_get::<i64, _>("review_required")? != 0,
        blocked_count: row.try_get("blocked_count")?,
        resumed_count: row.try_get("resumed_count")?,
        corrections_count: row.try_get("corrections_count")?,
        required_scopes: row.try_get("required_scopes")?,
        min_record: row.try_get("min_record")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
        parent_id: row.try_get("parent_id")?,
        requested_by: row.try_get("requested_by")?,
        depth: row.try_get("depth")?,
    })
}

/// The stored spelling of a [`ResultKind`].
pub(crate) fn result_kind_text(kind: ResultKind) -> &'static str {
    match kind {
        ResultKind::Pr => "pr",
        ResultKind::Doc => "doc",
        ResultKind::None => "none",
    }
}

/// An [`OutcomeRow`] from a `job_outcomes` row.
pub(crate) fn outcome(row: &SqliteRow) -> Result<OutcomeRow, Error> {
    let kind: String = row.try_get("result_kind")?;
    let result_kind = match kind.as_str() {
        "pr" => ResultKind::Pr,
        "doc" => ResultKind::Doc,
        "none" => ResultKind::None,
        other => return Err(corrupt(format!("unknown result kind {other:?}"))),
    };
    Ok(OutcomeRow {
        job_id: row.try_get("job_id")?,
        agent: row.try_get("agent")?,
        namespace: row.try_get("namespace")?,
        prs_opened: row.try_get("prs_opened")?,
        prs_merged: row.try_get("prs_merged")?,
        commits: row.try_get("commits")?,
        files_changed: row.try_get("files_changed")?,
        tests_added: row.try_get("tests_added")?,
        ci_green: row.try_get("ci_green")?,
        blocked_count: row.try_get("blocked_count")?,
        resumed_count: row.try_get("resumed_count")?,
        duration_minutes: row.try_get("duration_minutes")?,
        result_kind,
        verified: row.try_get("verified")?,
        recorded_at: row.time("recorded_at")?,
        reviewed_by: row.try_get("reviewed_by")?,
        skill_ids_offered: row.try_get("skill_ids_offered")?,
        skill_ids_used: row.try_get("skill_ids_used")?,
        skill_verdict: row.try_get("skill_verdict")?,
        cost_usd: row.try_get("cost_usd")?,
        turns: row.try_get("turns")?,
        duration_ms: row.try_get("duration_ms")?,
    })
}

/// Maps every row with `map`, stopping at the first failure.
pub(crate) fn all<T>(
    rows: &[SqliteRow],
    map: fn(&SqliteRow) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    rows.iter().map(map).collect()
}

/// Appends one audit row on `conn` (inside the caller's transaction); params are stored as
/// JSON text.
pub(crate) async fn insert_audit(
    conn: &mut SqliteConnection,
    entry: &AuditEntry,
) -> Result<(), Error> {
    sqlx::query("INSERT INTO audit_log (actor, action, namespace, path, params, at) VALUES (?, ?, ?, ?, ?, ?)")
        .bind(&entry.actor)
        .bind(&entry.action)
        .bind(&entry.namespace)
        .bind(&entry.path)
        .bind(entry.params.to_string())
        .bind(entry.at.to_string())
        .execute(conn)
        .await?;
    Ok(())
}

/// A count read from SQLite's signed integers.
pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A caller's row limit as a SQLite integer.
pub(crate) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A column holding an instant, read as [`Timestamp`] or `Option<Timestamp>`; text no form of
/// [`Timestamp::parse`] reads is a decode error naming the column, never a default.
pub(crate) trait StoredTime: Sized {
    /// Reads `column` of `row`.
    fn read(row: &SqliteRow, column: &str) -> Result<Self, sqlx::Error>;
}

fn instant(column: &str, text: &str) -> Result<Timestamp, sqlx::Error> {
    Timestamp::parse(text).ok_or_else(|| {
        sqlx::Error::Decode(
            format!(
                "column {column} holds '{}', which is not an instant",
                text.chars().take(40).collect::<String>()
            )
            .into(),
        )
    })
}

impl StoredTime for Timestamp {
    fn read(row: &SqliteRow, column: &str) -> Result<Self, sqlx::Error> {
        let text: String = row.try_get(column)?;
        instant(column, &text)
    }
}

impl StoredTime for Option<Timestamp> {
    fn read(row: &SqliteRow, column: &str) -> Result<Self, sqlx::Error> {
        let text: Option<String> = row.try_get(column)?;
        text.map(|t| instant(column, &t)).transpose()
    }
}

/// `row.time("created_at")?`: a time column through [`StoredTime`].
pub(crate) trait TimeColumns {
    /// Reads `column` as an instant.
    fn time<T: StoredTime>(&self, column: &str) -> Result<T, sqlx::Error>;
}

impl TimeColumns for SqliteRow {
    fn time<T: StoredTime>(&self, column: &str) -> Result<T, sqlx::Error> {
        T::read(self, column)
    }
}
