//! What a run keeps and prunes: retention by run (the 14 newest always, older than 90 days
//! deleted whole), reports after 30 days, versions and audit rows only after the export
//! succeeded, and nothing at all when the preflight finds an empty store.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use capsid_core::backup::manifest::{JSON_PREFIX, MARKDOWN_PREFIX, run_id, run_key, run_of_key};
use capsid_core::backup::summary::NoProgress;
use capsid_core::backup::tables::{AUDIT_LOG, DOCUMENT_VERSIONS};
use capsid_core::ports::{AuditEntry, BlobStore, Store};
use capsid_core::time::DAY_MS;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::json;

use super::media::FaultyMedia;
use super::{as_blobs, media_folder};

async fn counts(store: &dyn Store) -> (u64, u64) {
    let n = store
        .count_rows(&[&DOCUMENT_VERSIONS, &AUDIT_LOG])
        .await
        .expect("counts");
    (n[0], n[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_keeps_the_fourteen_newest_runs_and_deletes_old_reports() {
    let Some(fresh) = SqliteStore::fresh("retention").await else {
        return;
    };
    let (dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store, ServerOptions::default(), as_blobs(&media)).await;
    s.namespace("alpha").await;
    s.admin("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": "Retention keeps fourteen runs.\n"})).await;
    let now = s.service.now();
    // Twenty earlier runs, one a week, the newest 100 days ago: all past 90 days.
    let old: Vec<String> = (0..20)
        .map(|w| run_id(now.plus_millis(-(100 + 7 * w) * DAY_MS)))
        .collect();
    for run in &old {
        media
            .put(&run_key(run, "documents.json"), b"{}".to_vec())
            .await
            .expect("put");
        media
            .put(&run_key(run, "manifest.json"), b"{}".to_vec())
            .await
            .expect("put");
    }
    // A young run is kept whatever its rank.
    media
        .put(
            &run_key(&run_id(now.plus_millis(-2 * DAY_MS)), "documents.json"),
            b"{}".to_vec(),
        )
        .await
        .expect("put");
    media
        .put("reports/old.md", b"old".to_vec())
        .await
        .expect("put");
    media
        .put("reports/new.md", b"new".to_vec())
        .await
        .expect("put");
    let aged = SystemTime::now() - Duration::from_secs(40 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(dir.path().join("media/reports/old.md"))
        .expect("the report file")
        .set_modified(aged)
        .expect("age it");

    let summary = s.service.run_backup(&NoProgress).await.expect("run");
    assert_eq!(summary.prune_refused, None, "{summary:?}");
    // 22 runs: this one, the young one and 12 old ones are the 14 newest; 8 old ones go.
    assert_eq!(summary.json_backups_pruned, 8, "{summary:?}");
    let mut runs: Vec<String> = media
        .list(JSON_PREFIX)
        .await
        .expect("list")
        .iter()
        .filter_map(|k| run_of_key(k).map(str::to_owned))
        .collect();
    runs.dedup();
    assert_eq!(runs.len(), 14, "{runs:?}");
    for gone in &old[12..] {
        assert!(!runs.contains(gone), "{gone} should be deleted whole");
    }
    for kept in &old[..12] {
        assert!(runs.contains(kept), "{kept} is among the 14 newest");
    }
    assert_eq!(summary.reports_pruned, 1);
    assert_eq!(
        media.list("reports/").await.expect("list"),
        vec!["reports/new.md".to_owned()]
    );
    // The mirror holds the document; a stale mirror file goes on the next run.
    media
        .put(&format!("{MARKDOWN_PREFIX}alpha/gone.md"), b"x".to_vec())
        .await
        .expect("put");
    s.clock.advance(1_000);
    let again = s.service.run_backup(&NoProgress).await.expect("run");
    assert_eq!(again.markdown_pruned, 1, "{again:?}");
    assert_eq!(
        media.list(MARKDOWN_PREFIX).await.expect("list"),
        vec![format!("{MARKDOWN_PREFIX}alpha/core.md")]
    );
    s.stop().await;
    fresh.finish().await;
}

async fn prune_waits_for_the_export<S: Backend>(case: &str) {
    let Some(fresh) = S::fresh(case).await else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let failing: Arc<dyn BlobStore> =
        Arc::new(FaultyMedia::failing(media.clone(), "/audit_log.json"));
    let broken =
        TestServer::start_with_media(store.clone(), ServerOptions::default(), failing).await;
    broken.namespace("alpha").await;
    let now = broken.service.now();
    // History older than the retention: versions 200 days old, audit rows too.
    broken.clock.set(now.plus_millis(-200 * DAY_MS));
    for n in 0..3 {
        broken
            .admin("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": format!("Revision {n} of the pruned history.\n"), "confirm": true}))
            .await;
    }
    broken.clock.set(now);
    broken
        .admin("write", json!({"namespace": "alpha", "path": "fresh.md", "title": "Fresh", "body": "A young document.\n"}))
        .await;
    let before = counts(store.as_ref()).await;
    assert_eq!(before.0, 2, "two old versions");
    let failed = broken.service.run_backup(&NoProgress).await;
    assert!(failed.is_err(), "the export failed: {failed:?}");
    assert_eq!(
        counts(store.as_ref()).await,
        before,
        "nothing is pruned when the export fails"
    );
    assert!(
        media
            .list(JSON_PREFIX)
            .await
            .expect("list")
            .iter()
            .all(|k| !k.ends_with("manifest.json")),
        "no manifest for a broken dump"
    );
    broken.stop().await;

    let working =
        TestServer::start_with_media(store.clone(), ServerOptions::default(), as_blobs(&media))
            .await;
    working.clock.set(now);
    let summary = working.service.run_backup(&NoProgress).await.expect("run");
    assert_eq!(summary.versions_pruned, 2, "{summary:?}");
    assert!(summary.audit_pruned >= 3, "{summary:?}");
    // The dump holds what was pruned: it was taken first.
    let listed = summary
        .tables
        .iter()
        .find(|(t, _)| t == "document_versions")
        .expect("versions");
    assert_eq!(listed.1, 2);
    assert_eq!(counts(store.as_ref()).await.0, 0);
    working.stop().await;
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_prunes_history_only_after_the_export() {
    prune_waits_for_the_export::<SqliteStore>("prune_after_export").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_prunes_history_only_after_the_export() {
    prune_waits_for_the_export::<capsid_store_postgres::PgStore>("prune_after_export").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_refuses_to_prune_an_empty_store() {
    let Some(fresh) = SqliteStore::fresh("preflight").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store.clone(), ServerOptions::default(), as_blobs(&media))
        .await;
    let old = s.service.now().plus_millis(-365 * DAY_MS);
    store
        .append_audit(AuditEntry {
            actor: "agent:x".into(),
            action: "write".into(),
            namespace: Some("alpha".into()),
            path: Some("gone.md".into()),
            params: json!({}),
            at: old,
        })
        .await
        .expect("an old audit row");
    media
        .put(&format!("{MARKDOWN_PREFIX}alpha/gone.md"), b"x".to_vec())
        .await
        .expect("put");
    let summary = s.service.run_backup(&NoProgress).await.expect("run");
    assert_eq!(
        summary.prune_refused.as_deref(),
        Some("documents-empty"),
        "{summary:?}"
    );
    assert_eq!(summary.preflight.as_ref().map(|p| p.documents), Some(0));
    assert_eq!(
        (
            summary.audit_pruned,
            summary.markdown_written,
            summary.markdown_pruned
        ),
        (0, 0, 0)
    );
    assert_eq!(
        counts(store.as_ref()).await.1,
        1,
        "the old audit row survives"
    );
    assert_eq!(
        media.list(MARKDOWN_PREFIX).await.expect("list").len(),
        1,
        "the mirror is untouched"
    );
    assert!(
        media
            .list(JSON_PREFIX)
            .await
            .expect("list")
            .iter()
            .any(|k| k.ends_with("manifest.json")),
        "the dump itself is written"
    );
    s.stop().await;
    fresh.finish().await;
}
