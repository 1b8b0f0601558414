//! The `backup` tool (issue 36), on SQLite and Postgres, spoken as a plain HTTP client in
//! session mode speaks it (the call's answer is an SSE stream, so each notification reaches
//! the client before the answer, in the order sent): a backup called with a `progressToken`
//! reports each table, its rows and each later step with progress that only grows, then
//! answers its summary as `structuredContent`; a backup the client cancels mid-export (the
//! media store holds one table's file, so no timing is involved) ends unanswered and keeps
//! nothing of its run; and the tool asks what `POST /ops/backup` asks.

use std::sync::Arc;
use std::time::Duration;

use capsid_core::backup::BACKUP_LEASE_KEY;
use capsid_core::backup::manifest::{MANIFEST, run_key};
use capsid_core::improve::keys::BACKUP_LAST_OK_KEY;
use capsid_core::ports::{BlobStore, Store};
use capsid_core::service::DEFAULT_ON_DEMAND_INTERVAL_MS;
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use capsid_tests::wire::{answer_with_progress, next_event, open_session, post};
use serde_json::{Value, json};

use super::media::FaultyMedia;
use super::{as_blobs, media_folder};

fn sessions() -> ServerOptions {
    ServerOptions {
        sessions: true,
        ..ServerOptions::default()
    }
}

/// Forty documents in two namespaces, and a key that may run backups.
async fn seed(s: &TestServer) -> String {
    for ns in ["alpha", "beta"] {
        s.namespace(ns).await;
        for i in 0..20 {
            s.admin(
                "write",
                json!({"namespace": ns, "path": format!("notes/n{i:02}.md"), "title": format!("Note {i}"),
                       "body": format!("Note {i} of {ns}, kept in the backup.\n")}),
            )
            .await;
        }
    }
    s.mint(
        "ops",
        "cron",
        json!({"namespaces": ["*"], "grants": ["read", "write"], "flags": {"can_backup": true}}),
    )
    .await
}

fn backup_call(id: u64, token: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "backup", "_meta": {"progressToken": token}, "arguments": {}}})
}

/// The progress values of `notes`, each checked to carry `token`.
fn values(notes: &[Value], token: &str) -> Vec<f64> {
    notes
        .iter()
        .map(|n| {
            assert_eq!(n["progressToken"], token, "{n}");
            n["progress"].as_f64().expect("a number")
        })
        .collect()
}

async fn a_backup_reports_growing_progress_then_its_summary<S: Backend>() {
    let Some(fresh) = S::fresh("backup_progress").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store, sessions(), as_blobs(&media)).await;
    let key = seed(&s).await;
    let session = open_session(&s, &key).await;
    let mut stream = post(&s, &key, Some(&session), backup_call(5, "backup-1")).await;
    assert_eq!(stream.status(), 200);
    let (answer, notes) = answer_with_progress(&mut stream, 5).await;

    let progress = values(&notes, "backup-1");
    assert!(progress.len() >= 10, "{notes:?}");
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "progress only grows: {progress:?}"
    );
    let messages: Vec<&str> = notes.iter().filter_map(|n| n["message"].as_str()).collect();
    for said in [
        "exporting documents",
        "exported documents: 40 rows",
        "preflight",
        "markdown mirror",
    ] {
        assert!(
            messages.iter().any(|m| m.starts_with(said)),
            "no progress says {said:?}: {messages:?}"
        );
    }

    let result = &answer["result"];
    assert_ne!(result["isError"], true, "{answer}");
    let text: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or_default())
            .unwrap_or_else(|_| panic!("{answer}"));
    assert_eq!(result["structuredContent"], text, "{answer}");
    assert_eq!(text["ran"], true, "{text}");
    assert_eq!(text["markdown_written"], 40, "{text}");
    assert_eq!(text["preflight"]["fts"], "ok", "{text}");
    let run = text["run"].as_str().expect("the run's id");
    media
        .get(&run_key(run, MANIFEST))
        .await
        .expect("the run's manifest was written");

    // Through a real MCP client, whose every answer is checked against the tool's schema.
    s.clock.advance(DEFAULT_ON_DEMAND_INTERVAL_MS);
    let again = s.client(&key).await.ok("backup", json!({})).await;
    assert_eq!(again["ran"], true, "{again}");
    s.stop().await;
    fresh.finish().await;
}

