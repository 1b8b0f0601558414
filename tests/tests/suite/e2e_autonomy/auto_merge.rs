//! The auto-merge tick against the fake GitHub through the real adapter (each scenario once
//! per store): one scenario per check, in the order the checks run; the merge, with `merge`
//! and the audited head; a policy edited after signing or disabled merges nothing and says
//! why; the same PR over three ticks is one audit row, a push is a second evaluation; a merge
//! GitHub refuses is declined once with GitHub's reason and never retried at that head.

use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use super::{
    ALPHA, GREEN, audit_rows, auto_merge_tick, autonomy_status, claimed_job, merge_policy, params,
    pull, setup, sign_merge_policy,
};

capsid_tests::github_cases!(
    a_body_naming_no_job_is_declined_at_body_names_job,
    a_session_claimed_job_is_declined_at_author_is_driver,
    another_base_is_declined_at_base_is_default_branch,
    pending_then_failing_ci_is_declined_at_ci_green,
    a_lockfile_is_declined_at_paths_unprotected,
    a_billing_path_is_declined_at_paths_not_money,
    a_migration_is_declined_before_it_can_merge,
    a_pr_passing_all_seven_is_merged_with_merge_and_audited,
    a_policy_edited_after_signing_merges_nothing,
    a_disabled_policy_merges_nothing,
    three_ticks_are_one_row_and_a_push_is_a_second_evaluation,
    a_merge_github_refuses_is_declined_once_with_its_reason,
);

/// `setup`, a signed enabled policy over `alpha`, and a job claimed by driver `d1`.
async fn ready(s: &TestServer, g: &FakeGitHub) -> String {
    setup(s, g).await;
    sign_merge_policy(s, &merge_policy("v7", true, "alpha")).await;
    claimed_job(s, "d1", "driver").await
}

/// The one decline a tick recorded for PR `number`: asserts its check, what passed before
/// it, that the PR is still open and on the awaiting-seat list; returns its params.
async fn declined_at(
    s: &TestServer,
    g: &FakeGitHub,
    number: u64,
    check: &str,
    passed: &[&str],
) -> Value {
    let report = auto_merge_tick(s).await;
    assert_eq!(
        (
            report["evaluated"].as_u64(),
            report["declined"].as_u64(),
            report["merged"].as_u64()
        ),
        (Some(1), Some(1), Some(0)),
        "{report}"
    );
    let rows = audit_rows(s, "auto-merge-declined").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let p = params(&rows[0]);
    assert_eq!(p["failed"], check, "{p}");
    assert_eq!(p["passed"], json!(passed), "{p}");
    assert_eq!(p["pr"], number, "{p}");
    assert_eq!(p["repo"], ALPHA, "{p}");
    assert_eq!(p["policy_version"], "v7", "{p}");
    assert!(p["why"].as_str().is_some_and(|w| !w.is_empty()), "{p}");
    assert_eq!(rows[0].actor.as_deref(), Some("improve-loop"));
    assert!(audit_rows(s, "auto-merged").await.is_empty());
    assert_eq!(
        g.pull(ALPHA, number).map(|p| (p.0, p.1)),
        Some(("open".into(), false))
    );
    assert!(
        g.merge_requests(ALPHA).is_empty(),
        "nothing asked GitHub to merge"
    );
    let status = autonomy_status(s).await;
    let seat = status["awaiting_seat"].as_array().expect("a list");
    assert_eq!(seat.len(), 1, "{status}");
    assert_eq!(seat[0]["number"], number);
    assert_eq!(seat[0]["failed"], check);
    assert_eq!(seat[0]["namespace"], "alpha");
    assert_eq!(status["auto_merge"]["last_tick"]["declined"], 1, "{status}");
    p
}

const BEFORE_CI: [&str; 3] = [
    "body_names_job",
    "author_is_driver",
    "base_is_default_branch",
];
const BEFORE_PATHS: [&str; 4] = [
    "body_names_job",
    "author_is_driver",
    "base_is_default_branch",
    "ci_green",
];

