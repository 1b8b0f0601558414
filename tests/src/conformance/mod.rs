//! The store conformance suite: one set of async cases over the `capsid-core` ports, grouped
//! by port, that `tests/conformance.rs` runs against every backend on a fresh store.

pub mod agents;
pub mod backup;
pub mod checkmarks;
pub mod documents_guards;
pub mod documents_packets;
pub mod documents_paths;
pub mod documents_point;
pub mod documents_read;
pub mod documents_search;
pub mod documents_write;
pub mod elsewhere;
pub mod gauges;
pub mod hostile;
pub mod intake;
pub mod jobs_claim;
pub mod jobs_flow;
pub mod jobs_records;
pub mod leases;
pub mod oauth;
pub mod races;
pub mod registry;
pub mod reviews;
pub mod runs;
pub mod settings;
pub mod skill_evidence;
pub mod skill_panel;
pub mod skill_sources;
pub mod skills;
pub mod support;
