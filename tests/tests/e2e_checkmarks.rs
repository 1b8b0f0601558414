//! End to end, on SQLite and Postgres: checkmarks, the log, answers and resumes, the global
//! feed and the shared context through real MCP clients on `/ops/mcp` and plain HTTP on the
//! Handler API (`/api/`, as curl would call it), with the one check deciding both.

use capsid_core::ports::AuditFilter;
use capsid_tests::e2e_cases;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

/// A Handler API call: (status, JSON body, WWW-Authenticate).
async fn api(
    s: &TestServer,
    key: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, Value, Option<String>) {
    let client = reqwest::Client::new();
    let url = format!("{}{path}", s.url);
    let mut req = match method {
        "GET" => client.get(&url),
        "POST" => client.post(&url),
        "PUT" => client.put(&url),
        "DELETE" => client.delete(&url),
        other => panic!("no method {other}"),
    };
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_owned());
    }
    let resp = req.send().await.expect("the server answers");
    let status = resp.status().as_u16();
    let www = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = resp.text().await.unwrap_or_default();
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{method} {path}: {status} is not JSON: {text}"));
    (status, json, www)
}

async fn get(s: &TestServer, key: &str, path: &str) -> (u16, Value) {
    let (status, body, _) = api(s, Some(key), "GET", path, None).await;
    (status, body)
}

/// Expects the API's error shape with `status` and a message containing `says`.
fn refused(got: (u16, Value), status: u16, code: &str, says: &str) {
    let (got_status, body) = got;
    assert_eq!(got_status, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message:?} should say {says:?}");
}

async fn audit_rows(s: &TestServer) -> usize {
    s.store
        .recent_audit(&AuditFilter::default(), 100_000)
        .await
        .expect("audit")
        .len()
}

/// Two namespaces, two agents each; b2 may write the shared context.
struct Team {
    a1: (String, Client),
    a2: (String, Client),
    b1: (String, Client),
    b2: (String, Client),
}

async fn team(s: &TestServer) -> Team {
    s.namespace("alpha").await;
    s.namespace("beta").await;
    let mut keys = Vec::new();
    for (name, ns, flags) in [
        ("a1", "alpha", json!({})),
        ("a2", "alpha", json!({})),
        ("b1", "beta", json!({})),
        ("b2", "beta", json!({"can_write_shared": true})),
    ] {
        let key = s
            .mint(
                name,
                "driver",
                json!({"namespaces": [ns], "grants": ["read", "write"], "flags": flags}),
            )
            .await;
        let client = s.client(&key).await;
        keys.push((key, client));
    }
    let mut it = keys.into_iter();
    let mut next = || it.next().expect("four agents");
    Team {
        a1: next(),
        a2: next(),
        b1: next(),
        b2: next(),
    }
}

async fn checkpoint(c: &Client, args: Value) -> Value {
    c.ok("checkpoint", args).await
}

