//! CI end to end (each scenario once per store): the failing step, the log tail for write
//! grants only, and workflow dispatch.

use capsid_tests::fake_github::{FakeGitHub, job, step};
use capsid_tests::server::TestServer;
use serde_json::json;

use super::{ALPHA, agent, setup_alpha};

capsid_tests::github_cases!(ci_status_and_dispatch,);

async fn ci_status_and_dispatch(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let r = agent(s, "reader", &["read"], json!({})).await;
    let w = agent(s, "writer", &["read", "write"], json!({})).await;
    let d = agent(
        s,
        "dispatcher",
        &["read", "write"],
        json!({"can_dispatch": true}),
    )
    .await;
    let log = "line one\nline two\n##[error]assertion failed: left == right\nline four\n";
    let (run_id, _) = g.add_run(
        ALPHA,
        "ci.yml",
        "main",
        Some("failure"),
        vec![job(
            "test",
            "failure",
            vec![
                step(
                    "checkout",
                    "success",
                    "2026-11-30T00:00:00Z",
                    "2026-11-30T00:00:10Z",
                ),
                step(
                    "cargo test",
                    "failure",
                    "2026-11-30T00:00:10Z",
                    "2026-11-30T00:01:00Z",
                ),
            ],
            log,
        )],
    );
    // A read-only caller sees the failing step, but the log is withheld.
    let out = r.ok("ci_status", json!({"namespace": "alpha"})).await;
    assert!(out.to_string().contains("cargo test"), "{out}");
    assert!(out["failed_run"]["log_tail_withheld"].is_string(), "{out}");
    assert!(!out.to_string().contains("assertion failed"), "{out}");
    // A write-grant caller gets the tail.
    let out = w.ok("ci_status", json!({"namespace": "alpha"})).await;
    let failed = &out["failed_run"];
    assert!(
        failed["log"].to_string().contains("assertion failed"),
        "{out}"
    );
    assert!(failed["log_region"].is_string(), "{out}");
    assert_eq!(failed["failing_step"], "cargo test", "{out}");
    let err = r
        .err(
            "ci_status",
            json!({"namespace": "alpha", "run_id": 999_999}),
        )
        .await;
    assert!(err.contains("999999"), "{err}");

    // ci_dispatch needs can_dispatch, refuses the scorer, dispatches and finds the run.
    g.workflow(ALPHA, "ci.yml", true, true);
    g.workflow(ALPHA, "push-only.yml", false, false);
    g.workflow(ALPHA, "slow.yml", true, false);
    let err = w
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml", "ref": "main"}),
        )
        .await;
    assert!(err.contains("can_dispatch"), "{err}");
    let err = d
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "improve-score.yml", "ref": "main"}),
        )
        .await;
    assert!(err.contains("improve-score.yml"), "{err}");
    let err = d
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml", "ref": "main", "run_id": run_id}),
        )
        .await;
    assert!(err.contains("run_id") || err.contains("both"), "{err}");
    let out = d
        .ok(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "ci.yml", "ref": "main", "inputs": {"level": "full"}}),
        )
        .await;
    assert_eq!(out["dispatched"], true, "{out}");
    let new_run = out["run_id"]
        .as_u64()
        .expect("the new run found by polling");
    assert_ne!(new_run, run_id);
    assert!(
        g.runs(ALPHA)
            .iter()
            .any(|(id, event, _)| *id == new_run && event == "workflow_dispatch"),
        "{:?}",
        g.runs(ALPHA)
    );
    let err = d
        .err(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "push-only.yml", "ref": "main"}),
        )
        .await;
    assert!(err.contains("workflow_dispatch"), "{err}");
    // Accepted, but no run appears within the poll bound: null and a note, not an error.
    let out = d
        .ok(
            "ci_dispatch",
            json!({"namespace": "alpha", "workflow": "slow.yml", "ref": "main"}),
        )
        .await;
    assert_eq!(out["dispatched"], true, "{out}");
    assert!(out["run_id"].is_null(), "{out}");
    assert!(out["note"].is_string(), "{out}");
    let out = d
        .ok(
            "ci_dispatch",
            json!({"namespace": "alpha", "run_id": run_id}),
        )
        .await;
    assert_eq!(out["rerun_requested"], true, "{out}");
    assert_eq!(g.reruns(ALPHA), vec![run_id]);
}
