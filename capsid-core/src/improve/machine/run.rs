//! The one table of a run's status transitions: `opening → attempting → awaiting-score →
//! judging → finalizing → done`, with `paused` the other terminal (an attempt the monitor flags
//! before dispatch goes straight from attempting to judging). A judged attempt either
//! sends the run back to `attempting` or on to `finalizing`; the six-hour cap finalizes a run
//! wherever it is; a pause (the drift gate, the budget, a human) stops it from any live state.

use std::fmt;

/// Where a run stands. The `improve_runs.status` column holds [`RunStatus::as_str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunStatus {
    /// Just opened: base selected, nothing attempted yet.
    Opening,
    /// Producing the next attempt.
    Attempting,
    /// An attempt is dispatched; waiting for its signed score report.
    AwaitingScore,
    /// The score (or the attempt's timeout) is in; deciding keep or revert.
    Judging,
    /// No more attempts: writing the summary, restoring or proposing the best.
    Finalizing,
    /// Finished (terminal).
    Done,
    /// Stopped by a pause (terminal).
    Paused,
}

impl RunStatus {
    /// Every status, in the reference's order.
    pub const ALL: [RunStatus; 7] = [
        RunStatus::Opening,
        RunStatus::Attempting,
        RunStatus::AwaitingScore,
        RunStatus::Judging,
        RunStatus::Finalizing,
        RunStatus::Done,
        RunStatus::Paused,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Opening => "opening",
            RunStatus::Attempting => "attempting",
            RunStatus::AwaitingScore => "awaiting-score",
            RunStatus::Judging => "judging",
            RunStatus::Finalizing => "finalizing",
            RunStatus::Done => "done",
            RunStatus::Paused => "paused",
        }
    }

    /// The status spelled exactly `text`, if any.
    pub fn parse(text: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// `done` and `paused` absorb every event; the partial unique index covers the rest.
    pub fn is_terminal(self) -> bool {
        matches!(self, RunStatus::Done | RunStatus::Paused)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can happen to a run: one variant per kind of row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunEvent {
    /// The opener finished selecting the base; attempting begins.
    Begin,
    /// An attempt was pushed and its score dispatched.
    Dispatch,
    /// The signed score report for the current attempt arrived.
    Score,
    /// The current attempt's score missed its deadline (the attempt times out, reverted).
    ScoreTimeout,
    /// The monitor flagged the current attempt before its score was dispatched.
    Flag,
    /// The judged attempt leaves room for another: back to attempting.
    Continue,
    /// No further attempt (limit reached, consecutive reverts, nothing left to try).
    Conclude,
    /// The run passed its six-hour cap: finalize wherever it is.
    Expire,
    /// Finalizing is complete.
    Finish,
    /// The namespace or the loop was paused.
    Pause,
}

/// The audit action of a run that began attempting.
pub const AUDIT_RUN_BEGAN: &str = "improve-run-began";
/// The audit action of a dispatched attempt's score.
pub const AUDIT_RUN_DISPATCHED: &str = "improve-run-dispatched";
/// The audit action of an arrived score.
pub const AUDIT_RUN_SCORED: &str = "improve-run-scored";
/// The audit action of a score that missed its deadline.
pub const AUDIT_RUN_SCORE_TIMEOUT: &str = "improve-run-score-timeout";
/// The audit action of an attempt flagged before dispatch.
pub const AUDIT_RUN_FLAGGED: &str = "improve-run-flagged";
/// The audit action of a run going back to attempting.
pub const AUDIT_RUN_CONTINUED: &str = "improve-run-continued";
/// The audit action of a run that stops attempting.
pub const AUDIT_RUN_CONCLUDED: &str = "improve-run-concluded";
/// The audit action of a run finalized by the six-hour cap.
pub const AUDIT_RUN_EXPIRED: &str = "improve-run-expired";
/// The audit action of a finished run.
pub const AUDIT_RUN_DONE: &str = "improve-run-done";
/// The audit action of a paused run.
pub const AUDIT_RUN_PAUSED: &str = "improve-run-paused";

impl RunEvent {
    /// Every event.
    pub const ALL: [RunEvent; 10] = [
        RunEvent::Begin,
        RunEvent::Dispatch,
        RunEvent::Score,
        RunEvent::ScoreTimeout,
        RunEvent::Flag,
        RunEvent::Continue,
        RunEvent::Conclude,
        RunEvent::Expire,
        RunEvent::Finish,
        RunEvent::Pause,
    ];

    /// A short name for refusals and logs.
    pub fn name(self) -> &'static str {
        match self {
            RunEvent::Begin => "begin",
            RunEvent::Dispatch => "dispatch",
            RunEvent::Score => "score",
            RunEvent::ScoreTimeout => "score timeout",
            RunEvent::Flag => "flag",
            RunEvent::Continue => "continue",
            RunEvent::Conclude => "conclude",
            RunEvent::Expire => "expire",
            RunEvent::Finish => "finish",
            RunEvent::Pause => "pause",
        }
    }

    /// The audit action recorded for this event.
    pub fn audit_action(self) -> &'static str {
        match self {
            RunEvent::Begin => AUDIT_RUN_BEGAN,
            RunEvent::Dispatch => AUDIT_RUN_DISPATCHED,
            RunEvent::Score => AUDIT_RUN_SCORED,
            RunEvent::ScoreTimeout => AUDIT_RUN_SCORE_TIMEOUT,
            RunEvent::Flag => AUDIT_RUN_FLAGGED,
            RunEvent::Continue => AUDIT_RUN_CONTINUED,
            RunEvent::Conclude => AUDIT_RUN_CONCLUDED,
            RunEvent::Expire => AUDIT_RUN_EXPIRED,
            RunEvent::Finish => AUDIT_RUN_DONE,
            RunEvent::Pause => AUDIT_RUN_PAUSED,
        }
    }
}

