//! The machines against a model: the tables as data, arbitrary event sequences, and a whole
//! run driven by arbitrary verdicts under the limits.

use proptest::prelude::*;

use super::attempt::{self, AttemptEvent as AE, AttemptStatus as A};
use super::limits::{AddRefusal, RecordRefusal};
use super::run::{self, RunEvent as RE, RunStatus as R};
use super::*;
use crate::improve::scores::{AnchorRule, AnchorSpec};
use crate::improve::verdict::MetricMap;
use crate::time::{MINUTE_MS, Timestamp};

/// The run table, row by row (a pause is accepted from every live status).
const RUN_TABLE: &[(RunStatus, RunEvent, RunStatus)] = &[
    (R::Opening, RE::Begin, R::Attempting),
    (R::Attempting, RE::Dispatch, R::AwaitingScore),
    (R::AwaitingScore, RE::Score, R::Judging),
    (R::AwaitingScore, RE::ScoreTimeout, R::Judging),
    (R::Attempting, RE::Flag, R::Judging),
    (R::Judging, RE::Continue, R::Attempting),
    (R::Attempting, RE::Conclude, R::Finalizing),
    (R::Judging, RE::Conclude, R::Finalizing),
    (R::Opening, RE::Expire, R::Finalizing),
    (R::Attempting, RE::Expire, R::Finalizing),
    (R::AwaitingScore, RE::Expire, R::Finalizing),
    (R::Judging, RE::Expire, R::Finalizing),
    (R::Finalizing, RE::Finish, R::Done),
    (R::Opening, RE::Pause, R::Paused),
    (R::Attempting, RE::Pause, R::Paused),
    (R::AwaitingScore, RE::Pause, R::Paused),
    (R::Judging, RE::Pause, R::Paused),
    (R::Finalizing, RE::Pause, R::Paused),
];

const ATTEMPT_TABLE: &[(AttemptStatus, AttemptEvent, AttemptStatus)] = &[
    (A::Pending, AE::Dispatch, A::AwaitingScore),
    (A::AwaitingScore, AE::Keep, A::Kept),
    (A::AwaitingScore, AE::Revert, A::Reverted),
    (A::Pending, AE::Flag, A::Flagged),
    (A::AwaitingScore, AE::Flag, A::Flagged),
    (A::AwaitingScore, AE::Timeout, A::TimedOut),
];

fn run_model(from: RunStatus, event: RunEvent) -> Option<RunStatus> {
    RUN_TABLE
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
}

fn attempt_model(from: AttemptStatus, event: AttemptEvent) -> Option<AttemptStatus> {
    ATTEMPT_TABLE
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
}

#[test]
fn every_run_pair_agrees_with_the_table() {
    for from in RunStatus::ALL {
        for event in RunEvent::ALL {
            let got = run::step(from, event);
            assert_eq!(
                got.ok().map(|s| s.to),
                run_model(from, event),
                "{from} {event}"
            );
            if let Ok(s) = got {
                assert_eq!((s.from, s.event), (from, event));
                assert_eq!(s.audit_action(), event.audit_action());
            }
        }
    }
}

#[test]
fn every_attempt_pair_agrees_with_the_table() {
    for from in AttemptStatus::ALL {
        for event in AttemptEvent::ALL {
            let got = attempt::step(from, event);
            assert_eq!(
                got.ok().map(|s| s.to),
                attempt_model(from, event),
                "{from} {event}"
            );
        }
    }
}

#[test]
fn statuses_round_trip_and_audit_actions_are_distinct() {
    for s in RunStatus::ALL {
        assert_eq!(RunStatus::parse(s.as_str()), Some(s));
    }
    for s in AttemptStatus::ALL {
        assert_eq!(AttemptStatus::parse(s.as_str()), Some(s));
    }
    assert_eq!(RunStatus::parse("Done"), None);
    assert_eq!(AttemptStatus::parse("timed_out"), None);
    let mut actions: Vec<&str> = RunEvent::ALL.iter().map(|e| e.audit_action()).collect();
    actions.extend(AttemptEvent::ALL.iter().map(|e| e.audit_action()));
    let n = actions.len();
    actions.sort_unstable();
    actions.dedup();
    assert_eq!(actions.len(), n);
}

