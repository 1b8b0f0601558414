//! The limits of one run (reference 8.2): 10 attempts, 5 consecutive reverts (restore the best
//! commit and stop), a 20-minute score deadline counted from `dispatched_at`, and a six-hour
//! cap after which the run finalizes wherever it is. [`RunTally`] mirrors the counters on the
//! `improve_runs` row and refuses updates that would break them.

use crate::time::{HOUR_MS, MINUTE_MS, Timestamp};

use super::attempt::AttemptStatus;
use super::run::RunEvent;

/// Attempts one run may make.
pub const MAX_ATTEMPTS_PER_RUN: u32 = 10;
/// Consecutive reverts after which the run restores the best commit and stops.
pub const MAX_CONSECUTIVE_REVERTS: u32 = 5;
/// How long after `dispatched_at` a score may arrive.
pub const SCORE_DEADLINE_MS: i64 = 20 * MINUTE_MS;
/// How old a run may grow before it finalizes wherever it is.
pub const RUN_CAP_MS: i64 = 6 * HOUR_MS;

/// Whether a score dispatched at `dispatched_at` has missed its deadline at `now`.
pub fn score_overdue(dispatched_at: Timestamp, now: Timestamp) -> bool {
    now.millis_since(dispatched_at) > SCORE_DEADLINE_MS
}

/// Whether a run started at `started` is past its six-hour cap at `now`.
pub fn run_expired(started: Timestamp, now: Timestamp) -> bool {
    now.millis_since(started) > RUN_CAP_MS
}

/// Why a run stops attempting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StopReason {
    /// It made all its attempts.
    #[error("the run made its {MAX_ATTEMPTS_PER_RUN} attempts")]
    AttemptLimit,
    /// Too many reverts in a row; the best commit is restored.
    #[error("{MAX_CONSECUTIVE_REVERTS} consecutive reverts: restoring the best commit")]
    ConsecutiveReverts,
}

impl StopReason {
    /// Whether finalizing restores the best commit.
    pub fn restores_best(self) -> bool {
        self == StopReason::ConsecutiveReverts
    }
}

/// The counters of one run: attempts made, kept, reverted (reverted, flagged or timed out),
/// and the current streak of reverts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunTally {
    /// Attempts added so far.
    pub attempts: u32,
    /// Attempts kept.
    pub kept: u32,
    /// Attempts reverted, flagged or timed out.
    pub reverts: u32,
    /// Reverts since the last kept attempt.
    pub consecutive_reverts: u32,
}

impl RunTally {
    /// Why the run may not attempt again, if it may not.
    pub fn stop_reason(&self) -> Option<StopReason> {
        if self.consecutive_reverts >= MAX_CONSECUTIVE_REVERTS {
            Some(StopReason::ConsecutiveReverts)
        } else if self.attempts >= MAX_ATTEMPTS_PER_RUN {
            Some(StopReason::AttemptLimit)
        } else {
            None
        }
    }

    /// Attempts added but not yet judged.
    pub fn outstanding(&self) -> u32 {
        self.attempts
            .saturating_sub(self.kept.saturating_add(self.reverts))
    }

    /// Adds the next attempt and returns its number (1-based, for `<run>-aNN`), or why the
    /// run may not: over a limit, or the previous attempt not yet judged.
    pub fn add_attempt(&mut self) -> Result<u32, AddRefusal> {
        if let Some(reason) = self.stop_reason() {
            return Err(AddRefusal::Stopped(reason));
        }
        if self.outstanding() > 0 {
            return Err(AddRefusal::Outstanding);
        }
        self.attempts += 1;
        Ok(self.attempts)
    }

    /// Records the verdict of the outstanding attempt. Refused (and nothing changes) when no
    /// attempt is outstanding or `verdict` is not terminal.
    pub fn record(&mut self, verdict: AttemptStatus) -> Result<(), RecordRefusal> {
        if !verdict.is_terminal() {
            return Err(RecordRefusal::NotAVerdict(verdict));
        }
        if self.outstanding() == 0 {
            return Err(RecordRefusal::NothingOutstanding);
        }
        if verdict.is_revert() {
            self.reverts += 1;
            self.consecutive_reverts += 1;
        } else {
            self.kept += 1;
            self.consecutive_reverts = 0;
        }
        Ok(())
    }

    /// The run event that follows judging: attempt again or conclude.
    pub fn after_judging(&self) -> RunEvent {
        match self.stop_reason() {
            Some(_) => RunEvent::Conclude,
            None => RunEvent::Continue,
        }
    }
}

/// Why [`RunTally::add_attempt`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddRefusal {
    /// The run is over a limit.
    #[error("no further attempt: {0}")]
    Stopped(StopReason),
    /// The previous attempt has no verdict yet.
    #[error("no further attempt: the previous attempt is not judged yet")]
    Outstanding,
}

/// Why [`RunTally::record`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordRefusal {
    /// The status given is not a verdict.
    #[error("`{0}` is not a verdict (kept, reverted, flagged or timed-out)")]
    NotAVerdict(AttemptStatus),
    /// Every attempt already has its verdict.
    #[error("no attempt of this run is waiting for a verdict")]
    NothingOutstanding,
}
