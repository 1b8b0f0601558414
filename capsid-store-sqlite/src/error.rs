//! Translation of driver errors into [`StoreError`]: unique violations become `Conflict`
//! (with a message naming what collided), a missing row `NotFound`, everything else `Backend`.

use capsid_core::ports::StoreError;

/// The SQLite primary result code of a generic error (`SQLITE_ERROR`): what FTS5 query-syntax
/// errors, unknown column filters and similar "the statement cannot run" failures carry.
const SQLITE_ERROR: i64 = 1;

/// Any driver error as a store error, without a uniqueness rule to name.
pub(crate) fn backend(err: sqlx::Error) -> StoreError {
    match err {
        sqlx::Error::RowNotFound => StoreError::NotFound("row not found".to_owned()),
        other => {
            tracing::warn!(error = %other, "sqlite store error");
            StoreError::Backend(other.to_string())
        }
    }
}

/// The driver's message when `err` is a unique (or primary key) violation, e.g.
/// `UNIQUE constraint failed: agents.name`.
pub(crate) fn unique_violation(err: &sqlx::Error) -> Option<String> {
    match err {
        sqlx::Error::Database(db) if db.is_unique_violation() => Some(db.message().to_owned()),
        _ => None,
    }
}

/// `err` as a `Conflict` worded by `conflict` (given the driver's message) when it is a unique
/// violation, otherwise as [`backend`] translates it.
pub(crate) fn conflict_or_backend(
    err: sqlx::Error,
    conflict: impl FnOnce(&str) -> String,
) -> StoreError {
    match unique_violation(&err) {
        Some(message) => StoreError::Conflict(conflict(&message)),
        None => backend(err),
    }
}

/// Whether `err` is SQLite's generic `SQLITE_ERROR` (a statement that cannot run as written,
/// such as an FTS5 query-syntax error), as opposed to IO, locking or corruption.
pub(crate) fn is_statement_error(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|code| code.parse::<i64>().ok())
            .is_some_and(|code| code & 0xff == SQLITE_ERROR),
        _ => false,
    }
}

/// Shorthand: `.db()?` translates a driver error with [`backend`].
pub(crate) trait DbResult<T> {
    /// The value, or the error translated by [`backend`].
    fn db(self) -> Result<T, StoreError>;
}

impl<T> DbResult<T> for Result<T, sqlx::Error> {
    fn db(self) -> Result<T, StoreError> {
        self.map_err(backend)
    }
}
