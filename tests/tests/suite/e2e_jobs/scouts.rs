//! Scheduled scouts (issue 55, item 3): a signed scout schedule
//! (`capsid/policy/scouts/<namespace>/<name>.md`) makes the scheduler's `scouts` task post one
//! `scout` job per window, as `scheduler`, whose body names the watermark the scout keeps; an
//! unsigned or edited schedule posts nothing and says why; a window's job is posted once
//! however many ticks (and replicas) run, and not while the schedule's earlier scout is open.
//! The scout's run credential writes its watermark under `scouts/` and nothing else.

use super::*;

const SCHEDULE: &str = "policy/scouts/alpha/widgets.md";
const BODY: &str =
    "# Widgets\n- version: 2\n- enabled: true\n- every: 1h\n- brief: Look for stale widgets.\n";

async fn write_schedule(s: &TestServer, body: &str, sign: bool) {
    let written = s
        .admin(
            "write",
            json!({"namespace": "capsid", "path": SCHEDULE, "title": "Widgets scout",
                   "body": body, "allow_improve_paths": true, "confirm": true}),
        )
        .await;
    assert!(written.get("error").is_none(), "{written}");
    if sign {
        let signed = s
            .admin(
                "improve_run",
                json!({"action": "sign_policy", "namespace": "capsid", "path": SCHEDULE}),
            )
            .await;
        assert_eq!(signed["ok"], true, "{signed}");
    }
}

/// The `scouts` task now (as `capsid tick --task scouts`); its report.
async fn tick(s: &TestServer) -> Value {
    let out = s
        .admin("improve_run", json!({"action": "tick", "task": "scouts"}))
        .await;
    assert_eq!(out["ok"], true, "{out}");
    let run = &out["report"]["ran"][0];
    assert_eq!(run["task"], "scouts", "{out}");
    assert_eq!(run["outcome"], "ran", "{out}");
    run["report"].clone()
}

async fn scouts(d: &Client) -> Vec<Value> {
    d.ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await["jobs"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_signed_schedule_posts_one_scout_per_window(s: &TestServer) {
    // The windows are an hour from the epoch: start a minute into one, whatever the time of
    // day the test runs at.
    let now = capsid_core::time::Clock::now(&*s.clock).as_millis();
    let hour = 60 * MINUTE_MS;
    s.clock.set(capsid_core::time::Timestamp::from_millis(
        now - now % hour + MINUTE_MS,
    ));
    setup(s).await;
    // Schedules live in the namespace `capsid`, registered like any other.
    s.namespace("capsid").await;
    let d = driver(s, "d", json!({})).await;

    // Unsigned: nothing, and the report says why.
    write_schedule(s, BODY, false).await;
    let report = tick(s).await;
    assert!(
        report["inert"][0]
            .as_str()
            .unwrap_or("")
            .contains("not validly signed"),
        "{report}"
    );
    assert!(scouts(&d).await.is_empty());

    // Signed: the window's scout job, by the scheduler, as a scout with its cap.
    write_schedule(s, BODY, true).await;
    let report = tick(s).await;
    assert_eq!(report["schedules"][0]["outcome"], "posted", "{report}");
    let jobs = scouts(&d).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let job = &jobs[0];
    assert_eq!(job["id"], report["schedules"][0]["job_id"], "{report}");
    assert_eq!(job["title"], "Scout widgets", "{job}");
    assert_eq!(job["role"], "scout", "{job}");
    assert_eq!(job["posted_by"], "scheduler", "{job}");
    assert_eq!(job["max_cost_usd"], json!(0.5), "{job}");
    let got = d
        .ok(
            "jobs",
            json!({"action": "get", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    let body = got["job"]["body"].as_str().unwrap_or("");
    assert!(body.contains("Look for stale widgets."), "{got}");
    assert!(body.contains("scouts/widgets/watermark.md"), "{got}");

    // The same window again: posted already, nothing new.
    s.clock.advance(10 * MINUTE_MS);
    let report = tick(s).await;
    assert_eq!(
        report["schedules"][0]["outcome"], "posted_already",
        "{report}"
    );
    assert_eq!(scouts(&d).await.len(), 1);

    // The next window while the first scout is still open: held by its title.
    s.clock.advance(60 * MINUTE_MS);
    let report = tick(s).await;
    assert_eq!(report["schedules"][0]["outcome"], "still_open", "{report}");
    assert_eq!(scouts(&d).await.len(), 1);

    // The scout runs: its run credential keeps the watermark, and writes nothing else.
    let claimed = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    let agent = s
        .client(
            claimed["run_credential"]
                .as_str()
                .expect("a run credential"),
        )
        .await;
    let kept = agent
        .call(
            "write",
            json!({"namespace": "alpha", "path": "scouts/widgets/watermark.md",
                   "title": "Watermark", "body": "Seen: widget 7.\n"}),
        )
        .await;
    assert!(kept.is_ok(), "{kept:?}");
    let elsewhere = agent
        .call(
            "write",
            json!({"namespace": "alpha", "path": "notes/plan.md", "title": "Plan", "body": "x\n"}),
        )
        .await
        .expect_err("a run writes only under scouts/");
    assert!(elsewhere.contains("only under scouts/"), "{elsewhere}");
    let done = d
        .ok(
            "jobs",
            json!({"action": "complete", "id": job["id"], "namespace": "alpha",
                   "result_summary": "Nothing new since the watermark."}),
        )
        .await;
    assert_eq!(done["ok"], true, "{done}");

    // The first scout done: this window's scout is posted, once, by two replicas at once.
    let (a, b) = (s.service.clone(), s.service.clone());
    let (ra, rb) = tokio::join!(a.scout_pass(), b.scout_pass());
    let outcomes: Vec<&str> = [ra.expect("pass a"), rb.expect("pass b")]
        .iter()
        .map(|r| r.schedules[0].outcome)
        .collect();
    assert!(outcomes.contains(&"posted"), "{outcomes:?}");
    assert_eq!(scouts(&d).await.len(), 2);

    // Edited after signing: it posts nothing, and says so.
    write_schedule(s, &BODY.replace("every: 1h", "every: 15m"), false).await;
    s.clock.advance(60 * MINUTE_MS);
    let report = tick(s).await;
    assert!(
        report["inert"][0]
            .as_str()
            .unwrap_or("")
            .contains("not validly signed"),
        "{report}"
    );
    assert_eq!(scouts(&d).await.len(), 2);
}

e2e_cases!(crate::e2e_jobs::options();
    a_signed_schedule_posts_one_scout_per_window,
);
