//! The self-improvement loop (reference 8): the roster and its switches, the settings keys,
//! the `scores.md` document and its pin, keep/revert scoring, the signed score report, and the
//! monthly budget.
//!
//! Everything here is a pure function of documents, settings values and reported metrics;
//! the service reads and writes them.

pub mod anchors;
pub mod budget;
pub mod holdout;
pub mod judging;
pub mod keys;
pub mod machine;
pub mod models;
pub mod monitor;
pub mod night;
pub mod pin;
pub mod report;
pub mod roster;
pub mod scores;
pub mod task;
pub mod verdict;
pub mod workflows;

pub use budget::{BudgetCaps, BudgetError, MonthSpend, over_cap};
pub use roster::{DRIVER_LEASE_MS, ImproveMode, Roster, RosterError, RunCondition};
pub use scores::{ScoresDoc, ScoresProblem, ScoresRefusal, parse_scores, verify_anchor_pin};
pub use verdict::{Judgement, MetricMap, Verdict, judge};
