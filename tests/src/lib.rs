//! Capsid test support: the store conformance suite, the fresh-store harness, load drivers
//! shared with the benchmark, and a deterministic text generator.

pub mod baseline;
pub mod bench;
pub mod cdp;
pub mod conformance;
pub mod e2e;
pub mod fake_claude;
pub mod fake_codex;
pub mod fake_github;
pub mod fake_github_login;
pub mod fake_model;
pub mod fake_repo;
pub mod harness;
pub mod load;
pub mod moto;
pub mod pg_cluster;
pub mod server;
pub mod textgen;
pub mod wire;
pub mod workflows;
