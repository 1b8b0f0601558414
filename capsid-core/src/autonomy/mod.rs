//! Autonomy by signed policy (reference 7): the policy document format, auto-merge's seven
//! checks, and the pre-approved gate classes with their never-list.
//!
//! The documents name the checks and classes; the code enforces them. A policy that names
//! fewer than the code enforces is refused at load.

pub mod anchor;
pub mod auto_merge;
pub mod gates;
pub mod policy;
pub mod watcher;

pub use auto_merge::{CheckId, MergeVerdict, PrFacts, evaluate_pr};
pub use gates::{
    ClassifiedCommand, GateClass, GateRefusal, MigrationTool, MigrationTools, PreApproval,
    classify_command, classify_command_for, classify_migration_sql,
};
pub use policy::{
    AutoMergePolicy, GatePolicy, PolicyError, PolicyKind, parse_auto_merge_policy,
    parse_gate_policy,
};
