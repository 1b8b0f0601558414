//! The run and attempt state machines of the self-improvement loop (reference 8.2): the two
//! transition tables, the limits that decide when a run stops, the drift gate, and the ids and
//! branch names. Pure: every input (times, tallies, metrics) is handed in.
//!
//! The store enforces each transition as a keyed conditional update
//! (`UPDATE … WHERE id = ? AND status = <expected>`); these tables decide which updates may
//! exist at all and which audit action each records.

pub mod attempt;
pub mod drift;
pub mod ids;
pub mod limits;
pub mod run;

#[cfg(test)]
mod tests;

pub use attempt::{AttemptEvent, AttemptStatus, AttemptStep, IllegalAttemptTransition};
pub use drift::{DRIFT_REVERT_RATIO, DRIFT_WINDOW_RUNS, DriftReason, drift_gate, revert_drift};
pub use ids::{IdError, archive_path, attempt_branch, attempt_id, attempt_number, run_id};
pub use limits::{
    AddRefusal, MAX_ATTEMPTS_PER_RUN, MAX_CONSECUTIVE_REVERTS, RUN_CAP_MS, RecordRefusal, RunTally,
    SCORE_DEADLINE_MS, StopReason, run_expired, score_overdue,
};
pub use run::{IllegalRunTransition, RunEvent, RunStatus, RunStep};
