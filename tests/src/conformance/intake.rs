//! The intake port: an issue is recorded once (a second record of the issue, or of its job id,
//! writes nothing, audit row included), and every change applies once from the state it names,
//! with its audit row, or not at all; issues whose loop is open come back oldest first.

use std::sync::Arc;

use capsid_core::ports::{AuditFilter, IntakeChange, NewIntakeIssue, Store};

use super::support::{at, audit};

fn issue(repo: &str, number: u64, job: &str, m: i64) -> NewIntakeIssue {
    NewIntakeIssue {
        repo: repo.to_owned(),
        number,
        issue_id: 1000 + number,
        namespace: "proj".to_owned(),
        job_id: job.to_owned(),
        body_sha256: format!("sha-{number}"),
        at: at(m),
    }
}

async fn intake_rows<S: Store>(store: &S) -> usize {
    store
        .recent_audit(&AuditFilter::default(), 100)
        .await
        .expect("audit")
        .iter()
        .filter(|r| r.action.as_deref().is_some_and(|a| a.starts_with("intake")))
        .count()
}

/// Recorded once: the same issue again, or another issue under a recorded job id, is `false`
/// and writes nothing; the row reads back whole.
pub async fn intake_records_an_issue_once<S: Store>(store: &S) {
    let a = audit("intake", "intake-taken", "proj", "jobs/job_a.md", at(0));
    assert!(
        store
            .record_intake(issue("octo/app", 7, "job_a", 0), a.clone())
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_intake(issue("octo/app", 7, "job_b", 1), a.clone())
            .await
            .unwrap(),
        "the same issue again"
    );
    assert!(
        !store
            .record_intake(issue("octo/app", 8, "job_a", 2), a.clone())
            .await
            .unwrap(),
        "another issue under a recorded job id"
    );
    assert_eq!(intake_rows(store).await, 1, "one audit row");
    let row = store
        .intake_issue("octo/app", 7)
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!(
        (row.job_id.as_str(), row.issue_id, row.namespace.as_str()),
        ("job_a", 1007, "proj")
    );
    assert_eq!(row.body_sha256, "sha-7");
    assert_eq!(
        row.noted_sha256, "sha-7",
        "the posted body is the noted one"
    );
    assert_eq!(
        (row.commented_at, row.closed_at, row.outcome),
        (None, None, None)
    );
    assert_eq!(row.created_at, at(0));
    assert!(store.intake_issue("octo/app", 8).await.unwrap().is_none());
    assert!(store.intake_issue("octo/other", 7).await.unwrap().is_none());
}

/// Each change applies once from its state, with its audit row; a lost change writes nothing.
pub async fn intake_changes_apply_once_from_their_state<S: Store>(store: &S) {
    let a = |what: &str, m| audit("intake", what, "proj", "jobs/job_a.md", at(m));
    store
        .record_intake(issue("octo/app", 7, "job_a", 0), a("intake-taken", 0))
        .await
        .unwrap();
    let change = |c: IntakeChange, m: i64, what: &str| {
        store.update_intake("octo/app", 7, c, at(m), Some(a(what, m)))
    };
    assert!(
        change(IntakeChange::Commented, 1, "intake-commented")
            .await
            .unwrap()
    );
    assert!(
        !change(IntakeChange::Commented, 2, "intake-commented")
            .await
            .unwrap()
    );
    assert!(
        change(IntakeChange::Uncommented, 3, "intake-comment-failed")
            .await
            .unwrap()
    );
    assert!(
        !change(IntakeChange::Uncommented, 4, "intake-comment-failed")
            .await
            .unwrap()
    );
    assert!(
        change(IntakeChange::Commented, 5, "intake-commented")
            .await
            .unwrap()
    );
    let noted = |s: &str| IntakeChange::Noted { sha256: s.into() };
    assert!(
        !change(noted("sha-7"), 6, "intake-issue-edited")
            .await
            .unwrap(),
        "not an edit"
    );
    assert!(
        change(noted("sha-x"), 7, "intake-issue-edited")
            .await
            .unwrap()
    );
    assert!(
        !change(noted("sha-x"), 8, "intake-issue-edited")
            .await
            .unwrap()
    );
    let closed = |o: &str| IntakeChange::Closed { outcome: o.into() };
    assert!(change(closed("done"), 9, "intake-closed").await.unwrap());
    assert!(!change(closed("again"), 10, "intake-closed").await.unwrap());
    let row = store.intake_issue("octo/app", 7).await.unwrap().unwrap();
    assert_eq!(row.commented_at, Some(at(5)));
    assert_eq!(row.noted_sha256, "sha-x");
    assert_eq!(row.body_sha256, "sha-7", "the posted digest stays");
    assert_eq!(
        (row.closed_at, row.outcome.as_deref()),
        (Some(at(9)), Some("done"))
    );
    assert_eq!(row.updated_at, at(9));
    assert!(
        change(IntakeChange::Reopened, 11, "intake-comment-failed")
            .await
            .unwrap()
    );
    let row = store.intake_issue("octo/app", 7).await.unwrap().unwrap();
    assert_eq!((row.closed_at, row.outcome), (None, None));
    // taken + commented, uncommented, commented, edited, closed, reopened.
    assert_eq!(intake_rows(store).await, 7);
    assert!(
        !store
            .update_intake(
                "octo/app",
                99,
                IntakeChange::Commented,
                at(12),
                Some(a("x", 12))
            )
            .await
            .unwrap(),
        "no such issue"
    );
    assert_eq!(
        intake_rows(store).await,
        7,
        "a lost change writes no audit row"
    );
}

/// Open loops, oldest first and bounded; a closed one is left out.
pub async fn open_intake_is_oldest_first_and_bounded<S: Store>(store: &S) {
    let a = audit("intake", "intake-taken", "proj", "", at(0));
    for (n, m) in [(3, 2), (1, 0), (2, 1)] {
        store
            .record_intake(issue("octo/app", n, &format!("job_{n}"), m), a.clone())
            .await
            .unwrap();
    }
    let numbers = |rows: Vec<capsid_core::ports::IntakeIssueRow>| {
        rows.iter().map(|r| r.number).collect::<Vec<_>>()
    };
    assert_eq!(numbers(store.open_intake(10).await.unwrap()), [1, 2, 3]);
    assert_eq!(numbers(store.open_intake(2).await.unwrap()), [1, 2]);
    let closed = IntakeChange::Closed {
        outcome: "x".into(),
    };
    assert!(
        store
            .update_intake("octo/app", 1, closed, at(5), None)
            .await
            .unwrap()
    );
    assert_eq!(numbers(store.open_intake(10).await.unwrap()), [2, 3]);
}

/// Many tasks recording one issue at once: one wins, one audit row.
pub async fn concurrent_records_of_one_issue_make_one_row<S: Store + 'static>(store: Arc<S>) {
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let a = audit("intake", "intake-taken", "proj", "", at(i));
            store
                .record_intake(issue("octo/app", 7, &format!("job_{i}"), i), a)
                .await
                .expect("record")
        }));
    }
    let mut won = 0;
    for t in tasks {
        if t.await.expect("task") {
            won += 1;
        }
    }
    assert_eq!(won, 1);
    assert_eq!(intake_rows(&*store).await, 1);
}
