//! Shared fixtures of the SQLite store tests: a migrated store in a temporary directory and
//! builders for the rows the ports take.

#![allow(dead_code)]

use capsid_core::docs::{Link, LinkType};
use capsid_core::paths::{DocPath, Namespace};
use capsid_core::ports::{AuditEntry, DocumentStore, DocumentWrite, WriteGuard, WriteReceipt};
use capsid_core::time::Timestamp;
use capsid_store_sqlite::SqliteStore;
use tempfile::TempDir;

/// A migrated store on a fresh file; keep the directory alive as long as the store.
pub async fn store() -> (TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&url(&dir)).await.expect("open");
    store.migrate().await.expect("migrate");
    (dir, store)
}

/// The `sqlite://` URL of the database file inside `dir`.
pub fn url(dir: &TempDir) -> String {
    format!("sqlite://{}", dir.path().join("capsid.db").display())
}

/// A fixed instant plus `seconds`.
pub fn at(seconds: i64) -> Timestamp {
    Timestamp::from_millis(1_795_000_000_000 + seconds * 1000)
}

/// An audit row for `namespace/path`.
pub fn audit(action: &str, namespace: &str, path: &str, when: Timestamp) -> AuditEntry {
    AuditEntry {
        actor: "agent:tester".to_owned(),
        action: action.to_owned(),
        namespace: Some(namespace.to_owned()),
        path: Some(path.to_owned()),
        params: serde_json::json!({ "test": true }),
        at: when,
    }
}

/// A full document write with title, body and type.
pub fn doc(
    namespace: &str,
    path: &str,
    title: &str,
    body: &str,
    doc_type: &str,
    when: Timestamp,
) -> DocumentWrite {
    DocumentWrite {
        namespace: namespace.to_owned(),
        path: path.to_owned(),
        title: Some(title.to_owned()),
        body: Some(body.to_owned()),
        doc_type: Some(doc_type.to_owned()),
        status: None,
        tags: None,
        links: None,
        at: when,
    }
}

/// A `references` link to `namespace/path`.
pub fn link(namespace: &str, path: &str) -> Link {
    Link {
        link_type: LinkType::References,
        to_ns: Namespace::parse(namespace).expect("namespace"),
        to_path: DocPath::parse(path).expect("path"),
    }
}

/// Writes `write` as an upsert with one audit row.
pub async fn put(store: &SqliteStore, write: DocumentWrite) -> WriteReceipt {
    let entry = audit("write", &write.namespace, &write.path, write.at);
    store
        .write_document(write, WriteGuard::Upsert, vec![entry])
        .await
        .expect("write")
}
