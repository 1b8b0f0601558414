//! The one table of an attempt's status transitions: `pending → awaiting-score → kept |
//! reverted | flagged | timed-out`. The reward-hacking monitor may flag an attempt before its
//! score is dispatched or while it waits; every other verdict needs the attempt to be waiting.

use std::fmt;

/// Where an attempt stands. The `improve_attempts.status` column holds [`AttemptStatus::as_str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttemptStatus {
    /// Being produced: branch pushed or about to be, score not yet dispatched.
    Pending,
    /// Its score is dispatched; waiting for the signed report.
    AwaitingScore,
    /// Every anchor passed and the secondary score improved (terminal).
    Kept,
    /// Judged and reverted (terminal).
    Reverted,
    /// The reward-hacking monitor reverted it regardless of score (terminal).
    Flagged,
    /// Its score missed the 20-minute deadline; reverted (terminal).
    TimedOut,
}

impl AttemptStatus {
    /// Every status, in the reference's order.
    pub const ALL: [AttemptStatus; 6] = [
        AttemptStatus::Pending,
        AttemptStatus::AwaitingScore,
        AttemptStatus::Kept,
        AttemptStatus::Reverted,
        AttemptStatus::Flagged,
        AttemptStatus::TimedOut,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptStatus::Pending => "pending",
            AttemptStatus::AwaitingScore => "awaiting-score",
            AttemptStatus::Kept => "kept",
            AttemptStatus::Reverted => "reverted",
            AttemptStatus::Flagged => "flagged",
            AttemptStatus::TimedOut => "timed-out",
        }
    }

    /// The status spelled exactly `text`, if any.
    pub fn parse(text: &str) -> Option<AttemptStatus> {
        AttemptStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Every verdict absorbs every event.
    pub fn is_terminal(self) -> bool {
        !matches!(self, AttemptStatus::Pending | AttemptStatus::AwaitingScore)
    }

    /// A terminal attempt that counts as a revert (everything but `kept`).
    pub fn is_revert(self) -> bool {
        self.is_terminal() && self != AttemptStatus::Kept
    }
}

impl fmt::Display for AttemptStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can happen to an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttemptEvent {
    /// Its score was dispatched (`dispatched_at` is set).
    Dispatch,
    /// The score report judged it kept.
    Keep,
    /// The score report judged it reverted.
    Revert,
    /// The reward-hacking monitor flagged it.
    Flag,
    /// Its score missed the deadline.
    Timeout,
}

/// The audit action of a dispatched attempt.
pub const AUDIT_ATTEMPT_DISPATCHED: &str = "improve-attempt-dispatched";
/// The audit action of a kept attempt.
pub const AUDIT_ATTEMPT_KEPT: &str = "improve-attempt-kept";
/// The audit action of a reverted attempt.
pub const AUDIT_ATTEMPT_REVERTED: &str = "improve-attempt-reverted";
/// The audit action of a flagged attempt.
pub const AUDIT_ATTEMPT_FLAGGED: &str = "improve-attempt-flagged";
/// The audit action of a timed-out attempt.
pub const AUDIT_ATTEMPT_TIMED_OUT: &str = "improve-attempt-timed-out";

impl AttemptEvent {
    /// Every event.
    pub const ALL: [AttemptEvent; 5] = [
        AttemptEvent::Dispatch,
        AttemptEvent::Keep,
        AttemptEvent::Revert,
        AttemptEvent::Flag,
        AttemptEvent::Timeout,
    ];

    /// A short name for refusals and logs.
    pub fn name(self) -> &'static str {
        match self {
            AttemptEvent::Dispatch => "dispatch",
            AttemptEvent::Keep => "keep",
            AttemptEvent::Revert => "revert",
            AttemptEvent::Flag => "flag",
            AttemptEvent::Timeout => "timeout",
        }
    }

    /// The audit action recorded for this event.
    pub fn audit_action(self) -> &'static str {
        match self {
            AttemptEvent::Dispatch => AUDIT_ATTEMPT_DISPATCHED,
            AttemptEvent::Keep => AUDIT_ATTEMPT_KEPT,
            AttemptEvent::Revert => AUDIT_ATTEMPT_REVERTED,
            AttemptEvent::Flag => AUDIT_ATTEMPT_FLAGGED,
            AttemptEvent::Timeout => AUDIT_ATTEMPT_TIMED_OUT,
        }
    }
}

impl fmt::Display for AttemptEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An event the table does not allow from the attempt's current status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an attempt cannot take `{event}` while it is {from}")]
pub struct IllegalAttemptTransition {
    /// The status the attempt was in.
    pub from: AttemptStatus,
    /// The event refused.
    pub event: AttemptEvent,
}

/// The status `event` leads to from `from`, or the refusal naming both.
pub fn transition(
    from: AttemptStatus,
    event: AttemptEvent,
) -> Result<AttemptStatus, IllegalAttemptTransition> {
    use AttemptEvent as E;
    use AttemptStatus as S;
    let to = match (from, event) {
        (S::Pending, E::Dispatch) => S::AwaitingScore,
        (S::AwaitingScore, E::Keep) => S::Kept,
        (S::AwaitingScore, E::Revert) => S::Reverted,
        (S::Pending | S::AwaitingScore, E::Flag) => S::Flagged,
        (S::AwaitingScore, E::Timeout) => S::TimedOut,
        _ => return Err(IllegalAttemptTransition { from, event }),
    };
    Ok(to)
}

/// One step an attempt takes as the table allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptStep {
    /// The status the attempt must be in.
    pub from: AttemptStatus,
    /// The status it takes.
    pub to: AttemptStatus,
    /// What happened.
    pub event: AttemptEvent,
}

impl AttemptStep {
    /// The audit action of the step's row.
    pub fn audit_action(&self) -> &'static str {
        self.event.audit_action()
    }
}

/// The step `event` takes from `from`, or the refusal naming both.
pub fn step(
    from: AttemptStatus,
    event: AttemptEvent,
) -> Result<AttemptStep, IllegalAttemptTransition> {
    Ok(AttemptStep {
        from,
        to: transition(from, event)?,
        event,
    })
}
