//! Keep/revert tests: the anchor table, the secondary arithmetic, and properties
//! (antisymmetry for one metric, ties revert, the clamp).

use super::*;
use proptest::prelude::*;

fn metrics(pairs: &[(&str, Option<f64>)]) -> MetricMap {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

fn anchor(metric: &str, rule: AnchorRule) -> AnchorSpec {
    AnchorSpec {
        metric: metric.into(),
        rule,
    }
}

fn secondary(metric: &str, direction: Direction, weight: f64, stub: bool) -> SecondarySpec {
    SecondarySpec {
        metric: metric.into(),
        direction,
        weight,
        stub,
    }
}

#[test]
fn anchor_rules_table() {
    let table: [(AnchorRule, Option<f64>, bool); 13] = [
        (AnchorRule::Required, Some(1.0), true),
        (AnchorRule::Required, Some(0.0), false),
        (AnchorRule::Required, Some(-1.0), false),
        (AnchorRule::Required, None, false),
        (AnchorRule::Required, Some(f64::NAN), false),
        (AnchorRule::Min(0.95), Some(0.95), true),
        (AnchorRule::Min(0.95), Some(0.949), false),
        (AnchorRule::Min(0.95), Some(1.0), true),
        (AnchorRule::Min(0.95), None, false),
        (AnchorRule::Max(512.0), Some(512.0), true),
        (AnchorRule::Max(512.0), Some(512.5), false),
        (AnchorRule::Max(512.0), Some(-3.0), true),
        (AnchorRule::Max(512.0), None, false),
    ];
    for (rule, value, passes) in table {
        let failures = anchor_failures(&[anchor("m", rule)], &metrics(&[("m", value)]));
        assert_eq!(
            failures.is_empty(),
            passes,
            "{rule} with {value:?}: {failures:?}"
        );
    }
    let absent = anchor_failures(&[anchor("m", AnchorRule::Required)], &MetricMap::new());
    assert_eq!(
        absent,
        vec![AnchorFailure::NotReported { metric: "m".into() }]
    );
    assert!(absent[0].to_string().contains("anchor m was not reported"));
}

#[test]
fn a_failing_anchor_reverts_whatever_the_secondary_score() {
    let anchors = [anchor("build", AnchorRule::Required)];
    let sec = [secondary("coverage", Direction::Maximize, 1.0, false)];
    let before = metrics(&[("coverage", Some(10.0))]);
    let after = metrics(&[("build", Some(0.0)), ("coverage", Some(90.0))]);
    let judgement = judge(&anchors, &sec, &before, &after);
    assert!(matches!(
        judgement.verdict,
        Verdict::Revert(RevertReason::AnchorsFailed { .. })
    ));
    assert!(
        judgement.comparison.delta > 0.0,
        "the comparison is still reported"
    );
}

#[test]
fn secondary_arithmetic_is_relative_clamped_weighted_and_signed() {
    let sec = [
        secondary("coverage", Direction::Maximize, 2.0, false),
        secondary("lint_errors", Direction::Minimize, 1.0, false),
        secondary("bytes", Direction::Minimize, 3.0, false),
        secondary("wired_later", Direction::Maximize, 5.0, true),
        secondary("only_after", Direction::Maximize, 1.0, false),
        secondary("only_before", Direction::Maximize, 1.0, false),
        secondary("nowhere", Direction::Maximize, 1.0, false),
    ];
    let before = metrics(&[
        ("coverage", Some(50.0)),
        ("lint_errors", Some(0.0)),
        ("bytes", Some(100.0)),
        ("wired_later", Some(0.0)),
        ("only_before", Some(1.0)),
    ]);
    let after = metrics(&[
        ("coverage", Some(55.0)),
        ("lint_errors", Some(2.0)),
        ("bytes", Some(50.0)),
        ("wired_later", Some(100.0)),
        ("only_after", Some(3.0)),
        ("only_before", None),
    ]);
    let c = compare(&sec, &before, &after);
    let got: Vec<_> = c
        .details
        .iter()
        .map(|d| (d.contribution, d.excluded))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(2.0 * 0.1), None),
            (Some(-1.0), None),
            (Some(3.0 * 0.5), None),
            (None, Some(Exclusion::Stub)),
            (None, Some(Exclusion::NoBaseline)),
            (None, Some(Exclusion::NotReportedByAttempt)),
            (None, Some(Exclusion::NotReportedEitherSide)),
        ]
    );
    assert_eq!(c.compared, 3);
    assert!((c.delta - (0.2 - 1.0 + 1.5)).abs() < 1e-12, "{}", c.delta);
}

