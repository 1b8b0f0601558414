//! Lifecycle tests: the transition table and properties against a simple model over
//! arbitrary evaluation sequences.

use super::*;
use proptest::prelude::*;

fn eval(version: i64, probe: &str, verdict: Verdict, minute: i64) -> Evaluation {
    let delta = match verdict {
        Verdict::Positive => 1.0,
        Verdict::Neutral => 0.0,
        Verdict::Negative => -1.0,
    };
    Evaluation {
        version,
        probe_set_version: probe.into(),
        delta,
        verdict,
        evaluated_at: Timestamp::from_millis(1_800_000_000_000 + minute * 60_000),
    }
}

use SkillStatus::*;
use Verdict::*;

#[test]
fn transition_table() {
    let table: Vec<(SkillStatus, Vec<Evaluation>, SkillStatus, &str)> = vec![
        (Candidate, vec![], Candidate, "0 evaluation(s)"),
        (
            Candidate,
            vec![eval(1, "p1", Positive, 1)],
            Candidate,
            "1 evaluation(s)",
        ),
        (
            Candidate,
            vec![eval(1, "p1", Positive, 1), eval(1, "p1", Positive, 2)],
            Live,
            "promoted",
        ),
        (
            Candidate,
            vec![
                eval(1, "p1", Positive, 1),
                eval(1, "p1", Negative, 2),
                eval(1, "p1", Positive, 3),
            ],
            Live,
            "promoted",
        ),
        (
            Candidate,
            vec![eval(1, "p1", Positive, 1), eval(1, "p1", Neutral, 2)],
            Candidate,
            "1 positive evaluation(s) of 2",
        ),
        (
            Candidate,
            vec![eval(0, "p1", Positive, 1), eval(0, "p1", Positive, 2)],
            Candidate,
            "version 1 has 0",
        ),
        (
            Candidate,
            vec![
                eval(1, "p1", Positive, 1),
                eval(1, "p1", Positive, 2),
                eval(1, "p2", Positive, 3),
            ],
            Candidate,
            "against probe set p2",
        ),
        (
            Candidate,
            vec![
                eval(1, "p2", Positive, 3),
                eval(1, "p1", Positive, 1),
                eval(1, "p2", Positive, 2),
            ],
            Live,
            "promoted",
        ),
        (
            Live,
            vec![eval(1, "p1", Neutral, 1), eval(1, "p1", Negative, 2)],
            Retired,
            "consecutive non-positive",
        ),
        (
            Live,
            vec![
                eval(1, "p1", Negative, 1),
                eval(1, "p1", Negative, 2),
                eval(1, "p1", Positive, 3),
            ],
            Live,
            "not 2 consecutive",
        ),
        (
            Live,
            vec![
                eval(1, "p1", Positive, 1),
                eval(1, "p1", Negative, 2),
                eval(1, "p1", Neutral, 3),
            ],
            Retired,
            "(negative, neutral)",
        ),
        (
            Live,
            vec![eval(1, "p1", Negative, 1), eval(1, "p1", Positive, 2)],
            Live,
            "not 2 consecutive",
        ),
        (
            Live,
            vec![
                eval(1, "p1", Neutral, 1),
                eval(1, "p1", Positive, 2),
                eval(1, "p1", Neutral, 3),
            ],
            Live,
            "not 2 consecutive",
        ),
        (
            Live,
            vec![
                eval(1, "p1", Negative, 3),
                eval(1, "p1", Positive, 2),
                eval(1, "p1", Negative, 1),
            ],
            Live,
            "not 2",
        ),
        (
            Retired,
            vec![eval(1, "p1", Positive, 1), eval(1, "p1", Positive, 2)],
            Retired,
            "stays retired",
        ),
    ];
    for (current, evals, want, cue) in table {
        let t = transition(current, 1, &evals);
        assert_eq!(t.next(current), want, "{current} {evals:?}: {t}");
        assert_eq!(next_status(current, 1, &evals), want);
        assert!(t.to_string().contains(cue), "{t} lacks {cue:?}");
    }
}

/// The rules as the reference states them, computed the long way round.
fn model(current: SkillStatus, version: i64, evals: &[Evaluation]) -> SkillStatus {
    if current == Retired {
        return Retired;
    }
    let mut rows: Vec<(Timestamp, usize, &Evaluation)> = evals
        .iter()
        .enumerate()
        .filter(|(_, e)| e.version == version)
        .map(|(i, e)| (e.evaluated_at, i, e))
        .collect();
    rows.sort_by_key(|a| (a.0, a.1));
    if rows.len() < 2 {
        return current;
    }
    let newest_probe = &rows[rows.len() - 1].2.probe_set_version;
    let evidence: Vec<Verdict> = rows
        .iter()
        .filter(|r| &r.2.probe_set_version == newest_probe)
        .map(|r| r.2.verdict)
        .collect();
    if evidence.len() < 2 {
        return current;
    }
    match current {
        Candidate if evidence.iter().filter(|v| **v == Positive).count() >= 2 => Live,
        Live if evidence[evidence.len() - 1] != Positive
            && evidence[evidence.len() - 2] != Positive =>
        {
            Retired
        }
        other => other,
    }
}

fn evaluations() -> impl Strategy<Value = Vec<Evaluation>> {
    let verdict = prop_oneof![Just(Positive), Just(Neutral), Just(Negative)];
    // Few versions and a dominant probe set, so long runs of comparable evidence are common.
    let probe = prop_oneof![4 => Just("p1"), 1 => Just("p2")];
    prop::collection::vec((1i64..3, probe, verdict, 0i64..20), 0..16).prop_map(|rows| {
        rows.into_iter()
            .map(|(v, p, d, m)| eval(v, p, d, m))
            .collect()
    })
}

fn status() -> impl Strategy<Value = SkillStatus> {
    prop_oneof![Just(Candidate), Just(Live), Just(Retired)]
}

proptest! {
    #[test]
    fn lifecycle_matches_the_model(current in status(), version in 1i64..3, evals in evaluations()) {
        prop_assert_eq!(next_status(current, version, &evals), model(current, version, &evals));
    }

    #[test]
    fn retired_never_changes(version in 0i64..5, evals in evaluations()) {
        prop_assert_eq!(next_status(Retired, version, &evals), Retired);
    }

    #[test]
    fn a_version_bump_resets_evidence(current in status(), version in 1i64..4, evals in evaluations(),
                                      later in evaluations()) {
        // Nothing evaluated at the bumped version: no change, however strong the old evidence.
        prop_assert_eq!(next_status(current, version + 10, &evals), current);
        // Rows at other versions never move a status at this one.
        let at_version: Vec<Evaluation> = evals.iter().filter(|e| e.version == version).cloned().collect();
        let mut mixed = at_version.clone();
        mixed.extend(later.into_iter().map(|mut e| { e.version = version + 10; e }));
        prop_assert_eq!(next_status(current, version, &mixed), next_status(current, version, &at_version));
    }

    #[test]
    fn each_step_moves_forward_only(current in status(), version in 1i64..4, evals in evaluations()) {
        let next = next_status(current, version, &evals);
        let allowed = match current {
            Candidate => [Candidate, Live].contains(&next),
            Live => [Live, Retired].contains(&next),
            Retired => next == Retired,
        };
        prop_assert!(allowed, "{} -> {}", current, next);
    }
}
