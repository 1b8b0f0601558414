//! The `NamespaceStore` port: namespaces with their unconsolidated counts, registration and
//! repo updates, each audited in the same transaction.

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::ports::{AuditEntry, NamespaceRow, NamespaceStore, StoreError, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::PgStore;
use crate::audit;
use crate::error::{always, count, finish, translate, with_retry};

/// A namespace with the number of its `episodic`/`source` documents not under `archive/`.
macro_rules! namespace_select {
    () => {
        "SELECT n.namespace, n.repos, n.created_at, n.runner, \
         (SELECT count(*) FROM documents d WHERE d.namespace = n.namespace \
          AND d.type IN ('episodic', 'source') AND d.path NOT LIKE 'archive/%') AS unconsolidated \
         FROM namespaces n"
    };
}

const NAMESPACES: &str = concat!(namespace_select!(), " ORDER BY n.namespace");
const NAMESPACE: &str = concat!(namespace_select!(), " WHERE n.namespace = $1");
const EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM namespaces WHERE namespace = $1)";
const REGISTER: &str = "INSERT INTO namespaces (namespace, repos, created_at) VALUES ($1, $2, $3) \
     ON CONFLICT (namespace) DO NOTHING RETURNING namespace";
const LOCK_REPOS: &str = "SELECT repos FROM namespaces WHERE namespace = $1 FOR UPDATE";
const UPDATE_REPOS: &str = "UPDATE namespaces SET repos = $2 WHERE namespace = $1";
const LOCK_RUNNER: &str = "SELECT runner FROM namespaces WHERE namespace = $1 FOR UPDATE";
const UPDATE_RUNNER: &str = "UPDATE namespaces SET runner = $2 WHERE namespace = $1";

fn namespace_row(row: &PgRow) -> Result<NamespaceRow, sqlx::Error> {
    Ok(NamespaceRow {
        namespace: row.try_get("namespace")?,
        repos: row.try_get("repos")?,
        created_at: row.time("created_at")?,
        unconsolidated: count(row.try_get("unconsolidated")?),
        runner: row.try_get("runner")?,
    })
}

#[async_trait]
impl NamespaceStore for PgStore {
    async fn namespaces(&self) -> StoreResult<Vec<NamespaceRow>> {
        let rows = sqlx::query(NAMESPACES)
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(namespace_row)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn namespace(&self, name: &str) -> StoreResult<Option<NamespaceRow>> {
        let row = sqlx::query(NAMESPACE)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref()
            .map(namespace_row)
            .transpose()
            .map_err(translate)
    }

    async fn namespace_exists(&self, name: &str) -> StoreResult<bool> {
        sqlx::query_scalar(EXISTS)
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .map_err(translate)
    }

    async fn register_namespace(
        &self,
        name: &str,
        repos_json: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<()> {
        let pool = &self.pool;
        let audit = &audit;
        let at = at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let created: Option<String> = sqlx::query_scalar(REGISTER)
                        .bind(name)
                        .bind(repos_json)
                        .bind(at)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if created.is_none() {
                        return Err(StoreError::Conflict(format!(
                            "namespace '{name}' already exists"
                        ))
                        .into());
                    }
                    audit::insert(&mut tx, audit).await
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn update_namespace(
        &self,
        name: &str,
        repos_json: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<String>> {
        let pool = &self.pool;
        let audit = &audit;
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let previous: Option<Option<String>> = sqlx::query_scalar(LOCK_REPOS)
                        .bind(name)
                        .fetch_optional(&mut *tx)
                        .await?;
                    let Some(previous) = previous else {
                        return Err(StoreError::NotFound(format!(
                            "namespace '{name}' does not exist"
                        ))
                        .into());
                    };
                    sqlx::query(UPDATE_REPOS)
                        .bind(name)
                        .bind(repos_json)
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(previous)
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn set_namespace_runner(
        &self,
        name: &str,
        runner_json: Option<String>,
        audit: AuditEntry,
    ) -> StoreResult<Option<String>> {
        let pool = &self.pool;
        let audit = &audit;
        let runner_json = runner_json.as_deref();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let previous: Option<Option<String>> = sqlx::query_scalar(LOCK_RUNNER)
                        .bind(name)
                        .fetch_optional(&mut *tx)
                        .await?;
                    let Some(previous) = previous else {
                        return Err(StoreError::NotFound(format!(
                            "namespace '{name}' does not exist"
                        ))
                        .into());
                    };
                    sqlx::query(UPDATE_RUNNER)
                        .bind(name)
                        .bind(runner_json)
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(previous)
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }
}
