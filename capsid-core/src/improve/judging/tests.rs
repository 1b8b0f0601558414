//! Unit tests of judging one report: the verdict, the steps it asks of the store, and the
//! refusals that change nothing.

use super::*;
use crate::improve::machine::RunTally;
use crate::improve::parse_scores;
use crate::improve::report::HoldoutCounts;

fn at(s: &str) -> Timestamp {
    Timestamp::parse(s).expect("instant")
}

fn report(latency: f64, tests: f64) -> ScoreReport {
    ScoreReport {
        namespace: "capsid".into(),
        run_id: "capsid-2026-12-01T03-00-00".into(),
        attempt_id: "capsid-2026-12-01T03-00-00-a01".into(),
        head_sha: "abc".into(),
        jti: "j1".into(),
        anchors: [("tests_pass".to_owned(), Some(tests))].into(),
        secondary: [("latency_ms".to_owned(), Some(latency))].into(),
        holdout: HoldoutCounts {
            total: 10,
            passed: 9,
        },
        ci_minutes: 3.0,
    }
}

fn rows(run_status: RunStatus, attempt_status: AttemptStatus) -> (RunRow, AttemptRow) {
    let now = at("2026-12-01T03:00:00Z");
    let run = RunRow {
        id: "capsid-2026-12-01T03-00-00".into(),
        namespace: "capsid".into(),
        mode: "api".into(),
        started: now,
        finished: None,
        status: run_status,
        tally: RunTally {
            attempts: 1,
            ..RunTally::default()
        },
        cost_usd: 0.0,
        ci_minutes: 0.0,
        current_attempt: Some("capsid-2026-12-01T03-00-00-a01".into()),
        base_sha: None,
        pr_url: None,
        note: None,
        condition: "full".into(),
        advanced_at: now,
    };
    let attempt = AttemptRow {
        id: "capsid-2026-12-01T03-00-00-a01".into(),
        namespace: "capsid".into(),
        run_id: run.id.clone(),
        status: attempt_status,
        change_summary: None,
        diff_ref: None,
        branch: None,
        head_sha: None,
        base_sha: None,
        lineage_parent: None,
        skill_id: None,
        score_before: None,
        score_after: None,
        reason: None,
        anchors_json: None,
        secondary_json: None,
        flag_reason: None,
        dispatched_at: Some(now),
        ts: now,
    };
    (run, attempt)
}

fn doc() -> ScoresDoc {
    parse_scores(
        "## Anchors\n- tests_pass: required\n- holdout_pass_rate: min 0.5\n\n## Secondary\n- latency_ms: minimize weight 1\n",
    )
}

fn best() -> BestRecord {
    BestRecord {
        secondary: [("latency_ms".to_owned(), Some(100.0))].into(),
        ..BestRecord::default()
    }
}

fn judged(r: &ScoreReport, pass_rate: f64) -> Judged {
    let (run, attempt) = rows(RunStatus::AwaitingScore, AttemptStatus::AwaitingScore);
    check_waiting(r, Some(&attempt), Some(&run), at("2026-12-01T03:10:00Z")).expect("waiting");
    let (doc, best, baseline) = (doc(), best(), MetricMap::new());
    judge_report(
        Case {
            report: r,
            pass_rate,
            doc: &doc,
            best: Some(&best),
            baseline: &baseline,
            attempt: &attempt,
            run: &run,
        },
        at("2026-12-01T03:10:00Z"),
    )
    .expect("judged")
}

#[test]
fn a_better_attempt_is_kept_and_becomes_the_best_record() {
    let j = judged(&report(80.0, 1.0), 0.9);
    assert_eq!(j.verdict, AttemptStatus::Kept);
    assert_eq!(j.run_status, RunStatus::Attempting);
    let run = j.advance.run.expect("a run step");
    assert_eq!(
        (run.from, run.to),
        (RunStatus::AwaitingScore, RunStatus::Attempting)
    );
    assert_eq!(run.tally.map(|t| t.kept), Some(1));
    assert_eq!(run.tally_before.map(|t| t.kept), Some(0));
    let attempt = j.advance.attempt.expect("an attempt step");
    assert_eq!(attempt.step.to, AttemptStatus::Kept);
    let (key, value) = j.advance.setting.expect("a best record");
    assert_eq!(key, "improve:best:capsid");
    let record: BestRecord = serde_json::from_str(&value).expect("a record");
    assert_eq!(record.sha, "abc");
    assert_eq!(record.score, 0.9);
    let actions: Vec<&str> = j.advance.audits.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "improve-attempt-kept",
            "improve-run-scored",
            "improve-run-continued"
        ]
    );
    assert!(
        j.advance
            .scores
            .iter()
            .any(|s| s.metric == HOLDOUT_METRIC && s.value == Some(0.9))
    );
}

