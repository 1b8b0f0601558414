//! The watcher, driven by the clock (each scenario once per store): a healthy system posts
//! nothing; each finding (a stale backup, the schema behind, a loop-set pause, a job blocked
//! over a day, CI red on a default branch over two hours) posts one job in `capsid` by the
//! watcher identity with its fingerprint in the title, and repeats do not; a human-set pause
//! is not a finding; a finding that clears fails its job with `cleared` while it is queued,
//! and leaves a claimed one alone.

use capsid_core::improve::keys::{BACKUP_LAST_OK_KEY, paused_key};
use capsid_core::schedule::Task;
use capsid_core::service::Scheduler;
use capsid_core::time::{Clock, HOUR_MS, MINUTE_MS};
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use super::{ALPHA, audit_rows, autonomy_status, setup};

capsid_tests::github_cases!(
    a_healthy_system_posts_nothing,
    each_finding_posts_one_job_and_repeats_do_not,
    a_cleared_finding_fails_its_queued_job_only,
);

async fn watcher_tick(s: &TestServer) -> Value {
    let out = s
        .admin("improve_run", json!({"action": "tick", "task": "watcher"}))
        .await;
    assert_eq!(out["report"]["ran"][0]["outcome"], "ran", "{out}");
    out["report"]["ran"][0]["report"].clone()
}

async fn fresh_backup(s: &TestServer) {
    s.store
        .put_setting(BACKUP_LAST_OK_KEY, &s.clock.now().to_string(), None)
        .await
        .expect("backup stamp");
}

async fn capsid_jobs(s: &TestServer) -> Vec<Value> {
    let listed = s
        .admin("jobs", json!({"action": "list", "namespace": "capsid"}))
        .await;
    listed["jobs"].as_array().cloned().unwrap_or_default()
}

