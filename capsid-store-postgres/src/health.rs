//! This store's health differences: its catalogue, its `tsvector` probe, and why the server
//! cannot be reached.

use async_trait::async_trait;
use capsid_core::ports::StoreResult;
use capsid_store_sql::health::HealthEngine;
use sqlx::migrate::Migrator;

use crate::PgStore;
use crate::documents::search;

#[async_trait]
impl HealthEngine for PgStore {
    /// `to_regclass` is `NULL` for a table that does not exist (`COUNT` makes it a `BIGINT`).
    const MIGRATIONS_TABLE: &'static str = "SELECT COUNT(to_regclass('_sqlx_migrations')) AS n";

    fn migrator(&self) -> &'static Migrator {
        &crate::MIGRATOR
    }

    async fn fts_probe(&self, term: &str) -> StoreResult<u64> {
        search::count_matches(&self.pool, term).await
    }

    /// One connection attempt, bounded by the connect timeout and shared by the callers
    /// asking within half a second: the pool's own timeout hides a refused connection.
    async fn outage_cause(&self) -> Option<String> {
        self.outage.cause().await
    }
}
