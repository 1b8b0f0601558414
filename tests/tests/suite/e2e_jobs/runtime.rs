//! A job's runtime (issue 50): a job may name the agent CLI that runs it (`claude-code`,
//! `codex`), kept on its row and shown by `jobs get`; a driver that says which runtimes it
//! runs never claims a job asking for another (it stays queued, and the refusal names both),
//! and a runtime Capsid does not drive is refused at post, naming the field.

use super::*;

async fn claim(c: &Client, ns: &str, runtimes: Value) -> Value {
    c.ok(
        "jobs",
        json!({"action": "claim", "namespace": ns, "runtimes": runtimes}),
    )
    .await
}

async fn a_job_names_its_runtime_and_only_a_driver_running_it_claims_it(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let b = driver(s, "b", json!({})).await;
    // Each on paths of its own: a driver's claim of a job without paths would lease the
    // whole repository, and the second driver's claim would wait on it.
    let job = post(
        &a,
        "alpha",
        "On Codex",
        json!({"runtime": " codex ", "paths": ["src/codex/**"]}),
    )
    .await;
    assert_eq!(job["runtime"], "codex", "{job}");
    let got = a
        .ok(
            "jobs",
            json!({"action": "get", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(got["job"]["runtime"], "codex", "{got}");

    // A Claude Code driver is refused, naming both, and the job stays queued.
    let refused = claim(&a, "alpha", json!(["claude-code"])).await;
    assert_eq!(refused["ok"], false, "{refused}");
    let why = refused["error"]
        .as_str()
        .unwrap_or(&refused.to_string())
        .to_owned();
    assert!(
        why.contains("asks for the codex runtime, and this driver runs claude-code"),
        "{refused}"
    );
    let still = a
        .ok(
            "jobs",
            json!({"action": "get", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(still["job"]["status"], "queued", "{still}");

    // A driver that runs it claims it.
    let claimed = claim(&b, "alpha", json!(["claude-code", "codex"])).await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    assert_eq!(claimed["job"]["runtime"], "codex", "{claimed}");

    // A job naming none is anybody's, and carries no runtime.
    let plain = post(
        &a,
        "alpha",
        "Anywhere",
        json!({"paths": ["src/anywhere/**"]}),
    )
    .await;
    assert!(plain.get("runtime").is_none(), "{plain}");
    let took = claim(&a, "alpha", json!(["claude-code"])).await;
    assert_eq!(took["ok"], true, "{took}");
    assert_eq!(took["job"]["id"], plain["id"], "{took}");
}

async fn a_runtime_capsid_does_not_drive_is_refused_naming_the_field(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    for bad in [json!("aider"), json!("Codex"), json!("")] {
        let err = a
            .call(
                "jobs",
                json!({"action": "post", "namespace": "alpha", "title": "Bad",
                       "body": "Do it.\n", "runtime": bad}),
            )
            .await
            .expect_err("refused");
        assert!(err.contains("runtime:"), "{bad}: {err}");
    }
    let err = a
        .call(
            "jobs",
            json!({"action": "claim", "namespace": "alpha", "runtimes": ["claude-code", "aider"]}),
        )
        .await
        .expect_err("refused");
    assert!(err.contains("runtimes:"), "{err}");
    // Nothing was posted.
    let list = a
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    assert_eq!(list["jobs"], json!([]), "{list}");
}

e2e_cases!(crate::e2e_jobs::options();
    a_job_names_its_runtime_and_only_a_driver_running_it_claims_it,
    a_runtime_capsid_does_not_drive_is_refused_naming_the_field,
);
