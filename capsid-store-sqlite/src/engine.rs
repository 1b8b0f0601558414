//! This store as an engine of the shared SQL (`capsid-store-sql`): reads on the `query_only`
//! pool, each unit of work a savepoint of the group commit's batch on the one writer
//! ([`crate::group`]), driver errors through [`backend`]. SQLite never asks a unit to run
//! again: one writer means no transaction is made to fail by another.

use async_trait::async_trait;
use capsid_core::ports::{AgentRow, DocumentWrite, PoolUsage, StoreError, StoreResult, WriteGuard};
use capsid_store_sql::{Engine, Exec, Row, Stmt, Tx, TxResult};
use futures::future::BoxFuture;
use sqlx::sqlite::{SqliteConnection, SqlitePool};

use crate::error::backend;
use crate::group::WriteUnit;
use crate::store::SqliteStore;

impl Exec for WriteUnit {
    fn execute(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<u64, sqlx::Error>> {
        let conn: &mut SqliteConnection = self;
        conn.execute(stmt)
    }

    fn fetch_all(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<Vec<Row>, sqlx::Error>> {
        let conn: &mut SqliteConnection = self;
        conn.fetch_all(stmt)
    }

    fn fetch_optional(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<Option<Row>, sqlx::Error>> {
        let conn: &mut SqliteConnection = self;
        conn.fetch_optional(stmt)
    }
}

impl Tx for WriteUnit {
    fn commit(self: Box<Self>) -> BoxFuture<'static, StoreResult<()>> {
        Box::pin((*self).commit())
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, StoreResult<()>> {
        Box::pin((*self).rollback())
    }

    fn write_document<'a>(
        &'a mut self,
        write: &'a DocumentWrite,
        guard: &'a WriteGuard,
    ) -> BoxFuture<'a, TxResult<()>> {
        Box::pin(async move {
            crate::documents::write::write_in_unit(self, write, guard).await?;
            Ok(())
        })
    }
}

#[async_trait]
impl Engine for SqliteStore {
    async fn read(&self, stmt: Stmt) -> StoreResult<Vec<Row>> {
        let mut conn = self.reader().acquire().await.map_err(backend)?;
        Exec::fetch_all(&mut *conn, stmt).await.map_err(backend)
    }

    async fn begin(&self) -> StoreResult<Box<dyn Tx>> {
        Ok(Box::new(self.begin_write().await?))
    }

    async fn agent_by_key_hash_cached(&self, key_hash: &str) -> StoreResult<Option<AgentRow>> {
        // Answered from memory while the database has not changed since (a revocation, in
        // this process or any other, changes it).
        crate::cache::read_through(
            self.data_version(),
            self.agent_cache(),
            key_hash.to_owned(),
            |key, row| key.len() + row.as_ref().map_or(0, agent_size),
            capsid_store_sql::agents::agent_by_key_hash(self, key_hash),
        )
        .await
    }

    fn pool_usage(&self) -> Vec<PoolUsage> {
        vec![
            usage("writer", self.writer()),
            usage("reader", self.reader()),
        ]
    }

    fn translate(&self, error: sqlx::Error) -> StoreError {
        backend(error)
    }
}

/// An agent row's size as the cache counts it.
fn agent_size(row: &AgentRow) -> usize {
    row.id.len()
        + row.name.len()
        + row.key_hash.len()
        + row.scopes.len()
        + row.created_by.len()
        + 128
}

/// A pool's open, busy and idle connections.
fn usage(pool: &'static str, p: &SqlitePool) -> PoolUsage {
    let open = p.size();
    let idle = u32::try_from(p.num_idle()).unwrap_or(open).min(open);
    PoolUsage {
        pool,
        in_use: open - idle,
        idle,
        max: p.options().get_max_connections(),
    }
}

capsid_store_sql::sql_ports!(SqliteStore);
