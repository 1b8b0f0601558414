//! The `RunStore` port: at most one live run per namespace (the partial unique index, answered
//! as a typed refusal), transitions walked through the core's tables as keyed conditional
//! updates with their audit rows, racing transitions where exactly one wins, and a report's
//! `jti` claimed once per namespace.

use std::sync::Arc;

use capsid_core::improve::machine::{
    AttemptEvent, AttemptStatus, RunEvent, RunStatus, RunTally, attempt, attempt_branch,
    attempt_id, run, run_id,
};
use capsid_core::ports::{
    Advance, Advanced, AttemptUpdate, Change, NewAttempt, NewRun, RunOpened, RunRow, RunUpdate,
    ScoreRow, Store,
};
use tokio::sync::Barrier;

use super::support::{at, audit, audit_count};

fn new_run(namespace: &str, minutes: i64) -> NewRun {
    NewRun {
        id: run_id(namespace, at(minutes)).expect("a run id"),
        namespace: namespace.to_owned(),
        mode: "api".to_owned(),
        condition: "full".to_owned(),
        base_sha: Some("base".to_owned()),
        started: at(minutes),
    }
}

async fn open<S: Store + ?Sized>(store: &S, namespace: &str, minutes: i64) -> RunRow {
    match store
        .open_run(
            new_run(namespace, minutes),
            audit(
                "improve-loop",
                "improve-run-opened",
                namespace,
                "improve/",
                at(minutes),
            ),
        )
        .await
        .expect("open a run")
    {
        RunOpened::Opened(row) => *row,
        RunOpened::LiveRunExists => panic!("{namespace} already had a live run"),
    }
}

fn walk(id: &str, from: RunStatus, events: &[RunEvent], minutes: i64) -> RunUpdate {
    let mut steps = Vec::new();
    let mut status = from;
    for event in events {
        let step = run::step(status, *event).expect("a legal step");
        status = step.to;
        steps.push(step);
    }
    RunUpdate::walk(id, &steps, at(minutes)).expect("steps that chain")
}

/// Opens a run, begins it, adds its first attempt and dispatches it: both wait for a score.
async fn awaiting<S: Store + ?Sized>(store: &S, namespace: &str) -> (RunRow, String) {
    let run = open(store, namespace, 0).await;
    let begin = Advance {
        run: Some(walk(&run.id, RunStatus::Opening, &[RunEvent::Begin], 1)),
        audits: vec![audit(
            "improve-loop",
            "improve-run-began",
            namespace,
            "improve/",
            at(1),
        )],
        ..Advance::default()
    };
    assert_eq!(
        store.advance(begin).await.expect("begin"),
        Advanced::Applied
    );
    let attempt = attempt_id(&run.id, 1).expect("an attempt id");
    let mut add = RunUpdate::within(&run.id, RunStatus::Attempting, at(2));
    add.tally_before = Some(RunTally::default());
    add.tally = Some(RunTally {
        attempts: 1,
        ..RunTally::default()
    });
    add.current_attempt = Change::Set(attempt.clone());
    let added = store
        .add_attempt(
            NewAttempt {
                id: attempt.clone(),
                namespace: namespace.to_owned(),
                run_id: run.id.clone(),
                change_summary: Some("tighten a loop".to_owned()),
                diff_ref: None,
                branch: attempt_branch(&attempt),
                base_sha: Some("base".to_owned()),
                lineage_parent: None,
                skill_id: None,
                ts: at(2),
            },
            add.clone(),
            audit(
                "improve-loop",
                "improve-attempt-added",
                namespace,
                "improve/",
                at(2),
            ),
        )
        .await
        .expect("add an attempt");
    assert_eq!(added, Advanced::Applied);
    // The same counters again: the run moved on, so the second add loses and writes nothing.
    let mut again = add.clone();
    again.current_attempt = Change::Set(format!("{attempt}-x"));
    let twice = store
        .add_attempt(
            NewAttempt {
                id: format!("{attempt}-x"),
                namespace: namespace.to_owned(),
                run_id: run.id.clone(),
                change_summary: None,
                diff_ref: None,
                branch: attempt_branch(&attempt),
                base_sha: None,
                lineage_parent: None,
                skill_id: None,
                ts: at(2),
            },
            again,
            audit(
                "improve-loop",
                "improve-attempt-added",
                namespace,
                "improve/",
                at(2),
            ),
        )
        .await
        .expect("a second add answers");
    assert_eq!(twice, Advanced::Lost);
    assert_eq!(store.attempts(&run.id).await.expect("attempts").len(), 1);
    let mut dispatch = AttemptUpdate::step(
        &attempt,
        attempt::step(AttemptStatus::Pending, AttemptEvent::Dispatch).expect("dispatch"),
    );
    dispatch.head_sha = Change::Set("head".to_owned());
    dispatch.dispatched_at = Some(at(3));
    let dispatched = Advance {
        attempt: Some(dispatch),
        run: Some(walk(
            &run.id,
            RunStatus::Attempting,
            &[RunEvent::Dispatch],
            3,
        )),
        audits: vec![audit(
            "improve-loop",
            "improve-attempt-dispatched",
            namespace,
            "improve/",
            at(3),
        )],
        ..Advance::default()
    };
    assert_eq!(
        store.advance(dispatched).await.expect("dispatch"),
        Advanced::Applied
    );
    (run, attempt)
}

