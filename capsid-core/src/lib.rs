//! `capsid-core`: every rule of Capsid, with no IO.
//!
//! The core decides; adapters carry. This crate holds who may do what ([`scope`], [`caller`],
//! [`tools`]), which paths are protected ([`paths`], [`guards`]), how documents are assembled
//! ([`docs`]), which job transitions are legal and how jobs are signed ([`jobs`]), what the
//! autonomy policies allow ([`autonomy`]), how the improve loop scores ([`improve`]),
//! when a skill goes live ([`skills`]), what an agent's checkmark may say ([`checkmarks`])
//! and what the store's probes make of `/health` ([`health`]). The ports it needs from the
//! outside world are in [`ports`]; time comes from [`time::Clock`] and randomness from
//! [`ids::Entropy`].
//!
//! It depends on no database, HTTP, MCP or GitHub crate and reads no clock; the workspace's
//! test command asserts that with `cargo tree`.
//!
//! # Using it
//!
//! An application builds one [`service::Service`] from a store (any type implementing the
//! composite [`ports::Store`]: `capsid-store-sqlite` or `capsid-store-postgres`), a clock,
//! an entropy source and a [`service::ServiceConfig`], then hands every tool call to
//! [`service::Service::call_tool`], the one enforcement point: it parses and bounds the
//! arguments, runs the scope check of the tool's registry entry, and only then the handler.
//!
//! ```
//! use std::sync::Arc;
//! use capsid_core::caller::Caller;
//! use capsid_core::service::{NoConfirmer, Service, ServiceConfig};
//!
//! async fn list_alpha(store: Arc<dyn capsid_core::ports::Store>,
//!                     clock: Arc<dyn capsid_core::time::Clock>,
//!                     entropy: Arc<dyn capsid_core::ids::Entropy>) -> serde_json::Value {
//!     let config = ServiceConfig { signing_secret: Some("from your secret store".into()),
//!                                  operator_keys: Vec::new(), ..Default::default() };
//!     let service = Service::new(store, clock, entropy, config);
//!     // The CLI's caller is an admin holding the database; an HTTP adapter resolves
//!     // a bearer key into a Caller with `Service::resolve_bearer` instead.
//!     service
//!         .call_tool(&Caller::cli("example"), "list",
//!                    serde_json::json!({"namespace": "alpha"}), &NoConfirmer)
//!         .await
//!         .unwrap_or_else(|e| serde_json::json!({"error": e.to_string()}))
//! }
//! ```
//!
//! `capsid-http` carries the service over MCP and HTTP (its `embed` example mounts it inside
//! another axum application); `ARCHITECTURE.md` at the repository's root is the map, with
//! "How to add a tool".

pub mod autonomy;
pub mod backup;
pub mod caller;
pub mod checkmarks;
pub mod crypto;
pub mod docs;
pub mod drive;
pub mod error;
pub mod guards;
pub mod health;
pub mod ids;
pub mod improve;
pub mod intake;
pub mod jobs;
pub mod oauth;
pub mod owner;
pub mod paths;
pub mod ports;
pub mod repos;
pub mod schedule;
pub(crate) mod schema;
pub mod scope;
pub mod service;
pub mod skills;
pub mod time;
pub mod tools;
