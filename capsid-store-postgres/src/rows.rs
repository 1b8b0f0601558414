//! Rows this driver reads itself (the statements still written here: search, the gathers,
//! the writes, claims and transitions) through the shared row mapping of `capsid-store-sql`.

use capsid_core::docs::document::{Document, DocumentSummary};
use capsid_core::jobs::Job;
use capsid_store_sql::Row;
use sqlx::postgres::PgRow;

/// The columns of a document row aliased `d`, in `capsid_store_sql::doc_columns!`'s order
/// (the upsert's two branches are one `UNION ALL`).
macro_rules! doc_cols_d {
    () => {
        "d.id, d.namespace, d.path, d.title, d.type, d.status, d.tags, d.created_at, d.updated_at, d.body"
    };
}
pub(crate) use doc_cols_d;

/// A full document row.
pub(crate) fn document(row: PgRow) -> Result<Document, sqlx::Error> {
    capsid_store_sql::documents::document_row(&Row::Postgres(row))
}

/// A document row without its body.
pub(crate) fn summary(row: PgRow) -> Result<DocumentSummary, sqlx::Error> {
    capsid_store_sql::documents::summary(&Row::Postgres(row))
}

/// A job row.
pub(crate) fn job(row: PgRow) -> Result<Job, sqlx::Error> {
    capsid_store_sql::jobs::job_row(&Row::Postgres(row))
}
