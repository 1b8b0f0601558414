//! Evidence verified against the repository host (or left unverified), the review gate, and
//! the queue part of improve_status.

use super::*;

async fn evidence_is_verified_or_left_unverified(s: &TestServer) {
    setup(s).await;
    s.admin(
        "register_namespace",
        json!({"namespace": "gamma", "repo": "octo/broken"}),
    )
    .await;
    let a = driver(s, "a", json!({"namespaces": ["alpha", "gamma"]})).await;
    let probe = s.probe.as_ref().unwrap();
    // Verified: both PRs read, CI green on the last PR's head.
    let job = post(&a, "alpha", "Verified", json!({})).await;
    a.ok(
        "jobs",
        json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
    )
    .await;
    let done = a
        .ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "two PRs",
                           "result_ref": "https://github.com/octo/alpha/pull/2",
                           "evidence": {"prs": ["https://github.com/octo/alpha/pull/1", "https://github.com/octo/alpha/pull/2"], "tests_added": 3}}))
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
        (json!(2), json!(2), json!(5), json!(5), json!(1)),
        "{done}"
    );
    assert_eq!(row["result_kind"], "pr");
    // Unreadable PR: nothing verified.
    let job = post(&a, "gamma", "Broken", json!({})).await;
    a.ok(
        "jobs",
        json!({"action": "claim", "id": job["id"], "namespace": "gamma"}),
    )
    .await;
    let done = a
        .ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "gamma", "result_summary": "x",
                           "evidence": {"prs": ["https://github.com/octo/broken/pull/1"], "commits": 4}}))
        .await;
    let verified: Value =
        serde_json::from_str(done["outcome"]["row"]["verified"].as_str().unwrap()).unwrap();
    assert!(
        verified.as_object().unwrap().values().all(|v| v == false),
        "every verified flag false: {verified}"
    );
    assert_eq!(
        done["outcome"]["row"]["commits"], 4,
        "driver-reported, unverified"
    );
    assert!(
        done["outcome"]["notes"].to_string().contains("could"),
        "{done}"
    );
    // No evidence: NULL, not 0.
    let job = post(&a, "alpha", "Quiet", json!({})).await;
    a.ok(
        "jobs",
        json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
    )
    .await;
    a.ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "nothing to show"})).await;
    let id = job["id"].as_str().unwrap();
    assert_eq!(probe.count(&format!("SELECT COUNT(*) FROM job_outcomes WHERE job_id = '{id}' AND commits IS NULL AND prs_opened IS NULL AND ci_green IS NULL")).await, 1);
    assert_eq!(probe.count(&format!("SELECT COUNT(*) FROM job_outcomes WHERE job_id = '{id}' AND (commits = 0 OR prs_opened = 0)")).await, 0);
}

/// Review comments made on GitHub directly count for nothing (SPEC 8): pull requests 7 and 8
/// carry CHANGES and APPROVE comments by a GitHub user, and the job still waits for a verdict
/// posted through Capsid (the whole gate is `github_adapter::review_gate`).
async fn review_gate_ignores_github_comments(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let job = post(&a, "alpha", "Reviewed", json!({"review_required": true})).await;
    a.ok(
        "jobs",
        json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
    )
    .await;
    for pr in [7, 8] {
        let out = a.ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "done", "result_ref": format!("https://github.com/octo/alpha/pull/{pr}")})).await;
        assert_eq!(out["ok"], false, "#{pr}: {out}");
        assert!(
            out["refusal"]
                .as_str()
                .unwrap_or_default()
                .contains("no review yet"),
            "#{pr}: {out}"
        );
    }
    let listed = a
        .ok(
            "jobs",
            json!({"action": "list", "namespace": "alpha", "status": "claimed"}),
        )
        .await;
    assert_eq!(
        listed["jobs"][0]["corrections_count"], 0,
        "no correction was spent: {listed}"
    );
}

async fn improve_status_reports_the_queue(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    post(&a, "alpha", "Queued", json!({})).await;
    let job = post(&a, "alpha", "Blocked", json!({})).await;
    a.ok(
        "jobs",
        json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
    )
    .await;
    a.ok("jobs", json!({"action": "block", "id": job["id"], "namespace": "alpha", "reason": "gate", "command": "gh pr create --fill"})).await;
    let status = a.ok("improve_status", json!({"namespace": "alpha"})).await;
    assert_eq!(status["mode"], "off");
    let ns = &status["namespaces"][0];
    assert_eq!(
        (ns["jobs"]["queued"].clone(), ns["jobs"]["blocked"].clone()),
        (json!(1), json!(1)),
        "{status}"
    );
    assert_eq!(
        ns["jobs"]["blocked_jobs"][0]["waiting_on"],
        "gh pr create --fill"
    );
    assert!(
        status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "a" && x["record"]["jobs_blocked"] == 1),
        "{status}"
    );
    let run = a
        .ok(
            "improve_run",
            json!({"action": "run", "namespace": "alpha"}),
        )
        .await;
    assert_eq!(run["ok"], false);
}

e2e_cases!(crate::e2e_jobs::options();
    evidence_is_verified_or_left_unverified,
    review_gate_ignores_github_comments,
    improve_status_reports_the_queue,
);
