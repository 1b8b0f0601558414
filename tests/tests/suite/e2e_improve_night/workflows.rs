//! The shipped scorer (`templates/workflows/improve-score.yml`) against the real server: the
//! dispatch the loop sends is exactly the file and the inputs the template takes, and the
//! template's own steps, run with bash as a runner runs them in the score job's environment
//! for that dispatch, fetch the hidden suite with a signed holdout credential, build the
//! report and send it signed, and the server keeps the attempt. The runner's tools read the
//! wall clock, so the server's clock is set to it once at the start (and then driven).

use std::collections::BTreeMap;

use capsid_core::improve::machine::AttemptStatus;
use capsid_core::improve::report::namespace_key;
use capsid_core::improve::workflows::Workflow;
use capsid_core::time::{MINUTE_MS, Timestamp};
use capsid_tests::workflows::{Template, run_step};
use serde_json::{Value, json};

use super::{Env, REPO, ROOT, clear, in_flight, mode, proposal, tick, usage};

fn wall_clock() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    Timestamp::from_millis(i64::try_from(ms).expect("millis"))
}

fn said(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(crate) async fn the_shipped_scorer_takes_the_dispatch_and_its_report_is_kept(env: &Env) {
    let s = &env.s;
    s.clock.set(wall_clock());
    mode(s, "api").await;
    let opened = s
        .admin(
            "improve_run",
            json!({"action": "run", "namespace": "capsid"}),
        )
        .await;
    assert!(opened.to_string().contains("capsid"), "{opened}");
    env.model.push_text(
        &proposal(
            "shrink the app",
            &[("src/app.ts", "export const size = 400;\n")],
        ),
        usage(),
    );
    env.model.push_text(&clear(), usage());
    // The opened run begins on a tick and makes its attempt on the next (as the night does).
    for _ in 0..2 {
        tick(s).await;
    }
    let (attempt, branch, head) = in_flight(env).await;

    // What the server dispatched is what the template takes: its file, every declared input
    // and nothing else.
    let t = Template::of(Workflow::Score);
    let dispatches = env.g.dispatches(REPO);
    let (file, git_ref, inputs) = dispatches.last().expect("the scorer was dispatched");
    assert_eq!(file, Workflow::Score.file_name());
    assert_eq!(git_ref, &branch);
    let sent: Vec<String> = inputs
        .as_object()
        .expect("inputs")
        .keys()
        .cloned()
        .collect();
    let mut declared = t.inputs();
    declared.sort();
    assert_eq!(sent, declared, "the dispatch's inputs are the template's");
    assert_eq!(inputs["attempt_id"], attempt.as_str());
    assert_eq!(inputs["head_sha"], head.as_str());
    assert_eq!(inputs["namespace"], "capsid");

    // The hidden suite's entry point, beside the manifest the fixture keeps.
    let suite = "#!/bin/sh\necho \"CAPSID-$CAPSID_NONCE-BEGIN\"\necho total 40\necho passed 38\necho \"CAPSID-$CAPSID_NONCE-END\"\n";
    let run_key = env._dir.path().join("holdout/improve/holdout/capsid/run");
    std::fs::write(&run_key, suite).expect("the suite's run");

    let work = tempfile::tempdir().expect("the runner's workspace");
    let bin = tempfile::tempdir().expect("fake runner tools");
    let started = s.service.now().plus_millis(-3 * MINUTE_MS).to_string();
    // `gh api .../runs/<id> --jq .run_started_at`, as the runner's gh answers it.
    std::fs::write(
        bin.path().join("gh"),
        format!("#!/bin/sh\necho {}Z\n", &started[..19]),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.path().join("gh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let given = BTreeMap::from([
        ("CAPSID_URL", s.url.clone()),
        ("CAPSID_IMPROVE_KEY", namespace_key(ROOT, "capsid")),
        ("WORKFLOW_SHA", head.clone()),
        ("GH_TOKEN", "ghs_fake".to_owned()),
    ]);
    let mut vars = t.job_env("score", inputs, &given);
    for (k, v) in [
        ("GITHUB_RUN_ID", "4242"),
        ("GITHUB_RUN_ATTEMPT", "1"),
        ("GITHUB_REPOSITORY", REPO),
    ] {
        vars.insert(k.to_owned(), v.to_owned());
    }
    for name in [
        "NAMESPACE",
        "RUN_ID",
        "ATTEMPT_ID",
        "HEAD_SHA",
        "CAPSID_IMPROVE_KEY",
    ] {
        assert!(
            vars.contains_key(name),
            "the score job sets {name}: {vars:?}"
        );
    }

    // The holdout credential, signed with the namespace's key, and the suite read with it.
    let read = run_step(
        &t.step("score", "Read the hidden suite"),
        work.path(),
        &vars,
        Some(bin.path()),
    )
    .await;
    assert!(read.status.success(), "{}", said(&read));
    assert_eq!(
        std::fs::read_to_string(work.path().join("holdout/run")).unwrap(),
        suite
    );
    assert!(work.path().join("holdout/manifest.json").exists());

    // What the container printed between its markers, and what the build job uploaded.
    for (name, text) in [
        ("holdout.total", "40\n"),
        ("holdout.passed", "38\n"),
        ("holdout.metrics", "bundle_kb 400\n"),
    ] {
        std::fs::write(work.path().join(name), text).unwrap();
    }
    std::fs::create_dir_all(work.path().join("attempt-out")).unwrap();
    std::fs::write(
        work.path().join("attempt-out/metrics.json"),
        r#"{"anchors": {"tests_pass": 1}, "secondary": {"bundle_kb": 410}}"#,
    )
    .unwrap();
    let built = run_step(
        &t.step("score", "Build the report"),
        work.path(),
        &vars,
        Some(bin.path()),
    )
    .await;
    assert!(built.status.success(), "{}", said(&built));
    let report: Value =
        serde_json::from_slice(&std::fs::read(work.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["attempt_id"], attempt.as_str(), "{report}");
    assert_eq!(report["holdout"], json!({"total": 40, "passed": 38}));
    // The container's recomputed figure stands over the build's.
    assert_eq!(report["secondary"]["bundle_kb"], 400, "{report}");
    // Three minutes since the run started by the runner's clock, rounded up.
    let minutes = report["ci_minutes"].as_i64().expect("whole minutes");
    assert!((3..=10).contains(&minutes), "{report}");

    let send = t.step("score", "Send the signed report");
    let sent = run_step(&send, work.path(), &vars, Some(bin.path())).await;
    assert!(sent.status.success(), "{}", said(&sent));
    let answer: Value = serde_json::from_slice(&sent.stdout).expect("the server's JSON");
    assert_eq!(answer["verdict"], "kept", "{answer}");
    let a = s.store.attempt(&attempt).await.expect("a").expect("row");
    assert_eq!(a.status, AttemptStatus::Kept);

    // The same report again is a replay: refused, and the step fails.
    let again = run_step(&send, work.path(), &vars, Some(bin.path())).await;
    assert!(!again.status.success(), "{}", said(&again));
    assert!(said(&again).contains("jti"), "{}", said(&again));
}
