//! What outcome verification reads from GitHub: the adapter's facts (pull requests, their
//! files, check runs, workflow runs, comments), then verification end to end (once per store).

use capsid_core::ports::{RepoHost, RepoHostError};
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use super::{ALPHA, REPO, agent, fake, repo, setup_alpha};

capsid_tests::github_cases!(outcome_verification_reads_github,);

#[tokio::test]
async fn the_facts_other_features_read() {
    let gh = fake().await;
    let app = gh.adapter();
    gh.commit(
        REPO,
        "topic",
        &[("a.txt", Some("a")), ("README.md", None)],
        "Topic",
    );
    let head = gh.commit(REPO, "topic", &[("b.txt", Some("b"))], "More");
    let number = gh.open_pull(REPO, "topic", "main", "Topic", "Closes #1.");
    gh.check_runs(
        REPO,
        &head,
        &[("completed", Some("success")), ("in_progress", None)],
    );
    gh.add_run(REPO, "ci.yml", "topic", Some("success"), vec![]);
    gh.comment(
        REPO,
        number,
        "rev",
        "REVIEW: fine. APPROVE",
        "2026-11-02T00:00:00Z",
    );

    let pr = app
        .pull_request(&repo(), number)
        .await
        .expect("pull request");
    assert_eq!(
        (pr.number, pr.merged, pr.open, pr.commits, pr.changed_files),
        (number, false, true, 2, 3),
        "{pr:?}"
    );
    assert_eq!(
        (pr.head_ref.as_str(), pr.base_ref.as_str()),
        ("topic", "main")
    );
    assert_eq!(pr.head_sha, head);
    assert!(!pr.head_is_fork);
    assert_eq!(pr.body, "Closes #1.");
    let mut files = app
        .pull_request_files(&repo(), number)
        .await
        .expect("files");
    files.sort();
    assert_eq!(files, ["README.md", "a.txt", "b.txt"]);
    let checks = app.check_runs(&repo(), &head).await.expect("check runs");
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(
        checks
            .iter()
            .any(|c| c.conclusion.as_deref() == Some("success"))
    );
    assert!(
        checks
            .iter()
            .any(|c| c.status == "in_progress" && c.conclusion.is_none())
    );
    let runs = app
        .workflow_runs(&repo(), &head)
        .await
        .expect("workflow runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].head_sha, head);
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
    let comments = app.issue_comments(&repo(), number).await.expect("comments");
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].login, "rev");
    assert!(comments[0].body.starts_with("REVIEW:"));
    assert_eq!(
        app.file_text(&repo(), "a.txt", Some("topic"))
            .await
            .expect("text"),
        "a"
    );
    gh.merge(REPO, number);
    let pr = app
        .pull_request(&repo(), number)
        .await
        .expect("pull request");
    assert!(pr.merged && !pr.open, "{pr:?}");
    let err = app.pull_request(&repo(), 999).await.expect_err("missing");
    assert!(
        matches!(&err, RepoHostError::NotFound(m) if m.contains("octo/alpha")),
        "{err}"
    );
    assert_eq!(gh.token_requests(), 1, "one token for every fact");
    assert!(gh.refusals().is_empty(), "{:?}", gh.refusals());
}

async fn outcome_verification_reads_github(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let a = agent(s, "driver-a", &["read", "write"], json!({})).await;
    // Two merged PRs; CI green on the last one's head.
    g.commit(
        ALPHA,
        "one",
        &[("a.txt", Some("a")), ("b.txt", Some("b"))],
        "One",
    );
    let pr1 = g.open_pull(ALPHA, "one", "main", "One", "");
    g.merge(ALPHA, pr1);
    g.commit(ALPHA, "two", &[("c.txt", Some("c"))], "Two");
    g.commit(ALPHA, "two", &[("d.txt", Some("d"))], "Two again");
    let pr2 = g.open_pull(ALPHA, "two", "main", "Two", "");
    g.add_run(ALPHA, "ci.yml", "two", Some("success"), vec![]);
    g.add_run(ALPHA, "lint.yml", "two", Some("skipped"), vec![]);
    g.merge(ALPHA, pr2);
    let post = a
        .ok("jobs", json!({"action": "post", "namespace": "alpha", "title": "Verified", "body": "Do it.\n"}))
        .await;
    let id = post["job"]["id"].clone();
    a.ok(
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "alpha"}),
    )
    .await;
    let url = |n: u64| format!("https://github.com/octo/alpha/pull/{n}");
    let done = a
        .ok("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "two PRs",
                           "result_ref": url(pr2), "evidence": {"prs": [url(pr1), url(pr2)], "commits": 99}}))
        .await;
    let row = &done["outcome"]["row"];
    assert_eq!(
        (
            row["prs_opened"].clone(),
            row["prs_merged"].clone(),
            row["commits"].clone(),
            row["files_changed"].clone(),
            row["ci_green"].clone()
        ),
        (json!(2), json!(2), json!(3), json!(4), json!(1)),
        "verified against the fake GitHub, not the driver's 99: {done}"
    );
    let verified: Value = match &row["verified"] {
        Value::String(s) => serde_json::from_str(s).expect("verified JSON"),
        other => other.clone(),
    };
    for key in [
        "prs_opened",
        "prs_merged",
        "commits",
        "files_changed",
        "ci_green",
    ] {
        assert_eq!(verified[key], true, "{key}: {verified}");
    }
    assert!(g.count("GET", &format!("/pulls/{pr2}")) >= 1);
    assert!(g.count("GET", "/actions/runs") >= 1);

    // Evidence that cannot be read stays driver-reported and unverified. (The review gate,
    // which reads verdicts recorded through Capsid, is `review_gate`.)
    let post = a
        .ok("jobs", json!({"action": "post", "namespace": "alpha", "title": "Unreadable", "body": "Do it.\n"}))
        .await;
    let id = post["job"]["id"].clone();
    a.ok(
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "alpha"}),
    )
    .await;
    let done = a
        .ok(
            "jobs",
            json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "done",
                           "evidence": {"prs": [url(999)], "commits": 4}}),
        )
        .await;
    assert_eq!(done["outcome"]["row"]["commits"], 4, "{done}");
    assert!(
        done["outcome"]["notes"].to_string().contains("could"),
        "{done}"
    );
    assert!(g.refusals().is_empty(), "{:?}", g.refusals());
}
