//! Job states and the one table of legal transitions between them (reference 6.1).
//!
//! The store enforces each transition as a keyed conditional update; this table decides
//! which updates may exist at all. `done` and `failed` are terminal; a blocked job is
//! only ever resumed, never claimed.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a job stands. The `jobs.status` column holds [`JobStatus::as_str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Waiting for a driver.
    Queued,
    /// Held by one caller under a lease.
    Claimed,
    /// Finished with a result (terminal).
    Done,
    /// Given up, refused or tampered with (terminal).
    Failed,
    /// Waiting on a human gate; only `resume` moves it on.
    Blocked,
}

impl JobStatus {
    /// Every status, in the Worker's vocabulary order.
    pub const ALL: [JobStatus; 5] = [
        JobStatus::Queued,
        JobStatus::Claimed,
        JobStatus::Done,
        JobStatus::Failed,
        JobStatus::Blocked,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Claimed => "claimed",
            JobStatus::Done => "done",
            JobStatus::Failed => "failed",
            JobStatus::Blocked => "blocked",
        }
    }

    /// The status spelled exactly `text`, if any.
    pub fn parse(text: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Open jobs hold their title: the partial unique index covers `queued` and `claimed`.
    pub fn is_open(self) -> bool {
        matches!(self, JobStatus::Queued | JobStatus::Claimed)
    }

    /// `done` and `failed` absorb every event.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobStatus::Done | JobStatus::Failed)
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can happen to a job: one variant per row of the transition table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobEvent {
    /// `post`: a new job enters the queue.
    Post,
    /// `claim`: a caller takes a queued job under a lease.
    Claim,
    /// `claim` found a body whose signature does not verify; the job is failed.
    ClaimSignatureRefused,
    /// `claim` found a stored requirement it cannot read; the job is failed (SPEC 8).
    ClaimRequirementCorrupt,
    /// `heartbeat`: the holder renews its lease.
    Heartbeat,
    /// `complete`: the holder finishes the job.
    Complete,
    /// `fail`: the holder gives up.
    Fail,
    /// `block`: the holder stops at a human gate.
    Block,
    /// The tick's sweep returns an expired lease to the queue.
    LeaseExpired,
    /// `resume`: a blocked job goes back to a holder.
    Resume,
    /// The owner resumes a blocked job from the console: it goes back to the queue for its
    /// holder's kind of driver rather than onto the owner (SPEC 8).
    ResumeToQueue,
    /// `resume` found a body whose signature does not verify; the job is failed.
    ResumeSignatureRefused,
    /// The admin fails a job that is not finished.
    AdminFail,
    /// A review said CHANGES on complete or block: the holder keeps the job.
    ReviewChanges,
}

impl JobEvent {
    /// Every event.
    pub const ALL: [JobEvent; 14] = [
        JobEvent::Post,
        JobEvent::Claim,
        JobEvent::ClaimSignatureRefused,
        JobEvent::ClaimRequirementCorrupt,
        JobEvent::Heartbeat,
        JobEvent::Complete,
        JobEvent::Fail,
        JobEvent::Block,
        JobEvent::LeaseExpired,
        JobEvent::Resume,
        JobEvent::ResumeToQueue,
        JobEvent::ResumeSignatureRefused,
        JobEvent::AdminFail,
        JobEvent::ReviewChanges,
    ];

    /// A short name for refusals and logs.
    pub fn name(self) -> &'static str {
        match self {
            JobEvent::Post => "post",
            JobEvent::Claim => "claim",
            JobEvent::ClaimSignatureRefused => "claim (signature refused)",
            JobEvent::ClaimRequirementCorrupt => "claim (requirement corrupt)",
            JobEvent::Heartbeat => "heartbeat",
            JobEvent::Complete => "complete",
            JobEvent::Fail => "fail",
            JobEvent::Block => "block",
            JobEvent::LeaseExpired => "lease expiry",
            JobEvent::Resume => "resume",
            JobEvent::ResumeToQueue => "resume to the queue",
            JobEvent::ResumeSignatureRefused => "resume (signature refused)",
            JobEvent::AdminFail => "admin fail",
            JobEvent::ReviewChanges => "review CHANGES",
        }
    }

    /// The audit action recorded for this event (appendix A).
    pub fn audit_action(self) -> &'static str {
        use super::*;
        match self {
            JobEvent::Post => AUDIT_JOB_POSTED,
            JobEvent::Claim => AUDIT_JOB_CLAIMED,
            JobEvent::ClaimSignatureRefused | JobEvent::ResumeSignatureRefused => {
                AUDIT_JOB_SIGNATURE_REFUSED
            }
            JobEvent::ClaimRequirementCorrupt => AUDIT_JOB_REQUIREMENT_CORRUPT,
            JobEvent::Heartbeat => AUDIT_JOB_HEARTBEAT,
            JobEvent::Complete => AUDIT_JOB_COMPLETE,
            JobEvent::Fail => AUDIT_JOB_FAIL,
            JobEvent::Block => AUDIT_JOB_BLOCK,
            JobEvent::LeaseExpired => AUDIT_JOB_LEASE_EXPIRED,
            JobEvent::Resume | JobEvent::ResumeToQueue => AUDIT_JOB_RESUMED,
            JobEvent::AdminFail => AUDIT_JOB_ADMIN_FAIL,
            JobEvent::ReviewChanges => AUDIT_JOB_REVIEW_CHANGES,
        }
    }
}

