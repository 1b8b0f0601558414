//! Conformance cases for `write_document`: create, update and upsert with snapshots that keep
//! metadata, defaults and NULL inputs, link replacement, and the audit rows of a write.

use capsid_core::docs::kinds::LinkType;
use capsid_core::ports::{AuditFilter, Backlinks, DocumentWrite, Store, VersionRow, WriteGuard};
use serde_json::json;

use super::support::{at, audit, doc, link, put, write};

/// Create, update and upsert; each overwrite snapshots title, body and metadata.
pub async fn write_create_update_upsert_snapshots<S: Store>(store: &S) {
    let first = DocumentWrite {
        doc_type: Some("decision".into()),
        status: Some("draft".into()),
        tags: Some("alpha beta".into()),
        ..write(
            "proj",
            "decisions/db.md",
            Some("Pick a database"),
            Some("SQLite first.\n"),
            at(0),
        )
    };
    let receipt = store
        .write_document(
            first,
            WriteGuard::Create,
            vec![audit("agent:a", "write", "proj", "decisions/db.md", at(0))],
        )
        .await
        .expect("create");
    assert!(receipt.created);
    assert!(!receipt.snapshotted);
    let created = receipt.document.clone();
    assert!(created.id > 0);
    assert_eq!(
        (
            created.namespace.as_str(),
            created.path.as_str(),
            created.title.as_deref(),
            created.body.as_deref()
        ),
        (
            "proj",
            "decisions/db.md",
            Some("Pick a database"),
            Some("SQLite first.\n")
        )
    );
    assert_eq!(
        (created.doc_type.as_str(), created.status.as_str()),
        ("decision", "draft")
    );
    assert_eq!(created.tags.as_deref(), Some("alpha beta"));
    assert_eq!((created.created_at, created.updated_at), (at(0), at(0)));
    assert_eq!(doc(store, "proj", "decisions/db.md").await, created);

    let second = DocumentWrite {
        status: Some("active".into()),
        ..write(
            "proj",
            "decisions/db.md",
            Some("Pick the database"),
            Some("Postgres too.\n"),
            at(5),
        )
    };
    let receipt = store
        .write_document(
            second,
            WriteGuard::Update {
                expected_body: None,
            },
            vec![audit("agent:b", "write", "proj", "decisions/db.md", at(5))],
        )
        .await
        .expect("update");
    assert!(!receipt.created);
    assert!(receipt.snapshotted);
    let updated = receipt.document;
    assert_eq!(updated.id, created.id);
    assert_eq!(
        (
            updated.title.as_deref(),
            updated.body.as_deref(),
            updated.doc_type.as_str(),
            updated.status.as_str()
        ),
        (
            Some("Pick the database"),
            Some("Postgres too.\n"),
            "decision",
            "active"
        )
    );
    assert_eq!(updated.tags.as_deref(), Some("alpha beta"), "tags kept");
    assert_eq!(
        (updated.created_at, updated.updated_at),
        (created.created_at, at(5))
    );

    let third = DocumentWrite {
        doc_type: Some("spec".into()),
        tags: Some("gamma".into()),
        ..write("proj", "decisions/db.md", None, Some("Both.\n"), at(9))
    };
    let receipt = store
        .write_document(
            third,
            WriteGuard::Upsert,
            vec![audit("agent:c", "write", "proj", "decisions/db.md", at(9))],
        )
        .await
        .expect("upsert");
    assert!(!receipt.created && receipt.snapshotted);
    assert_eq!(
        receipt.document.title.as_deref(),
        Some("Pick the database"),
        "NULL title keeps the stored one"
    );

    let versions = store
        .versions("proj", "decisions/db.md", 10)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 2, "{versions:?}");
    assert!(
        versions[0].id > versions[1].id,
        "newest first: {versions:?}"
    );
    assert_eq!(
        (
            versions[0].title.as_deref(),
            versions[0].bytes,
            versions[0].snapshot_at
        ),
        (Some("Pick the database"), 14, at(9))
    );
    assert_eq!(
        (
            versions[1].title.as_deref(),
            versions[1].bytes,
            versions[1].snapshot_at
        ),
        (Some("Pick a database"), 14, at(5))
    );
    let oldest = store
        .version(versions[1].id, "proj", "decisions/db.md")
        .await
        .expect("version");
    assert_eq!(
        oldest,
        Some(VersionRow {
            id: versions[1].id,
            document_id: created.id,
            namespace: "proj".into(),
            path: "decisions/db.md".into(),
            title: Some("Pick a database".into()),
            body: Some("SQLite first.\n".into()),
            doc_type: Some("decision".into()),
            status: Some("draft".into()),
            tags: Some("alpha beta".into()),
            snapshot_at: at(5),
        })
    );
    let newer = store
        .version(versions[0].id, "proj", "decisions/db.md")
        .await
        .expect("version")
        .expect("exists");
    assert_eq!(
        (
            newer.doc_type.as_deref(),
            newer.status.as_deref(),
            newer.tags.as_deref(),
            newer.body.as_deref()
        ),
        (
            Some("decision"),
            Some("active"),
            Some("alpha beta"),
            Some("Postgres too.\n")
        )
    );
    assert_eq!(
        store
            .version(versions[0].id, "proj", "decisions/other.md")
            .await
            .expect("version"),
        None
    );
    assert_eq!(
        store
            .version(versions[0].id, "other", "decisions/db.md")
            .await
            .expect("version"),
        None
    );
    assert_eq!(
        store
            .version(versions[0].id + 1000, "proj", "decisions/db.md")
            .await
            .expect("version"),
        None
    );
    let limited = store
        .versions("proj", "decisions/db.md", 1)
        .await
        .expect("versions");
    assert_eq!(limited, versions[..1].to_vec());
}