async fn checkmarks_answer_resume_feed_and_shared(s: &TestServer) {
    let t = team(s).await;
    let first = checkpoint(
        &t.a1.1,
        json!({"namespace": "alpha", "status": "working", "where_it_stopped": "schema drafted",
               "next_steps": ["write the migration", "run the tests"], "tests_status": "pass",
               "session_id": "sess-a1", "cost_usd": 0.42, "turns": 12}),
    )
    .await;
    assert!(
        first["checkmark_id"].as_i64().is_some() && first["log_entry_id"].as_i64().is_some(),
        "{first}"
    );
    assert_eq!(first["checkmark"]["agent"], "a1");
    assert_eq!(
        first["checkmark"]["next_steps"],
        json!(["write the migration", "run the tests"])
    );
    assert_eq!(first["log_entry"]["turns"], 12);
    let asked = checkpoint(
        &t.a2.1,
        json!({"namespace": "alpha", "status": "paused_for_input", "question": "Postgres or SQLite for the cache?",
               "where_it_stopped": "choosing a store"}),
    )
    .await;
    let shipped = checkpoint(
        &t.b1.1,
        json!({"namespace": "beta", "status": "done", "tests_status": "pass", "visibility": "global",
               "summary": "shipped the staging deploy", "push_sha": "0123abcd0123abcd"}),
    )
    .await;
    assert_eq!(
        shipped["log_entry"]["ci_status"], "pending",
        "a push awaits CI"
    );
    let private = checkpoint(
        &t.b2.1,
        json!({"namespace": "beta", "status": "working", "summary": "a private note of beta"}),
    )
    .await;

    // One namespace's checkmarks, over MCP and over HTTP.
    let listed =
        t.a1.1
            .ok(
                "checkmarks",
                json!({"action": "list", "namespace": "alpha"}),
            )
            .await;
    let agents: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["a1", "a2"]);
    let (status, body) = get(s, &t.a1.0, "/api/projects/alpha/agents").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["agents"], listed["agents"], "the route is the tool");
    let (status, body) = get(s, &t.a1.0, "/api/projects").await;
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> = body["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["alpha"],
        "a narrowed caller sees only its own namespaces"
    );

    // The paused question answered over the Handler API, visible in the log.
    let (status, body) = get(s, &t.a1.0, "/api/projects/alpha/agents/a2/checkmark").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["checkmark"]["status"], "paused_for_input");
    assert_eq!(
        body["checkmark"]["open_question"],
        "Postgres or SQLite for the cache?"
    );
    let (status, answered, _) = api(
        s,
        Some(&t.a1.0),
        "POST",
        "/api/projects/alpha/agents/a2/answer",
        Some(r#"{"answer": "Postgres: the cache is shared by replicas"}"#),
    )
    .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(
        answered["checkmark"]["status"], "paused_for_input",
        "answered, not resumed"
    );
    assert_eq!(answered["log_entry"]["answered_by"], "agent:a1");
    let (status, log) = get(s, &t.a2.0, "/api/projects/alpha/agents/a2/log").await;
    assert_eq!(status, 200, "{log}");
    assert_eq!(log["entries"][0]["id"], asked["log_entry_id"]);
    assert_eq!(
        log["entries"][0]["answer"],
        "Postgres: the cache is shared by replicas"
    );
    let again = api(
        s,
        Some(&t.a1.0),
        "POST",
        "/api/projects/alpha/agents/a2/answer",
        Some(r#"{"answer": "SQLite"}"#),
    )
    .await;
    refused((again.0, again.1), 409, "conflict", "already answered");
    let mine =
        t.a2.1
            .ok(
                "checkmarks",
                json!({"action": "get", "namespace": "alpha", "agent": "a2"}),
            )
            .await;
    assert_eq!(
        mine["checkmark"]["answer"],
        "Postgres: the cache is shared by replicas"
    );
    let (status, resumed, _) = api(
        s,
        Some(&t.a1.0),
        "POST",
        "/api/projects/alpha/agents/a2/resume",
        None,
    )
    .await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["checkmark"]["status"], "working");
    assert_eq!(resumed["resume"]["requested_by"], "agent:a1");
    assert_eq!(
        resumed["resume"]["answer"],
        "Postgres: the cache is shared by replicas"
    );
    let twice = api(
        s,
        Some(&t.a1.0),
        "POST",
        "/api/projects/alpha/agents/a2/resume",
        None,
    )
    .await;
    refused((twice.0, twice.1), 409, "conflict", "working");

    // A global entry is visible from the other namespace; a project entry is not.
    let (status, feed) = get(s, &t.a1.0, "/api/shared/log").await;
    assert_eq!(status, 200, "{feed}");
    let ids: Vec<i64> = feed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        ids,
        [shipped["log_entry_id"].as_i64().unwrap()],
        "only the global entry"
    );
    assert_eq!(feed["entries"][0]["namespace"], "beta");
    let over_mcp = t.a1.1.ok("checkmarks", json!({"action": "feed"})).await;
    assert_eq!(over_mcp["entries"], feed["entries"]);
    assert!(!feed.to_string().contains("a private note of beta"));
    assert!(
        !ids.contains(&private["log_entry_id"].as_i64().unwrap()),
        "a project entry stays in its namespace"
    );

    // A narrowed agent gets 403 on every route of another namespace.
    for path in [
        "/api/projects/beta/agents",
        "/api/projects/beta/agents/b2/checkmark",
        "/api/projects/beta/agents/b2/log",
    ] {
        refused(get(s, &t.a1.0, path).await, 403, "forbidden", "\"beta\"");
    }
    let cross = api(
        s,
        Some(&t.a1.0),
        "POST",
        "/api/projects/beta/agents/b2/answer",
        Some(r#"{"answer": "x"}"#),
    )
    .await;
    refused((cross.0, cross.1), 403, "forbidden", "beta");
    let err =
        t.a1.1
            .err(
                "checkmarks",
                json!({"action": "log", "namespace": "beta", "agent": "b2"}),
            )
            .await;
    assert!(err.contains("\"beta\""), "{err}");

    // done without a passing test run is refused, and nothing is written.
    let audits = audit_rows(s).await;
    for tests in [json!("fail"), json!("unknown"), Value::Null] {
        let mut args = json!({"namespace": "alpha", "status": "done"});
        if !tests.is_null() {
            args["tests_status"] = tests;
        }
        let err = t.a1.1.err("checkpoint", args).await;
        assert!(err.contains("tests_status"), "{err}");
    }
    let (_, log) = get(s, &t.a1.0, "/api/projects/alpha/agents/a1/log").await;
    assert_eq!(log["count"], 1, "no entry was written");
    assert_eq!(audit_rows(s).await, audits);

    // The shared context: reading needs the read grant, writing can_write_shared.
    let denied = api(
        s,
        Some(&t.a1.0),
        "PUT",
        "/api/shared/context/staging-url",
        Some(r#"{"value": "https://staging"}"#),
    )
    .await;
    refused((denied.0, denied.1), 403, "forbidden", "can_write_shared");
    let err =
        t.a1.1
            .err(
                "shared",
                json!({"action": "set", "key": "staging-url", "value": "x"}),
            )
            .await;
    assert!(err.contains("can_write_shared"), "{err}");
    let (status, set, _) = api(
        s,
        Some(&t.b2.0),
        "PUT",
        "/api/shared/context/staging-url",
        Some(r#"{"value": "https://staging.example"}"#),
    )
    .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["entry"]["set_by"], "agent:b2");
    let (status, one) = get(s, &t.a1.0, "/api/shared/context/staging-url").await;
    assert_eq!(
        (status, one["entry"]["value"].clone()),
        (200, json!("https://staging.example"))
    );
    let (_, all) = get(s, &t.a2.0, "/api/shared/context").await;
    assert_eq!(all["entries"][0]["key"], "staging-url");
    let read =
        t.b1.1
            .ok("shared", json!({"action": "get", "key": "staging-url"}))
            .await;
    assert_eq!(read["entry"]["value"], "https://staging.example");
    let (status, gone, _) = api(
        s,
        Some(&t.b2.0),
        "DELETE",
        "/api/shared/context/staging-url",
        None,
    )
    .await;
    assert_eq!(status, 200, "{gone}");
    refused(
        get(s, &t.a1.0, "/api/shared/context/staging-url").await,
        404,
        "not_found",
        "staging-url",
    );
    let actions: Vec<String> = s
        .store
        .recent_audit(&AuditFilter::default(), 50)
        .await
        .expect("audit")
        .into_iter()
        .filter_map(|r| r.action)
        .collect();
    for want in [
        "shared-set",
        "shared-delete",
        "checkmark-answered",
        "checkmark-resume-requested",
        "checkpoint",
    ] {
        assert!(
            actions.iter().any(|a| a == want),
            "{want} audited: {actions:?}"
        );
    }
}

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

e2e_cases!(capsid_tests::server::ServerOptions::default();
    checkmarks_answer_resume_feed_and_shared,
    the_api_refuses_bad_keys_and_bad_input_changing_nothing,
);
