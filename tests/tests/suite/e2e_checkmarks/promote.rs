//! Promoting a log entry to `global` later (issue 56, item 8): the `checkmarks` action
//! `promote` over MCP and `POST /api/projects/{ns}/log/{id}/promote` over the Handler API meet
//! the one check (the `can_write_shared` flag, the namespace among the key's), bad input is
//! refused naming `entry_id`, and every refusal writes nothing; a promotion turns the entry
//! global for every namespace's feed, keeps its id, and leaves a `log-entry-promoted` audit
//! row naming who did it; a second promotion of the same entry is refused.

use capsid_core::ports::AuditFilter;
use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use crate::e2e_checkmarks::{api, audit_rows, checkpoint, get, refused, team};

async fn feed_ids(s: &TestServer, key: &str) -> Vec<i64> {
    let (status, feed) = get(s, key, "/api/shared/log").await;
    assert_eq!(status, 200, "{feed}");
    feed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect()
}

async fn post(s: &TestServer, key: &str, path: &str) -> (u16, Value) {
    let (status, body, _) = api(s, Some(key), "POST", path, None).await;
    (status, body)
}

async fn an_entry_is_promoted_to_global_only_through_the_one_check(s: &TestServer) {
    let t = team(s).await;
    let lead = s
        .mint(
            "lead",
            "seat",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"], "flags": {"can_write_shared": true}}),
        )
        .await;
    let written = checkpoint(
        &t.a1.1,
        json!({"namespace": "alpha", "status": "working", "summary": "the cache is Postgres now"}),
    )
    .await;
    let id = written["log_entry_id"].as_i64().expect("an entry id");
    assert_eq!(written["log_entry"]["visibility"], "project", "{written}");
    assert!(feed_ids(s, &t.b1.0).await.is_empty());
    let audits = audit_rows(s).await;
    let path = format!("/api/projects/alpha/log/{id}/promote");

    // Without the flag: refused over MCP and over the Handler API, naming it.
    let err =
        t.a2.1
            .err(
                "checkmarks",
                json!({"action": "promote", "namespace": "alpha", "entry_id": id}),
            )
            .await;
    assert!(err.contains("can_write_shared"), "{err}");
    refused(
        post(s, &t.a2.0, &path).await,
        403,
        "forbidden",
        "can_write_shared",
    );
    // The flag for another namespace does not reach this one.
    refused(post(s, &t.b2.0, &path).await, 403, "forbidden", "alpha");
    // Its own namespace, another's entry id: no such entry there.
    refused(
        post(s, &t.b2.0, &format!("/api/projects/beta/log/{id}/promote")).await,
        404,
        "not_found",
        "entry_id",
    );
    // Bad ids name the field.
    for bad in ["0", "-4", "abc", "1.5"] {
        refused(
            post(s, &lead, &format!("/api/projects/alpha/log/{bad}/promote")).await,
            400,
            "invalid_request",
            "entry_id",
        );
    }
    refused(
        post(s, &lead, "/api/projects/alpha/log/999999/promote").await,
        404,
        "not_found",
        "entry_id 999999",
    );
    assert_eq!(audit_rows(s).await, audits, "a refusal writes nothing");
    assert!(feed_ids(s, &t.b1.0).await.is_empty());

    // The flag holder in the entry's namespace promotes it.
    let (status, promoted) = post(s, &lead, &path).await;
    assert_eq!(status, 200, "{promoted}");
    assert_eq!(promoted["action"], "promote");
    assert_eq!(promoted["log_entry"]["id"], id);
    assert_eq!(promoted["log_entry"]["visibility"], "global");
    assert_eq!(
        promoted["log_entry"]["summary"],
        "the cache is Postgres now"
    );
    // Every namespace's feed shows it, and the agent's own log says so.
    assert_eq!(feed_ids(s, &t.b1.0).await, [id]);
    let log =
        t.a1.1
            .ok(
                "checkmarks",
                json!({"action": "log", "namespace": "alpha", "agent": "a1"}),
            )
            .await;
    assert_eq!(log["entries"][0]["visibility"], "global", "{log}");
    let rows = s
        .store
        .recent_audit(&AuditFilter::default(), 5)
        .await
        .expect("audit");
    let row = rows
        .iter()
        .find(|r| r.action.as_deref() == Some("log-entry-promoted"))
        .expect("the promotion is audited");
    assert_eq!(row.actor.as_deref(), Some("agent:lead"));
    assert_eq!(row.namespace.as_deref(), Some("alpha"));
    assert_eq!(row.path.as_deref(), Some("checkmarks/a1"));
    assert_eq!(audit_rows(s).await, audits + 1, "one audit row");

    // Once only.
    refused(
        post(s, &lead, &path).await,
        409,
        "conflict",
        "already global",
    );
    assert_eq!(audit_rows(s).await, audits + 1);

    // The admin promotes through the same tool; an agent with the flag over MCP too.
    let second = checkpoint(&t.a2.1, json!({"namespace": "alpha", "status": "working"})).await;
    let second_id = second["log_entry_id"].as_i64().unwrap();
    let by_admin = s
        .admin(
            "checkmarks",
            json!({"action": "promote", "namespace": "alpha", "entry_id": second_id}),
        )
        .await;
    assert_eq!(by_admin["log_entry"]["visibility"], "global", "{by_admin}");
    let third = checkpoint(&t.b1.1, json!({"namespace": "beta", "status": "working"})).await;
    let third_id = third["log_entry_id"].as_i64().unwrap();
    let by_b2 =
        t.b2.1
            .ok(
                "checkmarks",
                json!({"action": "promote", "namespace": "beta", "entry_id": third_id}),
            )
            .await;
    assert_eq!(by_b2["log_entry"]["visibility"], "global", "{by_b2}");
    assert_eq!(feed_ids(s, &t.a1.0).await, [third_id, second_id, id]);
}

e2e_cases!(capsid_tests::server::ServerOptions::default();
    an_entry_is_promoted_to_global_only_through_the_one_check);