/// Defaults on insert (type `note`, status `published`) and NULL inputs keeping stored values.
pub async fn write_defaults_and_null_inputs<S: Store>(store: &S) {
    let receipt = put(
        store,
        write("proj", "plain.md", None, Some("body one"), at(0)),
    )
    .await;
    assert!(
        receipt.created && !receipt.snapshotted,
        "an upsert of a missing row inserts"
    );
    let d = receipt.document;
    assert_eq!(
        (d.doc_type.as_str(), d.status.as_str()),
        ("note", "published")
    );
    assert_eq!((d.title.clone(), d.tags.clone()), (None, None));

    let full = DocumentWrite {
        doc_type: Some("concept".into()),
        status: Some("ready".into()),
        tags: Some("t".into()),
        ..write("proj", "plain.md", Some("Plain"), Some("body two"), at(1))
    };
    put(store, full).await;
    let receipt = put(store, write("proj", "plain.md", None, None, at(2))).await;
    assert!(!receipt.created && receipt.snapshotted);
    let d = receipt.document;
    assert_eq!(
        (
            d.title.as_deref(),
            d.body.as_deref(),
            d.doc_type.as_str(),
            d.status.as_str(),
            d.tags.as_deref()
        ),
        (
            Some("Plain"),
            Some("body two"),
            "concept",
            "ready",
            Some("t")
        ),
        "every NULL input keeps the stored value"
    );
    assert_eq!(d.updated_at, at(2));
    assert_eq!(doc(store, "proj", "plain.md").await, d);
}

