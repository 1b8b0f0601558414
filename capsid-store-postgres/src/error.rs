//! Driver errors translated into `StoreError`, how a unit of work's transaction ends
//! (commit, or a rollback awaited before the caller hears the answer), and the bounded retry
//! of units of work that lost to a serialization failure or a deadlock.

use std::future::Future;
use std::pin::Pin;

use capsid_core::ports::StoreError;
use sqlx::{Postgres, Transaction};

/// How many times a unit of work runs at most when the database asks for a retry.
const MAX_ATTEMPTS: u32 = 4;

/// SQLSTATE of a serialization failure.
const SERIALIZATION_FAILURE: &str = "40001";
/// SQLSTATE of a detected deadlock.
const DEADLOCK_DETECTED: &str = "40P01";

/// A boxed, sendable future, as the retry loop runs it.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why one attempt of a unit of work failed: the driver (maybe retryable), or a refusal
/// the unit decided itself (a failed guard, a missing row).
#[derive(Debug)]
pub(crate) enum TxError {
    /// The database refused or failed.
    Db(sqlx::Error),
    /// A guard or lookup inside the unit refused; the transaction is rolled back.
    Store(StoreError),
}

impl From<sqlx::Error> for TxError {
    fn from(error: sqlx::Error) -> Self {
        TxError::Db(error)
    }
}

impl From<StoreError> for TxError {
    fn from(error: StoreError) -> Self {
        TxError::Store(error)
    }
}

impl From<TxError> for StoreError {
    fn from(error: TxError) -> Self {
        match error {
            TxError::Db(e) => translate(e),
            TxError::Store(e) => e,
        }
    }
}

/// Shorthand for one attempt's result.
pub(crate) type TxResult<T> = Result<T, TxError>;

/// The name of the unique constraint `error` violated, when it is a unique violation.
pub(crate) fn unique_violation(error: &sqlx::Error) -> Option<&str> {
    match error {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Some(db.constraint().unwrap_or(""))
        }
        _ => None,
    }
}

/// Whether the database asks the transaction to be run again.
pub(crate) fn is_retryable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            Some(SERIALIZATION_FAILURE | DEADLOCK_DETECTED)
        ),
        _ => false,
    }
}

/// Why the database cannot serve the call now, in words a caller may read, when `error` is
/// such a condition (the connection is lost, the server is restarting or out of room, no
/// pooled connection came free in time) rather than a fault of the call.
pub(crate) fn unavailable(error: &sqlx::Error) -> Option<&'static str> {
    match error {
        sqlx::Error::PoolTimedOut => Some("no database connection became free in time"),
        sqlx::Error::PoolClosed => Some("the store is shutting down"),
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => {
            Some("the database connection failed")
        }
        sqlx::Error::WorkerCrashed => Some("the database connection failed"),
        sqlx::Error::Database(db) => {
            let code = db.code()?;
            match code.as_ref() {
                c if c.starts_with("08") => Some("the database connection failed"),
                ADMIN_SHUTDOWN | CRASH_SHUTDOWN | CANNOT_CONNECT_NOW => {
                    Some("the database server is restarting")
                }
                TOO_MANY_CONNECTIONS => Some("the database server has no connection to spare"),
                DISK_FULL | OUT_OF_MEMORY => Some("the database server is out of room"),
                _ => None,
            }
        }
        _ => None,
    }
}

/// SQLSTATE: the server is shutting down on an administrator's command.
const ADMIN_SHUTDOWN: &str = "57P01";
/// SQLSTATE: the server is shutting down after a crash.
const CRASH_SHUTDOWN: &str = "57P02";
/// SQLSTATE: the server is starting up or shutting down.
const CANNOT_CONNECT_NOW: &str = "57P03";
/// SQLSTATE: no connection slot is free.
const TOO_MANY_CONNECTIONS: &str = "53300";
/// SQLSTATE: the disk is full.
const DISK_FULL: &str = "53100";
/// SQLSTATE: the server ran out of memory.
const OUT_OF_MEMORY: &str = "53200";

