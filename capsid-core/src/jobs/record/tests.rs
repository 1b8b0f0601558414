//! Tests of agent records: rates only from verified fields, NULL denominators, medians,
//! driver-only attempt columns and the min-record bar.

use super::*;
use crate::jobs::outcome::ResultKind;
use crate::time::Timestamp;
use proptest::prelude::*;

const ME: &str = "agent:capsid-driver";

fn row(
    agent: &str,
    opened: Option<i64>,
    merged: Option<i64>,
    ci: Option<i64>,
    duration: Option<i64>,
    verified: &str,
) -> OutcomeRow {
    OutcomeRow {
        job_id: "job_x".into(),
        agent: agent.into(),
        namespace: "capsid".into(),
        prs_opened: opened,
        prs_merged: merged,
        commits: None,
        files_changed: None,
        tests_added: None,
        ci_green: ci,
        blocked_count: 1,
        resumed_count: 2,
        duration_minutes: duration,
        result_kind: ResultKind::Pr,
        verified: verified.into(),
        recorded_at: Timestamp::parse("2026-09-12T00:00:00.000Z").expect("instant"),
        reviewed_by: None,
        skill_ids_offered: None,
        skill_ids_used: None,
        skill_verdict: None,
        cost_usd: None,
        turns: None,
        duration_ms: None,
    }
}

fn verified(prs: bool, ci: bool) -> String {
    VerifiedFields {
        prs_opened: prs,
        prs_merged: prs,
        commits: prs,
        files_changed: prs,
        ci_green: ci,
    }
    .to_json()
}

#[test]
fn rates_read_only_verified_fields() {
    let outcomes = [
        row(
            ME,
            Some(2),
            Some(1),
            Some(1),
            Some(30),
            &verified(true, true),
        ),
        row(
            ME,
            Some(5),
            Some(5),
            Some(0),
            Some(10),
            &verified(false, false),
        ),
        row(ME, Some(1), Some(0), Some(0), None, &verified(true, true)),
        row(
            ME,
            Some(4),
            Some(4),
            None,
            Some(50),
            r#"{"prs_opened":true}"#,
        ),
        row(ME, Some(9), Some(9), Some(1), Some(20), "corrupt"),
        row(
            "agent:other",
            Some(7),
            Some(7),
            Some(1),
            Some(1),
            &verified(true, true),
        ),
    ];
    let record = agent_record(ME, &outcomes, &[], None);
    assert_eq!((record.prs_opened, record.prs_merged), (7, 1));
    assert_eq!(record.pr_merge_rate, Some(0.143));
    assert_eq!((record.ci_checked, record.ci_green_rate), (2, Some(0.5)));
    assert_eq!((record.gates_hit, record.resumed), (5, 10));
    assert_eq!(record.median_duration_minutes, Some(25));
    assert_eq!(
        (record.attempts_kept, record.attempts_reverted),
        (None, None)
    );
}

#[test]
fn no_denominator_is_null_not_zero() {
    let record = agent_record(
        ME,
        &[row(
            ME,
            Some(3),
            Some(3),
            Some(1),
            None,
            &verified(false, false),
        )],
        &[],
        None,
    );
    assert_eq!((record.prs_opened, record.pr_merge_rate), (0, None));
    assert_eq!((record.ci_checked, record.ci_green_rate), (0, None));
    assert_eq!(record.median_duration_minutes, None);
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(json["pr_merge_rate"], serde_json::Value::Null);
    assert_eq!(json["attempts_kept"], serde_json::Value::Null);
    assert_eq!(json["actor"], ME);
}

#[test]
fn job_counts_come_from_the_jobs_table() {
    let jobs = [
        ClaimedJobCount {
            claimed_by: ME.into(),
            status: JobStatus::Done,
            n: 4,
        },
        ClaimedJobCount {
            claimed_by: ME.into(),
            status: JobStatus::Failed,
            n: 1,
        },
        ClaimedJobCount {
            claimed_by: ME.into(),
            status: JobStatus::Blocked,
            n: 2,
        },
        ClaimedJobCount {
            claimed_by: ME.into(),
            status: JobStatus::Claimed,
            n: 1,
        },
        ClaimedJobCount {
            claimed_by: "agent:other".into(),
            status: JobStatus::Done,
            n: 9,
        },
    ];
    let record = agent_record(ME, &[], &jobs, None);
    assert_eq!(
        (record.jobs_done, record.jobs_failed, record.jobs_blocked),
        (4, 1, 2)
    );
}

