//! The review gate end to end (each scenario once per store): a `review_required` job
//! completes only with a pull request of a mapped repository, approved by an agent other than
//! its holder through `manage_pr` action `comment` (recorded by Capsid with the head it
//! reviewed); GitHub comments count for nothing, the holder's own verdict never counts, a
//! newer commit invalidates a verdict, and the outcome row names the approving agent.

use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

use super::{ALPHA, agent, setup_alpha};

capsid_tests::github_cases!(
    a_reviewed_job_completes_only_with_its_pull_request,
    only_another_agents_verdict_through_capsid_counts_and_a_new_commit_voids_it,
);

fn url(n: u64) -> String {
    format!("https://github.com/octo/alpha/pull/{n}")
}

/// Posts and claims a `review_required` job as `c`; returns its id.
async fn reviewed_job(c: &Client, title: &str) -> Value {
    let post = c
        .ok("jobs", json!({"action": "post", "namespace": "alpha", "title": title, "body": "Do it.\n", "review_required": true}))
        .await;
    let id = post["job"]["id"].clone();
    let claimed = c
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["job"]["status"], "claimed", "{claimed}");
    id
}

async fn complete(c: &Client, id: &Value, result_ref: Option<&str>) -> Value {
    let mut args =
        json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "done"});
    if let Some(r) = result_ref {
        args["result_ref"] = json!(r);
    }
    c.ok("jobs", args).await
}

async fn status(s: &TestServer, id: &Value) -> String {
    s.store
        .job(id.as_str().expect("id"))
        .await
        .expect("read")
        .expect("job")
        .status
        .as_str()
        .to_owned()
}

async fn a_reviewed_job_completes_only_with_its_pull_request(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    g.add_repo("octo/elsewhere", &[("README.md", "x\n")]);
    g.commit("octo/elsewhere", "topic", &[("e.txt", Some("e"))], "E");
    let foreign = g.open_pull("octo/elsewhere", "topic", "main", "E", "");
    let d = agent(s, "driver", &["read", "write"], json!({})).await;
    let id = reviewed_job(&d, "Needs review").await;
    let elsewhere = format!("https://github.com/octo/elsewhere/pull/{foreign}");
    for (result_ref, wanted) in [
        (None, "completes only with result_ref"),
        (Some("docs/result.md"), "not a pull request URL"),
        (Some(elsewhere.as_str()), "not mapped to namespace alpha"),
    ] {
        let out = complete(&d, &id, result_ref).await;
        assert_eq!(out["ok"], false, "{result_ref:?}: {out}");
        assert!(
            out["refusal"].as_str().unwrap_or_default().contains(wanted),
            "{result_ref:?}: {out}"
        );
        assert_eq!(status(s, &id).await, "claimed", "the job stays held");
    }
    // A job posted without review_required is not gated.
    let post = d
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Plain", "body": "Do it.\n"}),
        )
        .await;
    let plain = post["job"]["id"].clone();
    let out = d
        .ok(
            "jobs",
            json!({"action": "fail", "id": id, "namespace": "alpha", "reason": "gave up"}),
        )
        .await;
    assert_eq!(out["job"]["status"], "failed", "fail is never gated: {out}");
    d.ok(
        "jobs",
        json!({"action": "claim", "id": plain, "namespace": "alpha"}),
    )
    .await;
    let out = complete(&d, &plain, Some("docs/result.md")).await;
    assert_eq!(out["job"]["status"], "done", "{out}");
}