#[test]
fn nothing_comparable_reverts_even_with_anchors_holding() {
    let anchors = [anchor("build", AnchorRule::Required)];
    let sec = [
        secondary("a", Direction::Maximize, 1.0, true),
        secondary("b", Direction::Maximize, 1.0, false),
    ];
    let after = metrics(&[("build", Some(1.0)), ("a", Some(9.0))]);
    let judgement = judge(&anchors, &sec, &MetricMap::new(), &after);
    assert_eq!(
        judgement.verdict,
        Verdict::Revert(RevertReason::NothingComparable)
    );
}

#[test]
fn strict_improvement_keeps_and_a_tie_reverts() {
    let anchors = [anchor("build", AnchorRule::Required)];
    let sec = [secondary("coverage", Direction::Maximize, 1.0, false)];
    let before = metrics(&[("coverage", Some(50.0))]);
    let better = metrics(&[("build", Some(1.0)), ("coverage", Some(51.0))]);
    let same = metrics(&[("build", Some(1.0)), ("coverage", Some(50.0))]);
    assert_eq!(
        judge(&anchors, &sec, &before, &better).verdict,
        Verdict::Keep
    );
    let tie = judge(&anchors, &sec, &before, &same).verdict;
    assert!(
        matches!(
            tie,
            Verdict::Revert(RevertReason::NoImprovement { compared: 1, .. })
        ),
        "{tie:?}"
    );
}

#[test]
fn regressions_are_per_anchor_direction() {
    let anchors = [
        anchor("pass_rate", AnchorRule::Min(0.9)),
        anchor("bundle_kb", AnchorRule::Max(500.0)),
        anchor("build", AnchorRule::Required),
    ];
    let before = metrics(&[
        ("pass_rate", Some(0.99)),
        ("bundle_kb", Some(400.0)),
        ("build", Some(1.0)),
    ]);
    let after = metrics(&[
        ("pass_rate", Some(0.98)),
        ("bundle_kb", Some(410.0)),
        ("build", None),
    ]);
    assert_eq!(
        anchor_regressions(&anchors, &before, &after),
        vec![
            "pass_rate moved from 0.99 to 0.98".to_owned(),
            "bundle_kb moved from 400 to 410".to_owned()
        ]
    );
    assert!(anchor_regressions(&anchors, &after, &before).is_empty());
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::Maximize), Just(Direction::Minimize)]
}

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![-1e6..1e6f64, -2.0..2.0f64, Just(0.0), Just(1.0), Just(-1.0)]
}

proptest! {
    #[test]
    fn one_metric_keep_is_antisymmetric(d in direction(), w in 0.001..100.0f64, a in finite(), b in finite()) {
        let anchors = [anchor("build", AnchorRule::Required)];
        let sec = [secondary("m", d, w, false)];
        let pass = |v: f64| metrics(&[("build", Some(1.0)), ("m", Some(v))]);
        let forward = judge(&anchors, &sec, &pass(a), &pass(b)).verdict == Verdict::Keep;
        let backward = judge(&anchors, &sec, &pass(b), &pass(a)).verdict == Verdict::Keep;
        prop_assert!(!(forward && backward), "{a} <-> {b} kept both ways");
        if a == b {
            prop_assert!(!forward);
        }
        // With no rounding to zero, exactly one direction keeps.
        if (a - b).abs() > 1e-6 {
            prop_assert!(forward ^ backward, "{a} <-> {b}");
        }
    }

    #[test]
    fn a_tie_always_reverts(specs in prop::collection::vec((direction(), -10.0..10.0f64, any::<bool>()), 0..6),
                            values in prop::collection::vec(prop::option::of(finite()), 6)) {
        let sec: Vec<_> = specs.iter().enumerate()
            .map(|(i, (d, w, stub))| secondary(&format!("m{i}"), *d, *w, *stub)).collect();
        let mut same: MetricMap = values.iter().enumerate().map(|(i, v)| (format!("m{i}"), *v)).collect();
        same.insert("build".into(), Some(1.0));
        let judgement = judge(&[anchor("build", AnchorRule::Required)], &sec, &same, &same);
        prop_assert_ne!(judgement.verdict, Verdict::Keep);
        prop_assert_eq!(judgement.comparison.delta, 0.0);
    }

    #[test]
    fn contributions_stay_within_their_weight(d in direction(), w in -100.0..100.0f64,
                                              a in prop::num::f64::NORMAL, b in prop::num::f64::NORMAL) {
        let r = relative_change(d, a, b);
        prop_assert!((-1.0..=1.0).contains(&r), "{r}");
        let c = compare(&[secondary("m", d, w, false)], &metrics(&[("m", Some(a))]), &metrics(&[("m", Some(b))]));
        let contribution = c.details[0].contribution.unwrap_or(f64::NAN);
        prop_assert!(contribution.abs() <= w.abs(), "{contribution} exceeds weight {w}");
    }
}
