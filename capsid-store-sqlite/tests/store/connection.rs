//! The storage rules as SQLite reports them (WAL, `synchronous=FULL`, foreign keys, busy
//! timeout, read-only readers), migrations, and a write surviving a close and re-open.

use crate::common::{at, audit, doc, put, store, url};
use capsid_core::ports::{AuditFilter, AuditLog, DocumentStore, StoreHealth, WriteGuard};
use capsid_store_sqlite::SqliteStore;

#[tokio::test]
async fn every_connection_runs_with_the_durability_pragmas() {
    let (_dir, store) = store().await;
    let pragmas = store.pragmas().await.unwrap();
    let get = |key: &str| {
        pragmas
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{key} missing from {pragmas:?}"))
    };
    for role in ["writer", "reader"] {
        assert_eq!(get(&format!("{role}.journal_mode")), "wal", "{role}");
        // 2 = FULL.
        assert_eq!(get(&format!("{role}.synchronous")), "2", "{role}");
        assert_eq!(get(&format!("{role}.foreign_keys")), "1", "{role}");
        assert_eq!(get(&format!("{role}.busy_timeout")), "5000", "{role}");
    }
    assert_eq!(get("writer.query_only"), "0");
    assert_eq!(get("reader.query_only"), "1");
}

#[tokio::test]
async fn migrating_reports_the_version_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&url(&dir)).await.unwrap();
    assert_eq!(
        store.schema_version().await.unwrap(),
        None,
        "nothing applied yet"
    );
    assert_eq!(
        store.migrate().await.unwrap().as_deref(),
        Some(newest().as_str())
    );
    assert_eq!(
        store.migrate().await.unwrap().as_deref(),
        Some(newest().as_str())
    );
    assert_eq!(
        store.schema_version().await.unwrap().as_deref(),
        Some(newest().as_str())
    );
    store.ping().await.unwrap();
    store.close().await;
}

#[tokio::test]
async fn open_accepts_every_url_form_and_creates_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for (i, form) in ["sqlite://", "sqlite:", ""].into_iter().enumerate() {
        let file = dir.path().join(format!("c{i}.db"));
        assert!(!file.exists());
        let store = SqliteStore::open(&format!("{form}{}", file.display()))
            .await
            .unwrap();
        store.ping().await.unwrap();
        store.close().await;
        assert!(file.exists(), "{form}");
    }
}

#[tokio::test]
async fn a_committed_write_survives_close_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&url(&dir)).await.unwrap();
    store.migrate().await.unwrap();
    let written = put(
        &store,
        doc(
            "capsid",
            "notes/a.md",
            "A",
            "durable lease text",
            "note",
            at(0),
        ),
    )
    .await;
    assert!(written.created);
    store.close().await;
    drop(store);

    let reopened = SqliteStore::open(&url(&dir)).await.unwrap();
    let read = reopened
        .document("capsid", "notes/a.md")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read, written.document);
    assert_eq!(read.created_at.to_string(), "2026-11-18T11:06:40.000Z");
    assert_eq!(
        reopened
            .last_actor("capsid", "notes/a.md")
            .await
            .unwrap()
            .as_deref(),
        Some("agent:tester")
    );
    assert_eq!(reopened.fts_probe("durable").await.unwrap(), 1);
    let rows = reopened
        .recent_audit(&AuditFilter::default(), 10)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].params.as_deref(), Some(r#"{"test":true}"#));
    reopened.close().await;
}

#[tokio::test]
async fn a_refused_guard_writes_nothing_at_all() {
    let (_dir, store) = store().await;
    put(&store, doc("n", "a.md", "A", "one", "note", at(0))).await;
    let stale = store
        .write_document(
            doc("n", "a.md", "A", "two", "note", at(1)),
            WriteGuard::Update {
                expected_body: Some("not what is stored".to_owned()),
            },
            vec![audit("write", "n", "a.md", at(1))],
        )
        .await;
    assert!(
        matches!(stale, Err(capsid_core::ports::StoreError::Conflict(_))),
        "{stale:?}"
    );
    assert_eq!(
        store
            .document("n", "a.md")
            .await
            .unwrap()
            .unwrap()
            .body
            .as_deref(),
        Some("one")
    );
    assert!(
        store.versions("n", "a.md", 10).await.unwrap().is_empty(),
        "no snapshot"
    );
    assert_eq!(
        store
            .recent_audit(&AuditFilter::default(), 10)
            .await
            .unwrap()
            .len(),
        1,
        "no audit row"
    );
}

/// The newest embedded migration, as `schema_version` names it.
fn newest() -> String {
    capsid_store_sqlite::MIGRATOR
        .iter()
        .last()
        .map(|m| format!("{:04}_{}", m.version, m.description.replace(' ', "_")))
        .expect("at least one migration")
}
