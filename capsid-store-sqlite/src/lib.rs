//! capsid-store-sqlite: the embedded SQLite adapter of every store port of `capsid-core`.
//!
//! One database file in WAL mode with `synchronous=FULL`. Every write goes through a single
//! writer connection, each multi-statement unit of work under its own savepoint in a
//! `BEGIN IMMEDIATE` transaction that concurrent units share (group commit: one durable
//! `COMMIT` for every unit waiting on the writer, each acknowledged only after it); reads come from a small pool of `query_only` connections. Queries are runtime `sqlx`
//! queries with explicit row mapping; driver errors become [`capsid_core::ports::StoreError`].
//!
//! ```no_run
//! # async fn open() -> Result<(), capsid_core::ports::StoreError> {
//! let store = capsid_store_sqlite::SqliteStore::open("sqlite:///var/lib/capsid/capsid.db").await?;
//! store.migrate().await?; // applies `migrations/`, returns the new schema version if any
//! let store: std::sync::Arc<dyn capsid_core::ports::Store> = std::sync::Arc::new(store);
//! # Ok(()) }
//! ```
//!
//! The store decides nothing: the rules are the core's, and this crate keeps atomicity,
//! conditional updates and the SQLite dialect. The conformance suite (`tests/src/conformance`)
//! runs every port method against it and against the Postgres store alike.

#![forbid(unsafe_code)]

mod backup;
mod cache;
mod documents;
mod engine;
mod error;
mod group;
mod health;
mod jobs;
mod rows;
mod store;

pub use cache::CacheCounts;
pub use group::CommitCounts;
pub use store::{SqliteStore, database_path};

/// The embedded migrations (`migrations/`), applied by [`SqliteStore::migrate`].
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");
