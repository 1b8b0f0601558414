//! The drift gate (reference 8.2): the namespace pauses when the revert ratio over its last 3
//! runs exceeds 0.6, or when any anchor regresses against the best record.

use crate::improve::scores::AnchorSpec;
use crate::improve::verdict::{MetricMap, anchor_regressions};

use super::limits::RunTally;

/// How many recent runs the revert ratio covers.
pub const DRIFT_WINDOW_RUNS: usize = 3;
/// The revert ratio that, when exceeded, pauses the namespace.
pub const DRIFT_REVERT_RATIO: f64 = 0.6;

/// Why the drift gate paused a namespace.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DriftReason {
    /// Too many of the last runs' attempts were reverted.
    #[error(
        "drift: {reverts} of {attempts} attempts reverted over the last {DRIFT_WINDOW_RUNS} runs (over {DRIFT_REVERT_RATIO})"
    )]
    RevertRatio {
        /// Reverts over the window.
        reverts: u32,
        /// Attempts judged over the window.
        attempts: u32,
    },
    /// Anchors that got worse than the best record.
    #[error("drift: anchor regressed against the best record ({})", .0.join("; "))]
    AnchorRegressed(Vec<String>),
}

/// The revert-ratio half of the gate over `recent` runs, newest first. Only a full window of
/// [`DRIFT_WINDOW_RUNS`] runs is judged; a window with no judged attempts never trips.
pub fn revert_drift(recent: &[RunTally]) -> Option<DriftReason> {
    let window = recent.get(..DRIFT_WINDOW_RUNS)?;
    let (reverts, judged) = window.iter().fold((0u32, 0u32), |(r, j), t| {
        (
            r.saturating_add(t.reverts),
            j.saturating_add(t.kept.saturating_add(t.reverts)),
        )
    });
    // reverts / judged > 0.6, exactly, in integers.
    (judged > 0 && u64::from(reverts) * 5 > u64::from(judged) * 3).then_some(
        DriftReason::RevertRatio {
            reverts,
            attempts: judged,
        },
    )
}

/// The whole gate: the revert ratio over `recent` runs (newest first), then the anchors of
/// `latest` against `best` (the best record's anchors).
pub fn drift_gate(
    recent: &[RunTally],
    anchors: &[AnchorSpec],
    best: &MetricMap,
    latest: &MetricMap,
) -> Option<DriftReason> {
    if let Some(reason) = revert_drift(recent) {
        return Some(reason);
    }
    let regressed = anchor_regressions(anchors, best, latest);
    (!regressed.is_empty()).then_some(DriftReason::AnchorRegressed(regressed))
}
