//! End to end: the work queue through a real MCP client on both stores, one scenario per rule
//! of the reference (section 6) and the gate policy (7.4); GitHub is a fake behind the
//! `RepoHost` port.

use std::sync::{Arc, OnceLock};

use capsid_core::jobs::lease::JOB_LEASE_MS;
use capsid_core::jobs::signature::seal_task;
use capsid_core::service::Scheduler;
use capsid_core::time::MINUTE_MS;
use capsid_tests::e2e_cases;
use capsid_tests::fake_repo::FakeRepoHost;
use capsid_tests::server::{Client, ServerOptions, TEST_SECRET, TestServer};
use serde_json::{Value, json};

const OP_WRITE: &str = "operator-write-key-for-job-tests";

fn host() -> Arc<FakeRepoHost> {
    static HOST: OnceLock<Arc<FakeRepoHost>> = OnceLock::new();
    HOST.get_or_init(|| {
        let h = FakeRepoHost::default();
        h.add_pr("octo/alpha", 1, true, 3, 4, "sha-one");
        h.add_pr("octo/alpha", 2, true, 2, 1, "sha-two");
        h.runs("octo/alpha", "sha-two", &[("completed", Some("success")), ("completed", Some("skipped"))]);
        h.break_repo("octo/broken");
        h.add_pr("octo/alpha", 7, false, 1, 1, "sha-seven");
        h.comment("octo/alpha", 7, "rev", "REVIEW: needs a test. CHANGES", "2026-11-01T00:00:00Z");
        h.add_pr("octo/alpha", 8, false, 1, 1, "sha-eight");
        h.comment("octo/alpha", 8, "rev", "REVIEW: too early. CHANGES", "2026-11-01T00:00:00Z");
        h.comment("octo/alpha", 8, "rev", "REVIEW: looks right. **APPROVE**", "2026-11-02T00:00:00Z");
        h.file("octo/alpha", "migrations/0002_add.sql", "-- additive\nALTER TABLE jobs ADD COLUMN note TEXT;\nCREATE INDEX IF NOT EXISTS jobs_note ON jobs (note);");
        Arc::new(h)
    })
    .clone()
}

fn options() -> ServerOptions {
    ServerOptions {
        operator_keys: Some(capsid_core::crypto::sha256_hex(OP_WRITE)),
        sessions: false,
        repo_host: Some(host()),
        webhook: None,
        ..ServerOptions::default()
    }
}

async fn driver(s: &TestServer, name: &str, extra: Value) -> Client {
    let mut axes = json!({"namespaces": ["alpha", "beta"], "grants": ["read", "write"]});
    if let (Value::Object(a), Value::Object(e)) = (&mut axes, extra) {
        a.extend(e);
    }
    let key = s.mint(name, "driver", axes).await;
    s.client(&key).await
}

async fn setup(s: &TestServer) {
    s.namespace("alpha").await;
    s.namespace("beta").await;
}

async fn post(c: &Client, ns: &str, title: &str, extra: Value) -> Value {
    let mut args = json!({"action": "post", "namespace": ns, "title": title, "body": format!("Do {title}.\n")});
    if let (Value::Object(a), Value::Object(e)) = (&mut args, extra) {
        a.extend(e);
    }
    let out = c.ok("jobs", args).await;
    assert_eq!(out["ok"], true, "post {title}: {out}");
    out["job"].clone()
}

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

