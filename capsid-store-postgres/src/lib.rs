//! capsid-store-postgres: the Postgres adapter of every store port of `capsid-core`, for
//! teams running several `capsid serve` replicas over one database.
//!
//! Every unit of work is one READ COMMITTED transaction: guards are row locks
//! (`SELECT ... FOR UPDATE`) or SQL predicates, transitions are keyed conditional
//! `UPDATE ... RETURNING`, creates lean on unique constraints, and claims take the best
//! queued job with `FOR UPDATE SKIP LOCKED`. Every connection runs with
//! `synchronous_commit=on`, so an acknowledged write survives a crash. Text columns are
//! `COLLATE "C"`, so ordering and comparisons are byte-wise, as in the SQLite store.
//!
//! ```no_run
//! # async fn open() -> Result<(), capsid_core::ports::StoreError> {
//! let store = capsid_store_postgres::PgStore::connect("postgres://capsid@db.internal/capsid").await?;
//! store.migrate().await?; // one replica at a time: migrations take an advisory lock
//! let store: std::sync::Arc<dyn capsid_core::ports::Store> = std::sync::Arc::new(store);
//! # Ok(()) }
//! ```
//!
//! The store decides nothing: the rules are the core's, and this crate keeps atomicity,
//! conditional updates and the Postgres dialect; the conformance suite holds it to the same
//! behaviour as the SQLite store.

#![forbid(unsafe_code)]

mod audit;
mod backup;
mod documents;
mod engine;
mod error;
pub mod glob;
mod health;
mod jobs;
mod outage;
mod plans;
mod rows;
mod search_indexes;
mod sql;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use capsid_core::ports::{StoreError, StoreHealth};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::translate;

/// The embedded migrations (`migrations/`), applied by [`PgStore::migrate`].
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The pool size [`PgStore::connect`] uses.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// How long a caller waits for a pooled connection before the call fails as unavailable
/// (the HTTP answer is then 503 with `Retry-After`, quickly, instead of a hung request).
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one connection attempt may take before it counts as failed, by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a Postgres store waits, for a pooled connection and for one new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgTimeouts {
    /// How long a call waits for a pooled connection before it fails as
    /// [`StoreError::Unavailable`].
    pub acquire: Duration,
    /// How long one connection attempt may take (the first one, and the attempt that finds
    /// out why the database cannot be reached).
    pub connect: Duration,
}

impl Default for PgTimeouts {
    fn default() -> Self {
        PgTimeouts {
            acquire: ACQUIRE_TIMEOUT,
            connect: CONNECT_TIMEOUT,
        }
    }
}

/// The Postgres store: a pool of connections. Cloning is cheap (the pool is shared).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    outage: Arc<outage::Outage>,
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
        Self::connect_pool(url, max_connections, ACQUIRE_TIMEOUT).await
    }

    /// As [`PgStore::connect_with`], waiting at most `acquire_timeout` for a pooled
    /// connection before a call fails as [`StoreError::Unavailable`].
    pub async fn connect_pool(
        url: &str,
        max_connections: u32,
        acquire_timeout: Duration,
    ) -> Result<PgStore, StoreError> {
        let timeouts = PgTimeouts {
            acquire: acquire_timeout,
            ..PgTimeouts::default()
        };
        Self::connect_timeouts(url, max_connections, timeouts).await
    }

    /// As [`PgStore::connect_with`], with `timeouts`. The first connection is one direct
    /// attempt, so a server that cannot be reached is named with the real cause at once
    /// ([`StoreError::Unavailable`]: "connection refused at 127.0.0.1:5432"; a refusal that
    /// waiting cannot cure, such as a wrong password, is [`StoreError::Backend`]).
    pub async fn connect_timeouts(
        url: &str,
        max_connections: u32,
        timeouts: PgTimeouts,
    ) -> Result<PgStore, StoreError> {
        // The URL may hold a password: never echo it.
        let options = PgConnectOptions::from_str(url)
            .map_err(|_| StoreError::Backend("the Postgres URL could not be parsed".to_owned()))?
            .options([
                ("synchronous_commit", "on"),
                ("default_transaction_isolation", "read committed"),
            ]);
        let outage = outage::Outage::new(options.clone(), timeouts.connect);
        outage.attempt().await.map_err(StoreError::from)?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(timeouts.acquire)
            .connect_with(options)
            .await
            .map_err(translate)?;
        Ok(PgStore {
            pool,
            outage: Arc::new(outage),
        })
    }

    /// Applies the pending migrations, then builds the text indexes with the namespace where
    /// they lack it (concurrently, without blocking reads and writes: `search_indexes`), and
    /// returns the schema version (`0001_init`). Safe when several replicas migrate at once:
    /// sqlx holds an advisory lock while it migrates, and one replica builds the indexes.
    pub async fn migrate(&self) -> Result<Option<String>, StoreError> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Backend(format!("migration failed: {e}")))?;
        search_indexes::ensure(&self.pool).await.map_err(|e| {
            StoreError::Backend(format!(
                "building the text indexes with the namespace failed: {e}"
            ))
        })?;
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

/// `url` with its database name replaced by `database` (query parameters kept).
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{database}?{q}"),
        None => format!("{base}/{database}"),
    }
}

/// A scratch database on the server `url` names (for a restore rehearsal): created through
/// `url`'s own database, named `name` (letters, digits and `_` only), returned as a URL.
pub async fn create_scratch_database(url: &str, name: &str) -> Result<String, StoreError> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(StoreError::Backend(format!(
            "not a scratch database name: {name:?}"
        )));
    }
    let admin = PgPool::connect(url).await.map_err(translate)?;
    let created = sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&admin)
        .await
        .map_err(translate);
    admin.close().await;
    created?;
    Ok(with_database(url, name))
}

/// Drops a scratch database made by [`create_scratch_database`] (connections are ended).
pub async fn drop_scratch_database(url: &str, name: &str) -> Result<(), StoreError> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(StoreError::Backend(format!(
            "not a scratch database name: {name:?}"
        )));
    }
    let admin = PgPool::connect(url).await.map_err(translate)?;
    let dropped = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&admin)
    .await
    .map_err(translate);
    admin.close().await;
    dropped.map(|_| ())
}