/// A second run for a namespace with a live one is refused, typed, and writes nothing; other
/// namespaces open freely; once the live run is paused (terminal) a new one opens.
pub async fn runs_one_live_run_per_namespace<S: Store + ?Sized>(store: &S) {
    let first = open(store, "capsid", 0).await;
    assert_eq!(first.status, RunStatus::Opening);
    assert_eq!(first.tally, RunTally::default());
    let audits = audit_count(store).await;
    let second = store
        .open_run(
            new_run("capsid", 5),
            audit(
                "improve-loop",
                "improve-run-opened",
                "capsid",
                "improve/",
                at(5),
            ),
        )
        .await
        .expect("a typed answer, not an error");
    assert_eq!(second, RunOpened::LiveRunExists);
    assert_eq!(
        audit_count(store).await,
        audits,
        "a refused open writes no audit row"
    );
    assert_eq!(store.runs(Some("capsid"), 10).await.expect("runs").len(), 1);
    let other = open(store, "orchard", 5).await;
    assert_eq!(
        store.live_run("orchard").await.expect("live run"),
        Some(other.clone())
    );
    let duplicate = store
        .open_run(
            new_run("orchard", 6),
            audit(
                "improve-loop",
                "improve-run-opened",
                "orchard",
                "improve/",
                at(6),
            ),
        )
        .await;
    assert_eq!(duplicate, Ok(RunOpened::LiveRunExists));

    let pause = Advance {
        run: Some(walk(&first.id, RunStatus::Opening, &[RunEvent::Pause], 6)),
        audits: vec![audit(
            "improve-loop",
            "improve-run-paused",
            "capsid",
            "improve/",
            at(6),
        )],
        ..Advance::default()
    };
    assert_eq!(
        store.advance(pause.clone()).await.expect("pause"),
        Advanced::Applied
    );
    let paused = store.run(&first.id).await.expect("run").expect("a row");
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(paused.finished, Some(at(6)));
    assert_eq!(
        store.advance(pause).await.expect("a second pause answers"),
        Advanced::Lost,
        "the keyed update of a run already paused matches nothing"
    );
    assert_eq!(store.live_run("capsid").await.expect("live run"), None);
    let reopened = open(store, "capsid", 7).await;
    assert_eq!(
        store.runs(Some("capsid"), 10).await.expect("runs")[0].id,
        reopened.id,
        "newest first"
    );
    assert_eq!(store.runs(None, 10).await.expect("runs").len(), 3);
}

