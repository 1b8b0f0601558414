//! Dispatch bounds are the namespace's (issue 55, items 5 and 6): a job of a role dispatches
//! at most its role's count (a scout one), a chain goes at most the namespace's depth, both
//! set by the runner setting `dispatch_limits`; a dispatch past either is refused, posts
//! nothing, and is recorded on the parent's audit trail (`job-dispatch-refused`).

use super::*;

async fn refusals(s: &TestServer, parent: &Value) -> i64 {
    let id = parent.as_str().expect("an id");
    s.probe
        .as_ref()
        .expect("raw SQL")
        .count(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'job-dispatch-refused' AND path = 'jobs/{id}.md' AND params LIKE '%{id}%'"
        ))
        .await
}

async fn dispatch(d: &Client, parent: &Value, title: &str) -> Value {
    d.ok(
        "jobs",
        json!({"action": "post", "namespace": "alpha", "title": title,
               "body": format!("Do {title}.\n"), "parent": parent}),
    )
    .await
}

async fn claim(d: &Client, id: &Value) {
    let out = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
}

async fn open_jobs(d: &Client) -> usize {
    d.ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await["jobs"]
        .as_array()
        .map_or(0, Vec::len)
}

async fn a_scout_dispatches_its_count_and_a_chain_stops_at_the_namespaces_depth(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d", json!({})).await;
    let scout = post(&d, "alpha", "Scouting", json!({"role": "scout"})).await;
    claim(&d, &scout["id"]).await;
    let planner = dispatch(&d, &scout["id"], "Plan it").await;
    assert_eq!(planner["ok"], true, "the scout's one dispatch: {planner}");

    // A scout dispatches one job by default: the second is refused, posts nothing, and is
    // recorded against the scout.
    let before = open_jobs(&d).await;
    let second = dispatch(&d, &scout["id"], "Plan more").await;
    assert_eq!(second["ok"], false, "{second}");
    assert!(
        second["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("already dispatched 1 jobs"),
        "{second}"
    );
    assert_eq!(
        open_jobs(&d).await,
        before,
        "a refused dispatch posted a job"
    );
    assert_eq!(refusals(s, &scout["id"]).await, 1);

    // The namespace raises the scout's count and lowers the depth: the scout may dispatch
    // again, and the planner (depth 1) may not dispatch at all under depth=1.
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "dispatch_limits": " scout=2, depth=1 "}),
    )
    .await;
    let ns = s.admin("namespaces", json!({})).await;
    assert!(
        ns.to_string().contains("depth=1,children=5,scout=2"),
        "the setting is stored normalised: {ns}"
    );
    let again = dispatch(&d, &scout["id"], "Plan more").await;
    assert_eq!(again["ok"], true, "scout=2 lets a second through: {again}");
    // Another driver holds the planner (one driver holds one job).
    let e = driver(s, "e", json!({})).await;
    let planner_id = &planner["job"]["id"];
    claim(&e, planner_id).await;
    let deep = dispatch(&e, planner_id, "Build it").await;
    assert_eq!(deep["ok"], false, "{deep}");
    assert!(
        deep["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("may go 1 deep"),
        "{deep}"
    );
    assert_eq!(refusals(s, planner_id).await, 1);
    assert_eq!(
        refusals(s, &scout["id"]).await,
        1,
        "nothing new on the scout"
    );
}

e2e_cases!(crate::e2e_jobs::options();
    a_scout_dispatches_its_count_and_a_chain_stops_at_the_namespaces_depth,
);