async fn block_then_resume_rules_and_the_cap(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let seat = driver(s, "seat", json!({})).await;
    let job = post(&a, "alpha", "Gated", json!({})).await;
    let id = job["id"].clone();
    a.ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    let blocked = a.ok("jobs", json!({"action": "block", "id": id, "namespace": "alpha", "reason": "needs a push", "command": "git push origin feature"})).await;
    assert_eq!(blocked["job"]["status"], "blocked");
    assert!(blocked["job"]["result_summary"].as_str().unwrap().contains(
        "Run this, then send it back in with jobs action 'resume':\n\n    git push origin feature"
    ));
    let out = seat
        .ok(
            "jobs",
            json!({"action": "resume", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], false);
    assert!(
        out["refusal"].as_str().unwrap().contains("needs a reason"),
        "{out}"
    );
    for round in 1..=2 {
        let out = seat
            .ok(
                "jobs",
                json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "pushed"}),
            )
            .await;
        assert_eq!(out["ok"], true, "resume {round}: {out}");
        assert_eq!(out["job"]["claimed_by"], "agent:seat");
        assert_eq!(out["job"]["corrections_count"], round);
        seat.ok("jobs", json!({"action": "block", "id": id, "namespace": "alpha", "reason": "again", "command": "git push origin feature"})).await;
    }
    let capped = seat
        .ok(
            "jobs",
            json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "pushed"}),
        )
        .await;
    assert_eq!(
        capped["ok"], false,
        "the third non-admin resume hits the cap"
    );
    assert!(
        capped["refusal"].as_str().unwrap().contains("retry cap"),
        "{capped}"
    );
    let admin = s.client(OP_WRITE).await;
    let lifted = admin
        .ok(
            "jobs",
            json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "admin ruled"}),
        )
        .await;
    assert_eq!(lifted["ok"], true, "{lifted}");
    assert_eq!(
        lifted["job"]["corrections_count"], 2,
        "an admin resume spends no correction"
    );
}

async fn write_policy(s: &TestServer, enabled: bool) {
    let body = format!(
        "# Gate policy\n\n- version: 2026-11\n- enabled: {enabled}\n\n- `additive_migration` additive schema changes\n- `push_branch` pushing a feature branch\n- `open_pr` opening a pull request\n"
    );
    s.namespace("capsid").await;
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": body, "allow_improve_paths": true})).await;
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
}

