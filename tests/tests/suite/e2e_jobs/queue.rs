//! The queue's rules: one open title, signed bodies, one claim per caller, requirements, the
//! holder, and the lease sweep.

use super::*;

async fn duplicate_open_title_refused_until_done(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Fix CI", json!({})).await;
    let dup = d
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "  Fix CI ", "body": "again"}),
        )
        .await;
    assert_eq!(dup["ok"], false);
    assert!(
        dup["refusal"]
            .as_str()
            .unwrap()
            .contains("already has an open job titled 'Fix CI'"),
        "{dup}"
    );
    post(&d, "beta", "Fix CI", json!({})).await;
    let claimed = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["job"]["status"], "claimed", "{claimed}");
    let done = d.ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "fixed"})).await;
    assert_eq!(done["job"]["status"], "done", "{done}");
    post(&d, "alpha", "Fix CI", json!({})).await;
}

async fn stored_body_is_signed(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Signed", json!({})).await;
    let body = job["body"].as_str().unwrap();
    assert_eq!(
        body,
        seal_task(TEST_SECRET, "Do Signed.\n"),
        "the envelope is the reference's"
    );
    assert!(body.starts_with("---\ncapsid-task-signature: "));
    let mirror = s.admin("read", json!({"namespace": "alpha", "path": format!("jobs/{}.md", job["id"].as_str().unwrap())})).await;
    assert!(
        mirror["body"].as_str().unwrap().ends_with(body),
        "the mirror carries the signed body verbatim"
    );
    assert_eq!(mirror["title"], "Job: Signed");
    assert!(
        d.err(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "T", "body": "x </body> y"})
        )
        .await
        .contains("body")
    );
}

async fn tampered_body_fails_at_claim(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Tamper me", json!({})).await;
    let id = job["id"].as_str().unwrap();
    let probe = s.probe.as_ref().expect("raw SQL");
    probe
        .execute(&format!(
            "UPDATE jobs SET body = replace(body, 'Do Tamper', 'Do evil') WHERE id = '{id}'"
        ))
        .await;
    let out = d
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        out["refusal"].as_str().unwrap().contains("marked failed"),
        "{out}"
    );
    let listed = d
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    assert_eq!(listed["jobs"][0]["status"], "failed");
    assert_eq!(probe.count(&format!("SELECT COUNT(*) FROM audit_log WHERE action = 'job-signature-refused' AND params LIKE '%{id}%'")).await, 1);
}

async fn one_claim_per_caller(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d1", json!({})).await;
    post(&d, "alpha", "A", json!({})).await;
    post(&d, "beta", "B", json!({})).await;
    assert_eq!(
        d.ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
            .await["ok"],
        true
    );
    let second = d
        .ok("jobs", json!({"action": "claim", "namespace": "beta"}))
        .await;
    assert_eq!(second["ok"], false);
    assert!(
        second["refusal"]
            .as_str()
            .unwrap()
            .contains("already holds"),
        "{second}"
    );
    let listed = d
        .ok("jobs", json!({"action": "list", "namespace": "beta"}))
        .await;
    assert_eq!(listed["jobs"][0]["status"], "queued");
}

async fn requirements_refuse_and_leave_queued(s: &TestServer) {
    setup(s).await;
    let poster = driver(s, "poster", json!({})).await;
    let flagged = post(
        &poster,
        "alpha",
        "Needs merge",
        json!({"required_flags": ["can_merge"]}),
    )
    .await;
    let d = driver(s, "plain", json!({})).await;
    let out = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": flagged["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], false);
    assert!(
        out["refusal"].as_str().unwrap().contains("can_merge"),
        "{out}"
    );
    let record = post(
        &poster,
        "alpha",
        "Needs record",
        json!({"min_record": {"prs_merged": 2}}),
    )
    .await;
    let out = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": record["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], false);
    assert!(
        out["refusal"]
            .as_str()
            .unwrap()
            .contains("at least 2 merged pull requests"),
        "{out}"
    );
    let listed = d
        .ok(
            "jobs",
            json!({"action": "list", "namespace": "alpha", "status": "queued"}),
        )
        .await;
    assert_eq!(
        listed["jobs"].as_array().unwrap().len(),
        2,
        "both stay queued"
    );
    assert!(d.err("jobs", json!({"action": "post", "namespace": "alpha", "title": "x", "body": "y", "required_flags": ["root"]})).await.contains("root"));
    // A corrupt stored requirement fails the job at claim (fail closed).
    let corrupt = post(&poster, "alpha", "Corrupt", json!({})).await;
    let id = corrupt["id"].as_str().unwrap();
    s.probe
        .as_ref()
        .unwrap()
        .execute(&format!(
            "UPDATE jobs SET required_scopes = '{{\"flags\": \"can_merge\"}}' WHERE id = '{id}'"
        ))
        .await;
    let out = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], false);
    assert_eq!(out["job"]["status"], "failed", "{out}");
}

