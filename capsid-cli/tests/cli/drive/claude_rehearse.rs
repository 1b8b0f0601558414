//! `capsid drive --rehearse` with the real Claude Code (issue 53, item 19): without a model
//! account, the driver posts a rehearsal job, claims it and runs the agent in its box against a
//! scripted model of its own; the agent writes a file, runs the project's tests, commits and
//! pushes the job's branch through the gateway; the job is done at no cost, nothing else of
//! the repository moved, no pull request is asked for, and the paid model is never called.

use serde_json::json;

use super::claude::{origin_main, stderr};
use super::claude_boxed::{boxed, require_bwrap};
use super::support::{World, git_out, said};

pub fn a_rehearsal_runs_the_whole_loop_without_a_model_account(w: &World) {
    if !require_bwrap("a_rehearsal_runs_the_whole_loop_without_a_model_account") {
        return;
    }
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let main_before = origin_main(w, "demo");
    let calls_before = w.fake().all_requests().len();
    let mut extra = boxed(w);
    extra.push("--rehearse".to_owned());
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = w
        .drive_claude("demo", &key, &root, &extra)
        // No model account at all: the rehearsal needs none.
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .output()
        .expect("run capsid drive --rehearse");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let err = stderr(&out);
    assert!(err.contains("rehearsal job"), "{err}");
    assert!(
        err.contains("the rehearsal's scripted model"),
        "the door says where calls go: {err}"
    );
    assert_eq!(
        w.fake().all_requests().len(),
        calls_before,
        "the paid model's API was called"
    );
    let listed = w.tool(
        &w.human,
        "jobs",
        json!({"action": "list", "namespace": "demo"}),
    );
    let job = listed["jobs"]
        .as_array()
        .and_then(|js| {
            js.iter().find(|j| {
                j["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Capsid rehearsal"))
            })
        })
        .cloned()
        .unwrap_or_else(|| panic!("no rehearsal job in {listed}"));
    let id = job["id"].as_str().expect("an id").to_owned();
    assert_eq!(job["status"], json!("done"), "{job}\n{}", said(&out));
    let summary = job["result_summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("the test gate `sh test.sh` passed"),
        "{summary}"
    );
    assert!(!summary.contains("No pull request was opened"), "{summary}");
    // The job's branch holds the file; main did not move.
    let origin = w.dir.path().join("demo-origin.git");
    let shown = git_out(
        &origin,
        &[
            "show",
            &format!("refs/heads/capsid/{id}:CAPSID-REHEARSAL.md"),
        ],
    );
    assert!(shown.contains("Capsid rehearsal"), "{shown}");
    assert_eq!(origin_main(w, "demo"), main_before);
    assert!(
        err.contains(&format!("git push origin --delete capsid/{id}")),
        "{err}"
    );
    // It cost nothing.
    let record = w.job_record("demo", &id);
    assert_eq!(record["spend"]["cost_usd"], json!(0.0), "{record}");
    assert!(
        record["spend"]["calls"].as_u64().unwrap_or(0) >= 4,
        "the door counted the scripted calls: {record}"
    );
}
