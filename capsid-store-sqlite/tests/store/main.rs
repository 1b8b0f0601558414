//! The SQLite store against its ports, in one test binary.

mod accounts;
mod common;
mod connection;
mod documents;
mod find;
mod plans;
mod queue;
mod read_cache;
mod search;