/// Eight judges of the same awaiting attempt at once: exactly one applies (its attempt step,
/// run step, metrics, best record and audit rows), the others are `Lost` and write nothing.
pub async fn runs_racing_judges_have_one_winner<S: Store + 'static>(store: Arc<S>) {
    let (run, attempt) = awaiting(&*store, "capsid").await;
    let before = store.run(&run.id).await.expect("run").expect("row");
    assert_eq!(before.status, RunStatus::AwaitingScore);
    assert_eq!(before.current_attempt.as_deref(), Some(attempt.as_str()));
    let audits = audit_count(&*store).await;
    let judges = 8;
    let gate = Arc::new(Barrier::new(judges));
    let mut tasks = Vec::new();
    for judge in 0..judges {
        let (store, gate, run_id, attempt) =
            (store.clone(), gate.clone(), run.id.clone(), attempt.clone());
        let kept = judge % 2 == 0;
        tasks.push(tokio::spawn(async move {
            let event = if kept {
                AttemptEvent::Keep
            } else {
                AttemptEvent::Revert
            };
            let step = attempt::step(AttemptStatus::AwaitingScore, event).expect("a verdict");
            let mut tally = RunTally {
                attempts: 1,
                ..RunTally::default()
            };
            tally.record(step.to).expect("record");
            let mut run_update = walk(
                &run_id,
                RunStatus::AwaitingScore,
                &[RunEvent::Score, tally.after_judging()],
                10,
            );
            run_update.tally_before = Some(RunTally {
                attempts: 1,
                ..RunTally::default()
            });
            run_update.tally = Some(tally);
            run_update.current_attempt = Change::Clear;
            run_update.add_ci_minutes = 2.5;
            let mut attempt_update = AttemptUpdate::step(&attempt, step);
            attempt_update.reason = Change::Set(format!("judge {judge}"));
            attempt_update.score_after = Some(f64::from(u32::try_from(judge).unwrap_or(0)));
            let advance = Advance {
                attempt: Some(attempt_update),
                run: Some(run_update),
                scores: vec![ScoreRow {
                    namespace: "capsid".to_owned(),
                    run_id: run_id.clone(),
                    attempt_id: Some(attempt.clone()),
                    metric: "latency_ms".to_owned(),
                    value: Some(f64::from(u32::try_from(judge).unwrap_or(0))),
                    ts: at(10),
                }],
                setting: kept.then(|| ("improve:best:capsid".to_owned(), format!("judge {judge}"))),
                audits: vec![
                    audit(
                        "improve-loop",
                        step.audit_action(),
                        "capsid",
                        "improve/",
                        at(10),
                    ),
                    audit(
                        "improve-loop",
                        "improve-run-scored",
                        "capsid",
                        "improve/",
                        at(10),
                    ),
                ],
            };
            gate.wait().await;
            (judge, store.advance(advance).await.expect("an answer"))
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (judge, outcome) = task.await.expect("a judge");
        if outcome == Advanced::Applied {
            winners.push(judge);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one judge wins: {winners:?}");
    let winner = winners[0];
    let row = store
        .attempt(&attempt)
        .await
        .expect("attempt")
        .expect("row");
    let expected = if winner % 2 == 0 {
        AttemptStatus::Kept
    } else {
        AttemptStatus::Reverted
    };
    assert_eq!(row.status, expected);
    assert_eq!(row.reason, Some(format!("judge {winner}")));
    assert_eq!(row.head_sha.as_deref(), Some("head"));
    assert_eq!(row.dispatched_at, Some(at(3)));
    let after = store.run(&run.id).await.expect("run").expect("row");
    assert_eq!(after.status, RunStatus::Attempting);
    assert_eq!(after.current_attempt, None);
    assert_eq!(after.ci_minutes, 2.5, "only the winner's minutes are added");
    assert_eq!(after.tally.kept + after.tally.reverts, 1);
    let scores = store.scores(&run.id, Some(&attempt)).await.expect("scores");
    assert_eq!(scores.len(), 1, "only the winner's metrics: {scores:?}");
    assert!(
        store
            .scores(&run.id, None)
            .await
            .expect("baseline")
            .is_empty()
    );
    assert_eq!(audit_count(&*store).await, audits + 2);
    let best = store
        .setting("improve:best:capsid", at(10))
        .await
        .expect("setting");
    assert_eq!(best.is_some(), winner % 2 == 0);
}

/// A report's `jti` is claimed once per namespace; the same id in another namespace is its own.
pub async fn runs_report_jti_claimed_once<S: Store + ?Sized>(store: &S) {
    assert!(
        store
            .claim_nonce("capsid", "report-1", at(0))
            .await
            .expect("claim")
    );
    assert!(
        !store
            .claim_nonce("capsid", "report-1", at(1))
            .await
            .expect("replay")
    );
    assert!(
        store
            .claim_nonce("orchard", "report-1", at(1))
            .await
            .expect("claim")
    );
    assert!(
        !store
            .claim_nonce("orchard", "report-1", at(2))
            .await
            .expect("replay")
    );
}
