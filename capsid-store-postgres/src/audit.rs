//! The audit insert this store's own units of work share (the `AuditLog` port is
//! `capsid-store-sql`'s).

use capsid_core::ports::{AuditEntry, StoreError};
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{PgConnection, Postgres};

use crate::error::TxResult;

const INSERT_AUDIT: &str = "INSERT INTO audit_log (actor, action, namespace, path, params, at) VALUES ($1, $2, $3, $4, $5, $6)";

/// Wraps a change that returns the changed row (`UPDATE`/`INSERT ... RETURNING`) so that
/// one audit row is appended in the same statement when, and only when, a row changed. The
/// audit values are the six parameters listed in `$params`, bound with [`bind`].
macro_rules! audited {
    ($change:expr, $params:literal) => {
        concat!(
            "WITH changed AS (",
            $change,
            "), logged AS (INSERT INTO audit_log (actor, action, namespace, path, params, at) SELECT ",
            $params,
            " FROM changed) SELECT * FROM changed"
        )
    };
}
pub(crate) use audited;

/// The stored JSON text of an entry's parameters.
fn params_json(entry: &AuditEntry) -> Result<String, StoreError> {
    serde_json::to_string(&entry.params)
        .map_err(|e| StoreError::Backend(format!("audit params are not serializable: {e}")))
}

/// Binds the six audit values of `entry` (actor, action, namespace, path, params, at).
pub(crate) fn bind<'q>(
    query: Query<'q, Postgres, PgArguments>,
    entry: &AuditEntry,
) -> Result<Query<'q, Postgres, PgArguments>, StoreError> {
    Ok(query
        .bind(entry.actor.clone())
        .bind(entry.action.clone())
        .bind(entry.namespace.clone())
        .bind(entry.path.clone())
        .bind(params_json(entry)?)
        .bind(entry.at.to_string()))
}

/// Appends `entry` inside the caller's transaction. `params` is stored as JSON text.
pub(crate) async fn insert(conn: &mut PgConnection, entry: &AuditEntry) -> TxResult<()> {
    bind(sqlx::query(INSERT_AUDIT), entry)?
        .execute(conn)
        .await?;
    Ok(())
}

/// Appends every entry, in order (ids grow in the order given).
pub(crate) async fn insert_all(conn: &mut PgConnection, entries: &[AuditEntry]) -> TxResult<()> {
    for entry in entries {
        insert(&mut *conn, entry).await?;
    }
    Ok(())
}