#[test]
fn refusals_name_the_event_and_the_status() {
    let err = run::step(R::Done, RE::Pause).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a run cannot take `pause` while it is done"
    );
    let err = attempt::step(A::Pending, AE::Keep).unwrap_err();
    assert_eq!(
        err.to_string(),
        "an attempt cannot take `keep` while it is pending"
    );
}

fn run_event() -> impl Strategy<Value = RunEvent> {
    prop::sample::select(RunEvent::ALL.to_vec())
}

fn attempt_event() -> impl Strategy<Value = AttemptEvent> {
    prop::sample::select(AttemptEvent::ALL.to_vec())
}

proptest! {
    #[test]
    fn run_sequences_only_take_legal_steps_and_terminals_absorb(
        events in prop::collection::vec(run_event(), 0..64)
    ) {
        let mut status = R::Opening;
        for event in events {
            let was_terminal = status.is_terminal();
            match run::step(status, event) {
                Ok(s) => {
                    prop_assert!(!was_terminal, "{status} took {event}");
                    prop_assert_eq!(run_model(status, event), Some(s.to));
                    status = s.to;
                }
                Err(e) => {
                    prop_assert_eq!(run_model(status, event), None);
                    prop_assert_eq!((e.from, e.event), (status, event));
                }
            }
        }
    }

    #[test]
    fn attempt_sequences_only_take_legal_steps_and_verdicts_absorb(
        events in prop::collection::vec(attempt_event(), 0..32)
    ) {
        let mut status = A::Pending;
        let mut changes = 0;
        for event in events {
            match attempt::step(status, event) {
                Ok(s) => {
                    prop_assert!(!status.is_terminal());
                    prop_assert_eq!(attempt_model(status, event), Some(s.to));
                    status = s.to;
                    changes += 1;
                }
                Err(_) => prop_assert_eq!(attempt_model(status, event), None),
            }
        }
        // pending → awaiting-score → verdict is the longest path.
        prop_assert!(changes <= 2);
    }
}

/// What the outside world does to a run in flight.
#[derive(Clone, Copy, Debug)]
enum World {
    /// The attempt's score comes back with this verdict.
    Verdict(AttemptEvent),
    /// The monitor flags the attempt before dispatch.
    FlagEarly,
    /// The six-hour cap passes.
    Expire,
    /// The namespace is paused.
    Pause,
}

fn world() -> impl Strategy<Value = World> {
    prop_oneof![
        8 => prop::sample::select(vec![AE::Keep, AE::Revert, AE::Flag, AE::Timeout])
            .prop_map(World::Verdict),
        1 => Just(World::FlagEarly),
        1 => Just(World::Expire),
        1 => Just(World::Pause),
    ]
}

fn go(status: &mut RunStatus, event: RunEvent) -> Result<(), TestCaseError> {
    let s = run::step(*status, event)
        .map_err(|e| TestCaseError::fail(format!("illegal run step: {e}")))?;
    *status = s.to;
    Ok(())
}