#[test]
fn a_worse_attempt_or_a_failed_anchor_is_reverted_without_a_best_record() {
    let worse = judged(&report(120.0, 1.0), 0.9);
    assert_eq!(worse.verdict, AttemptStatus::Reverted);
    assert!(worse.advance.setting.is_none());
    assert!(worse.reason.is_some());
    let low_holdout = judged(&report(80.0, 1.0), 0.4);
    assert_eq!(low_holdout.verdict, AttemptStatus::Reverted);
    assert!(
        low_holdout
            .reason
            .as_deref()
            .unwrap_or("")
            .contains(HOLDOUT_METRIC),
        "{:?}",
        low_holdout.reason
    );
    let failing = judged(&report(80.0, 0.0), 0.9);
    assert_eq!(failing.verdict, AttemptStatus::Reverted);
}

#[test]
fn the_fifth_revert_in_a_row_concludes_the_run() {
    let (mut run, attempt) = rows(RunStatus::AwaitingScore, AttemptStatus::AwaitingScore);
    run.tally = RunTally {
        attempts: 5,
        kept: 0,
        reverts: 4,
        consecutive_reverts: 4,
    };
    let (doc, best, baseline) = (doc(), best(), MetricMap::new());
    let r = report(120.0, 1.0);
    let j = judge_report(
        Case {
            report: &r,
            pass_rate: 0.9,
            doc: &doc,
            best: Some(&best),
            baseline: &baseline,
            attempt: &attempt,
            run: &run,
        },
        at("2026-12-01T03:10:00Z"),
    )
    .expect("judged");
    assert_eq!(j.run_status, RunStatus::Finalizing);
    assert!(matches!(j.advance.run.expect("run").note, Change::Set(_)));
}

#[test]
fn reports_for_attempts_not_waiting_change_nothing() {
    let r = report(80.0, 1.0);
    for (rs, at_status) in [
        (RunStatus::AwaitingScore, AttemptStatus::Kept),
        (RunStatus::AwaitingScore, AttemptStatus::Pending),
        (RunStatus::Attempting, AttemptStatus::AwaitingScore),
    ] {
        let (run, attempt) = rows(rs, at_status);
        assert!(matches!(
            check_waiting(&r, Some(&attempt), Some(&run), at("2026-12-01T03:10:00Z")),
            Err(JudgeRefusal::NotAwaiting(_))
        ));
    }
    let (run, mut attempt) = rows(RunStatus::AwaitingScore, AttemptStatus::AwaitingScore);
    assert!(matches!(
        check_waiting(&r, None, Some(&run), at("2026-12-01T03:10:00Z")),
        Err(JudgeRefusal::NoAttempt(..))
    ));
    attempt.namespace = "orchard".into();
    assert!(matches!(
        check_waiting(&r, Some(&attempt), Some(&run), at("2026-12-01T03:10:00Z")),
        Err(JudgeRefusal::NoAttempt(..))
    ));
    attempt.namespace = "capsid".into();
    attempt.head_sha = Some("def".into());
    assert!(matches!(
        check_waiting(&r, Some(&attempt), Some(&run), at("2026-12-01T03:10:00Z")),
        Err(JudgeRefusal::NotAwaiting(_))
    ));
    attempt.head_sha = None;
    assert!(
        check_waiting(&r, Some(&attempt), Some(&run), at("2026-12-01T03:20:00Z")).is_ok(),
        "twenty minutes after dispatch is still in time"
    );
    assert!(matches!(
        check_waiting(&r, Some(&attempt), Some(&run), at("2026-12-01T03:20:00.001Z")),
        Err(JudgeRefusal::NotAwaiting(m)) if m.contains("times out")
    ));
}