impl fmt::Display for JobEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An event that the transition table does not allow from the job's current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a job cannot take `{event}` while it is {}", describe(*.from))]
pub struct IllegalTransition {
    /// The state the job was in (`None`: no job exists yet).
    pub from: Option<JobStatus>,
    /// The event refused.
    pub event: JobEvent,
}

fn describe(from: Option<JobStatus>) -> String {
    match from {
        Some(status) => status.as_str().to_owned(),
        None => "not yet posted".to_owned(),
    }
}

/// The state `event` leads to from `from`, or the refusal naming both.
pub fn transition(
    from: Option<JobStatus>,
    event: JobEvent,
) -> Result<JobStatus, IllegalTransition> {
    use JobEvent as E;
    use JobStatus as S;
    let to = match (event, from) {
        (E::Post, None) => S::Queued,
        (E::Claim, Some(S::Queued)) => S::Claimed,
        (E::ClaimSignatureRefused | E::ClaimRequirementCorrupt, Some(S::Queued)) => S::Failed,
        (E::Heartbeat | E::ReviewChanges, Some(S::Claimed)) => S::Claimed,
        (E::Complete, Some(S::Claimed)) => S::Done,
        (E::Fail, Some(S::Claimed)) => S::Failed,
        (E::Block, Some(S::Claimed)) => S::Blocked,
        (E::LeaseExpired, Some(S::Claimed)) => S::Queued,
        (E::Resume, Some(S::Blocked)) => S::Claimed,
        (E::ResumeToQueue, Some(S::Blocked)) => S::Queued,
        (E::ResumeSignatureRefused, Some(S::Blocked)) => S::Failed,
        (E::AdminFail, Some(S::Queued | S::Claimed | S::Blocked)) => S::Failed,
        _ => return Err(IllegalTransition { from, event }),
    };
    Ok(to)
}

/// One step a job takes, as the table allows it: the status the keyed update requires, the
/// status it sets, and the event (whose audit action the row records). The service builds
/// every transition from a step, so what runs is what the table (and its property tests)
/// allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The status the job must be in.
    pub from: JobStatus,
    /// The status it takes.
    pub to: JobStatus,
    /// What happened.
    pub event: JobEvent,
}

impl Step {
    /// The audit action of the step's row.
    pub fn audit_action(&self) -> &'static str {
        self.event.audit_action()
    }
}

