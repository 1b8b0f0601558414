//! The Postgres store against its ports, in one test binary (cases skip without a server).

mod claims;
mod common;
mod connection;
mod glob;
mod outage;
mod plans;
mod search;
mod search_indexes;
