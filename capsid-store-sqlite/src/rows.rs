//! Rows this driver reads itself (the statements still written here: search, the gathers,
//! the writes, claims and transitions) through the shared row mapping of `capsid-store-sql`,
//! and the driver's integer conversions.

use capsid_core::docs::document::{Document, DocumentSummary};
use capsid_core::jobs::Job;
use capsid_store_sql::Row;
use sqlx::sqlite::SqliteRow;

/// A [`Document`] from a row selected as `capsid_store_sql::documents::DOCUMENT` does.
pub(crate) fn document(row: SqliteRow) -> Result<Document, sqlx::Error> {
    capsid_store_sql::documents::document_row(&Row::Sqlite(row))
}

/// A [`DocumentSummary`] from a row selected with its summary columns.
pub(crate) fn summary(row: SqliteRow) -> Result<DocumentSummary, sqlx::Error> {
    capsid_store_sql::documents::summary(&Row::Sqlite(row))
}

/// A [`Job`] from a row selected with `job_columns!`.
pub(crate) fn job(row: SqliteRow) -> Result<Job, sqlx::Error> {
    capsid_store_sql::jobs::job_row(&Row::Sqlite(row))
}

/// Maps every row with `map`, stopping at the first failure.
pub(crate) fn all<T>(
    rows: Vec<SqliteRow>,
    map: impl Fn(SqliteRow) -> Result<T, sqlx::Error>,
) -> Result<Vec<T>, sqlx::Error> {
    rows.into_iter().map(map).collect()
}

/// A count read from SQLite's signed integers.
pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A caller's row limit as a SQLite integer.
pub(crate) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