async fn a_body_naming_no_job_is_declined_at_body_names_job(s: &TestServer, g: &FakeGitHub) {
    ready(s, g).await;
    let (n, _) = pull(
        g,
        "feat/a",
        "main",
        &[("src/a.rs", Some("x"))],
        "tidies things",
        GREEN,
    );
    declined_at(s, g, n, "body_names_job", &[]).await;
}

async fn a_session_claimed_job_is_declined_at_author_is_driver(s: &TestServer, g: &FakeGitHub) {
    ready(s, g).await;
    let job = claimed_job(s, "sess", "session").await;
    let (n, _) = pull(
        g,
        "feat/b",
        "main",
        &[("src/b.rs", Some("x"))],
        &format!("for {job}"),
        GREEN,
    );
    let p = declined_at(s, g, n, "author_is_driver", &["body_names_job"]).await;
    assert!(p["why"].as_str().unwrap().contains("not a driver"), "{p}");
}

async fn another_base_is_declined_at_base_is_default_branch(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    g.commit(ALPHA, "develop", &[("NOTES.md", Some("dev\n"))], "develop");
    let (n, _) = pull(
        g,
        "feat/c",
        "develop",
        &[("src/c.rs", Some("x"))],
        &job,
        GREEN,
    );
    let p = declined_at(
        s,
        g,
        n,
        "base_is_default_branch",
        &["body_names_job", "author_is_driver"],
    )
    .await;
    assert!(p["why"].as_str().unwrap().contains("'develop'"), "{p}");
}

async fn pending_then_failing_ci_is_declined_at_ci_green(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, sha) = pull(
        g,
        "feat/d",
        "main",
        &[("src/d.rs", Some("x"))],
        &format!("Closes {job}"),
        &[("completed", Some("success")), ("in_progress", None)],
    );
    let p = declined_at(s, g, n, "ci_green", &BEFORE_CI).await;
    assert!(p["why"].as_str().unwrap().contains("pending"), "{p}");
    // The same head, now failing: a changed verdict is a new decision.
    g.check_runs(
        ALPHA,
        &sha,
        &[
            ("completed", Some("success")),
            ("completed", Some("failure")),
        ],
    );
    let report = auto_merge_tick(s).await;
    assert_eq!(report["declined"], 1, "{report}");
    let rows = audit_rows(s, "auto-merge-declined").await;
    assert_eq!(rows.len(), 2);
    let p = params(&rows[0]);
    assert_eq!(p["failed"], "ci_green");
    assert!(p["why"].as_str().unwrap().contains("failure"), "{p}");
    assert_eq!(p["head_sha"], sha.as_str());
}

async fn a_lockfile_is_declined_at_paths_unprotected(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, _) = pull(
        g,
        "feat/e",
        "main",
        &[("package-lock.json", Some("{}"))],
        &job,
        GREEN,
    );
    let p = declined_at(s, g, n, "paths_unprotected", &BEFORE_PATHS).await;
    assert!(
        p["why"].as_str().unwrap().contains("package-lock.json"),
        "{p}"
    );
}

async fn a_billing_path_is_declined_at_paths_not_money(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, _) = pull(
        g,
        "feat/f",
        "main",
        &[("src/billing/invoice.rs", Some("x"))],
        &job,
        GREEN,
    );
    let mut passed = BEFORE_PATHS.to_vec();
    passed.push("paths_unprotected");
    let p = declined_at(s, g, n, "paths_not_money", &passed).await;
    assert!(
        p["why"]
            .as_str()
            .unwrap()
            .contains("src/billing/invoice.rs"),
        "{p}"
    );
}

/// Every path the seventh check names (migrations, workflows, lockfiles) is also protected,
/// so through the live guards a migration is refused at the fifth check, the first failing
/// one; the seventh refuses on its own in the core's `evaluate_pr_with` tests.
async fn a_migration_is_declined_before_it_can_merge(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, _) = pull(
        g,
        "feat/g",
        "main",
        &[(
            "db/migrations/0002_add.sql",
            Some("ALTER TABLE t ADD COLUMN c TEXT;"),
        )],
        &job,
        GREEN,
    );
    let p = declined_at(s, g, n, "paths_unprotected", &BEFORE_PATHS).await;
    assert!(
        p["why"].as_str().unwrap().contains("database migration"),
        "{p}"
    );
}