impl fmt::Display for RunEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An event the table does not allow from the run's current status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a run cannot take `{event}` while it is {from}")]
pub struct IllegalRunTransition {
    /// The status the run was in.
    pub from: RunStatus,
    /// The event refused.
    pub event: RunEvent,
}

/// The status `event` leads to from `from`, or the refusal naming both.
pub fn transition(from: RunStatus, event: RunEvent) -> Result<RunStatus, IllegalRunTransition> {
    use RunEvent as E;
    use RunStatus as S;
    let to = match (from, event) {
        (_, _) if from.is_terminal() => return Err(IllegalRunTransition { from, event }),
        (S::Opening, E::Begin) => S::Attempting,
        (S::Attempting, E::Dispatch) => S::AwaitingScore,
        (S::AwaitingScore, E::Score | E::ScoreTimeout) => S::Judging,
        (S::Attempting, E::Flag) => S::Judging,
        (S::Judging, E::Continue) => S::Attempting,
        (S::Attempting | S::Judging, E::Conclude) => S::Finalizing,
        (S::Opening | S::Attempting | S::AwaitingScore | S::Judging, E::Expire) => S::Finalizing,
        (S::Finalizing, E::Finish) => S::Done,
        (_, E::Pause) => S::Paused,
        _ => return Err(IllegalRunTransition { from, event }),
    };
    Ok(to)
}

/// One step a run takes as the table allows it: the status the keyed update requires, the
/// status it sets, and the event (whose audit action the row records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunStep {
    /// The status the run must be in.
    pub from: RunStatus,
    /// The status it takes.
    pub to: RunStatus,
    /// What happened.
    pub event: RunEvent,
}

impl RunStep {
    /// The audit action of the step's row.
    pub fn audit_action(&self) -> &'static str {
        self.event.audit_action()
    }
}

/// The step `event` takes from `from`, or the refusal naming both.
pub fn step(from: RunStatus, event: RunEvent) -> Result<RunStep, IllegalRunTransition> {
    Ok(RunStep {
        from,
        to: transition(from, event)?,
        event,
    })
}