/// The step `event` takes from `from`, or the refusal naming both.
pub fn step(from: JobStatus, event: JobEvent) -> Result<Step, IllegalTransition> {
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

    use JobEvent as E;
    use JobStatus as S;

    /// The reference's table, row by row, as data.
    const TABLE: &[(Option<JobStatus>, JobEvent, JobStatus)] = &[
        (None, E::Post, S::Queued),
        (Some(S::Queued), E::Claim, S::Claimed),
        (Some(S::Queued), E::ClaimSignatureRefused, S::Failed),
        (Some(S::Queued), E::ClaimRequirementCorrupt, S::Failed),
        (Some(S::Claimed), E::Heartbeat, S::Claimed),
        (Some(S::Claimed), E::Complete, S::Done),
        (Some(S::Claimed), E::Fail, S::Failed),
        (Some(S::Claimed), E::Block, S::Blocked),
        (Some(S::Claimed), E::LeaseExpired, S::Queued),
        (Some(S::Blocked), E::Resume, S::Claimed),
        (Some(S::Blocked), E::ResumeToQueue, S::Queued),
        (Some(S::Blocked), E::ResumeSignatureRefused, S::Failed),
        (Some(S::Queued), E::AdminFail, S::Failed),
        (Some(S::Claimed), E::AdminFail, S::Failed),
        (Some(S::Blocked), E::AdminFail, S::Failed),
        (Some(S::Claimed), E::ReviewChanges, S::Claimed),
    ];

    fn model(from: Option<JobStatus>, event: JobEvent) -> Option<JobStatus> {
        TABLE
            .iter()
            .find(|(f, e, _)| *f == from && *e == event)
            .map(|(_, _, to)| *to)
    }

    #[test]
    fn every_pair_agrees_with_the_table() {
        let froms = std::iter::once(None).chain(JobStatus::ALL.into_iter().map(Some));
        for from in froms {
            for event in JobEvent::ALL {
                assert_eq!(
                    transition(from, event).ok(),
                    model(from, event),
                    "{from:?} {event:?}"
                );
            }
        }
    }

    #[test]
    fn statuses_round_trip_and_classify() {
        for s in JobStatus::ALL {
            assert_eq!(JobStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(JobStatus::parse("Queued"), None);
        assert_eq!(JobStatus::parse("superseded"), None);
        let open: Vec<_> = JobStatus::ALL.into_iter().filter(|s| s.is_open()).collect();
        assert_eq!(open, [S::Queued, S::Claimed]);
        let terminal: Vec<_> = JobStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(terminal, [S::Done, S::Failed]);
    }

    #[test]
    fn a_blocked_job_is_resumed_never_claimed() {
        assert!(transition(Some(S::Blocked), E::Claim).is_err());
        assert_eq!(transition(Some(S::Blocked), E::Resume), Ok(S::Claimed));
    }

    #[test]
    fn refusal_names_the_event_and_the_state() {
        let err = transition(Some(S::Done), E::Heartbeat).unwrap_err();
        assert_eq!(
            err,
            IllegalTransition {
                from: Some(S::Done),
                event: E::Heartbeat
            }
        );
        assert_eq!(
            err.to_string(),
            "a job cannot take `heartbeat` while it is done"
        );
        let err = transition(None, E::Claim).unwrap_err();
        assert!(err.to_string().contains("not yet posted"), "{err}");
    }

    #[test]
    fn audit_actions_are_the_reference_names() {
        assert_eq!(E::Resume.audit_action(), "job-resumed");
        assert_eq!(
            E::ResumeSignatureRefused.audit_action(),
            "job-signature-refused"
        );
        assert_eq!(E::LeaseExpired.audit_action(), "job-lease-expired");
        assert_eq!(E::ReviewChanges.audit_action(), "job-review-changes");
    }

    fn any_event() -> impl Strategy<Value = JobEvent> {
        proptest::sample::select(JobEvent::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn sequences_follow_the_model(events in proptest::collection::vec(any_event(), 0..40)) {
            let mut state: Option<JobStatus> = None;
            for event in events {
                let before = state;
                // The service builds every transition of a posted job through `step`: drive
                // the same function, so the property covers what runs.
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
                        state = Some(to);
                    }
                    (Err(err), None) => {
                        prop_assert_eq!(err, IllegalTransition { from: before, event });
                    }
                    (got, want) => prop_assert!(false, "{:?} {:?}: got {:?}, model {:?}", before, event, got, want),
                }
                if before.is_some_and(JobStatus::is_terminal) {
                    prop_assert_eq!(state, before, "terminal state moved on {:?}", event);
                }
            }
        }

        #[test]
        fn terminal_states_absorb_everything(event in any_event(), done in any::<bool>()) {
            let from = if done { S::Done } else { S::Failed };
            prop_assert!(transition(Some(from), event).is_err());
        }
    }
}
