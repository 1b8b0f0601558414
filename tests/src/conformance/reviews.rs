//! Review verdicts and the newest audit row of a document: a verdict and its audit row land
//! together, one pull request's verdicts read newest first and bounded, and the newest row of
//! an action on a path is found among many.

use capsid_core::jobs::review::Verdict;
use capsid_core::ports::{AuditFilter, NewReview, Store};

use super::support::{at, audit};

fn review(repo: &str, number: u64, reviewer: &str, verdict: &str, head: &str, m: i64) -> NewReview {
    NewReview {
        repo: repo.to_owned(),
        number,
        namespace: "proj".to_owned(),
        reviewer: reviewer.to_owned(),
        verdict: Verdict::parse(verdict).expect("a verdict word"),
        said: format!("said by {reviewer}"),
        head_sha: head.to_owned(),
        comment_url: format!("https://github.com/{repo}/pull/{number}#c{m}"),
        at: at(m),
    }
}

/// Verdicts come back for their own pull request only, newest first, at most `limit`; each
/// was written with its audit row.
pub async fn reviews_record_with_audit_newest_first<S: Store>(store: &S) {
    let rows = [
        review("octo/app", 7, "agent:a", "CHANGES", "h1", 0),
        review("octo/app", 8, "agent:a", "APPROVE", "h1", 1),
        review("octo/app", 7, "agent:b", "APPROVE", "h2", 2),
        review("octo/other", 7, "agent:c", "BLOCK", "h2", 3),
        review("octo/app", 7, "agent:b", "BLOCK", "h3", 4),
    ];
    for (i, r) in rows.iter().enumerate() {
        store
            .record_review(
                r.clone(),
                audit(&r.reviewer, "manage_pr", "proj", "", at(i as i64)),
            )
            .await
            .expect("record");
    }
    let got = store.reviews("octo/app", 7, 10).await.expect("reviews");
    let verdicts: Vec<(&str, &str, &str)> = got
        .iter()
        .map(|r| (r.reviewer.as_str(), r.verdict.as_str(), r.head_sha.as_str()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("agent:b", "BLOCK", "h3"),
            ("agent:b", "APPROVE", "h2"),
            ("agent:a", "CHANGES", "h1")
        ]
    );
    assert!(got.windows(2).all(|w| w[0].id > w[1].id), "{got:?}");
    let newest = &got[0];
    assert_eq!(
        (
            newest.repo.as_str(),
            newest.number,
            newest.namespace.as_str(),
            newest.said.as_str(),
            newest.comment_url.as_str(),
            newest.created_at
        ),
        (
            "octo/app",
            7,
            "proj",
            "said by agent:b",
            "https://github.com/octo/app/pull/7#c4",
            at(4)
        )
    );
    assert_eq!(
        store.reviews("octo/app", 7, 1).await.expect("limit").len(),
        1
    );
    assert!(
        store
            .reviews("octo/app", 9, 10)
            .await
            .expect("none")
            .is_empty()
    );
    assert!(
        store
            .reviews("OCTO/APP", 7, 10)
            .await
            .expect("case")
            .is_empty(),
        "the store compares the repository as given (the core lower-cases it)"
    );
    let audits = store
        .recent_audit(&AuditFilter::default(), 100)
        .await
        .expect("audit");
    assert_eq!(
        audits
            .iter()
            .filter(|a| a.action.as_deref() == Some("manage_pr"))
            .count(),
        5,
        "every verdict came with its audit row"
    );
}

/// One head commit's verdicts in one namespace, newest first and bounded, whichever pull
/// request they were posted on; other namespaces' and other commits' never come back.
pub async fn head_reviews_are_one_namespaces_verdicts_on_one_commit<S: Store>(store: &S) {
    let in_ns = |mut r: NewReview, ns: &str| {
        r.namespace = ns.to_owned();
        r
    };
    let rows = [
        review("octo/app", 7, "agent:a", "APPROVE", "h1", 0),
        review("octo/app", 8, "agent:b", "CHANGES", "h1", 1),
        in_ns(
            review("octo/app", 7, "agent:c", "APPROVE", "h1", 2),
            "other",
        ),
        review("octo/app", 7, "agent:d", "APPROVE", "h2", 3),
        review("octo/app", 9, "agent:e", "BLOCK", "h1", 4),
    ];
    for (i, r) in rows.iter().enumerate() {
        store
            .record_review(
                r.clone(),
                audit(&r.reviewer, "manage_pr", &r.namespace, "", at(i as i64)),
            )
            .await
            .expect("record");
    }
    let got = store.head_reviews("proj", "h1", 10).await.expect("head");
    let seen: Vec<(&str, u64, &str)> = got
        .iter()
        .map(|r| (r.reviewer.as_str(), r.number, r.verdict.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("agent:e", 9, "BLOCK"),
            ("agent:b", 8, "CHANGES"),
            ("agent:a", 7, "APPROVE")
        ]
    );
    assert_eq!(got[0].head_sha, "h1");
    assert_eq!(got[0].namespace, "proj");
    assert_eq!(
        store
            .head_reviews("proj", "h1", 2)
            .await
            .expect("limit")
            .len(),
        2
    );
    let other = store.head_reviews("other", "h1", 10).await.expect("other");
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].reviewer, "agent:c");
    assert!(
        store
            .head_reviews("proj", "h9", 10)
            .await
            .expect("none")
            .is_empty()
    );
}

/// The newest row of an action on one path, however many other rows there are.
pub async fn newest_audit_of_an_action_on_a_path<S: Store>(store: &S) {
    assert_eq!(
        store
            .newest_audit("policy-signed", "capsid", "policy/gates.md")
            .await
            .expect("none yet"),
        None
    );
    for (i, (action, path)) in [
        ("policy-signed", "policy/gates.md"),
        ("write", "policy/gates.md"),
        ("policy-signed", "policy/auto-merge.md"),
        ("policy-signed", "policy/gates.md"),
        ("write", "policy/gates.md"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut entry = audit("github:owner", action, "capsid", path, at(i as i64));
        entry.params = serde_json::json!({ "n": i });
        store.append_audit(entry).await.expect("append");
    }
    let row = store
        .newest_audit("policy-signed", "capsid", "policy/gates.md")
        .await
        .expect("read")
        .expect("a row");
    assert_eq!(row.params.as_deref(), Some(r#"{"n":3}"#), "{row:?}");
    assert_eq!(row.action.as_deref(), Some("policy-signed"));
    assert!(
        store
            .newest_audit("policy-signed", "other", "policy/gates.md")
            .await
            .expect("read")
            .is_none()
    );
}
