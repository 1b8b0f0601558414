//! This store as an engine of the shared SQL (`capsid-store-sql`): reads and units of work
//! on the pool, a unit run again on a serialization failure or deadlock, driver errors
//! through [`translate`] (constraint names, outages).

use async_trait::async_trait;
use capsid_core::ports::{DocumentWrite, PoolUsage, StoreError, StoreResult, WriteGuard};
use capsid_store_sql::{Engine, Exec, Row, Stmt, Tx, TxError, TxResult};
use futures::future::BoxFuture;
use sqlx::{Postgres, Transaction};

use crate::PgStore;
use crate::documents::write_in_tx;
use crate::error::{is_retryable, translate};

/// A unit of work: a transaction on a pooled connection.
struct PgTx(Transaction<'static, Postgres>);

impl Exec for PgTx {
    fn execute(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<u64, sqlx::Error>> {
        Exec::execute(&mut *self.0, stmt)
    }

    fn fetch_all(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<Vec<Row>, sqlx::Error>> {
        Exec::fetch_all(&mut *self.0, stmt)
    }

    fn fetch_optional(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<Option<Row>, sqlx::Error>> {
        Exec::fetch_optional(&mut *self.0, stmt)
    }
}

impl Tx for PgTx {
    fn commit(self: Box<Self>) -> BoxFuture<'static, StoreResult<()>> {
        Box::pin(async move { self.0.commit().await.map_err(translate) })
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, StoreResult<()>> {
        Box::pin(async move { self.0.rollback().await.map_err(translate) })
    }

    fn write_document<'a>(
        &'a mut self,
        write: &'a DocumentWrite,
        guard: &'a WriteGuard,
    ) -> BoxFuture<'a, TxResult<()>> {
        Box::pin(async move {
            match write_in_tx(&mut self.0, write, guard).await {
                Ok(_) => Ok(()),
                Err(crate::error::TxError::Db(e)) => Err(TxError::Db(e)),
                Err(crate::error::TxError::Store(e)) => Err(TxError::Store(e)),
            }
        })
    }
}

#[async_trait]
impl Engine for PgStore {
    async fn read(&self, stmt: Stmt) -> StoreResult<Vec<Row>> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        Exec::fetch_all(&mut *conn, stmt).await.map_err(translate)
    }

    async fn begin(&self) -> StoreResult<Box<dyn Tx>> {
        Ok(Box::new(PgTx(self.pool.begin().await.map_err(translate)?)))
    }

    fn lock_row(&self) -> &'static str {
        " FOR UPDATE"
    }

    fn retryable(&self, error: &sqlx::Error) -> bool {
        is_retryable(error)
    }

    fn pool_usage(&self) -> Vec<PoolUsage> {
        let open = self.pool.size();
        let idle = u32::try_from(self.pool.num_idle())
            .unwrap_or(open)
            .min(open);
        vec![PoolUsage {
            pool: "main",
            in_use: open - idle,
            idle,
            max: self.pool.options().get_max_connections(),
        }]
    }

    fn translate(&self, error: sqlx::Error) -> StoreError {
        translate(error)
    }
}

capsid_store_sql::sql_ports!(PgStore);
