//! What the Handler API and the checkmark tools refuse: missing and unknown keys, bad cursors,
//! limits, bodies and fields, oversized answers, unknown routes and methods, bad checkpoints;
//! each a clear error and nothing written. And paging through a log with the cursor.

use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use crate::e2e_checkmarks::{api, audit_rows, checkpoint, get, team};

async fn the_api_refuses_bad_keys_and_bad_input_changing_nothing(s: &TestServer) {
    let t = team(s).await;
    checkpoint(
        &t.a2.1,
        json!({"namespace": "alpha", "status": "paused_for_input", "question": "Which region?"}),
    )
    .await;
    let (status, body, www) = api(s, None, "GET", "/api/projects", None).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (401, json!("unauthorized")),
        "{body}"
    );
    assert_eq!(www.as_deref(), Some("Bearer realm=\"capsid-operator\""));
    let (status, body, www) = api(
        s,
        Some("capsid_agent_not-a-key"),
        "GET",
        "/api/projects",
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (401, json!("invalid_token")),
        "{body}"
    );
    assert!(www.unwrap_or_default().contains("invalid_token"));

    let audits = audit_rows(s).await;
    let k = &t.a1.0;
    for (method, path, body, status, says) in [
        (
            "GET",
            "/api/projects/alpha/agents/a2/log?cursor=garbage",
            None,
            400,
            "cursor",
        ),
        (
            "GET",
            "/api/projects/alpha/agents/a2/log?limit=abc",
            None,
            400,
            "limit",
        ),
        (
            "GET",
            "/api/projects/alpha/agents/a2/log?limit=0",
            None,
            400,
            "limit",
        ),
        (
            "GET",
            "/api/projects/alpha/agents/a2/log?colour=red",
            None,
            400,
            "colour",
        ),
        (
            "GET",
            "/api/shared/log?cursor=eyJiIjowfQ",
            None,
            400,
            "cursor",
        ),
        (
            "POST",
            "/api/projects/alpha/agents/a2/answer",
            Some("not json"),
            400,
            "not JSON",
        ),
        (
            "POST",
            "/api/projects/alpha/agents/a2/answer",
            Some("[1]"),
            400,
            "JSON object",
        ),
        (
            "POST",
            "/api/projects/alpha/agents/a2/answer",
            Some(r#"{"answer": 5}"#),
            400,
            "answer",
        ),
        (
            "POST",
            "/api/projects/alpha/agents/a2/answer",
            Some(r#"{"answer": "x", "mood": "ok"}"#),
            400,
            "mood",
        ),
        (
            "POST",
            "/api/projects/alpha/agents/a2/answer",
            Some(r#"{}"#),
            400,
            "answer",
        ),
        (
            "GET",
            "/api/projects/alpha/agents/nobody/checkmark",
            None,
            404,
            "nobody",
        ),
        ("GET", "/api/projects/gamma/agents", None, 403, "gamma"),
        ("GET", "/api/no/such/route", None, 404, "/api/no/such/route"),
        ("GET", "/api/shared/context/bad%20key", None, 400, "key"),
        ("DELETE", "/api/projects", None, 405, "DELETE"),
    ] {
        let (got, json, _) = api(s, Some(k), method, path, body).await;
        assert_eq!(got, status, "{method} {path}: {json}");
        let message = json["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(says),
            "{method} {path}: {message:?} should say {says:?}"
        );
    }
    let long = format!(r#"{{"answer": "{}"}}"#, "a".repeat(16_385));
    let (got, json, _) = api(
        s,
        Some(k),
        "POST",
        "/api/projects/alpha/agents/a2/answer",
        Some(&long),
    )
    .await;
    assert_eq!(got, 400, "{json}");
    assert!(
        json["error"]["message"].as_str().unwrap().contains("16384"),
        "{json}"
    );
    let huge = format!(r#"{{"answer": "{}"}}"#, "a".repeat(70_000));
    let (got, json, _) = api(
        s,
        Some(k),
        "POST",
        "/api/projects/alpha/agents/a2/answer",
        Some(&huge),
    )
    .await;
    assert_eq!(
        (got, json["error"]["code"].clone()),
        (413, json!("too_large"))
    );
    let (got, json, _) = api(
        s,
        Some(k),
        "PUT",
        "/api/shared/context/k",
        Some(&format!(r#"{{"value": "{}"}}"#, "v".repeat(8193))),
    )
    .await;
    assert_eq!(
        got, 400,
        "arguments are bounded before the check, as the Worker's schemas are: {json}"
    );
    assert!(
        json["error"]["message"].as_str().unwrap().contains("8192"),
        "{json}"
    );

    // Bad checkpoints over MCP: clear errors naming the field, nothing written.
    for (args, says) in [
        (
            json!({"namespace": "alpha", "status": "finished"}),
            "status",
        ),
        (
            json!({"namespace": "alpha", "status": "working", "next_steps": "not a list"}),
            "next_steps",
        ),
        (
            json!({"namespace": "alpha", "status": "working", "next_steps": [1]}),
            "next_steps",
        ),
        (
            json!({"namespace": "alpha", "status": "working", "where_it_stopped": "w".repeat(4097)}),
            "where_it_stopped",
        ),
        (
            json!({"namespace": "alpha", "status": "working", "summary": "s".repeat(65_537)}),
            "summary",
        ),
        (
            json!({"namespace": "alpha", "status": "working", "agent": "a2"}),
            "own",
        ),
        (json!({"namespace": "gamma", "status": "working"}), "gamma"),
    ] {
        let err = t.a1.1.err("checkpoint", args.clone()).await;
        assert!(err.contains(says), "{args}: {err}");
    }
    let err =
        t.a1.1
            .err(
                "checkmarks",
                json!({"action": "get", "namespace": "alpha", "agent": "a1"}),
            )
            .await;
    assert!(err.contains("no checkmark"), "{err}");
    let still =
        t.a1.1
            .ok(
                "checkmarks",
                json!({"action": "get", "namespace": "alpha", "agent": "a2"}),
            )
            .await;
    assert_eq!(
        still["checkmark"]["answer"],
        Value::Null,
        "no answer landed"
    );
    assert_eq!(audit_rows(s).await, audits, "bad input wrote nothing");

    // Paging: newest first, the cursor leads to the older page.
    for n in 0..5 {
        checkpoint(
            &t.b1.1,
            json!({"namespace": "beta", "status": "working", "summary": format!("step {n}")}),
        )
        .await;
    }
    let (_, page1) = get(s, &t.b1.0, "/api/projects/beta/agents/b1/log?limit=2").await;
    assert_eq!(page1["truncated"], true);
    assert_eq!(page1["entries"][0]["summary"], "step 4");
    let cursor = page1["next_cursor"].as_str().expect("a cursor").to_owned();
    let (_, page2) = get(
        s,
        &t.b1.0,
        &format!("/api/projects/beta/agents/b1/log?limit=2&cursor={cursor}"),
    )
    .await;
    assert_eq!(page2["entries"][0]["summary"], "step 2");
    assert_eq!(page2["entries"][1]["summary"], "step 1");
    let _ = &t.b2;
}

e2e_cases!(capsid_tests::server::ServerOptions::default(); the_api_refuses_bad_keys_and_bad_input_changing_nothing);