proptest! {
    /// A driver that follows the machines and the tally never takes an illegal step, never
    /// makes an 11th attempt or a 6th consecutive revert, and always ends terminal.
    #[test]
    fn a_driven_run_keeps_its_limits(worlds in prop::collection::vec(world(), 0..40)) {
        let run_id = run_id("capsid", Timestamp::from_millis(1_764_558_000_000)).unwrap();
        let mut status = R::Opening;
        let mut tally = RunTally::default();
        let mut ids = Vec::new();
        let mut stopped = None;
        go(&mut status, RE::Begin)?;
        let mut worlds = worlds.into_iter();
        while status == R::Attempting {
            let n = match tally.add_attempt() {
                Ok(n) => n,
                Err(AddRefusal::Stopped(reason)) => {
                    stopped = Some(reason);
                    go(&mut status, RE::Conclude)?;
                    break;
                }
                Err(AddRefusal::Outstanding) => {
                    return Err(TestCaseError::fail("attempt outstanding while attempting"));
                }
            };
            let id = attempt_id(&run_id, n).unwrap();
            prop_assert_eq!(attempt_number(&run_id, &id), Some(n));
            ids.push(id);
            let mut a = A::Pending;
            let Some(w) = worlds.next() else {
                go(&mut status, RE::Expire)?;
                break;
            };
            match w {
                World::Expire => { go(&mut status, RE::Expire)?; break; }
                World::Pause => { go(&mut status, RE::Pause)?; break; }
                World::FlagEarly => {
                    a = attempt::step(a, AE::Flag).unwrap().to;
                    // Flagged before dispatch: the run goes straight to judging.
                    go(&mut status, RE::Flag)?;
                }
                World::Verdict(v) => {
                    a = attempt::step(a, AE::Dispatch).unwrap().to;
                    go(&mut status, RE::Dispatch)?;
                    a = attempt::step(a, v).unwrap().to;
                    let ev = if v == AE::Timeout { RE::ScoreTimeout } else { RE::Score };
                    go(&mut status, ev)?;
                }
            }
            prop_assert!(a.is_terminal());
            tally.record(a).unwrap();
            prop_assert!(tally.attempts <= MAX_ATTEMPTS_PER_RUN);
            prop_assert!(tally.consecutive_reverts <= MAX_CONSECUTIVE_REVERTS);
            prop_assert_eq!(tally.kept + tally.reverts, tally.attempts);
            go(&mut status, tally.after_judging())?;
            if status == R::Finalizing {
                stopped = tally.stop_reason();
            }
        }
        if status == R::Finalizing {
            go(&mut status, RE::Finish)?;
        }
        prop_assert!(status.is_terminal(), "ended {status}");
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), ids.len());
        if let Some(reason) = stopped {
            prop_assert_eq!(reason.restores_best(), tally.consecutive_reverts == MAX_CONSECUTIVE_REVERTS);
            prop_assert!(
                tally.attempts == MAX_ATTEMPTS_PER_RUN
                    || tally.consecutive_reverts == MAX_CONSECUTIVE_REVERTS
            );
        }
    }

    #[test]
    fn the_revert_ratio_matches_a_float_model(
        runs in prop::collection::vec((0u32..=10, 0u32..=10), 0..6)
    ) {
        let tallies: Vec<RunTally> = runs
            .iter()
            .map(|&(kept, reverts)| RunTally {
                attempts: kept + reverts,
                kept,
                reverts,
                consecutive_reverts: 0,
            })
            .collect();
        let expected = (tallies.len() >= 3).then(|| {
            let (k, r) = tallies[..3].iter().fold((0, 0), |(k, r), t| (k + t.kept, r + t.reverts));
            (k + r > 0 && f64::from(r) / f64::from(k + r) > 0.6 + 1e-12).then_some((r, k + r))
        }).flatten();
        let got = revert_drift(&tallies).map(|d| match d {
            DriftReason::RevertRatio { reverts, attempts } => (reverts, attempts),
            DriftReason::AnchorRegressed(_) => (u32::MAX, u32::MAX),
        });
        prop_assert_eq!(got, expected);
    }
}

#[test]
fn five_consecutive_reverts_stop_and_restore_even_with_attempts_left() {
    let mut t = RunTally::default();
    t.add_attempt().unwrap();
    t.record(A::Kept).unwrap();
    for verdict in [A::Reverted, A::Flagged, A::TimedOut, A::Reverted] {
        t.add_attempt().unwrap();
        t.record(verdict).unwrap();
        assert_eq!(t.after_judging(), RE::Continue);
    }
    t.add_attempt().unwrap();
    t.record(A::Reverted).unwrap();
    assert_eq!(t.stop_reason(), Some(StopReason::ConsecutiveReverts));
    assert!(StopReason::ConsecutiveReverts.restores_best());
    assert_eq!(t.after_judging(), RE::Conclude);
    assert_eq!(
        t.add_attempt(),
        Err(AddRefusal::Stopped(StopReason::ConsecutiveReverts))
    );
    assert_eq!(t.attempts, 6);
}

#[test]
fn ten_attempts_stop_without_restoring() {
    let mut t = RunTally::default();
    for i in 0..MAX_ATTEMPTS_PER_RUN {
        assert_eq!(t.add_attempt(), Ok(i + 1));
        t.record(if i % 2 == 0 { A::Reverted } else { A::Kept })
            .unwrap();
    }
    assert_eq!(t.stop_reason(), Some(StopReason::AttemptLimit));
    assert!(!StopReason::AttemptLimit.restores_best());
    assert!(t.add_attempt().is_err());
    assert_eq!(t.attempts, 10);
}

