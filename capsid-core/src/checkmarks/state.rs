//! The one table of a checkmark's status transitions. A checkpoint (the agent saying where it
//! stands) is accepted from every state, including none; a human's answer and a resume only
//! while the agent waits on a human, and a resume always leaves it `working`. The store
//! enforces each answer and resume as a keyed conditional update; this table decides which
//! updates may exist at all.

use std::fmt;

use super::status::AgentStatus;
use super::{AUDIT_ANSWERED, AUDIT_CHECKPOINT, AUDIT_RESUME_REQUESTED};

/// Everything that can happen to a checkmark: one variant per kind of row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckmarkEvent {
    /// The agent records a checkpoint with this status.
    Checkpoint(AgentStatus),
    /// Somebody answers the open question; the agent stays where it is.
    Answer,
    /// Somebody answers the open question and asks for the agent to be resumed with it.
    AnswerAndResume,
    /// Somebody asks for the agent to be resumed (with the answer already given, if it asked).
    Resume,
}

impl CheckmarkEvent {
    /// Every event.
    pub const ALL: [CheckmarkEvent; 7] = [
        CheckmarkEvent::Checkpoint(AgentStatus::Working),
        CheckmarkEvent::Checkpoint(AgentStatus::PausedForInput),
        CheckmarkEvent::Checkpoint(AgentStatus::Blocked),
        CheckmarkEvent::Checkpoint(AgentStatus::Done),
        CheckmarkEvent::Answer,
        CheckmarkEvent::AnswerAndResume,
        CheckmarkEvent::Resume,
    ];

    /// A short name for refusals and logs.
    pub fn name(self) -> String {
        match self {
            CheckmarkEvent::Checkpoint(s) => format!("checkpoint as {s}"),
            CheckmarkEvent::Answer => "answer".to_owned(),
            CheckmarkEvent::AnswerAndResume => "answer and resume".to_owned(),
            CheckmarkEvent::Resume => "resume".to_owned(),
        }
    }

    /// The audit action recorded for this event.
    pub fn audit_action(self) -> &'static str {
        match self {
            CheckmarkEvent::Checkpoint(_) => AUDIT_CHECKPOINT,
            CheckmarkEvent::Answer | CheckmarkEvent::AnswerAndResume => AUDIT_ANSWERED,
            CheckmarkEvent::Resume => AUDIT_RESUME_REQUESTED,
        }
    }

    /// Whether the event marks the agent to be resumed.
    pub fn resumes(self) -> bool {
        matches!(
            self,
            CheckmarkEvent::AnswerAndResume | CheckmarkEvent::Resume
        )
    }
}

impl fmt::Display for CheckmarkEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// An event the table does not allow from the checkmark's current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a checkmark cannot take `{event}` while {}", describe(*.from))]
pub struct IllegalTransition {
    /// The status the checkmark was in (`None`: the agent has no checkmark yet).
    pub from: Option<AgentStatus>,
    /// The event refused.
    pub event: CheckmarkEvent,
}

fn describe(from: Option<AgentStatus>) -> String {
    match from {
        Some(AgentStatus::Working) => "the agent is working (nothing waits on a human)".into(),
        Some(AgentStatus::Done) => "the agent is done (nothing waits on a human)".into(),
        Some(status) => format!("the agent is {status}"),
        None => "the agent has no checkmark yet".into(),
    }
}

/// The status `event` leads to from `from`, or the refusal naming both.
pub fn transition(
    from: Option<AgentStatus>,
    event: CheckmarkEvent,
) -> Result<AgentStatus, IllegalTransition> {
    use AgentStatus as S;
    use CheckmarkEvent as E;
    let to = match (event, from) {
        (E::Checkpoint(to), _) => to,
        (E::Answer, Some(waiting @ (S::PausedForInput | S::Blocked))) => waiting,
        (E::AnswerAndResume | E::Resume, Some(S::PausedForInput | S::Blocked)) => S::Working,
        _ => return Err(IllegalTransition { from, event }),
    };
    Ok(to)
}

