//! The namespace port: registered namespaces with their unconsolidated counts, registration
//! and the keyed repos update, each change audited in its transaction.

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::ports::{AuditEntry, NamespaceRow, NamespaceStore, StoreError, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::error::{DbResult, conflict_or_backend};
use crate::rows::{self, insert_audit};
use crate::store::{SqliteStore, commit};

/// Namespaces with the count of their `episodic`/`source` documents not under `archive/`
/// (a correlated count on the `documents_type` index).
macro_rules! namespace_select {
    () => {
        "SELECT n.namespace, n.repos, n.created_at, n.runner, \
         (SELECT COUNT(*) FROM documents AS d WHERE d.namespace = n.namespace \
          AND d.type IN ('episodic', 'source') AND NOT (d.path GLOB 'archive/*')) AS unconsolidated \
         FROM namespaces AS n "
    };
}

fn namespace_row(row: &SqliteRow) -> Result<NamespaceRow, sqlx::Error> {
    Ok(NamespaceRow {
        namespace: row.try_get("namespace")?,
        repos: row.try_get("repos")?,
        created_at: row.time("created_at")?,
        unconsolidated: rows::count(row.try_get("unconsolidated")?),
        runner: row.try_get("runner")?,
    })
}

#[async_trait]
impl NamespaceStore for SqliteStore {
    async fn namespaces(&self) -> StoreResult<Vec<NamespaceRow>> {
        let found = sqlx::query(concat!(namespace_select!(), "ORDER BY n.namespace"))
            .fetch_all(self.reader())
            .await
            .db()?;
        rows::all(&found, namespace_row).db()
    }

    async fn namespace(&self, name: &str) -> StoreResult<Option<NamespaceRow>> {
        let row = sqlx::query(concat!(namespace_select!(), "WHERE n.namespace = ?"))
            .bind(name)
            .fetch_optional(self.reader())
            .await
            .db()?;
        row.as_ref().map(namespace_row).transpose().db()
    }

    async fn namespace_exists(&self, name: &str) -> StoreResult<bool> {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM namespaces WHERE namespace = ?)")
            .bind(name)
            .fetch_one(self.reader())
            .await
            .db()
    }

    async fn register_namespace(
        &self,
        name: &str,
        repos_json: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query("INSERT INTO namespaces (namespace, repos, created_at) VALUES (?, ?, ?)")
            .bind(name)
            .bind(repos_json)
            .bind(at.to_string())
            .execute(&mut *tx)
            .await
            .map_err(|e| {
                conflict_or_backend(e, |_| format!("namespace '{name}' is already registered"))
            })?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await
    }

    async fn update_namespace(
        &self,
        name: &str,
        repos_json: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<String>> {
        let mut tx = self.begin_write().await?;
        let previous: Option<Option<String>> =
            sqlx::query_scalar("SELECT repos FROM namespaces WHERE namespace = ?")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await
                .db()?;
        let Some(previous) = previous else {
            return Err(StoreError::NotFound(format!(
                "namespace '{name}' is not registered"
            )));
        };
        let updated: Option<String> = sqlx::query_scalar(
            "UPDATE namespaces SET repos = ? WHERE namespace = ? RETURNING namespace",
        )
        .bind(repos_json)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        if updated.is_none() {
            return Err(StoreError::NotFound(format!(
                "namespace '{name}' is not registered"
            )));
        }
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(previous)
    }

    async fn set_namespace_runner(
        &self,
        name: &str,
        runner_json: Option<String>,
        audit: AuditEntry,
    ) -> StoreResult<Option<String>> {
        let mut tx = self.begin_write().await?;
        let previous: Option<Option<String>> =
            sqlx::query_scalar("SELECT runner FROM namespaces WHERE namespace = ?")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await
                .db()?;
        let Some(previous) = previous else {
            return Err(StoreError::NotFound(format!(
                "namespace '{name}' is not registered"
            )));
        };
        sqlx::query("UPDATE namespaces SET runner = ? WHERE namespace = ?")
            .bind(runner_json)
            .bind(name)
            .execute(&mut *tx)
            .await
            .db()?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(previous)
    }
}
