//! What a restore refuses, each before writing anything: a non-empty target, a missing
//! manifest, a torn dump (a table from another instant, or a file short of its rows), a dump
//! of a newer schema. The dumps here are edited and sealed again under the right secret (as a
//! faulty build could have made them), so the checks behind the seal are the ones refusing;
//! `integrity.rs` covers the seal itself.

use std::sync::Arc;

use capsid_core::backup::manifest::{DumpRefusal, MANIFEST, run_key, table_key};
use capsid_core::backup::summary::NoProgress;
use capsid_core::backup::tables::{EXPORTED, SETTINGS};
use capsid_core::ports::{BlobStore, Store};
use capsid_core::service::RestoreError;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::Value;

use super::{as_blobs, back_up, media_folder, put_resealed, reseal, seed, service_over};

pub(crate) async fn assert_empty(store: &dyn Store) {
    let mut tables: Vec<_> = EXPORTED.iter().collect();
    tables.push(&SETTINGS);
    let counts = store.count_rows(&tables).await.expect("counts");
    assert!(
        counts.iter().all(|n| *n == 0),
        "the target was written: {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_unfit_dumps_and_targets_and_writes_nothing() {
    let (Some(source), Some(target)) = (
        SqliteStore::fresh("refusals_source").await,
        SqliteStore::fresh("refusals_target").await,
    ) else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = source.store.clone();
    let origin =
        TestServer::start_with_media(store.clone(), ServerOptions::default(), as_blobs(&media))
            .await;
    seed(&origin).await;
    let run = back_up(&origin).await.run.expect("a run id");
    let target_store: Arc<dyn Store> = target.store.clone();
    let restorer = service_over(target_store.clone(), origin.clock.clone());
    let refused = |outcome: Result<_, RestoreError>| match outcome {
        Err(RestoreError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    };

    // A non-empty target: the source itself.
    let into_source = service_over(store.clone(), origin.clock.clone());
    let r = refused(
        into_source
            .restore_dump(media.as_ref(), Some(&run), &NoProgress)
            .await,
    );
    assert!(
        matches!(r, DumpRefusal::TargetNotEmpty { ref found } if found.contains("documents")),
        "{r}"
    );

    // A newer schema.
    let manifest_key = run_key(&run, MANIFEST);
    let original = media.get(&manifest_key).await.expect("the manifest");
    reseal(media.as_ref(), &run, |m| {
        m.schema_version = Some("9999_from_the_future".into());
    })
    .await;
    let r = refused(
        restorer
            .restore_dump(media.as_ref(), Some(&run), &NoProgress)
            .await,
    );
    assert!(matches!(r, DumpRefusal::NewerSchema { .. }), "{r}");
    assert!(r.to_string().contains("9999_from_the_future"), "{r}");
    media
        .put(&manifest_key, original.clone())
        .await
        .expect("put");

    // A torn dump: one table from another instant.
    let jobs_key = table_key(&run, "jobs");
    let jobs = media.get(&jobs_key).await.expect("the jobs file");
    let mut moved: Value = serde_json::from_slice(&jobs).expect("JSON");
    moved["exported_at"] = "2001-01-01T00:00:00.000Z".into();
    put_resealed(
        media.as_ref(),
        &run,
        &jobs_key,
        serde_json::to_vec(&moved).expect("render"),
    )
    .await;
    let r = refused(
        restorer
            .restore_dump(media.as_ref(), Some(&run), &NoProgress)
            .await,
    );
    assert!(
        matches!(r, DumpRefusal::Torn(ref why) if why.contains("one snapshot")),
        "{r}"
    );
    assert_empty(target_store.as_ref()).await;

    // A torn dump: a file short of the rows its manifest counts (found mid-import).
    let mut short: Value = serde_json::from_slice(&jobs).expect("JSON");
    short["rows"].as_array_mut().expect("rows").pop();
    put_resealed(
        media.as_ref(),
        &run,
        &jobs_key,
        serde_json::to_vec(&short).expect("render"),
    )
    .await;
    let r = refused(
        restorer
            .restore_dump(media.as_ref(), Some(&run), &NoProgress)
            .await,
    );
    assert!(
        matches!(r, DumpRefusal::Torn(ref why) if why.contains("rows")),
        "{r}"
    );
    assert_empty(target_store.as_ref()).await;
    media.put(&jobs_key, jobs).await.expect("put");
    media
        .put(&manifest_key, original.clone())
        .await
        .expect("put");

    // A missing manifest.
    media.delete(&manifest_key).await.expect("delete");
    let r = refused(
        restorer
            .restore_dump(media.as_ref(), Some(&run), &NoProgress)
            .await,
    );
    assert!(matches!(r, DumpRefusal::MissingManifest { .. }), "{r}");
    let r = refused(
        restorer
            .restore_dump(media.as_ref(), None, &NoProgress)
            .await,
    );
    assert!(
        matches!(r, DumpRefusal::MissingManifest { .. }),
        "the newest run has none: {r}"
    );
    assert_empty(target_store.as_ref()).await;

    // And with the manifest back, the same target takes the dump.
    media.put(&manifest_key, original).await.expect("put");
    let report = restorer
        .restore_dump(media.as_ref(), Some(&run), &NoProgress)
        .await
        .expect("the restore");
    assert!(report.verified, "{report:?}");
    origin.stop().await;
    source.finish().await;
    target.finish().await;
}
