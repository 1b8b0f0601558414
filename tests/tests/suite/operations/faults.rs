//! Faults a server survives, through its real HTTP surface: a pool with no free connection
//! answers 503 with `Retry-After` within its acquire timeout (not a hang), a full SQLite
//! database refuses the write and stays intact, and corrupt stored values fail closed.

use std::sync::Arc;
use std::time::Duration;

use capsid_core::improve::keys::{
    AWAITING_SEAT_KEY, BACKUP_LAST_OK_KEY, BUDGET_KEY, IMPROVE_MODE_KEY,
};
use capsid_core::ports::Store;
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::{Backend, Probe, fresh_database};
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

use crate::operations::{http_get, tool_call};

/// A 503 that tells the client when to come back.
fn assert_retry_later(
    status: u16,
    headers: &std::collections::HashMap<String, String>,
    body: &str,
) {
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        headers.get("retry-after").map(String::as_str),
        Some(capsid_http::RETRY_AFTER_SECONDS.to_string().as_str()),
        "{headers:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_answers_503_with_retry_after_instead_of_hanging() {
    let Some((database, url)) = fresh_database("pool_exhaustion").await else {
        return;
    };
    let store = PgStore::connect_pool(&url, 2, Duration::from_millis(300))
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    let pool = store.pool().clone();
    let server = TestServer::start(Arc::new(store), ServerOptions::default()).await;
    server.namespace("alpha").await;
    let key = server
        .mint(
            "reader",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    let (status, _, body) = tool_call(
        &server.ops_url(),
        &key,
        "list",
        json!({"namespace": "alpha"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // Someone holds every connection of the pool.
    let held = (
        pool.acquire().await.expect("one"),
        pool.acquire().await.expect("two"),
    );
    let bounded = Duration::from_secs(20);
    let (status, headers, body) = tokio::time::timeout(
        bounded,
        tool_call(
            &server.ops_url(),
            &key,
            "list",
            json!({"namespace": "alpha"}),
        ),
    )
    .await
    .expect("the call is answered, not left hanging");
    assert_retry_later(status, &headers, &body.to_string());
    assert!(
        body.to_string()
            .contains("no database connection became free"),
        "{body}"
    );
    let (status, headers, body) = tokio::time::timeout(
        bounded,
        http_get(&format!("{}/health", server.url), None, None),
    )
    .await
    .expect("health is answered");
    assert_retry_later(status, &headers, &body);
    assert!(body.contains("degraded"), "{body}");

    // Connections back: the same calls work again.
    drop(held);
    let (status, _, body) = tool_call(
        &server.ops_url(),
        &key,
        "list",
        json!({"namespace": "alpha"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
    pool.close().await;
    database.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_sqlite_database_refuses_the_write_and_stays_intact() {
    let fresh = <SqliteStore as Backend>::fresh("sqlite_full")
        .await
        .expect("sqlite");
    let store = fresh.store.clone();
    let server = TestServer::start(store.clone() as Arc<dyn Store>, ServerOptions::default()).await;
    server.namespace("alpha").await;
    let key = server
        .mint(
            "writer",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    let body_of = |n: usize| format!("document {n}\n{}\n", "x".repeat(6_000));
    for n in 0..3 {
        let (status, _, out) = tool_call(
            &server.ops_url(),
            &key,
            "write",
            json!({"namespace": "alpha", "path": format!("docs/d{n}.md"), "title": "d", "body": body_of(n)}),
        )
        .await;
        assert_eq!(
            (status, out["result"]["isError"].as_bool()),
            (200, Some(false)),
            "{out}"
        );
    }
    let pages = fresh
        .probe
        .count("SELECT page_count FROM pragma_page_count()")
        .await;
    let cap = store
        .cap_pages(u64::try_from(pages).unwrap_or(0) + 2)
        .await
        .expect("cap");
    assert!(cap >= u64::try_from(pages).unwrap_or(0), "cap {cap}");
    let audits = fresh.probe.count("SELECT count(*) FROM audit_log").await;

    // The disk is "full": the write is refused as unavailable, naming the condition.
    let mut refused = None;
    for n in 3..40 {
        let path = format!("docs/d{n}.md");
        let (status, headers, out) = tool_call(
            &server.ops_url(),
            &key,
            "write",
            json!({"namespace": "alpha", "path": path, "title": "d", "body": body_of(n)}),
        )
        .await;
        if status != 200 {
            assert_retry_later(status, &headers, &out.to_string());
            refused = Some((path, out));
            break;
        }
    }
    let (path, out) = refused.expect("the capped database filled up");
    assert!(out.to_string().contains("the database is full"), "{out}");

    // Nothing of the refused write landed, and the file is intact.
    let probe = &fresh.probe;
    assert_eq!(
        probe
            .count(&format!(
                "SELECT count(*) FROM documents WHERE path = '{path}'"
            ))
            .await,
        0
    );
    let check = match probe {
        Probe::Sqlite(pool) => sqlx::query_scalar::<_, String>("PRAGMA integrity_check")
            .fetch_one(pool)
            .await
            .expect("integrity_check"),
        Probe::Postgres(_) => unreachable!("a SQLite case"),
    };
    assert_eq!(check, "ok");
    assert!(probe.count("SELECT count(*) FROM audit_log").await >= audits);
    let read = server
        .admin("read", json!({"namespace": "alpha", "path": "docs/d0.md"}))
        .await;
    assert_eq!(read["body"], body_of(0));
    let found = server
        .admin("search", json!({"namespace": "alpha", "query": "document"}))
        .await;
    assert!(found["count"].as_u64().unwrap_or(0) >= 3, "{found}");

    // Room again: the same write goes through.
    store.cap_pages(1 << 30).await.expect("uncap");
    let (status, _, out) = tool_call(
        &server.ops_url(),
        &key,
        "write",
        json!({"namespace": "alpha", "path": path, "title": "d", "body": body_of(99)}),
    )
    .await;
    assert_eq!(
        (status, out["result"]["isError"].as_bool()),
        (200, Some(false)),
        "{out}"
    );
    server.stop().await;
    fresh.finish().await;
}

/// Corrupt stored values fail closed: the improve mode reads as off, a broken budget keeps the
/// default caps (never "uncapped"), a broken backup record is "no backup" (health warns, the
/// metric is +Inf), a broken awaiting-seat list is empty, and an agent whose stored scopes do
/// not parse holds nothing.
pub(crate) async fn corrupt_settings_fail_closed(s: &TestServer) {
    s.namespace("alpha").await;
    let admin_key = s
        .mint(
            "watcher",
            "session",
            json!({"namespaces": ["*"], "grants": ["read"]}),
        )
        .await;
    let victim = s
        .mint(
            "victim",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    for (key, value) in [
        (IMPROVE_MODE_KEY, "api\u{7}{"),
        (
            BUDGET_KEY,
            "{\"actions_minutes_month\": \"lots\", \"model_usd_month\": -1",
        ),
        (BACKUP_LAST_OK_KEY, "last tuesday"),
        (AWAITING_SEAT_KEY, "[{\"half"),
    ] {
        s.store
            .put_setting(key, value, None)
            .await
            .expect("setting");
    }
    let status = s
        .client(&admin_key)
        .await
        .ok("improve_status", json!({}))
        .await;
    assert_eq!(status["mode"], "off", "{status}");
    assert_eq!(
        status["budget"]["caps"]["actions_minutes_month"], 300.0,
        "{status}"
    );
    assert_eq!(
        status["budget"]["caps"]["model_usd_month"], 50.0,
        "{status}"
    );
    assert_eq!(status["awaiting_seat"], json!([]), "{status}");

    let (code, _, body) = http_get(&format!("{}/health", s.url), None, None).await;
    assert_eq!(code, 200, "{body}");
    let health: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(health["backup"]["age_hours"], Value::Null, "{health}");
    assert!(health["backup"]["warning"].is_string(), "{health}");
    let (code, _, body) = http_get(&format!("{}/metrics", s.url), Some(&admin_key), None).await;
    assert_eq!(code, 200);
    assert!(
        body.lines().any(|l| l == "capsid_backup_age_seconds +Inf"),
        "{body}"
    );

    // The victim's stored scopes are corrupted: it holds nothing and sees no tool.
    let probe = s.probe.as_ref().expect("a probe");
    probe
        .execute(
            "UPDATE agents SET scopes = '{\"grants\": [\"read\", \"write\"' WHERE name = 'victim'",
        )
        .await;
    let client = s.client(&victim).await;
    assert!(client.tool_names().await.is_empty());
    let refused = client
        .err("read", json!({"namespace": "alpha", "path": "x.md"}))
        .await;
    assert!(refused.contains("scope refused"), "{refused}");
}
