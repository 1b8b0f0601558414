//! The blob store port on a real S3-compatible server (moto on loopback) and on a local
//! folder: streaming writes and reads, listing with metadata, conditional create, deletes,
//! signed read URLs; then a whole backup run to S3 (dump, list, retention deletion) and a
//! restore from it.

use std::sync::Arc;

use capsid_blobs::ObjectBlobStore;
use capsid_core::backup::manifest::{JSON_PREFIX, MANIFEST, run_id, run_key, run_of_key};
use capsid_core::backup::summary::NoProgress;
use capsid_core::ports::{BlobError, BlobStore, Store};
use capsid_core::time::DAY_MS;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::moto::Moto;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::json;

async fn s3(moto: &Moto, bucket: &str) -> ObjectBlobStore {
    moto.bucket(bucket).await;
    let config = moto.config();
    let pairs: Vec<(&str, &str)> = config.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ObjectBlobStore::s3_with(bucket, "capsid/", &pairs).expect("an S3 store")
}

/// The port's behaviour, the same on every store.
async fn blob_store_behaves(store: &dyn BlobStore) {
    store.put("a/one.txt", b"one".to_vec()).await.expect("put");
    store
        .put("a/one.txt", b"uno".to_vec())
        .await
        .expect("put replaces");
    assert_eq!(store.get("a/one.txt").await.expect("get"), b"uno");
    assert!(matches!(
        store.get("a/none.txt").await,
        Err(BlobError::NotFound(_))
    ));
    store
        .put_new("a/new.txt", b"first".to_vec())
        .await
        .expect("create");
    assert!(
        matches!(
            store.put_new("a/new.txt", b"second".to_vec()).await,
            Err(BlobError::Exists(_))
        ),
        "a conditional create never clobbers"
    );
    assert_eq!(store.get("a/new.txt").await.expect("get"), b"first");
    // A streamed object larger than one part of a multipart upload.
    let mut writer = store.writer("big/stream.bin").await.expect("writer");
    let chunk = vec![7u8; 1 << 20];
    for _ in 0..12 {
        writer.write(chunk.clone()).await.expect("write");
    }
    writer.finish().await.expect("finish");
    let mut reader = store.reader("big/stream.bin").await.expect("reader");
    let mut total = 0usize;
    while let Some(bytes) = reader.next_chunk().await.expect("chunk") {
        assert!(bytes.iter().all(|b| *b == 7));
        total += bytes.len();
    }
    assert_eq!(total, 12 << 20);
    let aborted = store.writer("big/aborted.bin").await.expect("writer");
    aborted.abort().await.expect("abort");
    store
        .put_many(
            (0..30)
                .map(|n| (format!("many/{n:02}.md"), vec![b'x'; n]))
                .collect(),
        )
        .await
        .expect("put many");
    let listed = store.list("many/").await.expect("list");
    assert_eq!(listed.len(), 30);
    assert_eq!(listed[0], "many/00.md", "sorted");
    let meta = store.list_meta("many/2").await.expect("list");
    assert_eq!(meta.len(), 10);
    assert_eq!(meta[9].size, 29);
    assert!(
        store
            .list("big/")
            .await
            .expect("list")
            .iter()
            .all(|k| k != "big/aborted.bin")
    );
    let odd = "odd/a b#c [d] 100%.md";
    store.put(odd, b"odd".to_vec()).await.expect("put");
    assert_eq!(
        store.list("odd/").await.expect("list"),
        vec![odd.to_owned()],
        "keys round-trip"
    );
    store.delete_many(listed).await.expect("delete many");
    store
        .delete("a/none.txt")
        .await
        .expect("deleting nothing is fine");
    assert!(store.list("many/").await.expect("list").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_folder_blob_store() {
    let dir = tempfile::tempdir().expect("a folder");
    let store = ObjectBlobStore::folder(dir.path().join("media")).expect("a folder store");
    blob_store_behaves(&store).await;
    assert_eq!(
        store
            .signed_read_url("a/one.txt", 60_000)
            .await
            .expect("sign"),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_blob_store_on_moto() {
    let Some(moto) = Moto::start("s3_blob_store_on_moto").await else {
        return;
    };
    let store = s3(&moto, "capsid-blobs").await;
    blob_store_behaves(&store).await;
    let url = store
        .signed_read_url("a/one.txt", 60_000)
        .await
        .expect("sign")
        .expect("S3 signs URLs");
    let body = reqwest::get(&url)
        .await
        .expect("get")
        .bytes()
        .await
        .expect("bytes");
    assert_eq!(&body[..], b"uno");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_to_s3_lists_prunes_old_runs_and_restores() {
    let Some(moto) = Moto::start("backup_to_s3").await else {
        return;
    };
    let (Some(source), Some(target)) = (
        SqliteStore::fresh("s3_source").await,
        SqliteStore::fresh("s3_target").await,
    ) else {
        return;
    };
    let media: Arc<dyn BlobStore> = Arc::new(s3(&moto, "capsid-media").await);
    let store: Arc<dyn Store> = source.store.clone();
    let s = TestServer::start_with_media(store, ServerOptions::default(), media.clone()).await;
    s.namespace("alpha").await;
    s.admin("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": "Stored in a bucket of narwhals.\n"})).await;
    let now = s.service.now();
    let old: Vec<String> = (0..15)
        .map(|d| run_id(now.plus_millis(-(120 + d) * DAY_MS)))
        .collect();
    for run in &old {
        media
            .put(&run_key(run, MANIFEST), b"{}".to_vec())
            .await
            .expect("put");
    }
    let summary = s
        .service
        .run_backup(&NoProgress)
        .await
        .expect("a run to S3");
    assert!(
        summary.ran && summary.prune_refused.is_none(),
        "{summary:?}"
    );
    assert_eq!(
        summary.json_backups_pruned, 2,
        "16 runs: the 14 newest stay"
    );
    let mut runs: Vec<String> = media
        .list(JSON_PREFIX)
        .await
        .expect("list")
        .iter()
        .filter_map(|k| run_of_key(k).map(str::to_owned))
        .collect();
    runs.dedup();
    assert_eq!(runs.len(), 14);
    assert!(!runs.contains(&old[14]) && !runs.contains(&old[13]));
    let this = summary.run.clone().expect("a run id");
    assert!(
        matches!(
            media
                .put_new(&run_key(&this, MANIFEST), b"{}".to_vec())
                .await,
            Err(BlobError::Exists(_))
        ),
        "the manifest is written by conditional create"
    );
    assert_eq!(
        media
            .get("backups/markdown/alpha/core.md")
            .await
            .expect("the mirror"),
        b"Stored in a bucket of narwhals.\n"
    );
    let restorer = capsid_core::service::Service::new(
        target.store.clone(),
        s.clock.clone(),
        Arc::new(capsid_tests::server::TestEntropy),
        // The dump is sealed under the server's secret: the restorer holds the same.
        capsid_core::service::ServiceConfig {
            signing_secret: Some(capsid_tests::server::TEST_SECRET.into()),
            operator_keys: Vec::new(),
            ..Default::default()
        },
    );
    let report = restorer
        .restore_dump(media.as_ref(), Some(&this), &NoProgress)
        .await
        .expect("a restore from S3");
    assert!(report.verified, "{report:?}");
    s.stop().await;
    source.finish().await;
    target.finish().await;
}