#[test]
fn the_tally_refuses_what_would_break_it() {
    let mut t = RunTally::default();
    assert_eq!(t.record(A::Kept), Err(RecordRefusal::NothingOutstanding));
    t.add_attempt().unwrap();
    assert_eq!(t.add_attempt(), Err(AddRefusal::Outstanding));
    assert_eq!(
        t.record(A::AwaitingScore),
        Err(RecordRefusal::NotAVerdict(A::AwaitingScore))
    );
    assert_eq!(
        t,
        RunTally {
            attempts: 1,
            ..RunTally::default()
        }
    );
}

#[test]
fn the_deadlines_are_strictly_after_their_spans() {
    let at = Timestamp::from_millis(1_764_558_000_000);
    assert!(!score_overdue(at, at.plus_millis(20 * MINUTE_MS)));
    assert!(score_overdue(at, at.plus_millis(20 * MINUTE_MS + 1)));
    assert!(!score_overdue(at, at.plus_millis(-MINUTE_MS)));
    assert!(!run_expired(at, at.plus_millis(RUN_CAP_MS)));
    assert!(run_expired(at, at.plus_millis(RUN_CAP_MS + 1)));
    assert_eq!(SCORE_DEADLINE_MS, 1_200_000);
    assert_eq!(RUN_CAP_MS, 21_600_000);
}

#[test]
fn ids_and_branches_follow_the_reference() {
    let at = Timestamp::parse("2026-12-01T03:00:07.123Z").unwrap();
    let run = run_id("atlas", at).unwrap();
    assert_eq!(run, "atlas-2026-12-01T03-00-07");
    let attempt = attempt_id(&run, 3).unwrap();
    assert_eq!(attempt, "atlas-2026-12-01T03-00-07-a03");
    assert_eq!(attempt_id(&run, 10).unwrap(), format!("{run}-a10"));
    assert_eq!(
        attempt_branch(&attempt),
        "improve/atlas-2026-12-01T03-00-07-a03"
    );
    assert_eq!(
        archive_path(&run, &attempt),
        "improve/archive/atlas-2026-12-01T03-00-07/atlas-2026-12-01T03-00-07-a03.md"
    );
    assert_eq!(attempt_id(&run, 0), Err(IdError::AttemptNumber(0)));
    assert_eq!(attempt_id(&run, 11), Err(IdError::AttemptNumber(11)));
    assert!(matches!(run_id("Bad NS", at), Err(IdError::Namespace(_))));
    assert_eq!(attempt_number(&run, &format!("{run}-a00")), None);
    assert_eq!(attempt_number(&run, &format!("{run}-a1")), None);
    assert_eq!(attempt_number("other", &attempt), None);
}

fn metrics(pairs: &[(&str, f64)]) -> MetricMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Some(*v)))
        .collect()
}

#[test]
fn the_drift_gate_trips_on_ratio_or_regression() {
    let run = |kept, reverts| RunTally {
        attempts: kept + reverts,
        kept,
        reverts,
        consecutive_reverts: 0,
    };
    // Two runs are not a window yet.
    assert_eq!(revert_drift(&[run(0, 5), run(0, 5)]), None);
    // Exactly 0.6 does not trip; just over does. Only the newest three count.
    assert_eq!(
        revert_drift(&[run(2, 3), run(2, 3), run(2, 3), run(0, 9)]),
        None
    );
    assert_eq!(
        revert_drift(&[run(2, 3), run(2, 3), run(1, 3)]),
        Some(DriftReason::RevertRatio {
            reverts: 9,
            attempts: 14
        })
    );
    assert_eq!(revert_drift(&[run(0, 0), run(0, 0), run(0, 0)]), None);

    let anchors = vec![
        AnchorSpec {
            metric: "tests_pass".into(),
            rule: AnchorRule::Min(0.9),
        },
        AnchorSpec {
            metric: "bundle_kb".into(),
            rule: AnchorRule::Max(500.0),
        },
    ];
    let best = metrics(&[("tests_pass", 0.99), ("bundle_kb", 400.0)]);
    let same = best.clone();
    assert_eq!(drift_gate(&[], &anchors, &best, &same), None);
    let worse = metrics(&[("tests_pass", 0.99), ("bundle_kb", 401.0)]);
    let reason = drift_gate(&[], &anchors, &best, &worse).unwrap();
    assert!(matches!(&reason, DriftReason::AnchorRegressed(m) if m.len() == 1));
    assert!(reason.to_string().contains("bundle_kb"), "{reason}");
}