fn fingerprints(report: &Value, field: &str) -> Vec<String> {
    let mut out: Vec<String> = report[field]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["fingerprint"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

async fn a_healthy_system_posts_nothing(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    fresh_backup(s).await;
    g.add_run(ALPHA, "ci.yml", "main", Some("success"), Vec::new());
    // A human's pause is not a finding.
    let paused = s
        .admin(
            "improve_run",
            json!({"action": "pause", "namespace": "alpha", "reason": "holiday"}),
        )
        .await;
    assert_eq!(paused["ok"], true, "{paused}");
    s.clock.advance(3 * HOUR_MS);
    fresh_backup(s).await;
    let report = watcher_tick(s).await;
    assert_eq!(report["findings"], json!([]), "{report}");
    assert_eq!(report["posted"], json!([]), "{report}");
    assert!(capsid_jobs(s).await.is_empty());
    assert_eq!(autonomy_status(s).await["watcher"]["findings"], json!([]));
    // And nobody can pass a pause off as the loop's.
    let forged = s
        .service
        .call_tool(
            &capsid_core::caller::Caller::cli("test"),
            "improve_run",
            json!({"action": "pause", "namespace": "alpha", "reason": "improve-loop: drift"}),
            &capsid_core::service::NoConfirmer,
        )
        .await;
    assert!(forged.is_err_and(|e| e.to_string().contains("reason")));
}

async fn each_finding_posts_one_job_and_repeats_do_not(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    // CI red on alpha's default branch, a loop-set pause, a job that will be blocked a day,
    // the schema one migration behind, and no backup recorded.
    g.add_run(ALPHA, "ci.yml", "main", Some("failure"), Vec::new());
    s.store
        .put_setting(
            &paused_key("alpha"),
            "improve-loop: drift gate (revert ratio 0.7)",
            None,
        )
        .await
        .expect("a loop pause");
    let key = s
        .mint(
            "gated",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let gated = s.client(&key).await;
    s.admin(
        "jobs",
        json!({"action": "post", "namespace": "alpha", "title": "Gated", "body": "b"}),
    )
    .await;
    let claim = gated
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    let blocked_id = claim["job"]["id"].as_str().expect("id").to_owned();
    let blocked = gated
        .ok(
            "jobs",
            json!({"action": "block", "id": blocked_id, "namespace": "alpha",
                           "reason": "needs a push", "command": "git push origin feature"}),
        )
        .await;
    assert_eq!(blocked["ok"], true, "{blocked}");
    let probe = s.probe.as_ref().expect("probe");
    probe
        .execute("DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)")
        .await;

    // Driven by the scheduler and the clock: the watcher runs every thirty minutes.
    let scheduler = Scheduler::new(s.service.clone(), "replica-1");
    s.clock.advance(25 * HOUR_MS);
    let first = scheduler.tick().await.expect("tick");
    let report = first
        .run_of(Task::Watcher)
        .expect("the watcher was due")
        .report
        .clone();
    let want = vec![
        "backup-stale".to_owned(),
        format!("blocked:{blocked_id}"),
        "ci-red:alpha".to_owned(),
        "loop-paused:alpha".to_owned(),
        "schema-behind".to_owned(),
    ];
    assert_eq!(fingerprints(&report, "findings"), want, "{report}");
    assert_eq!(fingerprints(&report, "posted"), want, "{report}");
    let jobs = capsid_jobs(s).await;
    assert_eq!(jobs.len(), 5, "{jobs:?}");
    for fp in &want {
        assert!(
            jobs.iter().any(|j| j["title"]
                .as_str()
                .unwrap_or_default()
                .contains(&format!("[{fp}]"))),
            "{fp} in a title: {jobs:?}"
        );
    }
    let posted = audit_rows(s, "job-posted").await;
    assert_eq!(
        posted
            .iter()
            .filter(|r| r.actor.as_deref() == Some("watcher"))
            .count(),
        5,
        "posted by the watcher identity"
    );

    s.clock.advance(10 * MINUTE_MS);
    let early = scheduler.tick().await.expect("tick");
    assert!(
        early.run_of(Task::Watcher).is_none(),
        "not due after ten minutes: {early:?}"
    );
    s.clock.advance(20 * MINUTE_MS);
    let again = scheduler.tick().await.expect("tick");
    let report = again
        .run_of(Task::Watcher)
        .expect("due after thirty")
        .report
        .clone();
    assert_eq!(report["posted"], json!([]), "{report}");
    assert_eq!(report["repeated"], 5, "{report}");
    assert_eq!(capsid_jobs(s).await.len(), 5, "repeats post nothing");
    let status = autonomy_status(s).await;
    assert_eq!(
        status["watcher"]["findings"].as_array().map(Vec::len),
        Some(5),
        "{status}"
    );
}

async fn a_cleared_finding_fails_its_queued_job_only(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    s.store
        .put_setting(&paused_key("alpha"), "improve-loop: budget stop", None)
        .await
        .expect("a loop pause");
    let report = watcher_tick(s).await;
    assert_eq!(
        fingerprints(&report, "posted"),
        ["backup-stale", "loop-paused:alpha"],
        "{report}"
    );
    let jobs = capsid_jobs(s).await;
    let job_of = |fp: &str| {
        jobs.iter()
            .find(|j| {
                j["title"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(&format!("[{fp}]"))
            })
            .and_then(|j| j["id"].as_str())
            .map(str::to_owned)
            .expect("a job")
    };
    let (backup_job, pause_job) = (job_of("backup-stale"), job_of("loop-paused:alpha"));
    // Someone takes one of the two jobs; then both conditions clear.
    let key = s
        .mint(
            "fixer",
            "session",
            json!({"namespaces": ["capsid"], "grants": ["read", "write"]}),
        )
        .await;
    let fixer = s.client(&key).await;
    let claim = fixer
        .ok("jobs", json!({"action": "claim", "namespace": "capsid"}))
        .await;
    let held = claim["job"]["id"].as_str().expect("a claim").to_owned();
    let queued = if held == backup_job {
        pause_job
    } else {
        backup_job
    };
    fresh_backup(s).await;
    s.store
        .delete_setting(&paused_key("alpha"))
        .await
        .expect("unpause");
    let report = watcher_tick(s).await;
    assert_eq!(report["findings"], json!([]), "{report}");
    assert_eq!(
        fingerprints(&report, "cleared"),
        ["backup-stale", "loop-paused:alpha"],
        "{report}"
    );
    let jobs = capsid_jobs(s).await;
    let find = |id: &str| {
        jobs.iter()
            .find(|j| j["id"] == json!(id))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (held_job, queued_job) = (find(&held), find(&queued));
    assert_eq!(
        held_job["status"], "claimed",
        "a claimed job is its holder's: {held_job}"
    );
    assert_eq!(queued_job["status"], "failed", "{queued_job}");
    assert!(
        queued_job["result_summary"]
            .as_str()
            .unwrap_or_default()
            .starts_with("cleared"),
        "{queued_job}"
    );
    let failed = audit_rows(s, "job-admin-fail").await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].actor.as_deref(), Some("watcher"));
    assert_eq!(super::params(&failed[0])["reason"], "cleared");
    // A second pass has nothing open and clears nothing.
    let quiet = watcher_tick(s).await;
    assert_eq!(
        (quiet["posted"].clone(), quiet["cleared"].clone()),
        (json!([]), json!([])),
        "{quiet}"
    );
}