async fn only_another_agents_verdict_through_capsid_counts_and_a_new_commit_voids_it(
    s: &TestServer,
    g: &FakeGitHub,
) {
    setup_alpha(s, g).await;
    // The holder can comment on pull requests too: its own verdict must not count.
    let d = agent(
        s,
        "driver",
        &["read", "write"],
        json!({"can_comment_pr": true}),
    )
    .await;
    let key = s
        .mint(
            "reviewer",
            "session",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"], "tools": ["manage_pr", "manage_pr.comment"], "flags": {"can_comment_pr": true}}),
        )
        .await;
    let r = s.client(&key).await;
    g.commit(ALPHA, "work", &[("w.txt", Some("w1"))], "Work");
    let pr = g.open_pull(ALPHA, "work", "main", "Work", "");
    let id = reviewed_job(&d, "Reviewed work").await;
    let comment =
        |body: &str| json!({"namespace": "alpha", "number": pr, "action": "comment", "body": body});

    // A GitHub user's comment counts for nothing, and so does the holder's own verdict.
    g.comment(
        ALPHA,
        pr,
        "somebody",
        "REVIEW: ship it. APPROVE",
        "2026-11-01T00:00:00Z",
    );
    let own = d.ok("manage_pr", comment("REVIEW: mine. APPROVE")).await;
    assert_eq!(own["review"]["reviewer"], "agent:driver", "{own}");
    let out = complete(&d, &id, Some(&url(pr))).await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        out["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("no review yet"),
        "{out}"
    );

    // Another agent's CHANGES spends a correction; its APPROVE on the same head completes.
    let changes = r
        .ok("manage_pr", comment("REVIEW: add a test. CHANGES"))
        .await;
    assert_eq!(changes["review"]["verdict"], "CHANGES", "{changes}");
    let out = complete(&d, &id, Some(&url(pr))).await;
    assert!(
        out["refusal"]
            .to_string()
            .contains("spent a correction (1 of 2)"),
        "{out}"
    );
    let approve = r
        .ok("manage_pr", comment("REVIEW: good now. **APPROVE**"))
        .await;
    let reviewed_head = approve["review"]["head_sha"]
        .as_str()
        .expect("the verdict is pinned to a head")
        .to_owned();
    assert!(
        g.comment_texts(ALPHA, pr)
            .iter()
            .any(|c| c.contains("good now")),
        "the comment reached GitHub"
    );

    // A newer commit on the head invalidates the approval.
    let newer = g.commit(ALPHA, "work", &[("w.txt", Some("w2"))], "More work");
    assert_ne!(newer, reviewed_head);
    let out = complete(&d, &id, Some(&url(pr))).await;
    assert_eq!(out["ok"], false, "{out}");
    let refusal = out["refusal"].as_str().unwrap_or_default();
    assert!(
        refusal.contains(&reviewed_head[..12]) && refusal.contains(&newer[..12]),
        "the refusal names both heads: {out}"
    );
    assert_eq!(status(s, &id).await, "claimed");

    // Approved again on the new head: done, and the outcome names the reviewer.
    r.ok("manage_pr", comment("REVIEW: still fine. APPROVE"))
        .await;
    let done = complete(&d, &id, Some(&url(pr))).await;
    assert_eq!(done["job"]["status"], "done", "{done}");
    assert_eq!(
        done["outcome"]["row"]["reviewed_by"], "agent:reviewer",
        "{done}"
    );
    let outcomes = s.store.outcomes(Some("agent:driver")).await.expect("read");
    assert_eq!(
        outcomes
            .iter()
            .find(|o| Some(o.job_id.as_str()) == id.as_str())
            .and_then(|o| o.reviewed_by.as_deref()),
        Some("agent:reviewer"),
        "{outcomes:?}"
    );

    // A BLOCK verdict blocks through the ordinary block path.
    let id = reviewed_job(&d, "Blocked work").await;
    r.ok("manage_pr", comment("REVIEW: touches prod. BLOCK"))
        .await;
    let out = complete(&d, &id, Some(&url(pr))).await;
    assert_eq!(out["job"]["status"], "blocked", "{out}");

    // A pull request whose head cannot be read holds the job (never an approval), and a
    // verdict whose head cannot be read is not posted at all.
    let id = reviewed_job(&d, "Held work").await;
    r.ok("manage_pr", comment("REVIEW: fine. APPROVE")).await;
    g.fault(
        "GET",
        &format!("/pulls/{pr}"),
        502,
        &[],
        "upstream broke",
        1,
    );
    let out = d
        .call("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "done", "result_ref": url(pr)}))
        .await;
    assert!(
        out.as_ref().map_or(true, |v| v["ok"] == false),
        "an unreadable head is no approval: {out:?}"
    );
    assert_eq!(status(s, &id).await, "claimed");
    let before = g.comment_texts(ALPHA, pr).len();
    g.fault(
        "GET",
        &format!("/pulls/{pr}"),
        502,
        &[],
        "upstream broke",
        3,
    );
    let err = r.err("manage_pr", comment("REVIEW: blind. APPROVE")).await;
    assert!(err.contains("nothing was posted"), "{err}");
    assert_eq!(g.comment_texts(ALPHA, pr).len(), before);
    assert!(g.refusals().is_empty(), "{:?}", g.refusals());
}