async fn a_cancelled_backup_keeps_nothing_of_its_run<S: Backend>() {
    let Some(fresh) = S::fresh("backup_cancelled").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let held = Arc::new(FaultyMedia::holding(media.clone(), "/audit_log.json"));
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store.clone(), sessions(), held.clone()).await;
    let key = seed(&s).await;
    let session = open_session(&s, &key).await;
    let mut stream = post(&s, &key, Some(&session), backup_call(7, "backup-2")).await;
    assert_eq!(stream.status(), 200);
    // Documents, namespaces and their versions are written; the audit log's file is held.
    tokio::time::timeout(Duration::from_secs(60), held.reached())
        .await
        .expect("the export reached the held table");
    assert!(
        !media.list("backups/").await.expect("list").is_empty(),
        "the tables before the held one were written"
    );
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "the operator changed their mind"}});
    assert_eq!(post(&s, &key, Some(&session), cancel).await.status(), 202);
    // A cancelled request is not answered: its stream ends after its progress.
    let mut buffer = String::new();
    let mut notes = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = next_event(&mut stream, &mut buffer).await {
            assert_eq!(event["method"], "notifications/progress", "{event}");
            notes.push(event["params"].clone());
        }
    })
    .await
    .expect("the stream of the cancelled call ends");
    let progress = values(&notes, "backup-2");
    assert!(
        !progress.is_empty() && progress.windows(2).all(|w| w[0] < w[1]),
        "{progress:?}"
    );
    // The held write goes on; the run sees the cancellation at its next page and undoes
    // itself (a run that ignored it would finish and answer ok).
    held.release();
    tokio::time::timeout(Duration::from_secs(60), async {
        while s.metrics.tool_call_count("backup", "cancelled") == 0 {
            assert_eq!(
                s.metrics.tool_call_count("backup", "ok"),
                0,
                "the backup ran to its end"
            );
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the call ends as cancelled");
    assert_eq!(
        media.list("backups/").await.expect("list"),
        Vec::<String>::new(),
        "nothing of the cancelled run is kept"
    );
    let now = s.service.now();
    assert_eq!(
        store.setting(BACKUP_LAST_OK_KEY, now).await.expect("read"),
        None
    );
    assert_eq!(
        store.setting(BACKUP_LEASE_KEY, now).await.expect("read"),
        None
    );
    // The next run (past the caller's interval) is whole.
    s.clock.advance(DEFAULT_ON_DEMAND_INTERVAL_MS);
    let whole = s.client(&key).await.ok("backup", json!({})).await;
    assert_eq!(whole["ran"], true, "{whole}");
    let run = whole["run"].as_str().expect("the run's id");
    media
        .get(&run_key(run, MANIFEST))
        .await
        .expect("the whole run's manifest");
    s.stop().await;
    fresh.finish().await;
}

async fn the_tool_asks_what_post_ops_backup_asks<S: Backend>() {
    let Some(fresh) = S::fresh("backup_tool_rule").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store, ServerOptions::default(), as_blobs(&media)).await;
    let key = seed(&s).await;
    let narrowed = s
        .mint(
            "one-ns",
            "session",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"], "flags": {"can_backup": true}}),
        )
        .await;
    let unflagged = s
        .mint(
            "no-flag",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    let reader = s
        .mint(
            "reader",
            "session",
            json!({"namespaces": ["*"], "grants": ["read"]}),
        )
        .await;
    for (who, says) in [
        (&narrowed, "every namespace"),
        (&unflagged, "can_backup"),
        (&reader, "write grant"),
    ] {
        let err = s.client(who).await.err("backup", json!({})).await;
        assert!(err.contains(says), "{err} should say {says:?}");
    }
    assert!(
        media.list("backups/").await.expect("list").is_empty(),
        "a refused call wrote nothing"
    );
    let ran = s.client(&key).await.ok("backup", json!({})).await;
    assert_eq!(ran["ran"], true, "{ran}");
    // Within the caller's interval: refused with the wait, nothing run.
    let soon = s.client(&key).await.err("backup", json!({})).await;
    assert!(soon.contains("retry in"), "{soon}");
    s.stop().await;
    fresh.finish().await;
}

macro_rules! on_both_stores {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case::<super::SqliteStore>().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case::<super::PgStore>().await;
                }
            )*
        }
    };
}

on_both_stores!(
    a_backup_reports_growing_progress_then_its_summary,
    a_cancelled_backup_keeps_nothing_of_its_run,
    the_tool_asks_what_post_ops_backup_asks,
);