async fn a_pr_passing_all_seven_is_merged_with_merge_and_audited(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, sha) = pull(
        g,
        "feat/h",
        "main",
        &[("src/h.rs", Some("pub fn h() {}"))],
        &format!("Does {job}."),
        GREEN,
    );
    let report = auto_merge_tick(s).await;
    assert_eq!(
        (report["evaluated"].as_u64(), report["merged"].as_u64()),
        (Some(1), Some(1)),
        "{report}"
    );
    assert_eq!(
        g.merge_requests(ALPHA),
        vec![(n, "merge".to_owned(), Some(sha.clone()))]
    );
    assert_eq!(
        g.pull(ALPHA, n).map(|p| (p.0, p.1)),
        Some(("closed".into(), true))
    );
    assert_eq!(
        g.file(ALPHA, "main", "src/h.rs").as_deref(),
        Some("pub fn h() {}")
    );
    let rows = audit_rows(s, "auto-merged").await;
    assert_eq!(rows.len(), 1);
    let p = params(&rows[0]);
    assert_eq!(
        p["merge_sha"].as_str().map(str::to_owned),
        g.branch_head(ALPHA, "main"),
        "{p}"
    );
    let mut keys: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "at",
            "driver",
            "head_sha",
            "job",
            "merge_sha",
            "passed",
            "policy_version",
            "pr",
            "repo"
        ],
        "{p}"
    );
    assert_eq!(p["job"], job.as_str());
    assert_eq!(p["driver"], "agent:d1");
    assert_eq!(p["head_sha"], sha.as_str());
    assert_eq!(p["policy_version"], "v7");
    assert_eq!(p["passed"].as_array().map(Vec::len), Some(7));
    assert!(audit_rows(s, "auto-merge-declined").await.is_empty());
    let status = autonomy_status(s).await;
    assert_eq!(status["awaiting_seat"], json!([]), "{status}");
    assert_eq!(status["auto_merge"]["last_tick"]["merged"], 1, "{status}");
    assert_eq!(status["auto_merge"]["policy"]["enabled"], true, "{status}");
    assert_eq!(status["auto_merge"]["policy"]["version"], "v7", "{status}");
    // Merged is not open: the next tick has nothing to evaluate.
    let again = auto_merge_tick(s).await;
    assert_eq!(again["evaluated"], 0, "{again}");
    assert_eq!(audit_rows(s, "auto-merged").await.len(), 1);
}

async fn a_policy_edited_after_signing_merges_nothing(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, _) = pull(g, "feat/i", "main", &[("src/i.rs", Some("x"))], &job, GREEN);
    let edited = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": "policy/auto-merge.md", "mode": "append",
                   "body": "\n- namespaces: alpha, beta\n", "allow_improve_paths": true}),
        )
        .await;
    assert!(edited.get("error").is_none(), "{edited}");
    let report = auto_merge_tick(s).await;
    assert_eq!(report["evaluated"], 0, "{report}");
    let note = report["notes"][0].as_str().unwrap_or_default();
    assert!(
        note.contains("not validly signed") && note.contains("edited after signing"),
        "{report}"
    );
    assert!(g.merge_requests(ALPHA).is_empty());
    assert_eq!(g.pull(ALPHA, n).map(|p| p.0), Some("open".into()));
    assert!(audit_rows(s, "auto-merged").await.is_empty());
    assert!(audit_rows(s, "auto-merge-declined").await.is_empty());
    let policy = &autonomy_status(s).await["auto_merge"]["policy"];
    assert_eq!(
        (policy["present"].as_bool(), policy["signed"].as_bool()),
        (Some(true), Some(false)),
        "{policy}"
    );
    assert!(
        policy["note"]
            .as_str()
            .unwrap_or_default()
            .contains("not validly signed"),
        "{policy}"
    );
}

