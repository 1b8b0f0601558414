//! The whole flow: checkpoints in two namespaces, an answer and a resume over the Handler API,
//! the global feed seen from the other namespace, 403 across namespaces, `done` refused
//! without passing tests, and the shared context behind `can_write_shared`.

use capsid_core::ports::AuditFilter;
use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use crate::e2e_checkmarks::{api, audit_rows, checkpoint, get, refused, team};

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

    // An agent minted for alpha that never checkpointed is listed as such (issue 56, item 9).
    s.mint(
        "a3",
        "session",
        json!({"namespaces": ["alpha"], "grants": ["read"]}),
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
    let silent: Vec<&str> = listed["never_checkpointed"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(silent.contains(&"a3"), "{listed}");
    for spoke in ["a1", "a2", "b1", "b2"] {
        assert!(!silent.contains(&spoke), "{spoke} in {listed}");
    }
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
    assert!(
        body["projects"][0]["repos"].is_array(),
        "repos is an array on /api, not JSON text inside the JSON: {body}"
    );
    // The project row as the sister design holds it: root folder, remote, credential
    // reference (never a secret), null where the namespace sets none.
    let project = &body["projects"][0];
    assert_eq!(project["remote"], project["repos"][0]["repo"], "{body}");
    assert!(project["remote"].is_string(), "{body}");
    assert!(
        project["root_dir"].is_null() && project["credential_ref"].is_null(),
        "{body}"
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

e2e_cases!(capsid_tests::server::ServerOptions::default(); checkmarks_answer_resume_feed_and_shared);
