//! The append-only audit log: the insert every unit of work shares, and the `AuditLog` port.

use async_trait::async_trait;
use capsid_core::ports::{AuditEntry, AuditFilter, AuditLog, AuditRow, StoreError, StoreResult};
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, PgConnection, Postgres};

use crate::PgStore;
use crate::error::{TxResult, limit, translate};
use crate::rows;
use crate::sql::SqlText;

const NEWEST_AUDIT: &str = "SELECT id, actor, action, namespace, path, params, at FROM audit_log \
     WHERE namespace = $1 AND path = $2 AND action = $3 ORDER BY id DESC LIMIT 1";
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

/// The SQL of `recent_audit` for `filter`: namespace is `$1` when set, actor the next one,
/// then the limit.
pub(crate) fn recent_sql(filter: &AuditFilter) -> String {
    let mut sql =
        SqlText::new("SELECT id, actor, action, namespace, path, params, at FROM audit_log");
    if filter.namespace.is_some() {
        sql.and("namespace = $?");
    }
    if filter.actor.is_some() {
        sql.and("actor = $?");
    }
    sql.push(" ORDER BY id DESC LIMIT $?");
    sql.finish()
}

#[async_trait]
impl AuditLog for PgStore {
    async fn append_audit(&self, entry: AuditEntry) -> StoreResult<()> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        insert(&mut conn, &entry).await.map_err(StoreError::from)
    }

    async fn recent_audit(&self, filter: &AuditFilter, max: usize) -> StoreResult<Vec<AuditRow>> {
        let sql = recent_sql(filter);
        let mut query = sqlx::query(AssertSqlSafe(sql));
        if let Some(namespace) = &filter.namespace {
            query = query.bind(namespace);
        }
        if let Some(actor) = &filter.actor {
            query = query.bind(actor);
        }
        let rows = query
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(rows::audit)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn newest_audit(
        &self,
        action: &str,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<AuditRow>> {
        let row = sqlx::query(NEWEST_AUDIT)
            .bind(namespace)
            .bind(path)
            .bind(action)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref().map(rows::audit).transpose().map_err(translate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_sql_numbers_its_parameters() {
        let both = AuditFilter {
            namespace: Some("n".into()),
            actor: Some("a".into()),
        };
        assert!(
            recent_sql(&both)
                .ends_with("WHERE namespace = $1 AND actor = $2 ORDER BY id DESC LIMIT $3")
        );
        let actor = AuditFilter {
            namespace: None,
            actor: Some("a".into()),
        };
        assert!(recent_sql(&actor).ends_with("WHERE actor = $1 ORDER BY id DESC LIMIT $2"));
        assert!(
            recent_sql(&AuditFilter::default()).ends_with("audit_log ORDER BY id DESC LIMIT $1")
        );
    }
}
