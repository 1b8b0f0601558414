//! The job ledger (issue 49): the holder's model door writes each call it forwarded
//! (`jobs meter`, the driver's own key), a call sent twice is kept once, the job's record
//! shows its cost per model and per session, the month's spend of a namespace is the sum of
//! its ledger (running jobs included), a finished job's cost is the ledger's whatever its
//! evidence says, a job no door metered keeps what its evidence reported, and the cap is the
//! job's across its sessions. Nobody but the holder (never the run credential the agent
//! holds) writes a job's ledger, and a bad call changes nothing.

use super::*;

fn call(id: &str, model: &str, session: Option<&str>, cost: f64) -> Value {
    json!({
        "call_id": id, "model": model, "session": session,
        "input_tokens": 1200, "output_tokens": 300, "cache_write_tokens": 40, "cache_read_tokens": 7,
        "cost_usd": cost, "priced": "table", "ended": "completed",
        "started_at": "2026-11-02T10:00:00.000Z", "ended_at": "2026-11-02T10:00:03.500Z",
    })
}

async fn meter(c: &Client, job: &Value, calls: Value) -> Result<Value, String> {
    c.call(
        "jobs",
        json!({"action": "meter", "id": job["id"], "namespace": job["namespace"], "calls": calls}),
    )
    .await
}

async fn spend(c: &Client, job: &Value) -> Value {
    c.ok(
        "jobs",
        json!({"action": "get", "id": job["id"], "namespace": job["namespace"]}),
    )
    .await["spend"]
        .clone()
}

