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

capsid_tests::github_cases!(
    a_deploy_run_merges_only_with_another_agents_approval_of_the_head,
    the_pipeline_hands_a_juniors_pull_request_to_a_senior_and_its_approval_to_a_deploy,
);

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

/// The jobs of namespace alpha titled `title`.
async fn titled(c: &Client, title: &str) -> Vec<Value> {
    let listed = c
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    listed["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .filter(|j| j["title"] == title)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// A junior's job with a pull request of its `capsid/<job>` branch, completed by its driver
/// with the pull request as its result; the job id, the pull request and its head.
async fn junior_done(
    s: &TestServer,
    g: &FakeGitHub,
    junior: &Client,
    title: &str,
) -> (String, u64, String) {
    let (job, _) = claimed_run(s, junior, title, "junior").await;
    let branch = format!("capsid/{job}");
    let head = g.commit(ALPHA, &branch, &[("w.txt", Some(title))], "Work");
    let pr = g.open_pull(ALPHA, &branch, "main", title, "");
    let done = junior
        .ok(
            "jobs",
            json!({"action": "complete", "id": job, "namespace": "alpha",
                   "result_summary": "Built it.", "result_ref": format!("https://github.com/{ALPHA}/pull/{pr}")}),
        )
        .await;
    assert_eq!(done["ok"], true, "{done}");
    assert_eq!(done["job"]["status"], "done", "{done}");
    (job, pr, head)
}

async fn the_pipeline_hands_a_juniors_pull_request_to_a_senior_and_its_approval_to_a_deploy(
    s: &TestServer,
    g: &FakeGitHub,
) {
    setup_alpha(s, g).await;
    let flags = json!({"can_comment_pr": true});
    let junior = agent(s, "junior", &["read", "write"], flags.clone()).await;
    let senior = agent(s, "senior", &["read", "write"], flags.clone()).await;
    let deployer = agent(s, "deployer", &["read", "write"], flags).await;
    let (job, pr, head) = junior_done(s, g, &junior, "Build it").await;

    // The junior's job done with its pull request: a senior review of it, by the pipeline.
    let review = titled(&senior, &format!("Review {ALPHA}#{pr}")).await;
    assert_eq!(review.len(), 1, "{review:?}");
    let review = &review[0];
    assert_eq!(review["role"], "senior", "{review}");
    assert_eq!(review["parent_id"], job.as_str(), "{review}");
    assert_eq!(review["posted_by"], "pipeline", "{review}");
    // A review is always another agent's: the junior's own driver cannot claim it, by id or
    // from the queue.
    let own = junior
        .ok(
            "jobs",
            json!({"action": "claim", "id": review["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(own["ok"], false, "{own}");
    assert!(
        own["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("follows the work of agent:junior, so another agent must take it"),
        "{own}"
    );
    let own = junior
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(own["ok"], false, "{own}");
    let claimed = senior
        .ok(
            "jobs",
            json!({"action": "claim", "id": review["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    assert!(
        claimed["job"]["body"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("at head {head}")),
        "{claimed}"
    );
    let senior_run = s
        .client(
            claimed["run_credential"]
                .as_str()
                .expect("a run credential"),
        )
        .await;
    assert!(
        titled(&senior, &format!("Merge {ALPHA}#{pr}"))
            .await
            .is_empty()
    );

    // The senior approves the head: a deploy job to merge it, whose run merges through the gate.
    let approved = senior_run
        .ok(
            "jobs",
            json!({"action": "approve", "namespace": "alpha", "pull_request": pr, "head_sha": head, "body": "Reviewed."}),
        )
        .await;
    assert_eq!(approved["ok"], true, "{approved}");
    let deploy = titled(&deployer, &format!("Merge {ALPHA}#{pr}")).await;
    assert_eq!(deploy.len(), 1, "{deploy:?}");
    assert_eq!(deploy[0]["role"], "deploy", "{deploy:?}");
    assert_eq!(deploy[0]["parent_id"], job.as_str(), "{deploy:?}");
    // The reviewer's driver may not merge what it approved (its approval would not count).
    // It still holds the review: once that is done, its claim of the deploy is refused.
    let finished = senior
        .ok(
            "jobs",
            json!({"action": "complete", "id": review["id"], "namespace": "alpha",
                   "result_summary": "Approved."}),
        )
        .await;
    assert_eq!(finished["ok"], true, "{finished}");
    let theirs = senior
        .ok(
            "jobs",
            json!({"action": "claim", "id": deploy[0]["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(theirs["ok"], false, "{theirs}");
    assert!(
        theirs["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("agent:senior"),
        "{theirs}"
    );
    let claimed = deployer
        .ok(
            "jobs",
            json!({"action": "claim", "id": deploy[0]["id"], "namespace": "alpha"}),
        )
        .await;
    assert!(
        claimed["job"]["body"]
            .as_str()
            .unwrap_or("")
            .contains("which agent:senior approved"),
        "{claimed}"
    );
    let deploy_run = s
        .client(
            claimed["run_credential"]
                .as_str()
                .expect("a run credential"),
        )
        .await;
    let merged = deploy_run
        .ok(
            "manage_pr",
            json!({"namespace": "alpha", "number": pr, "action": "merge"}),
        )
        .await;
    assert_eq!(merged["merged"], true, "{merged}");

    // Bounded like any dispatch: a junior allowed one child gets its review, and the deploy
    // past the bound is refused and recorded against the junior's job.
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "dispatch_limits": "junior=1"}),
    )
    .await;
    let (job2, pr2, head2) = junior_done(s, g, &junior, "Build more").await;
    assert_eq!(
        titled(&senior, &format!("Review {ALPHA}#{pr2}"))
            .await
            .len(),
        1
    );
    senior
        .ok(
            "jobs",
            json!({"action": "approve", "namespace": "alpha", "pull_request": pr2, "head_sha": head2, "body": "Fine."}),
        )
        .await;
    assert!(
        titled(&senior, &format!("Merge {ALPHA}#{pr2}"))
            .await
            .is_empty()
    );
    let probe = s.probe.as_ref().expect("raw SQL");
    assert_eq!(
        probe
            .count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = 'job-dispatch-refused' AND path = 'jobs/{job2}.md'"
            ))
            .await,
        1,
        "the refused hand-off is recorded against the junior's job"
    );
}
