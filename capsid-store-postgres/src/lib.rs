//! capsid-store-postgres: the Postgres adapter of every store port of `capsid-core`, for
//! teams running several `capsid serve` replicas over one database.
//!
//! Every unit of work is one READ COMMITTED transaction: guards are row locks
//! (`SELECT ... FOR UPDATE`) or SQL predicates, transitions are keyed conditional
//! `UPDATE ... RETURNING`, creates lean on unique constraints, and claims take the best
//! queued job with `FOR UPDATE SKIP LOCKED`. Every connection runs with
//! `synchronous_commit=on`, so an acknowledged write survives a crash. Text columns are
//! `COLLATE "C"`, so ordering and comparisons are byte-wise, as in the SQLite store.

#![forbid(unsafe_code)]

mod agents;
mod audit;
mod documents;
mod error;
pub mod glob;
mod health;
mod improve;
mod jobs;
mod namespaces;
mod oauth;
mod plans;
mod reviews;
mod rows;
mod settings;
mod sql;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use capsid_core::ports::{StoreError, StoreHealth};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::translate;

/// The embedded migrations (`migrations/`), applied by [`PgStore::migrate`].
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The pool size [`PgStore::connect`] uses.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// How long a caller waits for a pooled connection before the call fails.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// The Postgres store: a pool of connections. Cloning is cheap (the pool is shared).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("connections", &self.pool.size())
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects with [`DEFAULT_MAX_CONNECTIONS`] connections. Does not migrate.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        Self::connect_with(url, DEFAULT_MAX_CONNECTIONS).await
    }

    /// Connects with at most `max_connections` connections (at least one). Every connection
    /// sets `synchronous_commit=on` and READ COMMITTED, whatever the server's defaults.
    /// Does not migrate.
    pub async fn connect_with(url: &str, max_connections: u32) -> Result<PgStore, StoreError> {
        // The URL may hold a password: never echo it.
        let options = PgConnectOptions::from_str(url)
            .map_err(|_| StoreError::Backend("the Postgres URL could not be parsed".to_owned()))?
            .options([
                ("synchronous_commit", "on"),
                ("default_transaction_isolation", "read committed"),
            ]);
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(translate)?;
        Ok(PgStore { pool })
    }

    /// Applies the pending migrations and returns the schema version (`0001_init`). Safe
    /// when several replicas migrate at once: sqlx holds an advisory lock while it works.
    pub async fn migrate(&self) -> Result<Option<String>, StoreError> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Backend(format!("migration failed: {e}")))?;
        self.schema_version().await
    }

    /// Closes every connection; calls made afterwards fail.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The underlying pool, for tooling (backup, restore) and tests.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}