/// One step a checkmark takes as the table allows it: the status the keyed update requires,
/// the status it sets, and the event (whose audit action the row records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The status the checkmark must be in.
    pub from: AgentStatus,
    /// The status it takes.
    pub to: AgentStatus,
    /// What happened.
    pub event: CheckmarkEvent,
}

impl Step {
    /// The audit action of the step's row.
    pub fn audit_action(&self) -> &'static str {
        self.event.audit_action()
    }
}

/// The step `event` takes from `from`, or the refusal naming both.
pub fn step(from: AgentStatus, event: CheckmarkEvent) -> Result<Step, IllegalTransition> {
    Ok(Step {
        from,
        to: transition(Some(from), event)?,
        event,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use AgentStatus as S;
    use CheckmarkEvent as E;

    /// The table, row by row, as data (checkpoints are accepted from every state).
    const TABLE: &[(Option<AgentStatus>, CheckmarkEvent, AgentStatus)] = &[
        (Some(S::PausedForInput), E::Answer, S::PausedForInput),
        (Some(S::Blocked), E::Answer, S::Blocked),
        (Some(S::PausedForInput), E::AnswerAndResume, S::Working),
        (Some(S::Blocked), E::AnswerAndResume, S::Working),
        (Some(S::PausedForInput), E::Resume, S::Working),
        (Some(S::Blocked), E::Resume, S::Working),
    ];

    fn model(from: Option<AgentStatus>, event: CheckmarkEvent) -> Option<AgentStatus> {
        if let E::Checkpoint(to) = event {
            return Some(to);
        }
        TABLE
            .iter()
            .find(|(f, e, _)| *f == from && *e == event)
            .map(|(_, _, to)| *to)
    }

    fn froms() -> impl Iterator<Item = Option<AgentStatus>> {
        std::iter::once(None).chain(AgentStatus::ALL.iter().copied().map(Some))
    }

    #[test]
    fn every_pair_agrees_with_the_table() {
        for from in froms() {
            for event in E::ALL {
                assert_eq!(
                    transition(from, event).ok(),
                    model(from, event),
                    "{from:?} {event:?}"
                );
            }
        }
    }

    #[test]
    fn nothing_but_a_checkpoint_reaches_done_or_paused() {
        for from in froms() {
            for event in E::ALL {
                if let Ok(to) = transition(from, event)
                    && matches!(to, S::Done | S::PausedForInput | S::Blocked)
                    && from != Some(to)
                {
                    assert!(matches!(event, E::Checkpoint(_)), "{from:?} {event:?}");
                }
            }
        }
    }

    #[test]
    fn refusals_name_the_event_and_the_state() {
        let err = transition(Some(S::Working), E::Resume).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a checkmark cannot take `resume` while the agent is working (nothing waits on a human)"
        );
        let err = transition(None, E::Answer).unwrap_err();
        assert!(err.to_string().contains("no checkmark yet"), "{err}");
        assert_eq!(E::Answer.audit_action(), "checkmark-answered");
        assert_eq!(E::Resume.audit_action(), "checkmark-resume-requested");
        assert_eq!(E::Checkpoint(S::Done).audit_action(), "checkpoint");
    }

    fn any_event() -> impl Strategy<Value = CheckmarkEvent> {
        proptest::sample::select(E::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn sequences_follow_the_model(events in proptest::collection::vec(any_event(), 0..40)) {
            let mut state: Option<AgentStatus> = None;
            for event in events {
                let before = state;
                let got = match state {
                    None => transition(None, event),
                    Some(from) => step(from, event).map(|s| {
                        assert_eq!((s.from, s.event, s.audit_action()), (from, event, event.audit_action()));
                        s.to
                    }),
                };
                match (got, model(state, event)) {
                    (Ok(to), Some(expected)) => {
                        prop_assert_eq!(to, expected);
                        if event.resumes() {
                            prop_assert_eq!(to, S::Working, "a resume leaves the agent working");
                        }
                        state = Some(to);
                    }
                    (Err(err), None) => prop_assert_eq!(err, IllegalTransition { from: before, event }),
                    (got, want) => prop_assert!(false, "{:?} {:?}: got {:?}, model {:?}", before, event, got, want),
                }
            }
        }
    }
}
