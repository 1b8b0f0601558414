//! The box's doors on the job's record (issue 48): the holder's driver writes what its doors
//! saw (`jobs doors`, the driver's own key), a record sent twice is kept once, `jobs get`
//! answers them oldest first, and the console's view lists the newest. Nobody but the holder
//! (never the run credential the agent holds) writes them, and a bad record changes nothing.

use super::*;

fn record(id: &str, door: &str, host: &str, port: u16, decision: &str, second: u32) -> Value {
    json!({
        "record_id": id, "door": door, "host": host, "port": port, "decision": decision,
        "bytes_up": 120, "bytes_down": 4096,
        "started_at": format!("2026-11-02T10:00:{second:02}.000Z"),
        "ended_at": format!("2026-11-02T10:00:{second:02}.500Z"),
        "detail": (decision != "reached").then(|| format!("{host}:{port} is not allowed")),
    })
}

async fn doors(c: &Client, job: &Value, records: Value) -> Result<Value, String> {
    c.call(
        "jobs",
        json!({"action": "doors", "id": job["id"], "namespace": job["namespace"], "doors": records}),
    )
    .await
}

async fn shown(c: &Client, job: &Value) -> Value {
    c.ok(
        "jobs",
        json!({"action": "get", "id": job["id"], "namespace": job["namespace"]}),
    )
    .await["doors"]
        .clone()
}

async fn the_holders_doors_go_on_the_jobs_record_and_nobody_elses(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let b = driver(s, "b", json!({})).await;
    let job = post(&a, "alpha", "Boxed", json!({})).await;

    // Queued: no box has run for it.
    let queued = doors(
        &a,
        &job,
        json!([record("r1-e0", "egress", "example.com", 443, "refused", 1)]),
    )
    .await
    .expect("an answer");
    assert_eq!(queued["ok"], false, "{queued}");
    assert_eq!(shown(&a, &job).await, json!([]));

    let claimed = a
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    let first = doors(
        &a,
        &job,
        json!([
            record("r1-e0", "egress", "example.com", 443, "refused", 5),
            record("r1-c0", "model", "capsid", 0, "reached", 2),
        ]),
    )
    .await
    .expect("doors");
    assert_eq!(
        (first["ok"].clone(), first["recorded"].clone()),
        (json!(true), json!(2)),
        "{first}"
    );
    let again = doors(
        &a,
        &job,
        json!([
            record("r1-e0", "egress", "example.com", 443, "refused", 5),
            record("r1-e1", "egress", "registry.npmjs.org", 443, "reached", 3),
        ]),
    )
    .await
    .expect("doors");
    assert_eq!(again["recorded"], 1, "{again}");
    let got = shown(&a, &job).await;
    let brief: Vec<(Value, Value, Value, Value)> = got
        .as_array()
        .expect("a list")
        .iter()
        .map(|d| {
            (
                d["door"].clone(),
                d["host"].clone(),
                d["port"].clone(),
                d["decision"].clone(),
            )
        })
        .collect();
    assert_eq!(
        brief,
        vec![
            (json!("model"), json!("capsid"), json!(0), json!("reached")),
            (
                json!("egress"),
                json!("registry.npmjs.org"),
                json!(443),
                json!("reached")
            ),
            (
                json!("egress"),
                json!("example.com"),
                json!(443),
                json!("refused")
            ),
        ],
        "{got}"
    );
    assert_eq!(got[2]["bytes_down"], 4096, "{got}");
    assert_eq!(got[2]["started_at"], "2026-11-02T10:00:05.000Z", "{got}");
    assert_eq!(got[2]["detail"], "example.com:443 is not allowed", "{got}");
    assert!(got[0].get("detail").is_none(), "{got}");

    // Another driver does not write this job's doors; the agent's run credential cannot call
    // doors at all.
    let other = doors(
        &b,
        &job,
        json!([record("r9-e0", "egress", "evil.example", 443, "reached", 7)]),
    )
    .await
    .expect("an answer");
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
    let refused = doors(
        &agent,
        &job,
        json!([record("r9-e1", "egress", "evil.example", 443, "reached", 7)]),
    )
    .await
    .expect_err("the run credential may not write doors");
    assert!(
        refused.contains("scope refused") && refused.contains("jobs.doors"),
        "{refused}"
    );

    // Bad records are refused naming the field, and change nothing.
    let bad = |f: &dyn Fn(&mut Value)| {
        let mut r = record("r1-bad", "egress", "x.example", 443, "reached", 8);
        f(&mut r);
        json!([r])
    };
    for (records, field) in [
        (bad(&|r| r["door"] = json!("ssh")), "door"),
        (bad(&|r| r["record_id"] = json!("a b")), "record_id"),
        (bad(&|r| r["host"] = json!("a host")), "host"),
        (bad(&|r| r["port"] = json!(70000)), "port"),
        (bad(&|r| r["decision"] = json!("allowed")), "decision"),
        (bad(&|r| r["started_at"] = json!("yesterday")), "started_at"),
        (
            bad(&|r| r["ended_at"] = json!("2026-11-02T09:00:00.000Z")),
            "ended_at",
        ),
        (bad(&|r| r["detail"] = json!("x".repeat(301))), "detail"),
        (bad(&|r| r["surprise"] = json!(1)), "surprise"),
        (
            json!([
                record("r1-d", "git", "capsid", 0, "reached", 1),
                record("r1-d", "git", "capsid", 0, "reached", 1)
            ]),
            "twice",
        ),
        (json!([]), "doors"),
    ] {
        let err = doors(&a, &job, records.clone()).await.expect_err("refused");
        assert!(err.contains(field), "{field} in {err} ({records})");
    }
    assert_eq!(shown(&a, &job).await.as_array().map(Vec::len), Some(3));

    // After the job closes its driver may still write what its doors saw last.
    let done = a
        .ok(
            "jobs",
            json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "done"}),
        )
        .await;
    assert_eq!(done["ok"], true, "{done}");
    let late = doors(
        &a,
        &job,
        json!([record("r1-c1", "git", "capsid", 0, "reached", 9)]),
    )
    .await
    .expect("doors");
    assert_eq!(late["recorded"], 1, "{late}");

    // The console's view lists the newest records with their job.
    let view = capsid_core::owner::OwnerService::new(s.service.clone())
        .console_view(
            &capsid_core::caller::Caller::admin("octo"),
            capsid_core::ports::AuditFilter::default(),
        )
        .await
        .expect("the console's view");
    let newest = &view["doors"][0];
    assert_eq!(newest["job_id"], job["id"], "{view}");
    assert_eq!(newest["door"], "git", "{newest}");
    assert!(
        view["doors"]
            .as_array()
            .expect("a list")
            .iter()
            .any(|d| d["host"] == "example.com" && d["decision"] == "refused"),
        "{view}"
    );
}

e2e_cases!(crate::e2e_jobs::options();
    the_holders_doors_go_on_the_jobs_record_and_nobody_elses,
);
