//! The Handler API's write side (issue 55, item 5): `POST /api/projects` registers a
//! namespace with its repositories and runner settings, a bad setting registering nothing;
//! `POST /api/projects/{ns}/agents` with a role and a brief posts a job for that role (signed
//! with it) that a driver claims; each refuses an unknown field by name, a missing one, and a
//! caller without the right.

use super::*;
use crate::e2e_checkmarks::api;

async fn projects_and_agents_are_spawned_through_curl_alone(s: &TestServer) {
    let register = r#"{"namespace": "spawned", "repo": "octo/spawned",
        "root_dir": "/srv/spawned", "test_command": "sh test.sh", "runtime": "codex",
        "protected_branches": "main,release", "job_max_cost_usd": 4,
        "dispatch_limits": "scout=2, depth=2"}"#;
    let (status, made, _) = api(s, Some(OP_WRITE), "POST", "/api/projects", Some(register)).await;
    assert_eq!(status, 201, "{made}");
    let project = &made["project"];
    assert_eq!(project["namespace"], "spawned", "{made}");
    assert_eq!(project["remote"], "octo/spawned", "{made}");
    assert_eq!(project["root_dir"], "/srv/spawned", "{made}");
    assert_eq!(project["runner"]["test_command"], "sh test.sh", "{made}");
    assert_eq!(
        project["runner"]["protected_branches"], "main,release",
        "{made}"
    );
    assert_eq!(project["runner"]["job_max_cost_usd"], "4", "{made}");
    assert_eq!(
        project["runner"]["dispatch_limits"], "depth=2,children=5,scout=2",
        "{made}"
    );

    // A bad setting registers nothing, naming the field; so does an unknown field.
    for (body, names) in [
        (
            r#"{"namespace": "broken", "repo": "octo/b", "protected_branches": "a..b"}"#,
            "protected_branches",
        ),
        (
            r#"{"namespace": "broken", "repo": "octo/b", "runtime": "aider"}"#,
            "runtime",
        ),
        (
            r#"{"namespace": "broken", "repo": "octo/b", "dispatch_limits": "depth=x"}"#,
            "dispatch_limits: depth must be a whole number",
        ),
        (
            r#"{"namespace": "broken", "repo": "octo/b", "colour": "red"}"#,
            "unknown field colour",
        ),
        (r#"{"repo": "octo/b"}"#, "namespace is required"),
    ] {
        let (status, refused, _) =
            api(s, Some(OP_WRITE), "POST", "/api/projects", Some(body)).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains(names),
            "{body}: {refused}"
        );
    }
    let listed = s.admin("namespaces", json!({})).await;
    assert!(
        !listed.to_string().contains("broken"),
        "a refused registration left a namespace: {listed}"
    );

    // A role and a brief post a job of that role, which a driver of the namespace claims.
    let spawn =
        r#"{"role": "scout", "brief": "Look for stale widgets.\nCompare with the watermark."}"#;
    let (status, posted, _) = api(
        s,
        Some(OP_WRITE),
        "POST",
        "/api/projects/spawned/agents",
        Some(spawn),
    )
    .await;
    assert_eq!(status, 201, "{posted}");
    let job = &posted["job"];
    assert_eq!(job["role"], "scout", "{posted}");
    assert_eq!(job["title"], "scout: Look for stale widgets.", "{posted}");
    assert_eq!(job["max_cost_usd"], json!(0.5), "the role's cap: {posted}");
    let key = s
        .mint(
            "spawned-driver",
            "driver",
            json!({"namespaces": ["spawned"], "grants": ["read", "write"]}),
        )
        .await;
    let d = s.client(&key).await;
    let claimed = d
        .ok("jobs", json!({"action": "claim", "namespace": "spawned"}))
        .await;
    assert_eq!(claimed["job"]["id"], job["id"], "{claimed}");
    assert_eq!(claimed["job"]["role"], "scout", "{claimed}");

    for (body, names) in [
        (r#"{"brief": "x"}"#, "role and brief are required"),
        (r#"{"role": "wizard", "brief": "x"}"#, "role"),
        (
            r#"{"role": "scout", "brief": "x", "paths": ["src"]}"#,
            "unknown field paths",
        ),
    ] {
        let (status, refused, _) = api(
            s,
            Some(OP_WRITE),
            "POST",
            "/api/projects/spawned/agents",
            Some(body),
        )
        .await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(refused.to_string().contains(names), "{body}: {refused}");
    }
    // A key that may not post there is refused, and an unknown key is nobody.
    let (status, _, _) = api(
        s,
        Some("capsid_not_a_key"),
        "POST",
        "/api/projects/spawned/agents",
        Some(spawn),
    )
    .await;
    assert_eq!(status, 401);
    let reader = s
        .mint(
            "reader",
            "session",
            json!({"namespaces": ["spawned"], "grants": ["read"]}),
        )
        .await;
    let (status, refused, _) = api(
        s,
        Some(&reader),
        "POST",
        "/api/projects/spawned/agents",
        Some(spawn),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    let (status, refused, _) = api(s, Some(&reader), "POST", "/api/projects", Some(register)).await;
    assert_eq!(status, 403, "{refused}");
}

e2e_cases!(crate::e2e_jobs::options();
    projects_and_agents_are_spawned_through_curl_alone,
);