/// A claim without an id takes the first job this caller may take (issue 51, item 6): a job
/// at the head of the queue needing a flag (or a record) the caller lacks never stalls the
/// plain job behind it; with nothing it may take, the refusal names what each job waits on.
async fn a_claim_walks_past_jobs_it_cannot_take(s: &TestServer) {
    setup(s).await;
    let poster = driver(s, "poster", json!({})).await;
    let flagged = post(
        &poster,
        "alpha",
        "Needs merge",
        json!({"required_flags": ["can_merge"], "priority": 9}),
    )
    .await;
    let record = post(
        &poster,
        "alpha",
        "Needs record",
        json!({"min_record": {"prs_merged": 2}, "priority": 5}),
    )
    .await;
    let plain = post(&poster, "alpha", "Plain", json!({"priority": 1})).await;
    let d = driver(s, "plain-driver", json!({})).await;
    let out = d
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(out["job"]["id"], plain["id"], "{out}");
    // The two it passed over are still queued, untouched.
    for job in [&flagged, &record] {
        let got = d
            .ok(
                "jobs",
                json!({"action": "get", "id": job["id"], "namespace": "alpha"}),
            )
            .await;
        assert_eq!(got["job"]["status"], "queued", "{got}");
        assert!(got["job"]["claimed_by"].is_null(), "{got}");
    }
    // Another plain driver finds nothing it may take: the refusal names each job and why.
    let e = driver(s, "other-driver", json!({})).await;
    let out = e
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(out["ok"], false, "{out}");
    let why = out["refusal"].as_str().unwrap_or("");
    let flagged_id = flagged["id"].as_str().unwrap();
    let record_id = record["id"].as_str().unwrap();
    assert!(
        why.contains("none of the 2 queued jobs considered")
            && why.contains(&format!("- {flagged_id} ('Needs merge')"))
            && why.contains("can_merge")
            && why.contains(&format!("- {record_id} ('Needs record')"))
            && why.contains("at least 2 merged pull requests"),
        "{why}"
    );
    // A driver holding can_merge takes the head of the queue.
    let merger = driver(s, "merger", json!({"flags": {"can_merge": true}})).await;
    let out = merger
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(out["job"]["id"], flagged["id"], "{out}");
}

async fn only_the_holder_completes(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let b = driver(s, "b", json!({})).await;
    let job = post(&a, "alpha", "Mine", json!({})).await;
    a.ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    let out = b.ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "stolen"})).await;
    assert_eq!(out["ok"], false);
    assert!(
        out["refusal"].as_str().unwrap().contains("held by agent:a"),
        "{out}"
    );
}

async fn expired_lease_is_swept_and_old_holder_refused(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let job = post(&a, "alpha", "Slow", json!({})).await;
    a.ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    let scheduler = Scheduler::new(s.service.clone(), "replica-1");
    assert_eq!(
        scheduler.tick().await.unwrap().swept,
        0,
        "the lease is live"
    );
    s.clock.advance(JOB_LEASE_MS + MINUTE_MS);
    let report = scheduler.tick().await.unwrap();
    assert!(report.led && report.swept == 1, "{report:?}");
    let listed = a
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    assert_eq!(listed["jobs"][0]["status"], "queued");
    assert!(listed["jobs"][0]["claimed_by"].is_null());
    let out = a.ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "late"})).await;
    assert_eq!(out["ok"], false);
    assert!(
        out["refusal"].as_str().unwrap().contains("lease expired"),
        "{out}"
    );
    let other = Scheduler::new(s.service.clone(), "replica-2");
    s.clock.advance(MINUTE_MS);
    assert!(
        !other.tick().await.unwrap().led,
        "one leader per sweep across replicas"
    );
}

/// `jobs get`: one job by id with its outcome once it ended; a job of another namespace is
/// "no job" when a namespace is named, a narrowed caller cannot read outside its namespaces,
/// and a missing id is refused.
async fn get_returns_one_job_with_its_outcome(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Ship it", json!({})).await;
    let id = job["id"].as_str().unwrap().to_owned();
    let queued = d
        .ok(
            "jobs",
            json!({"action": "get", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(queued["ok"], true, "{queued}");
    assert_eq!(queued["job"]["status"], "queued", "{queued}");
    assert_eq!(queued["outcome"], serde_json::Value::Null, "{queued}");
    d.ok(
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "alpha"}),
    )
    .await;
    let done = d
        .ok("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "shipped"}))
        .await;
    assert_eq!(done["ok"], true, "{done}");
    let got = d
        .ok(
            "jobs",
            json!({"action": "get", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(got["job"]["status"], "done", "{got}");
    assert_eq!(got["job"]["result_summary"], "shipped", "{got}");
    assert_eq!(got["outcome"]["job_id"], id.as_str(), "{got}");
    assert_eq!(got["outcome"]["agent"], "agent:d1", "{got}");
    let elsewhere = d
        .ok(
            "jobs",
            json!({"action": "get", "id": id, "namespace": "beta"}),
        )
        .await;
    assert_eq!(elsewhere["ok"], false, "{elsewhere}");
    assert!(
        elsewhere["refusal"].as_str().unwrap().contains("no job"),
        "{elsewhere}"
    );
    let missing = d
        .ok("jobs", json!({"action": "get", "namespace": "alpha"}))
        .await;
    assert_eq!(missing["ok"], false, "{missing}");
    assert!(
        missing["refusal"].as_str().unwrap().contains("needs an id"),
        "{missing}"
    );
    let key = s
        .mint(
            "beta-only",
            "session",
            json!({"namespaces": ["beta"], "grants": ["read"]}),
        )
        .await;
    let narrowed = s.client(&key).await;
    let refused = narrowed
        .call(
            "jobs",
            json!({"action": "get", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("alpha"))
            || refused.as_ref().is_ok_and(|v| v["ok"] == false),
        "a beta-only key cannot read alpha's job: {refused:?}"
    );
    let refused = narrowed
        .call("jobs", json!({"action": "get", "id": id}))
        .await;
    assert!(
        !refused.as_ref().is_ok_and(|v| v["ok"] == true),
        "without a namespace, a narrowed key reads nothing: {refused:?}"
    );
}

e2e_cases!(crate::e2e_jobs::options();
    get_returns_one_job_with_its_outcome,
    duplicate_open_title_refused_until_done,
    stored_body_is_signed,
    tampered_body_fails_at_claim,
    one_claim_per_caller,
    requirements_refuse_and_leave_queued,
    a_claim_walks_past_jobs_it_cannot_take,
    only_the_holder_completes,
    expired_lease_is_swept_and_old_holder_refused,
);
