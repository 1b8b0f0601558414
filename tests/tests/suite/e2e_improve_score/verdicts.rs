//! Accepted reports: a kept and a reverted verdict moving the attempt and its run, a report
//! for an attempt no longer waiting, and the reference's test vector.

use capsid_core::improve::keys::best_key;
use capsid_core::improve::machine::{AttemptStatus, RunStatus};
use capsid_core::ports::AuditFilter;
use serde_json::Value;

use super::{
    Env, HEAD, TS, VECTOR_BODY, VECTOR_SIG, attempt_status, description, post_as, report, signed,
};

pub(crate) async fn a_better_report_keeps_the_attempt(env: &Env) {
    let (status, answer) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "keep", 400.0, 40, 36),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["verdict"], "kept", "{answer}");
    assert_eq!(answer["holdout_pass_rate"], 0.9);
    assert_eq!(answer["run_status"], "attempting");
    let row = env
        .s
        .store
        .attempt(&env.attempt)
        .await
        .expect("a")
        .expect("row");
    assert_eq!(row.status, AttemptStatus::Kept);
    assert!(row.score_after.is_some_and(|d| d > 0.0), "{row:?}");
    let run = env.s.store.run(&env.run).await.expect("r").expect("row");
    assert_eq!(run.status, RunStatus::Attempting);
    assert_eq!((run.tally.kept, run.tally.reverts), (1, 0));
    assert_eq!(run.ci_minutes, 4.0);
    assert_eq!(run.current_attempt, None);
    let best: Value = serde_json::from_str(
        &env.s
            .store
            .setting(&best_key("capsid"), env.s.service.now())
            .await
            .expect("s")
            .expect("best"),
    )
    .expect("json");
    assert_eq!(best["attempt_id"], env.attempt.as_str());
    assert_eq!(best["sha"], HEAD);
    let audit = env
        .s
        .store
        .recent_audit(
            &AuditFilter {
                namespace: Some("capsid".into()),
                actor: Some("improve-loop".into()),
            },
            10,
        )
        .await
        .expect("audit");
    let actions: Vec<&str> = audit.iter().filter_map(|a| a.action.as_deref()).collect();
    assert!(actions.contains(&"improve-attempt-kept"), "{actions:?}");
    assert!(actions.contains(&"improve-run-scored"), "{actions:?}");

    // The attempt is no longer waiting: a fresh report for it is 409 and changes nothing.
    let (status, why) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "late", 300.0, 40, 40),
    )
    .await;
    assert_eq!(status, 409, "{why}");
    assert!(description(&why).contains("not awaiting-score"), "{why}");
    let again = env
        .s
        .store
        .attempt(&env.attempt)
        .await
        .expect("a")
        .expect("row");
    assert_eq!(again, row, "the attempt is unchanged");
    let run_again = env.s.store.run(&env.run).await.expect("r").expect("row");
    assert_eq!(run_again, run, "the run is unchanged");
}

pub(crate) async fn a_worse_report_reverts_the_attempt(env: &Env) {
    let before = env
        .s
        .store
        .setting(&best_key("capsid"), env.s.service.now())
        .await
        .expect("s");
    let (status, answer) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "revert", 450.0, 40, 40),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["verdict"], "reverted", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap_or("")
            .contains("secondary score"),
        "{answer}"
    );
    assert_eq!(attempt_status(env).await, AttemptStatus::Reverted);
    let run = env.s.store.run(&env.run).await.expect("r").expect("row");
    assert_eq!(run.status, RunStatus::Attempting);
    assert_eq!(
        (
            run.tally.kept,
            run.tally.reverts,
            run.tally.consecutive_reverts
        ),
        (0, 1, 1)
    );
    let after = env
        .s
        .store
        .setting(&best_key("capsid"), env.s.service.now())
        .await
        .expect("s");
    assert_eq!(after, before, "a revert leaves the best record");
}

pub(crate) async fn the_reference_vector_verifies(env: &Env) {
    let (status, answer) = post_as(
        env,
        "/improve/score",
        "capsid",
        TS,
        VECTOR_SIG,
        VECTOR_BODY.into(),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["attempt_id"], "capsid-2026-12-01T03-00-00-a01");
    assert_eq!(
        answer["verdict"], "kept",
        "412.5 kB beats the best record's 420: {answer}"
    );
    assert_eq!(answer["holdout_pass_rate"], 0.95);
    let flipped = VECTOR_SIG.replace('7', "8");
    let (status, _) = post_as(
        env,
        "/improve/score",
        "capsid",
        TS,
        &flipped,
        VECTOR_BODY.into(),
    )
    .await;
    assert_eq!(status, 401);
}
