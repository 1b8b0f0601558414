//! Where a job works (issue 51), through the MCP server: `paths` posted with a job are signed
//! with it and leased by a driver's claim; a job on overlapping paths waits and `jobs get` and
//! `list` say on what; `list` filters by a path; bad patterns are refused naming the field and
//! the rule, and nothing is posted; a lease that ran out is not renewed by a heartbeat.

use super::*;
use capsid_core::time::{Clock, Timestamp};

async fn drive_claim(c: &Client, id: &Value) -> Value {
    c.ok(
        "jobs",
        json!({"action": "claim", "id": id, "namespace": "alpha", "runtimes": ["claude-code"]}),
    )
    .await
}

async fn get(c: &Client, id: &Value) -> Value {
    c.ok(
        "jobs",
        json!({"action": "get", "id": id, "namespace": "alpha"}),
    )
    .await
}

async fn a_driver_leases_a_jobs_paths_and_an_overlapping_job_waits(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let b = driver(s, "b", json!({})).await;
    let api = post(
        &a,
        "alpha",
        "Api",
        json!({"paths": ["src/api/", "docs/api.md"]}),
    )
    .await;
    assert_eq!(
        api["paths"],
        json!(["src/api", "docs/api.md"]),
        "a trailing slash names the folder: {api}"
    );
    let v1 = post(&a, "alpha", "Api v1", json!({"paths": ["src/api/v1/**"]})).await;
    let web = post(&a, "alpha", "Web", json!({"paths": ["src/web/**"]})).await;
    let anything = post(&a, "alpha", "Anything", json!({})).await;

    let took = drive_claim(&a, &api["id"]).await;
    assert_eq!(took["ok"], true, "{took}");
    assert_eq!(
        took["job"]["leased"],
        json!(["src/api", "docs/api.md"]),
        "{took}"
    );

    let refused = drive_claim(&b, &v1["id"]).await;
    assert_eq!(refused["ok"], false, "{refused}");
    let want = format!(
        "waiting on job {} ('Api') for `src/api`",
        api["id"].as_str().unwrap_or("")
    );
    assert!(refused.to_string().contains(&want), "{refused}");
    let got = get(&b, &v1["id"]).await;
    assert_eq!(got["job"]["status"], "queued", "{got}");
    assert_eq!(got["job"]["waiting_on"], json!(want), "{got}");

    // The whole-repository job waits too; the disjoint one is taken beside the first.
    let listed = a
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    let row = |id: &Value| {
        listed["jobs"]
            .as_array()
            .and_then(|rows| rows.iter().find(|j| j["id"] == *id))
            .cloned()
            .unwrap_or_else(|| panic!("{id} not listed: {listed}"))
    };
    assert!(
        row(&anything["id"])["waiting_on"]
            .as_str()
            .is_some_and(|w| w.contains("leases the whole repository"))
    );
    assert!(row(&web["id"]).get("waiting_on").is_none(), "{listed}");
    let beside = drive_claim(&b, &web["id"]).await;
    assert_eq!(beside["ok"], true, "{beside}");

    // The path filter: jobs whose lease covers the path (a job without paths covers all).
    let covering = a
        .ok(
            "jobs",
            json!({"action": "list", "namespace": "alpha", "path": "src/api/v1/mod.rs"}),
        )
        .await;
    let mut ids: Vec<String> = covering["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|j| j["id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    let mut want_ids: Vec<String> = [&api, &v1, &anything]
        .iter()
        .filter_map(|j| j["id"].as_str().map(str::to_owned))
        .collect();
    want_ids.sort();
    assert_eq!(ids, want_ids, "{covering}");

    // Done, the lease ends and the waiting job is handed out.
    let done = a
        .ok(
            "jobs",
            json!({"action": "complete", "id": api["id"], "namespace": "alpha", "result_summary": "api done",
                   "result_ref": "notes/api.md"}),
        )
        .await;
    assert_eq!(done["ok"], true, "{done}");
    let c = driver(s, "c", json!({})).await;
    let next = drive_claim(&c, &v1["id"]).await;
    assert_eq!(next["ok"], true, "{next}");
}

async fn bad_paths_are_refused_naming_the_field_and_nothing_is_posted(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    for (bad, rule) in [
        (json!("src/**"), "must be an array"),
        (json!([]), "at least one pattern"),
        (json!(["/etc/passwd"]), "starts with '/'"),
        (json!(["src/../x"]), "'..'"),
        (json!(["src/{a,b"]), "not a glob"),
        (json!(["ok/**", 7]), "must be an array"),
    ] {
        let err = a
            .call(
                "jobs",
                json!({"action": "post", "namespace": "alpha", "title": "Bad paths",
                       "body": "Do it.\n", "paths": bad}),
            )
            .await
            .expect_err("refused");
        assert!(err.contains("paths") && err.contains(rule), "{bad}: {err}");
    }
    let list = a
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    assert_eq!(list["jobs"], json!([]), "{list}");
}

async fn a_lease_that_ran_out_is_not_renewed(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let job = post(&a, "alpha", "Slow", json!({"paths": ["slow/**"]})).await;
    let took = drive_claim(&a, &job["id"]).await;
    assert_eq!(took["ok"], true, "{took}");
    let beat = a
        .ok(
            "jobs",
            json!({"action": "heartbeat", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(beat["ok"], true, "{beat}");
    let expires = Timestamp::parse(took["job"]["lease_expires"].as_str().unwrap_or(""))
        .expect("the lease's end");
    let after = beat["job"]["lease_expires"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    s.clock.set(
        Timestamp::parse(&after)
            .expect("the renewed lease's end")
            .plus_millis(1),
    );
    assert!(s.clock.now() > expires);
    let late = a
        .ok(
            "jobs",
            json!({"action": "heartbeat", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(late["ok"], false, "{late}");
    assert!(
        late.to_string().contains("ran out at") && late.to_string().contains("Claim it again"),
        "{late}"
    );
    // Its paths are free for another driver's job.
    let b = driver(s, "b", json!({})).await;
    let other = post(&b, "alpha", "Fast", json!({"paths": ["slow/x.rs"]})).await;
    let took = drive_claim(&b, &other["id"]).await;
    assert_eq!(took["ok"], true, "{took}");
}

e2e_cases!(crate::e2e_jobs::options();
    a_driver_leases_a_jobs_paths_and_an_overlapping_job_waits,
    bad_paths_are_refused_naming_the_field_and_nothing_is_posted,
    a_lease_that_ran_out_is_not_renewed,
);
