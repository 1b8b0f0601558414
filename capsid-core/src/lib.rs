//! `capsid-core`: every rule of Capsid, with no IO.
//!
//! The core decides; adapters carry. This crate holds who may do what ([`scope`], [`caller`],
//! [`tools`]), which paths are protected ([`paths`], [`guards`]), how documents are assembled
//! ([`docs`]), which job transitions are legal and how jobs are signed ([`jobs`]), what the
//! autonomy policies allow ([`autonomy`]), how the improve loop scores ([`improve`]) and
//! when a skill goes live ([`skills`]). The ports it needs from the outside world are in
//! [`ports`]; time comes from [`time::Clock`] and randomness from [`ids::Entropy`].
//!
//! It depends on no database, HTTP, MCP or GitHub crate and reads no clock; the workspace's
//! test command asserts that with `cargo tree`.

pub mod autonomy;
pub mod backup;
pub mod caller;
pub mod crypto;
pub mod docs;
pub mod error;
pub mod guards;
pub mod ids;
pub mod improve;
pub mod jobs;
pub mod oauth;
pub mod owner;
pub mod paths;
pub mod ports;
pub mod repos;
pub mod scope;
pub mod service;
pub mod skills;
pub mod time;
pub mod tools;