async fn a_disabled_policy_merges_nothing(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    sign_merge_policy(s, &merge_policy("v8", false, "alpha")).await;
    let job = claimed_job(s, "d1", "driver").await;
    let (n, _) = pull(g, "feat/j", "main", &[("src/j.rs", Some("x"))], &job, GREEN);
    let report = auto_merge_tick(s).await;
    assert_eq!(report["evaluated"], 0, "{report}");
    assert!(
        report["notes"][0]
            .as_str()
            .unwrap_or_default()
            .contains("disabled"),
        "{report}"
    );
    assert!(g.merge_requests(ALPHA).is_empty());
    assert_eq!(g.pull(ALPHA, n).map(|p| p.0), Some("open".into()));
    assert!(audit_rows(s, "auto-merged").await.is_empty());
    let policy = &autonomy_status(s).await["auto_merge"]["policy"];
    assert_eq!(
        (
            policy["signed"].as_bool(),
            policy["enabled"].as_bool(),
            policy["version"].as_str()
        ),
        (Some(true), Some(false), Some("v8")),
        "{policy}"
    );
}

async fn three_ticks_are_one_row_and_a_push_is_a_second_evaluation(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, first) = pull(
        g,
        "feat/k",
        "main",
        &[("src/k.rs", Some("x"))],
        &job,
        &[("queued", None)],
    );
    for tick in 0..3 {
        let report = auto_merge_tick(s).await;
        assert_eq!(report["evaluated"], 1, "tick {tick}: {report}");
        assert_eq!(
            report["declined"],
            if tick == 0 { 1 } else { 0 },
            "tick {tick}: {report}"
        );
        assert_eq!(
            report["unchanged"],
            if tick == 0 { 0 } else { 1 },
            "tick {tick}: {report}"
        );
    }
    assert_eq!(
        audit_rows(s, "auto-merge-declined").await.len(),
        1,
        "one row for one decision"
    );
    let second = g.commit(ALPHA, "feat/k", &[("src/k.rs", Some("y"))], "push");
    g.check_runs(ALPHA, &second, &[("queued", None)]);
    let report = auto_merge_tick(s).await;
    assert_eq!(report["declined"], 1, "{report}");
    let rows = audit_rows(s, "auto-merge-declined").await;
    assert_eq!(rows.len(), 2, "a push is a second evaluation");
    assert_eq!(params(&rows[0])["head_sha"], second.as_str());
    assert_eq!(params(&rows[1])["head_sha"], first.as_str());
    let seat = autonomy_status(s).await["awaiting_seat"].clone();
    assert_eq!(
        seat.as_array().map(Vec::len),
        Some(1),
        "rewritten whole: {seat}"
    );
    assert_eq!(seat[0]["head_sha"], second.as_str());
    assert_eq!(seat[0]["number"], n);
}

async fn a_merge_github_refuses_is_declined_once_with_its_reason(s: &TestServer, g: &FakeGitHub) {
    let job = ready(s, g).await;
    let (n, _) = pull(g, "feat/l", "main", &[("src/l.rs", Some("x"))], &job, GREEN);
    g.block_merge(
        ALPHA,
        n,
        405,
        "At least 1 approving review is required by reviewers with write access.",
    );
    for _ in 0..3 {
        let report = auto_merge_tick(s).await;
        assert_eq!(report["merged"], 0, "{report}");
    }
    assert_eq!(
        g.merge_requests(ALPHA).len(),
        1,
        "never retried at the same head"
    );
    let rows = audit_rows(s, "auto-merge-declined").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let p = params(&rows[0]);
    assert_eq!(p["failed"], "merge", "{p}");
    assert!(
        p["why"]
            .as_str()
            .unwrap()
            .contains("approving review is required"),
        "{p}"
    );
    assert_eq!(p["passed"].as_array().map(Vec::len), Some(7), "{p}");
    let seat = autonomy_status(s).await["awaiting_seat"].clone();
    assert_eq!(seat[0]["failed"], "merge", "{seat}");
    assert_eq!(g.pull(ALPHA, n).map(|p| p.0), Some("open".into()));
}