#[test]
fn attempts_only_for_drivers_over_their_namespaces() {
    let runs = [
        NamespaceRuns {
            namespace: "capsid".into(),
            kept: 3,
            reverts: 1,
        },
        NamespaceRuns {
            namespace: "orchard".into(),
            kept: 2,
            reverts: 5,
        },
    ];
    assert_eq!(
        attempt_sums(&runs, &Axis::Only(vec!["capsid".into()])),
        AttemptSums {
            kept: 3,
            reverted: 1
        }
    );
    assert_eq!(
        attempt_sums(&runs, &Axis::All),
        AttemptSums {
            kept: 5,
            reverted: 6
        }
    );
    assert_eq!(
        attempt_sums(&runs, &Axis::Only(vec![])),
        AttemptSums::default()
    );
    let record = agent_record(ME, &[], &[], Some(attempt_sums(&runs, &Axis::All)));
    assert_eq!(
        (record.attempts_kept, record.attempts_reverted),
        (Some(5), Some(6))
    );
}

#[test]
fn medians() {
    let cases: &[(&[i64], Option<i64>)] = &[
        (&[], None),
        (&[7], Some(7)),
        (&[1, 2], Some(2)),
        (&[1, 4], Some(3)),
        (&[10, 1, 5], Some(5)),
        (&[4, 1, 3, 2], Some(3)),
        (&[0, 0, 1, 2], Some(1)),
    ];
    for (values, want) in cases {
        assert_eq!(median(values.to_vec()), *want, "{values:?}");
    }
}

#[test]
fn the_min_record_bar_names_both_numbers() {
    let mut record = agent_record(ME, &[], &[], None);
    record.prs_merged = 1;
    assert_eq!(min_record_refusal(1, &record), None);
    assert_eq!(min_record_refusal(0, &record), None);
    let refusal = min_record_refusal(3, &record).unwrap();
    assert_eq!(
        refusal,
        "this job asks for a driver with at least 3 merged pull requests on its record, and this one has 1 verified."
    );
    record.prs_merged = 0;
    assert!(
        min_record_refusal(1, &record)
            .unwrap()
            .contains("at least 1 merged pull request on")
    );
}

/// Model of a median: the value with at least half the values on each side, by counting.
fn model_median(values: &[i64]) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let kth = |k: usize| {
        *values
            .iter()
            .find(|v| {
                values.iter().filter(|w| w < v).count() <= k
                    && values.iter().filter(|w| w <= v).count() > k
            })
            .unwrap()
    };
    if n % 2 == 1 {
        Some(kth(n / 2))
    } else {
        let (a, b) = (kth(n / 2 - 1) as f64, kth(n / 2) as f64);
        Some(((a + b) / 2.0 + 0.5).floor() as i64)
    }
}

fn any_row() -> impl Strategy<Value = OutcomeRow> {
    (
        0i64..20,
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(0i64..=1),
        proptest::option::of(0i64..10_000),
        any::<bool>(),
    )
        .prop_flat_map(|(opened, prs_ok, ci_ok, ci, duration, other)| {
            (0..=opened).prop_map(move |merged| {
                let agent = if other { "agent:other" } else { ME };
                row(
                    agent,
                    Some(opened),
                    Some(merged),
                    ci,
                    duration,
                    &verified(prs_ok, ci_ok),
                )
            })
        })
}

proptest! {
    #[test]
    fn rates_are_null_exactly_without_a_denominator(rows in proptest::collection::vec(any_row(), 0..30)) {
        let record = agent_record(ME, &rows, &[], None);
        prop_assert_eq!(record.pr_merge_rate.is_none(), record.prs_opened == 0);
        prop_assert_eq!(record.ci_green_rate.is_none(), record.ci_checked == 0);
        for rate in [record.pr_merge_rate, record.ci_green_rate].into_iter().flatten() {
            prop_assert!((0.0..=1.0).contains(&rate), "{}", rate);
            prop_assert_eq!((rate * 1000.0).round() / 1000.0, rate);
        }
        prop_assert!(record.prs_merged <= record.prs_opened);
    }

    #[test]
    fn median_matches_a_counting_model(values in proptest::collection::vec(0i64..100_000, 0..25)) {
        prop_assert_eq!(median(values.clone()), model_median(&values));
    }
}
