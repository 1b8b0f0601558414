//! A job's role (issue 55, items 1 and 2): a job may name its role (`scout`, `planner`,
//! `junior`, `senior`, `deploy`), kept on its row inside its signed envelope, so a role edited,
//! added or removed after post fails the claim as an edited body does; a job of a role gets
//! the role's cap when it names none; a dispatched job keeps its parent's role unless it names
//! one; a role Capsid does not know is refused at post, naming the field, and nothing is posted.

use super::*;

async fn get(c: &Client, id: &Value) -> Value {
    c.ok(
        "jobs",
        json!({"action": "get", "id": id, "namespace": "alpha"}),
    )
    .await["job"]
        .clone()
}

async fn a_job_names_its_role_gets_its_cap_and_its_children_keep_it(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d", json!({})).await;
    let scout = post(&d, "alpha", "Scouting", json!({"role": " scout "})).await;
    assert_eq!(scout["role"], "scout", "{scout}");
    assert_eq!(
        scout["max_cost_usd"],
        json!(0.5),
        "the scout role's cap: {scout}"
    );
    let own_cap = post(
        &d,
        "alpha",
        "Capped junior",
        json!({"role": "junior", "max_cost_usd": 3.0}),
    )
    .await;
    assert_eq!(
        own_cap["max_cost_usd"],
        json!(3.0),
        "its own cap wins: {own_cap}"
    );
    let plain = post(&d, "alpha", "Plain", json!({})).await;
    assert!(plain.get("role").is_none(), "{plain}");
    assert_eq!(get(&d, &scout["id"]).await["role"], "scout");
    let probe = s.probe.as_ref().expect("raw SQL");
    let id = scout["id"].as_str().unwrap();
    assert_eq!(
        probe
            .count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE action = 'job-posted' AND params LIKE '%\"role\":\"scout\"%' AND params LIKE '%{id}%'"
            ))
            .await,
        1,
        "the post's audit row names the role"
    );

    // The driver claims the scout (the highest priority is equal: the oldest first) and
    // dispatches from it: a child naming no role is a scout too; one naming planner is one
    // (two children: the namespace lets a scout dispatch two, a scout's own count being one).
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "dispatch_limits": "scout=2"}),
    )
    .await;
    let claimed = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": scout["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    assert_eq!(claimed["job"]["role"], "scout", "{claimed}");
    let kept = post(&d, "alpha", "Child scout", json!({"parent": scout["id"]})).await;
    assert_eq!(kept["role"], "scout", "{kept}");
    let planner = post(
        &d,
        "alpha",
        "Child planner",
        json!({"parent": scout["id"], "role": "planner"}),
    )
    .await;
    assert_eq!(planner["role"], "planner", "{planner}");
    assert_eq!(planner["max_cost_usd"], json!(2.0), "{planner}");
}

async fn a_role_edited_added_or_removed_after_post_fails_the_claim(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d", json!({})).await;
    let probe = s.probe.as_ref().expect("raw SQL");
    let cases = [
        ("Promoted", json!({"role": "scout"}), "role = 'deploy'"),
        ("Unroled", json!({"role": "senior"}), "role = NULL"),
        ("Enroled", json!({}), "role = 'scout'"),
    ];
    for (title, extra, edit) in cases {
        let job = post(&d, "alpha", title, extra).await;
        let id = job["id"].as_str().unwrap();
        probe
            .execute(&format!("UPDATE jobs SET {edit} WHERE id = '{id}'"))
            .await;
        let out = d
            .ok(
                "jobs",
                json!({"action": "claim", "id": id, "namespace": "alpha"}),
            )
            .await;
        assert_eq!(out["ok"], false, "{title}: {out}");
        assert!(
            out["refusal"]
                .as_str()
                .unwrap_or("")
                .contains("marked failed"),
            "{title}: {out}"
        );
        assert_eq!(get(&d, &job["id"]).await["status"], "failed", "{title}");
        assert_eq!(
            probe
                .count(&format!(
                    "SELECT COUNT(*) FROM audit_log WHERE action = 'job-signature-refused' AND params LIKE '%{id}%'"
                ))
                .await,
            1,
            "{title}"
        );
    }
    // An untouched job of a role is claimed.
    let fine = post(&d, "alpha", "Untouched", json!({"role": "junior"})).await;
    let out = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": fine["id"], "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
}

async fn a_role_capsid_does_not_know_is_refused_naming_the_field(s: &TestServer) {
    setup(s).await;
    let d = driver(s, "d", json!({})).await;
    for bad in [
        json!("wizard"),
        json!("Scout"),
        json!(""),
        json!("x".repeat(40)),
    ] {
        let err = d
            .call(
                "jobs",
                json!({"action": "post", "namespace": "alpha", "title": "Bad",
                       "body": "Do it.\n", "role": bad}),
            )
            .await
            .expect_err("refused");
        assert!(err.contains("role"), "{bad}: {err}");
    }
    let err = d
        .call(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Bad",
                   "body": "Do it.\n", "role": "wizard"}),
        )
        .await
        .expect_err("refused");
    assert!(
        err.contains("scout, planner, junior, senior, deploy"),
        "the refusal lists the roles: {err}"
    );
    let list = d
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    assert_eq!(list["jobs"], json!([]), "{list}");
}

e2e_cases!(crate::e2e_jobs::options();
    a_job_names_its_role_gets_its_cap_and_its_children_keep_it,
    a_role_edited_added_or_removed_after_post_fails_the_claim,
    a_role_capsid_does_not_know_is_refused_naming_the_field,
);