/// Translates a driver error: unique violations become `Conflict` naming what collided, a
/// missing row `NotFound`, a lost connection, a restarting server or an exhausted pool
/// `Unavailable`, everything else `Backend`.
pub(crate) fn translate(error: sqlx::Error) -> StoreError {
    if let Some(constraint) = unique_violation(&error) {
        return StoreError::Conflict(describe_constraint(constraint));
    }
    if let Some(why) = unavailable(&error) {
        tracing::warn!(error = %error, "postgres store unavailable");
        return StoreError::Unavailable(why.to_owned());
    }
    match error {
        sqlx::Error::RowNotFound => StoreError::NotFound("row".to_owned()),
        other => StoreError::Backend(other.to_string()),
    }
}

/// What a unique constraint of the schema protects, in words.
fn describe_constraint(constraint: &str) -> String {
    let what = match constraint {
        "documents_namespace_path_key" => "a document already exists at that path",
        "document_links_from_ns_from_path_type_to_ns_to_path_key" => {
            "an identical edge already exists"
        }
        "namespaces_pkey" => "the namespace already exists",
        "jobs_pkey" => "a job with this id already exists",
        "jobs_open_title" => "the namespace already has an open job with this title",
        "jobs_one_claim" => "the holder already has a claimed job",
        "agents_pkey" => "an agent with this id already exists",
        "agents_name_key" => "an agent with this name already exists (names are never reused)",
        "agents_key_hash_key" => "an agent with this key already exists",
        "improve_skills_pkey" => "a skill with this id already exists",
        "improve_runs_one_active" => "the namespace already has an active improve run",
        "" => "a uniqueness rule refused the change",
        other => return format!("unique constraint {other} refused the change"),
    };
    what.to_owned()
}

/// Ends a unit of work: commits when `result` is `Ok` and `keep` says the work stands;
/// otherwise rolls back and waits for the rollback, so the row locks the unit took are
/// released before its caller (and the next claimer of the same row) hears the answer. A
/// dropped transaction would only queue its rollback.
pub(crate) async fn finish<T>(
    tx: Transaction<'_, Postgres>,
    result: TxResult<T>,
    keep: impl FnOnce(&T) -> bool,
) -> TxResult<T> {
    match result {
        Ok(value) if keep(&value) => {
            tx.commit().await?;
            Ok(value)
        }
        Ok(value) => {
            tx.rollback().await?;
            Ok(value)
        }
        Err(error) => {
            if let Err(rollback) = tx.rollback().await {
                tracing::warn!(error = %rollback, "rollback after a refused unit of work failed");
            }
            Err(error)
        }
    }
}

/// `keep` for units whose every `Ok` stands.
pub(crate) fn always<T>(_: &T) -> bool {
    true
}

/// Runs `attempt` until it succeeds, refuses, or fails with something other than a
/// serialization failure or deadlock; at most [`MAX_ATTEMPTS`] times.
pub(crate) async fn with_retry<'a, T>(
    mut attempt: impl FnMut() -> BoxFuture<'a, TxResult<T>>,
) -> Result<T, StoreError> {
    let mut attempts = 1;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(TxError::Db(e)) if is_retryable(&e) && attempts < MAX_ATTEMPTS => {
                tracing::debug!(error = %e, attempts, "retrying a unit of work");
                attempts += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Converts a caller's row limit to a SQL `LIMIT` value.
pub(crate) fn limit(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_are_named_in_words() {
        assert!(describe_constraint("jobs_open_title").contains("open job"));
        assert!(describe_constraint("agents_name_key").contains("name"));
        assert!(describe_constraint("mystery").contains("mystery"));
    }

    #[test]
    fn row_not_found_is_not_found_and_others_are_backend() {
        assert!(matches!(
            translate(sqlx::Error::RowNotFound),
            StoreError::NotFound(_)
        ));
        assert!(matches!(
            translate(sqlx::Error::ColumnNotFound("x".into())),
            StoreError::Backend(_)
        ));
    }

    #[test]
    fn an_exhausted_pool_or_a_lost_connection_is_unavailable() {
        assert_eq!(
            translate(sqlx::Error::PoolTimedOut),
            StoreError::Unavailable("no database connection became free in time".into())
        );
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(matches!(
            translate(sqlx::Error::Io(refused)),
            StoreError::Unavailable(_)
        ));
    }

    #[test]
    fn limits_saturate() {
        assert_eq!(limit(25), 25);
        assert_eq!(limit(usize::MAX), i64::MAX);
    }
}
