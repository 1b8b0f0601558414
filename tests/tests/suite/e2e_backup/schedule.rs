//! The scheduled dump's interval (issue 56, item 4), on both stores, driven by the server's
//! clock: every 6 hours the scheduler dumps at 03:00, 09:00, 15:00 and 21:00 UTC, once per
//! slot, where the default interval dumps only at 09:00.

use std::sync::Arc;

use capsid_core::backup::BackupEvery;
use capsid_core::backup::manifest::{JSON_PREFIX, run_of_key};
use capsid_core::ports::{BlobStore, Store};
use capsid_core::schedule::Task;
use capsid_core::time::Timestamp;
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::json;

use super::{as_blobs, media_folder};

/// Whether the scheduler's backup task dumped at `at`.
async fn dumped_at(s: &TestServer, at: &str) -> bool {
    s.clock.set(Timestamp::parse(at).expect("an instant"));
    let report = s.service.tick_now(Some(Task::Backup)).await.expect("tick");
    let run = report.run_of(Task::Backup).expect("the backup task ran");
    assert!(run.error.is_none(), "{at}: {:?}", run.error);
    report.backed_up
}

/// The runs the media store holds.
async fn runs(media: &dyn BlobStore) -> usize {
    let mut runs: Vec<String> = media
        .list(JSON_PREFIX)
        .await
        .expect("list")
        .iter()
        .filter_map(|key| run_of_key(key).map(str::to_owned))
        .collect();
    runs.dedup();
    runs.len()
}

async fn the_dump_interval_sets_the_scheduled_runs<S: Backend>() {
    let Some(fresh) = S::fresh("backup_every").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let blobs = as_blobs(&media);
    let every = BackupEvery::parse("6").expect("six hours");
    let store: Arc<dyn Store> = fresh.store.clone();
    let wired = blobs.clone();
    let s = TestServer::start_customized(
        store,
        ServerOptions::default(),
        |_| None,
        move |svc| svc.with_media(wired).with_backup_every(every),
    )
    .await;
    s.namespace("alpha").await;
    s.admin("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": "Dumped every six hours.\n"})).await;

    // Before the day's first slot nothing is due; at 03:00 the first dump, once.
    assert!(!dumped_at(&s, "2026-03-02T02:59:00Z").await);
    assert!(dumped_at(&s, "2026-03-02T03:00:00Z").await);
    assert!(!dumped_at(&s, "2026-03-02T03:05:00Z").await);
    assert!(!dumped_at(&s, "2026-03-02T08:59:00Z").await);
    // A server down at 09:00 catches up at its next tick in the slot.
    assert!(dumped_at(&s, "2026-03-02T11:40:00Z").await);
    assert!(!dumped_at(&s, "2026-03-02T14:59:00Z").await);
    assert!(dumped_at(&s, "2026-03-02T15:00:00Z").await);
    assert!(dumped_at(&s, "2026-03-02T21:00:00Z").await);
    assert!(!dumped_at(&s, "2026-03-03T02:59:00Z").await);
    assert_eq!(runs(blobs.as_ref()).await, 4);
    s.stop().await;

    // The default interval, over the same store: the next dump is at 09:00, not 03:00.
    let wired = blobs.clone();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_customized(
        store,
        ServerOptions::default(),
        |_| None,
        move |svc| svc.with_media(wired),
    )
    .await;
    assert!(!dumped_at(&s, "2026-03-03T03:00:00Z").await);
    assert!(!dumped_at(&s, "2026-03-03T08:59:00Z").await);
    assert!(dumped_at(&s, "2026-03-03T09:00:00Z").await);
    assert!(!dumped_at(&s, "2026-03-03T21:00:00Z").await);
    assert_eq!(runs(blobs.as_ref()).await, 5);
    s.stop().await;
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dump_interval_sets_the_scheduled_runs_sqlite() {
    the_dump_interval_sets_the_scheduled_runs::<SqliteStore>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dump_interval_sets_the_scheduled_runs_postgres() {
    the_dump_interval_sets_the_scheduled_runs::<PgStore>().await;
}
