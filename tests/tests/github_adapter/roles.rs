//! Approvals as a first-class act and the merge gate the roles rely on (issue 55, item 4),
//! once per store: a senior's run records approve or reject on a pull request's current head
//! (`jobs approve|reject`), refused when the head moved since it was shown; only a senior's run
//! credential may record one and only a deploy's may merge; a deploy run's `manage_pr merge`
//! goes through only with a standing approval of the current head by an agent that is neither
//! the pull request's author (the holder of the job its `capsid/<job>` branch names) nor the
//! merging run's driver: none, the author's own, one for an older head and the merger's own are
//! each refused with the reason, and a senior's approval of the head lets it merge.

use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

use super::{ALPHA, agent, setup_alpha};

capsid_tests::github_cases!(a_deploy_run_merges_only_with_another_agents_approval_of_the_head,);

/// Posts a job of `role` and claims it as `driver`; the job's id and a client holding the
/// claim's run credential.
async fn claimed_run(s: &TestServer, driver: &Client, title: &str, role: &str) -> (String, Client) {
    let posted = driver
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": title, "body": "Do it.\n", "role": role}),
        )
        .await;
    assert_eq!(posted["ok"], true, "{posted}");
    let id = posted["job"]["id"].as_str().expect("an id").to_owned();
    let claimed = driver
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["job"]["role"], role, "{claimed}");
    let credential = claimed["run_credential"]
        .as_str()
        .unwrap_or_else(|| panic!("no run credential: {claimed}"));
    (id, s.client(credential).await)
}

async fn refusal(c: &Client, tool: &str, args: Value) -> String {
    match c.call(tool, args).await {
        Ok(v) => {
            assert_eq!(v["ok"], false, "{tool} was not refused: {v}");
            v["refusal"].as_str().unwrap_or_default().to_owned()
        }
        Err(e) => e,
    }
}

async fn a_deploy_run_merges_only_with_another_agents_approval_of_the_head(
    s: &TestServer,
    g: &FakeGitHub,
) {
    setup_alpha(s, g).await;
    let flags = json!({"can_comment_pr": true});
    let junior = agent(s, "junior", &["read", "write"], flags.clone()).await;
    let senior = agent(s, "senior", &["read", "write"], flags.clone()).await;
    let deployer = agent(s, "deployer", &["read", "write"], flags).await;
    let (job, junior_run) = claimed_run(s, &junior, "Build it", "junior").await;
    let branch = format!("capsid/{job}");
    let first = g.commit(ALPHA, &branch, &[("w.txt", Some("w1"))], "Work");
    let pr = g.open_pull(ALPHA, &branch, "main", "Work", "");
    let merge = json!({"namespace": "alpha", "number": pr, "action": "merge"});
    let approve = |head: &str| json!({"action": "approve", "namespace": "alpha", "pull_request": pr, "head_sha": head, "body": "Reviewed."});

    // Only a deploy's credential may merge, and only a senior's may record a verdict.
    let why = refusal(&junior_run, "manage_pr", merge.clone()).await;
    assert!(why.contains("scope refused"), "{why}");
    let why = refusal(&junior_run, "jobs", approve(&first)).await;
    assert!(why.contains("scope refused"), "{why}");
    let (_, deploy_run) = claimed_run(s, &deployer, "Ship it", "deploy").await;
    let why = refusal(&deploy_run, "jobs", approve(&first)).await;
    assert!(why.contains("scope refused"), "{why}");

    // No approval: refused, naming the rule.
    let why = refusal(&deploy_run, "manage_pr", merge.clone()).await;
    assert!(
        why.contains("is not merged") && why.contains("no review verdict is recorded"),
        "{why}"
    );
    // The author's own approval (its driver's key) does not count, nor the merger's own.
    let own = junior.ok("jobs", approve(&first)).await;
    assert_eq!(own["reviewer"], "agent:junior", "{own}");
    let why = refusal(&deploy_run, "manage_pr", merge.clone()).await;
    assert!(why.contains("agent:junior") && why.contains("own"), "{why}");
    deployer.ok("jobs", approve(&first)).await;
    let why = refusal(&deploy_run, "manage_pr", merge.clone()).await;
    assert!(why.contains("is not merged"), "{why}");

    // A senior's run approves the head it was shown; a verdict on a head that moved is refused.
    let (_, senior_run) = claimed_run(s, &senior, "Review it", "senior").await;
    let approved = senior_run.ok("jobs", approve(&first)).await;
    assert_eq!(approved["ok"], true, "{approved}");
    assert_eq!(approved["reviewer"], "agent:senior", "{approved}");
    assert_eq!(approved["head_sha"], first.as_str(), "{approved}");
    let second = g.commit(ALPHA, &branch, &[("w.txt", Some("w2"))], "More work");
    let why = refusal(&senior_run, "jobs", approve(&first)).await;
    assert!(why.contains("head moved") && why.contains(&second), "{why}");
    // The approval was of an older head: the merge is refused.
    let why = refusal(&deploy_run, "manage_pr", merge.clone()).await;
    assert!(why.contains("is not merged"), "{why}");
    assert_eq!(g.pull(ALPHA, pr).map(|p| p.1), Some(false));
    // A reject of the new head stands against it; an approval after it lets the deploy merge.
    let rejected = senior_run
        .ok(
            "jobs",
            json!({"action": "reject", "namespace": "alpha", "pull_request": pr, "head_sha": second, "body": "Add a test."}),
        )
        .await;
    assert_eq!(rejected["verdict"], "CHANGES", "{rejected}");
    let why = refusal(&deploy_run, "manage_pr", merge.clone()).await;
    assert!(why.contains("CHANGES by agent:senior"), "{why}");
    senior_run.ok("jobs", approve(&second)).await;
    let merged = deploy_run.ok("manage_pr", merge).await;
    assert_eq!(merged["merged"], true, "{merged}");
    assert_eq!(g.pull(ALPHA, pr).map(|p| p.1), Some(true));
    let probe = s.probe.as_ref().expect("raw SQL");
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'job-verdict-approve'")
            .await,
        4,
        "every approval recorded is audited"
    );
}
