//! The audit log port: appending a row on its own and reading the newest rows.

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::ports::{AuditEntry, AuditFilter, AuditLog, AuditRow, StoreResult};
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::{QueryBuilder, Row};

use crate::error::DbResult;
use crate::rows::{insert_audit, limit as sql_limit};
use crate::store::SqliteStore;

/// Pushes `recent_audit`'s query: newest first, filtered by namespace and/or actor (each
/// served by its `(column, id DESC)` index).
pub(crate) fn push_recent_audit(qb: &mut QueryBuilder<Sqlite>, filter: &AuditFilter, limit: usize) {
    qb.push("SELECT id, actor, action, namespace, path, params, at FROM audit_log WHERE 1 = 1");
    if let Some(namespace) = &filter.namespace {
        qb.push(" AND namespace = ").push_bind(namespace.clone());
    }
    if let Some(actor) = &filter.actor {
        qb.push(" AND actor = ").push_bind(actor.clone());
    }
    qb.push(" ORDER BY id DESC LIMIT ")
        .push_bind(sql_limit(limit));
}

fn audit_row(row: &SqliteRow) -> Result<AuditRow, sqlx::Error> {
    Ok(AuditRow {
        id: row.try_get("id")?,
        actor: row.try_get("actor")?,
        action: row.try_get("action")?,
        namespace: row.try_get("namespace")?,
        path: row.try_get("path")?,
        params: row.try_get("params")?,
        at: row.time("at")?,
    })
}

#[async_trait]
impl AuditLog for SqliteStore {
    async fn append_audit(&self, entry: AuditEntry) -> StoreResult<()> {
        let mut conn = self.writer().acquire().await.db()?;
        insert_audit(&mut conn, &entry).await.db()
    }

    async fn recent_audit(&self, filter: &AuditFilter, limit: usize) -> StoreResult<Vec<AuditRow>> {
        let mut qb = QueryBuilder::new("");
        push_recent_audit(&mut qb, filter, limit);
        let rows = qb.build().fetch_all(self.reader()).await.db()?;
        rows.iter().map(audit_row).collect::<Result<_, _>>().db()
    }

    async fn newest_audit(
        &self,
        action: &str,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<AuditRow>> {
        let row = sqlx::query(
            "SELECT id, actor, action, namespace, path, params, at FROM audit_log \
             WHERE namespace = ? AND path = ? AND action = ? ORDER BY id DESC LIMIT 1",
        )
        .bind(namespace)
        .bind(path)
        .bind(action)
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(audit_row).transpose().db()
    }
}
