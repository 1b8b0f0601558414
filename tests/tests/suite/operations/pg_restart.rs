//! Postgres stopped and started again under write load, on a cluster of the test's own: while
//! it is down `/health` answers 503 `degraded` and every call 503 with `Retry-After` (never a
//! 500), the server reconnects by itself, and every write it acknowledged is in the database.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use capsid_store_postgres::PgStore;
use capsid_tests::pg_cluster::PgCluster;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::operations::{http_get, tool_call};

/// What the load saw.
#[derive(Default)]
struct Seen {
    /// Paths whose write was acknowledged, with their body.
    acknowledged: Vec<(String, String)>,
    /// Status → count.
    statuses: BTreeMap<u16, usize>,
    /// Answers that were neither an acknowledgement nor a 503 with Retry-After.
    wrong: Vec<String>,
}

async fn writer(
    url: String,
    key: String,
    id: usize,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) {
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) && n < 20_000 {
        let path = format!("load/w{id}-{n}.md");
        let body = format!("writer {id} write {n}\n");
        let (status, headers, out) = tool_call(
            &url,
            &key,
            "write",
            json!({"namespace": "alpha", "path": path, "title": "w", "body": body}),
        )
        .await;
        let mut seen = seen.lock().await;
        *seen.statuses.entry(status).or_default() += 1;
        match status {
            200 if out["result"]["isError"] != Value::Bool(true) && out["result"].is_object() => {
                seen.acknowledged.push((path, body));
            }
            503 if headers.contains_key("retry-after") => {}
            // The connection itself refused or reset is the client's side of an outage, not
            // an answer; it never happens on loopback while the server process lives.
            _ => seen.wrong.push(format!("{status} {out}")),
        }
        drop(seen);
        n += 1;
        if status == 503 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn wait_for_health(url: &str, want: u16) -> String {
    for _ in 0..500 {
        let (status, headers, body) = http_get(&format!("{url}/health"), None, None).await;
        if status == want {
            if want == 503 {
                assert!(headers.contains_key("retry-after"), "{headers:?}");
            }
            return body;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("/health never answered {want}");
}

async fn acknowledged_at_least(seen: &Mutex<Seen>, n: usize) {
    for _ in 0..1_000 {
        if seen.lock().await.acknowledged.len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the load never reached {n} acknowledged writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_under_load_loses_no_acknowledged_write_and_never_answers_500() {
    let Some(cluster) = PgCluster::start("postgres_restart") else {
        return;
    };
    let store = PgStore::connect_pool(&cluster.url(), 8, Duration::from_millis(500))
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    let pool = store.pool().clone();
    let server = TestServer::start(Arc::new(store), ServerOptions::default()).await;
    server.namespace("alpha").await;
    let key = server
        .mint(
            "loader",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;

    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let writers: Vec<_> = (0..4)
        .map(|id| {
            tokio::spawn(writer(
                server.ops_url(),
                key.clone(),
                id,
                stop.clone(),
                seen.clone(),
            ))
        })
        .collect();
    acknowledged_at_least(&seen, 40).await;

    cluster.stop_server();
    let degraded = wait_for_health(&server.url, 503).await;
    assert!(degraded.contains("\"degraded\""), "{degraded}");
    let before = seen.lock().await.statuses.get(&503).copied().unwrap_or(0);
    for _ in 0..500 {
        if seen.lock().await.statuses.get(&503).copied().unwrap_or(0) >= before + 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let acknowledged_while_down = seen.lock().await.acknowledged.len();

    cluster.start_server();
    wait_for_health(&server.url, 200).await;
    acknowledged_at_least(&seen, acknowledged_while_down + 40).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("a writer");
    }

    let seen = seen.lock().await;
    eprintln!("statuses under the restart: {:?}", seen.statuses);
    assert!(
        seen.wrong.is_empty(),
        "answers other than an acknowledgement or a 503 with Retry-After: {:?}",
        &seen.wrong[..seen.wrong.len().min(5)]
    );
    assert!(
        seen.statuses.get(&503).copied().unwrap_or(0) >= 8,
        "{:?}",
        seen.statuses
    );
    assert!(!seen.statuses.contains_key(&500));
    // Every acknowledged write is there, with its body.
    for (path, body) in &seen.acknowledged {
        let stored: Option<String> = sqlx::query_scalar(
            "SELECT body FROM documents WHERE namespace = 'alpha' AND path = $1",
        )
        .bind(path)
        .fetch_optional(&pool)
        .await
        .expect("read back");
        assert_eq!(
            stored.as_deref(),
            Some(body.as_str()),
            "acknowledged write {path} lost"
        );
    }
    server.stop().await;
    pool.close().await;
}
