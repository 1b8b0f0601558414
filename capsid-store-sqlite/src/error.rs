//! Translation of driver errors into [`StoreError`]: unique violations become `Conflict`
//! (with a message naming what collided), a missing row `NotFound`, a full disk, a lock held
//! past the busy timeout, an I/O failure or no free connection `Unavailable` (nothing was
//! written; retry), everything else `Backend`.

use capsid_core::ports::StoreError;

/// The SQLite primary result code of a generic error (`SQLITE_ERROR`): what FTS5 query-syntax
/// errors, unknown column filters and similar "the statement cannot run" failures carry.
const SQLITE_ERROR: i64 = 1;
/// `SQLITE_BUSY`: another connection or process held the lock past the busy timeout.
const SQLITE_BUSY: i64 = 5;
/// `SQLITE_LOCKED`: a conflicting lock inside the same process.
const SQLITE_LOCKED: i64 = 6;
/// `SQLITE_IOERR`: the operating system refused a read or write.
const SQLITE_IOERR: i64 = 10;
/// `SQLITE_FULL`: the disk (or the configured page limit) is full.
const SQLITE_FULL: i64 = 13;

/// Why the store cannot serve the call now, in words a caller may read, when `err` is such a
/// condition rather than a fault of the call.
pub(crate) fn unavailable(err: &sqlx::Error) -> Option<&'static str> {
    match err {
        sqlx::Error::PoolTimedOut => Some("no database connection became free in time"),
        sqlx::Error::PoolClosed => Some("the store is shutting down"),
        sqlx::Error::Io(_) => Some("the database file could not be read or written"),
        sqlx::Error::Database(db) => {
            let code = db.code().and_then(|c| c.parse::<i64>().ok())? & 0xff;
            match code {
                SQLITE_FULL => {
                    Some("the database is full (no disk space or its size limit is reached)")
                }
                SQLITE_BUSY | SQLITE_LOCKED => Some("the database is locked by another writer"),
                SQLITE_IOERR => Some("the database file could not be read or written"),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Any driver error as a store error, without a uniqueness rule to name.
pub(crate) fn backend(err: sqlx::Error) -> StoreError {
    match err {
        sqlx::Error::RowNotFound => StoreError::NotFound("row not found".to_owned()),
        other if unavailable(&other).is_some() => {
            tracing::warn!(error = %other, "sqlite store unavailable");
            StoreError::Unavailable(unavailable(&other).unwrap_or("unavailable").to_owned())
        }
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
