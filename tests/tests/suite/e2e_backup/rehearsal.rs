//! The restore rehearsal across engines: seed, back up, restore into the other engine, and
//! every tool answer is the same; minted keys keep working (their hashes moved); search works.

use std::sync::Arc;

use capsid_core::backup::summary::NoProgress;
use capsid_core::ports::Store;
use capsid_core::time::Clock;
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::json;

use super::{agents, answers, as_blobs, back_up, media_folder, seed, service_over};

async fn rehearse<Src: Backend, Dst: Backend>(case: &str) {
    let (Some(source), Some(target)) = (Src::fresh(case).await, Dst::fresh(case).await) else {
        return;
    };
    let (_dir, media) = media_folder();
    let source_store: Arc<dyn Store> = source.store.clone();
    let origin =
        TestServer::start_with_media(source_store, ServerOptions::default(), as_blobs(&media))
            .await;
    let seeded = seed(&origin).await;
    let before = answers(&origin.client(&seeded.writer_key).await).await;
    let agents_before = agents(&origin).await;
    let summary = back_up(&origin).await;
    assert_eq!(summary.prune_refused, None, "{summary:?}");
    assert!(summary.markdown_written >= 4, "{summary:?}");
    let clock = origin.clock.clone();
    origin.stop().await;

    let target_store: Arc<dyn Store> = target.store.clone();
    let restorer = service_over(target_store.clone(), clock.clone());
    let report = restorer
        .restore_dump(media.as_ref(), None, &NoProgress)
        .await
        .expect("the restore succeeds");
    assert!(report.verified, "{report:?}");
    assert_eq!(report.from_engine, Src::NAME);
    assert_eq!(report.to_engine, Dst::NAME);
    assert_eq!(report.fts, "ok");
    assert!(
        report
            .tables
            .iter()
            .any(|t| t.table == "settings" && t.restored == 4),
        "{report:?}"
    );

    let restored = TestServer::start(target_store, ServerOptions::default()).await;
    restored.clock.set(clock.now());
    let client = restored.client(&seeded.writer_key).await;
    let after = answers(&client).await;
    assert_eq!(before.len(), after.len());
    for ((call, was), (_, now)) in before.iter().zip(&after) {
        assert_eq!(was, now, "{call} answers differently after the restore");
    }
    assert_eq!(agents(&restored).await, agents_before);
    // The revoked driver's key stays revoked; OAuth clients are not restored.
    assert_eq!(
        restored
            .store
            .setting("cache:github-installation", restored.service.now())
            .await
            .expect("read"),
        None,
        "a setting outside the allowlist is not carried"
    );
    assert_eq!(
        restored
            .store
            .setting("improve:paused:capsid", restored.service.now())
            .await
            .expect("read")
            .as_deref(),
        Some("rehearsal")
    );
    let found = client
        .ok("search", json!({"query": "rehearsal proves"}))
        .await;
    assert!(
        found.to_string().contains("decisions/storage.md"),
        "{found}"
    );
    // New rows number after the restored ones (a stale identity would collide here).
    client
        .ok("write", json!({"namespace": "alpha", "path": "core.md", "title": "Alpha core", "body": "Written after the restore.\n", "confirm": true}))
        .await;
    client
        .ok("write", json!({"namespace": "alpha", "path": "after.md", "title": "After", "body": "A new document.\n"}))
        .await;
    restored.stop().await;
    source.finish().await;
    target.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_dump_restores_into_postgres_with_identical_answers() {
    rehearse::<SqliteStore, PgStore>("rehearsal_sqlite_to_postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_dump_restores_into_sqlite_with_identical_answers() {
    rehearse::<PgStore, SqliteStore>("rehearsal_postgres_to_sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_dump_restores_into_sqlite_with_identical_answers() {
    rehearse::<SqliteStore, SqliteStore>("rehearsal_sqlite_to_sqlite").await;
}