/// `links: Some` replaces the outgoing edges, `Some(vec![])` clears them, `None` keeps them;
/// duplicate edges in one write are inserted once.
pub async fn write_links_replace_clear_and_ignore_duplicates<S: Store>(store: &S) {
    let mut change = write("proj", "a.md", Some("A"), Some("a"), at(0));
    change.links = Some(vec![
        link(LinkType::References, "proj", "b.md"),
        link(LinkType::Governs, "other", "c.md"),
        link(LinkType::References, "proj", "b.md"),
    ]);
    put(store, change).await;
    let out = |v: &[(&str, &str, &str)]| -> Vec<(String, String, String)> {
        v.iter()
            .map(|(t, n, p)| ((*t).to_owned(), (*n).to_owned(), (*p).to_owned()))
            .collect()
    };
    assert_eq!(
        store.backlinks("proj", "a.md").await.expect("backlinks"),
        Backlinks {
            outgoing: out(&[("governs", "other", "c.md"), ("references", "proj", "b.md")]),
            incoming: vec![]
        }
    );
    assert_eq!(
        store
            .backlinks("proj", "b.md")
            .await
            .expect("backlinks")
            .incoming,
        out(&[("references", "proj", "a.md")])
    );

    put(store, write("proj", "a.md", None, Some("a2"), at(1))).await;
    assert_eq!(
        store
            .backlinks("proj", "a.md")
            .await
            .expect("backlinks")
            .outgoing
            .len(),
        2,
        "None keeps edges"
    );

    let mut change = write("proj", "a.md", None, None, at(2));
    change.links = Some(vec![link(LinkType::DependsOn, "proj", "d.md")]);
    put(store, change).await;
    assert_eq!(
        store
            .backlinks("proj", "a.md")
            .await
            .expect("backlinks")
            .outgoing,
        out(&[("depends-on", "proj", "d.md")])
    );
    assert_eq!(
        store.backlinks("proj", "b.md").await.expect("backlinks"),
        Backlinks::default()
    );
    assert_eq!(
        store.backlinks("other", "c.md").await.expect("backlinks"),
        Backlinks::default()
    );

    let mut change = write("proj", "a.md", None, None, at(3));
    change.links = Some(vec![]);
    put(store, change).await;
    assert_eq!(
        store.backlinks("proj", "a.md").await.expect("backlinks"),
        Backlinks::default()
    );
    assert_eq!(
        store.backlinks("proj", "d.md").await.expect("backlinks"),
        Backlinks::default()
    );
}

/// The audit rows given to a write land with it, verbatim; `last_actor` follows them.
pub async fn write_appends_audit_rows<S: Store>(store: &S) {
    let mut first = audit("agent:writer", "write", "proj", "n.md", at(0));
    first.params = json!({"title": "N", "mode": "replace", "nested": {"k": [1, 2]}});
    let mut second = audit("agent:writer", "links", "proj", "n.md", at(0));
    second.params = json!({"edges": 0});
    store
        .write_document(
            write("proj", "n.md", Some("N"), Some("n"), at(0)),
            WriteGuard::Create,
            vec![first, second],
        )
        .await
        .expect("create");
    let rows = store
        .recent_audit(
            &AuditFilter {
                namespace: Some("proj".into()),
                actor: None,
            },
            10,
        )
        .await
        .expect("audit");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows[0].id > rows[1].id, "newest first");
    assert_eq!(rows[0].action.as_deref(), Some("links"));
    assert_eq!(rows[1].action.as_deref(), Some("write"));
    for row in &rows {
        assert_eq!(
            (
                row.actor.as_deref(),
                row.namespace.as_deref(),
                row.path.as_deref(),
                row.at
            ),
            (Some("agent:writer"), Some("proj"), Some("n.md"), at(0))
        );
    }
    let params: serde_json::Value =
        serde_json::from_str(rows[1].params.as_deref().expect("params")).expect("json");
    assert_eq!(
        params,
        json!({"title": "N", "mode": "replace", "nested": {"k": [1, 2]}})
    );
    assert_eq!(
        store
            .last_actor("proj", "n.md")
            .await
            .expect("last actor")
            .as_deref(),
        Some("agent:writer")
    );

    store
        .write_document(
            write("proj", "n.md", None, Some("n2"), at(1)),
            WriteGuard::Update {
                expected_body: Some("n".into()),
            },
            vec![audit("agent:editor", "write", "proj", "n.md", at(1))],
        )
        .await
        .expect("update");
    assert_eq!(
        store
            .last_actor("proj", "n.md")
            .await
            .expect("last actor")
            .as_deref(),
        Some("agent:editor")
    );
    assert_eq!(
        store
            .last_actor("proj", "missing.md")
            .await
            .expect("last actor"),
        None
    );
}
