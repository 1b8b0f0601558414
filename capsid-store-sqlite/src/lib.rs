//! capsid-store-sqlite: the embedded SQLite adapter of every store port of `capsid-core`.
//!
//! One database file in WAL mode with `synchronous=FULL`. Every write goes through a single
//! writer connection, each multi-statement unit of work in one `BEGIN IMMEDIATE` transaction;
//! reads come from a small pool of `query_only` connections. Queries are runtime `sqlx`
//! queries with explicit row mapping; driver errors become [`capsid_core::ports::StoreError`].

#![forbid(unsafe_code)]

mod agents;
mod audit;
mod documents;
mod error;
mod health;
mod improve;
mod jobs;
mod namespaces;
mod oauth;
mod reviews;
mod rows;
mod settings;
mod store;

pub use store::SqliteStore;

/// The embedded migrations (`migrations/`), applied by [`SqliteStore::migrate`].
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");
