//! Dumps that prove where they came from: a restore refuses, before writing anything, a dump
//! with one byte changed in any table file, one with a row added (with or without the
//! manifest's count edited to match), a dump made under another signing secret (naming
//! `signing.key` and `CAPSID_SIGNING_SECRET`), and a dump with no integrity block unless told
//! to accept one; the untouched dump restores, on both engines.

use std::sync::Arc;

use capsid_core::backup::manifest::{DumpRefusal, MANIFEST, Manifest, run_key};
use capsid_core::backup::summary::NoProgress;
use capsid_core::ports::{BlobStore, Store};
use capsid_core::service::{RestoreError, RestoreOptions, RestoreReport, Service, ServiceConfig};
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestEntropy, TestServer};
use serde_json::Value;

use super::refusals::assert_empty;
use super::{as_blobs, back_up, media_folder, seed, service_over};

fn refused(outcome: Result<RestoreReport, RestoreError>) -> DumpRefusal {
    match outcome {
        Err(RestoreError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn restore(
    service: &Service,
    media: &dyn BlobStore,
    run: &str,
) -> Result<RestoreReport, RestoreError> {
    service.restore_dump(media, Some(run), &NoProgress).await
}

/// Backs up a seeded `S` store, and runs every refusal against an empty `T` store, then the
/// untouched restore into it.
async fn sealed_dumps_refuse_every_edit<S: Backend, T: Backend>(tag: &str) {
    let (Some(source), Some(target)) = (
        S::fresh(&format!("integrity_{tag}_source")).await,
        T::fresh(&format!("integrity_{tag}_target")).await,
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
    let manifest_key = run_key(&run, MANIFEST);
    let manifest_bytes = media.get(&manifest_key).await.expect("the manifest");
    let manifest: Manifest = serde_json::from_slice(&manifest_bytes).expect("a manifest");
    assert!(manifest.integrity.is_some(), "the dump is sealed");
    let text = String::from_utf8_lossy(&manifest_bytes);
    assert!(
        !text.contains(capsid_tests::server::TEST_SECRET),
        "the secret is not in the dump"
    );

    // One byte changed, in every file of the dump.
    for listed in manifest.tables.iter().chain([&manifest.settings]) {
        let original = media.get(&listed.key).await.expect("the file");
        let mut changed = original.clone();
        let at = changed.len() / 2;
        changed[at] = if changed[at] == b'0' { b'1' } else { b'0' };
        media.put(&listed.key, changed).await.expect("put");
        let r = refused(restore(&restorer, media.as_ref(), &run).await);
        assert!(
            matches!(r, DumpRefusal::Altered { ref key, .. } if *key == listed.key),
            "{}: {r}",
            listed.table
        );
        assert!(r.to_string().contains(&listed.key), "{r}");
        media.put(&listed.key, original).await.expect("put");
    }
    assert_empty(target_store.as_ref()).await;

    // A row added: a fully-scoped agent, copied from the seeded writer under another name.
    let agents = manifest
        .tables
        .iter()
        .find(|t| t.table == "agents")
        .expect("the agents file");
    let original = media.get(&agents.key).await.expect("the agents file");
    let mut file: Value = serde_json::from_slice(&original).expect("JSON");
    let rows = file["rows"].as_array_mut().expect("rows");
    let mut injected = rows[0].clone();
    injected["name"] = "intruder".into();
    rows.push(injected);
    media
        .put(&agents.key, serde_json::to_vec(&file).expect("render"))
        .await
        .expect("put");
    let r = refused(restore(&restorer, media.as_ref(), &run).await);
    assert!(
        matches!(r, DumpRefusal::Altered { ref key, .. } if *key == agents.key),
        "{r}"
    );
    // ... and with the manifest's count and digest edited to match: the HMAC fails.
    let mut edited: Value = serde_json::from_slice(&manifest_bytes).expect("JSON");
    for line in edited["tables"].as_array_mut().expect("tables") {
        if line["table"] == "agents" {
            line["rows"] = (agents.rows + 1).into();
            line["sha256"] =
                capsid_core::crypto::sha256_hex(serde_json::to_vec(&file).expect("render")).into();
        }
    }
    media
        .put(&manifest_key, serde_json::to_vec(&edited).expect("render"))
        .await
        .expect("put");
    let r = refused(restore(&restorer, media.as_ref(), &run).await);
    assert!(
        matches!(r, DumpRefusal::Altered { ref key, ref why } if *key == manifest_key && why.contains("HMAC")),
        "{r}"
    );
    media.put(&agents.key, original).await.expect("put");
    media
        .put(&manifest_key, manifest_bytes.clone())
        .await
        .expect("put");
    assert_empty(target_store.as_ref()).await;

    // Made under another secret, or none here.
    let foreign = Service::new(
        target_store.clone(),
        origin.clock.clone(),
        Arc::new(TestEntropy),
        ServiceConfig {
            signing_secret: Some("another host's secret".into()),
            operator_keys: Vec::new(),
            ..Default::default()
        },
    );
    let r = refused(restore(&foreign, media.as_ref(), &run).await);
    assert!(matches!(r, DumpRefusal::ForeignSecret { .. }), "{r}");
    let text = r.to_string();
    assert!(
        text.contains("another signing secret")
            && text.contains("<data-dir>/signing.key")
            && text.contains("CAPSID_SIGNING_SECRET"),
        "{text}"
    );
    let secretless = Service::new(
        target_store.clone(),
        origin.clock.clone(),
        Arc::new(TestEntropy),
        ServiceConfig::default(),
    );
    let r = refused(restore(&secretless, media.as_ref(), &run).await);
    assert!(matches!(r, DumpRefusal::NoSecret { .. }), "{r}");
    assert_empty(target_store.as_ref()).await;

    // This build's dump with its integrity block removed: refused as a removed seal, never
    // as an older build's unsealed dump (issue 53, item 7).
    let mut unsealed: Value = serde_json::from_slice(&manifest_bytes).expect("JSON");
    unsealed
        .as_object_mut()
        .expect("object")
        .remove("integrity");
    media
        .put(
            &manifest_key,
            serde_json::to_vec(&unsealed).expect("render"),
        )
        .await
        .expect("put");
    let r = refused(restore(&restorer, media.as_ref(), &run).await);
    assert!(matches!(r, DumpRefusal::SealRemoved { .. }), "{r}");
    assert_empty(target_store.as_ref()).await;
    media
        .put(&manifest_key, manifest_bytes.clone())
        .await
        .expect("put");

    // The untouched dump restores as before.
    let report = restore(&restorer, media.as_ref(), &run)
        .await
        .expect("the restore");
    assert!(report.verified, "{report:?}");
    assert!(report.provenance.starts_with("sealed"), "{report:?}");
    origin.stop().await;
    source.finish().await;
    target.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_dumps_refuse_every_edit_into_postgres() {
    sealed_dumps_refuse_every_edit::<
        capsid_store_sqlite::SqliteStore,
        capsid_store_postgres::PgStore,
    >("s2p")
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_dumps_refuse_every_edit_into_sqlite() {
    sealed_dumps_refuse_every_edit::<
        capsid_store_postgres::PgStore,
        capsid_store_sqlite::SqliteStore,
    >("p2s")
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsealed_dump_restores_only_when_accepted() {
    let (Some(source), Some(target)) = (
        capsid_store_sqlite::SqliteStore::fresh("unsealed_source").await,
        capsid_store_sqlite::SqliteStore::fresh("unsealed_target").await,
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
    let manifest_key = run_key(&run, MANIFEST);
    let mut unsealed: Value =
        serde_json::from_slice(&media.get(&manifest_key).await.expect("the manifest"))
            .expect("JSON");
    let object = unsealed.as_object_mut().expect("object");
    object.remove("integrity");
    // An older build's dump: from before sealing (a later schema's unsealed dump had its seal
    // removed, which no flag but --re-sign restores).
    object.insert(
        "schema_version".into(),
        serde_json::json!("0017_skill_sources"),
    );
    let tables = object["tables"].as_array_mut().expect("tables");
    for line in tables.iter_mut() {
        line.as_object_mut().expect("a line").remove("sha256");
    }
    // Tables later migrations added are not in a dump from before them: it restores with
    // them empty.
    tables.retain(|line| !matches!(line["table"].as_str(), Some("job_calls" | "job_doors")));
    media
        .put(
            &manifest_key,
            serde_json::to_vec(&unsealed).expect("render"),
        )
        .await
        .expect("put");
    let target_store: Arc<dyn Store> = target.store.clone();
    let restorer = service_over(target_store.clone(), origin.clock.clone());
    let r = refused(restore(&restorer, media.as_ref(), &run).await);
    assert!(matches!(r, DumpRefusal::Unsealed { .. }), "{r}");
    let report = restorer
        .restore_dump_with(
            media.as_ref(),
            Some(&run),
            &RestoreOptions {
                accept_unverified: true,
                ..RestoreOptions::default()
            },
            &NoProgress,
        )
        .await
        .expect("restored on the operator's word");
    assert!(report.verified, "{report:?}");
    assert!(report.provenance.starts_with("UNVERIFIED"), "{report:?}");
    assert!(
        report
            .tables
            .iter()
            .any(|t| t.table == "job_doors" && t.expected == 0 && t.restored == 0),
        "{report:?}"
    );
    origin.stop().await;
    source.finish().await;
    target.finish().await;
}