async fn gate_policy_pre_approval(s: &TestServer) {
    setup(s).await;
    write_policy(s, true).await;
    let a = driver(s, "a", json!({})).await;
    let seat = driver(s, "seat", json!({})).await;
    let block_with = async |title: &str, command: &str| {
        let job = post(&a, "alpha", title, json!({})).await;
        a.ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
        a.ok("jobs", json!({"action": "block", "id": job["id"], "namespace": "alpha", "reason": "gate", "command": command})).await;
        job["id"].as_str().unwrap().to_owned()
    };
    let forced = block_with("Force", "git push --force origin x").await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": forced, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(out["ok"], false, "the never-list refuses --force: {out}");
    let plain = block_with("Push", "git push origin feature").await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": plain, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(out["ok"], true, "{out}");
    seat.ok("jobs", json!({"action": "complete", "id": plain, "namespace": "alpha", "result_summary": "pushed"})).await;
    let audit = s.probe.as_ref().unwrap().count(&format!("SELECT COUNT(*) FROM audit_log WHERE action = 'job-resumed' AND params LIKE '%push_branch%' AND params LIKE '%{plain}%'")).await;
    assert_eq!(audit, 1, "the approval class is audited");
    let migration = block_with(
        "Migrate",
        "npx wrangler d1 execute capsid --remote --file=migrations/0002_add.sql",
    )
    .await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": migration, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(
        out["ok"], true,
        "an additive migration read from the repo passes: {out}"
    );
    seat.ok(
        "jobs",
        json!({"action": "fail", "id": migration, "namespace": "alpha", "reason": "done testing"}),
    )
    .await;
    // Edited after signing: authorizes nothing.
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "mode": "append", "body": "edited", "allow_improve_paths": true})).await;
    let again = block_with("Push 2", "git push origin feature").await;
    let out = seat.ok("jobs", json!({"action": "resume", "id": again, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await;
    assert_eq!(out["ok"], false);
    assert!(out["refusal"].as_str().unwrap().contains("signed"), "{out}");
}

/// A policy authorizes only with the signature its signing recorded (SPEC 8). Job bodies and
/// policies share the signing key and envelope, so an agent holding `capsid` and
/// `can_touch_protected` could post a job whose body is a policy, read the sealed text from
/// the job's mirror and write it to `capsid/policy/gates.md` without `sign_policy`; and an
/// older signed policy could be written back over a newer one. Neither authorizes anything.
async fn a_policy_not_signed_by_the_admin_authorizes_nothing(s: &TestServer) {
    setup(s).await;
    s.namespace("capsid").await;
    let policy = "# Gate policy\n\n- version: 2026-11\n- enabled: true\n\n- `additive_migration` additive schema changes\n- `push_branch` pushing a feature branch\n- `open_pr` opening a pull request\n";
    let key = s
        .mint(
            "forger",
            "session",
            json!({"namespaces": ["alpha", "capsid"], "grants": ["read", "write"], "flags": {"can_touch_protected": true}}),
        )
        .await;
    let forger = s.client(&key).await;
    let job = post(
        &forger,
        "capsid",
        "Looks like a policy",
        json!({"body": policy}),
    )
    .await;
    let id = job["id"].as_str().expect("id").to_owned();
    let mirror = forger
        .ok(
            "read",
            json!({"namespace": "capsid", "path": format!("jobs/{id}.md")}),
        )
        .await;
    let body = mirror["body"].as_str().expect("mirror body");
    let (_, sealed) = body
        .split_once("## The prompt\n\n")
        .expect("the prompt section");
    assert!(
        sealed.starts_with("---\ncapsid-task-signature: "),
        "{sealed}"
    );
    let wrote = forger
        .ok("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": sealed, "allow_improve_paths": true}))
        .await;
    assert_eq!(wrote["action"], "created", "{wrote}");

    let a = driver(s, "a", json!({})).await;
    let seat = driver(s, "seat", json!({})).await;
    let blocked = async |title: &str| {
        let job = post(&a, "alpha", title, json!({})).await;
        a.ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
        a.ok("jobs", json!({"action": "block", "id": job["id"], "namespace": "alpha", "reason": "gate", "command": "git push origin feature"})).await;
        job["id"].as_str().expect("id").to_owned()
    };
    let resume = async |id: &str| {
        seat.ok("jobs", json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "policy", "approved_by_policy": "2026-11"})).await
    };
    let first = blocked("Push forged").await;
    let out = resume(&first).await;
    assert_eq!(
        out["ok"], false,
        "a forged policy authorizes nothing: {out}"
    );
    assert!(
        out["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("not signed by the admin"),
        "{out}"
    );

    // Signed by the admin, it authorizes; an older signed text written back does not.
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
    let out = resume(&first).await;
    assert_eq!(out["ok"], true, "the admin's signature authorizes: {out}");
    seat.ok(
        "jobs",
        json!({"action": "fail", "id": first, "namespace": "alpha", "reason": "done testing"}),
    )
    .await;
    let old = s
        .admin(
            "read",
            json!({"namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    let old = old["body"].as_str().expect("body").to_owned();
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "mode": "patch", "find": "- enabled: true", "replace_with": "- enabled: false", "allow_improve_paths": true, "confirm": true})).await;
    let resigned = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(resigned["resigned"], true, "{resigned}");
    forger
        .ok("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": old, "allow_improve_paths": true, "confirm": true}))
        .await;
    let second = blocked("Push replayed").await;
    let out = resume(&second).await;
    assert_eq!(
        out["ok"], false,
        "a replayed older signature authorizes nothing: {out}"
    );
    assert!(
        out["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("not signed by the admin"),
        "{out}"
    );
}

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

async fn sixty_four_clients_claim_each_job_once(s: &TestServer) {
    let run = capsid_tests::server::claim_crowd(s, 64, 2_000).await;
    assert_eq!(run.claimed, 2_000, "every job was claimed: {run:?}");
    assert_eq!(run.distinct, 2_000, "and none twice: {run:?}");
    let probe = s.probe.as_ref().unwrap();
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM jobs WHERE namespace = 'queue' AND status = 'done'")
            .await,
        2_000
    );
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'job-claimed'")
            .await,
        2_000,
        "one claim audited per job"
    );
    eprintln!(
        "64 clients over 2,000 jobs: {:.0} claims/s (debug build, test machine)",
        run.claimed as f64 / run.elapsed.as_secs_f64()
    );
}

e2e_cases!(super::options();
    sixty_four_clients_claim_each_job_once,
    duplicate_open_title_refused_until_done,
    stored_body_is_signed,
    tampered_body_fails_at_claim,
    one_claim_per_caller,
    requirements_refuse_and_leave_queued,
    only_the_holder_completes,
    expired_lease_is_swept_and_old_holder_refused,
    block_then_resume_rules_and_the_cap,
    gate_policy_pre_approval,
    a_policy_not_signed_by_the_admin_authorizes_nothing,
    evidence_is_verified_or_left_unverified,
    review_gate_ignores_github_comments,
    improve_status_reports_the_queue,
);
