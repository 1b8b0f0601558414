//! Unique violations as the shared SQL reads them: which rule a statement broke, named the
//! way each engine names it (the constraint on Postgres, `table.column` in SQLite's message).

use capsid_core::ports::StoreError;

use crate::engine::TxError;

/// What the unique rule `error` broke said about itself (a constraint name or a message);
/// `None` when `error` is not a unique violation.
pub fn unique_violation(error: &sqlx::Error) -> Option<String> {
    let db = error
        .as_database_error()
        .filter(|d| d.is_unique_violation())?;
    Some(
        db.constraint()
            .map_or_else(|| db.message().to_owned(), str::to_owned),
    )
}

/// `error` as a `Conflict` worded by `what` (given what the rule said) when it is a unique
/// violation; the driver error otherwise.
pub fn conflict_or(error: sqlx::Error, what: impl FnOnce(&str) -> String) -> TxError {
    match unique_violation(&error) {
        Some(said) => TxError::Store(StoreError::Conflict(what(&said))),
        None => TxError::Db(error),
    }
}
