//! The box and its doors (issue 48, issue 49): what a driven agent runs inside and the only ways
//! out of it, each owned by the supervisor. Every rule these apply is a pure function of
//! `capsid-core` (`drive::ledger`, `drive::push_policy`, `drive::box_plan`, `drive::egress`);
//! this crate carries bytes and processes, and decides nothing.

#![forbid(unsafe_code)]

pub mod bridge;
pub mod connect;
pub mod gateway;
pub mod http_door;
pub mod model_proxy;
pub mod sandbox;
