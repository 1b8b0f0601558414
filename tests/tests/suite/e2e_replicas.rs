//! Two servers on one database, as replicas behind a load balancer (or the console's server and
//! a second one) run: each with its own store connections and, on SQLite, its own read caches.
//! What one server commits is what the other answers on its very next call: a write, a
//! rewrite and a delete are read and searched at once, and a key revoked through one is refused
//! by the other on the next request, even right after that key's answers were cached there.

use std::sync::Arc;

use capsid_core::ports::Store;
use capsid_tests::harness::Backend;
use capsid_tests::server::{Client, ServerOptions, TestServer};
use serde_json::{Value, json};

fn options() -> ServerOptions {
    ServerOptions {
        sessions: false,
        repo_host: None,
        webhook: None,
        ..ServerOptions::default()
    }
}

async fn body(c: &Client, path: &str) -> Option<String> {
    match c
        .call("read", json!({"namespace": "proj", "path": path}))
        .await
    {
        Ok(v) => v["body"].as_str().map(str::to_owned),
        Err(e) => {
            assert!(e.contains("not found"), "{e}");
            None
        }
    }
}

/// The paths a search finds, asked twice (so a cache, if any, answers the second).
async fn found(c: &Client, query: &str) -> Vec<String> {
    let paths = |v: Value| -> Vec<String> {
        let mut out: Vec<String> = v["documents"]
            .as_array()
            .map(|hits| {
                hits.iter()
                    .filter_map(|h| h["path"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    };
    let first = paths(
        c.ok("search", json!({"query": query, "namespace": "proj"}))
            .await,
    );
    let again = paths(
        c.ok("search", json!({"query": query, "namespace": "proj"}))
            .await,
    );
    assert_eq!(first, again, "a repeated search answers the same");
    first
}

async fn replicas<S: Backend>(name: &str) {
    let Some(fresh) = S::fresh(name).await else {
        return;
    };
    let first: Arc<dyn Store> = fresh.store.clone();
    let other = Arc::new(fresh.another().await);
    let second: Arc<dyn Store> = other.clone();
    let a = TestServer::start(first, options()).await;
    let b = TestServer::start(second, options()).await;

    a.namespace("proj").await;
    let key = a
        .mint(
            "replica-writer",
            "session",
            json!({"namespaces": ["proj"], "grants": ["read", "write"]}),
        )
        .await;
    let on_a = a.client(&key).await;
    let on_b = b.client(&key).await;

    // Written through A, read and searched through B (twice each: B's caches warm).
    on_a.ok(
        "write",
        json!({"namespace": "proj", "path": "notes/x.md", "title": "X", "body": "alpha quartz"}),
    )
    .await;
    for _ in 0..2 {
        assert_eq!(
            body(&on_b, "notes/x.md").await.as_deref(),
            Some("alpha quartz")
        );
    }
    assert_eq!(found(&on_b, "quartz").await, ["notes/x.md"]);
    assert_eq!(found(&on_b, "meadow").await, Vec::<String>::new());

    // Rewritten through A: B reads and searches the new text on its next call.
    on_a.ok(
        "write",
        json!({"namespace": "proj", "path": "notes/x.md", "title": "X", "body": "beta meadow", "confirm": true}),
    )
    .await;
    assert_eq!(
        body(&on_b, "notes/x.md").await.as_deref(),
        Some("beta meadow")
    );
    assert_eq!(found(&on_b, "meadow").await, ["notes/x.md"]);
    assert_eq!(found(&on_b, "quartz").await, Vec::<String>::new());

    // Written through B, seen by A, then deleted through A: gone from B at once.
    on_b.ok(
        "write",
        json!({"namespace": "proj", "path": "notes/y.md", "title": "Y", "body": "meadow again"}),
    )
    .await;
    assert_eq!(found(&on_a, "meadow").await, ["notes/x.md", "notes/y.md"]);
    let deleted = on_a
        .ok(
            "delete",
            json!({"namespace": "proj", "path": "notes/x.md", "confirm": true}),
        )
        .await;
    assert_ne!(deleted["ok"], false, "{deleted}");
    assert_eq!(body(&on_b, "notes/x.md").await, None);
    assert_eq!(found(&on_b, "meadow").await, ["notes/y.md"]);

    // Revoked through A (the CLI's path): B refuses the key on its next request, though the
    // key's agent row was answered on B a moment ago.
    on_b.ok("namespaces", json!({})).await;
    let revoked = a
        .admin(
            "agents",
            json!({"action": "revoke", "name": "replica-writer"}),
        )
        .await;
    assert!(revoked["agent"]["revoked_at"].is_string(), "{revoked}");
    assert!(
        on_b.raw("namespaces", json!({})).await.is_err(),
        "the other server refuses a revoked key on the next call"
    );
    assert!(
        on_a.raw("namespaces", json!({})).await.is_err(),
        "and so does the server that revoked it"
    );

    a.stop().await;
    b.stop().await;
    other.shut().await;
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_replicas_see_each_others_commits_on_the_next_call() {
    replicas::<capsid_store_sqlite::SqliteStore>("sqlite_replicas").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_replicas_see_each_others_commits_on_the_next_call() {
    replicas::<capsid_store_postgres::PgStore>("postgres_replicas").await;
}