/// The month's spend of `ns` as `improve_status` shows it.
async fn month_spent(s: &TestServer, ns: &str) -> Value {
    let status = s.admin("improve_status", json!({})).await;
    status["namespaces"]
        .as_array()
        .and_then(|l| l.iter().find(|n| n["namespace"] == ns))
        .map(|n| n["jobs_budget"]["spent_usd"].clone())
        .unwrap_or_default()
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

async fn the_holders_door_writes_the_ledger_the_month_and_the_record_read(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let b = driver(s, "b", json!({})).await;
    let job = post(&a, "alpha", "Metered", json!({"max_cost_usd": 0.5})).await;

    // Queued: nobody's door runs for it yet.
    let queued = meter(&a, &job, json!([call("call_q", "m", None, 0.1)])).await;
    assert_eq!(
        queued.as_ref().map(|v| v["ok"].clone()),
        Ok(json!(false)),
        "{queued:?}"
    );

    let claimed = a
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    assert_eq!(claimed["spent_usd"], 0.0, "{claimed}");

    let first = meter(
        &a,
        &job,
        json!([
            call("call_1", "claude-sonnet-5", Some("s1"), 0.1234),
            call("call_2", "claude-haiku-4-5", Some("s1"), 0.05),
        ]),
    )
    .await
    .expect("meter");
    assert_eq!(
        (first["ok"].clone(), first["recorded"].clone()),
        (json!(true), json!(2)),
        "{first}"
    );
    assert!(close(&spend(&a, &job).await["cost_usd"], 0.1734));

    // Sent again with one more: the two are kept once, the new one added.
    let again = meter(
        &a,
        &job,
        json!([
            call("call_1", "claude-sonnet-5", Some("s1"), 0.1234),
            call("call_2", "claude-haiku-4-5", Some("s1"), 0.05),
            call("call_3", "claude-sonnet-5", Some("s2"), 0.1),
        ]),
    )
    .await
    .expect("meter");
    assert_eq!(again["recorded"], 1, "{again}");

    // The month reads the ledger while the job runs.
    assert!(close(&month_spent(s, "alpha").await, 0.2734));

    // The job's record: per model and per session.
    let sp = spend(&a, &job).await;
    assert!(close(&sp["cost_usd"], 0.2734), "{sp}");
    assert_eq!(sp["calls"], 3, "{sp}");
    assert!(
        close(&sp["by_model"]["claude-sonnet-5"]["cost_usd"], 0.2234),
        "{sp}"
    );
    assert_eq!(sp["by_model"]["claude-sonnet-5"]["calls"], 2, "{sp}");
    assert_eq!(
        sp["by_model"]["claude-sonnet-5"]["input_tokens"], 2400,
        "{sp}"
    );
    assert!(close(&sp["by_session"]["s1"]["cost_usd"], 0.1734), "{sp}");
    assert!(close(&sp["by_session"]["s2"]["cost_usd"], 0.1), "{sp}");
    assert_eq!(sp["reported_only"], false, "{sp}");

    // Another driver does not write this job's ledger; the agent's run credential cannot call
    // meter at all.
    let other = meter(&b, &job, json!([call("call_b", "m", None, 3.0)]))
        .await
        .expect("answer");
    assert_eq!(other["ok"], false, "{other}");
    assert!(
        other["refusal"]
            .as_str()
            .unwrap_or_default()
            .contains("only the job's holder"),
        "{other}"
    );
    let credential = claimed["run_credential"]
        .as_str()
        .expect("a run credential");
    let agent = s.client(credential).await;
    let refused = meter(&agent, &job, json!([call("call_r", "m", None, 3.0)]))
        .await
        .expect_err("the run credential may not meter");
    assert!(
        refused.contains("scope refused") && refused.contains("jobs.meter"),
        "{refused}"
    );

    // Bad calls are refused naming the field, and change nothing.
    let bad = |f: &dyn Fn(&mut Value)| {
        let mut c = call("call_bad", "m", None, 0.5);
        f(&mut c);
        json!([c])
    };
    for (calls, field) in [
        (bad(&|c| c["cost_usd"] = json!(-1.0)), "cost_usd"),
        (bad(&|c| c["call_id"] = json!("a b")), "call_id"),
        (bad(&|c| c["call_id"] = json!("reported_x")), "reported_"),
        (bad(&|c| c["priced"] = json!("reported")), "reported"),
        (bad(&|c| c["started_at"] = json!("yesterday")), "started_at"),
        (bad(&|c| c["model"] = json!("")), "model"),
        (bad(&|c| c["surprise"] = json!(1)), "surprise"),
        (
            json!([
                call("call_d", "m", None, 0.1),
                call("call_d", "m", None, 0.1)
            ]),
            "twice",
        ),
        (json!([]), "calls"),
    ] {
        let err = meter(&a, &job, calls.clone()).await.expect_err("refused");
        assert!(err.contains(field), "{field} in {err} ({calls})");
    }
    assert!(close(&spend(&a, &job).await["cost_usd"], 0.2734));

    // Finished: the outcome's cost is the ledger's, the evidence's figure named beside it.
    let done = a
        .ok(
            "jobs",
            json!({"action": "complete", "id": job["id"], "namespace": "alpha",
                   "result_summary": "done", "evidence": {"cost_usd": 9.0}}),
        )
        .await;
    assert_eq!(done["ok"], true, "{done}");
    assert!(close(&done["outcome"]["row"]["cost_usd"], 0.2734), "{done}");
    let notes = done["outcome"]["notes"].to_string();
    assert!(
        notes.contains("differs by more than 5%") && notes.contains("$9.0000"),
        "{notes}"
    );
    // Nothing counted twice; a call that settles after the job closed still reaches it.
    assert!(close(&month_spent(s, "alpha").await, 0.2734));
    let late = meter(
        &a,
        &job,
        json!([call("call_4", "claude-sonnet-5", Some("s2"), 0.01)]),
    )
    .await
    .expect("meter");
    assert_eq!(late["recorded"], 1, "{late}");
    assert!(close(&month_spent(s, "alpha").await, 0.2834));
}

async fn a_job_no_door_metered_keeps_its_reported_cost_once(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let job = post(&a, "beta", "Unmetered", json!({})).await;
    a.ok("jobs", json!({"action": "claim", "namespace": "beta"}))
        .await;
    let done = a
        .ok(
            "jobs",
            json!({"action": "complete", "id": job["id"], "namespace": "beta",
                   "result_summary": "done", "evidence": {"cost_usd": 1.5}}),
        )
        .await;
    assert_eq!(done["outcome"]["row"]["cost_usd"], 1.5, "{done}");
    assert!(close(&month_spent(s, "beta").await, 1.5));
    let sp = spend(&a, &job).await;
    assert_eq!(
        (sp["reported_only"].clone(), sp["calls"].clone()),
        (json!(true), json!(0)),
        "{sp}"
    );
    assert!(close(&sp["cost_usd"], 1.5), "{sp}");
}

async fn the_cap_is_the_jobs_across_its_sessions(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let job = post(&a, "alpha", "Two sessions", json!({"max_cost_usd": 1.0})).await;
    a.ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    meter(
        &a,
        &job,
        json!([call("call_1", "claude-sonnet-5", Some("s1"), 0.4)]),
    )
    .await
    .expect("meter");
    let blocked = a
        .ok(
            "jobs",
            json!({"action": "block", "id": job["id"], "namespace": "alpha",
                   "reason": "a question", "command": "make deploy"}),
        )
        .await;
    assert_eq!(blocked["ok"], true, "{blocked}");
    let resumed = a
        .ok(
            "jobs",
            json!({"action": "resume", "id": job["id"], "namespace": "alpha", "reason": "answered"}),
        )
        .await;
    assert_eq!(resumed["ok"], true, "{resumed}");
    assert!(close(&resumed["spent_usd"], 0.4), "{resumed}");
    assert!(close(&resumed["max_cost_usd"], 1.0), "{resumed}");
}

/// A running job reserves only the rest of its cap: what its ledger holds is in the month's
/// spend already, so it is not counted twice. Budget $1.00; job A (cap $0.60) has spent $0.50,
/// so the month holds $0.50 spent and $0.10 reserved, and job B's $0.40 fits, a cent more
/// does not. A's resume after a block reserves $0.10, not $0.60.
async fn a_running_job_reserves_only_the_rest_of_its_cap(s: &TestServer) {
    setup(s).await;
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 1.0}),
    )
    .await;
    let a = driver(s, "a", json!({})).await;
    let b = driver(s, "b", json!({})).await;
    let first = post(&a, "alpha", "First", json!({"max_cost_usd": 0.6})).await;
    let claimed = a
        .ok(
            "jobs",
            json!({"action": "claim", "id": first["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    meter(
        &a,
        &first,
        json!([call("call_a1", "claude-sonnet-5", Some("s1"), 0.5)]),
    )
    .await
    .expect("meter");
    let over = post(&b, "alpha", "Over", json!({"max_cost_usd": 0.41})).await;
    let refused = b
        .ok(
            "jobs",
            json!({"action": "claim", "id": over["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(refused["ok"], false, "{refused}");
    let why = refused["refusal"].as_str().unwrap_or_default();
    assert!(why.contains("$0.10 is reserved"), "{why}");
    let fits = post(&b, "alpha", "Fits", json!({"max_cost_usd": 0.4})).await;
    let granted = b
        .ok(
            "jobs",
            json!({"action": "claim", "id": fits["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(granted["ok"], true, "{granted}");
    // B's claim holds its $0.40; A blocks and resumes: it needs only its last $0.10.
    a.ok(
        "jobs",
        json!({"action": "block", "id": first["id"], "namespace": "alpha",
               "reason": "a question", "command": "make deploy"}),
    )
    .await;
    let resumed = a
        .ok(
            "jobs",
            json!({"action": "resume", "id": first["id"], "namespace": "alpha", "reason": "answered"}),
        )
        .await;
    assert_eq!(resumed["ok"], true, "{resumed}");
    assert!(close(&resumed["spent_usd"], 0.5), "{resumed}");
}

e2e_cases!(crate::e2e_jobs::options();
    a_running_job_reserves_only_the_rest_of_its_cap,
    the_holders_door_writes_the_ledger_the_month_and_the_record_read,
    a_job_no_door_metered_keeps_its_reported_cost_once,
    the_cap_is_the_jobs_across_its_sessions,
);
