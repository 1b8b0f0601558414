//! Conformance cases for the path mutations: delete, move and `archive_documents`, each one
//! unit of work (snapshot, edges at both ends, audit) that changes nothing when it is refused.

use capsid_core::docs::kinds::LinkType;
use capsid_core::ports::{Backlinks, Store, StoreError};

use super::support::{at, audit, audit_count, doc, link, put, typed, write};

type Edge = (String, String, String, String, String);

fn edge(t: &str, from_ns: &str, from: &str, to_ns: &str, to: &str) -> Edge {
    (
        t.into(),
        from_ns.into(),
        from.into(),
        to_ns.into(),
        to.into(),
    )
}

fn ends(v: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    v.iter()
        .map(|(t, n, p)| ((*t).to_owned(), (*n).to_owned(), (*p).to_owned()))
        .collect()
}

/// a -> b, c -> a, b -> c: three documents linked in a triangle.
async fn triangle<S: Store>(store: &S) {
    for (path, target, kind) in [
        ("a.md", "b.md", LinkType::References),
        ("c.md", "a.md", LinkType::Governs),
        ("b.md", "c.md", LinkType::DependsOn),
    ] {
        let mut change = write(
            "proj",
            path,
            Some(path),
            Some(&format!("body of {path}")),
            at(0),
        );
        change.links = Some(vec![link(kind, "proj", target)]);
        put(store, change).await;
    }
}

/// Delete removes the row and every edge touching it, snapshots it and audits it.
pub async fn delete_removes_edges_at_both_ends_and_snapshots<S: Store>(store: &S) {
    triangle(store).await;
    let audits = audit_count(store).await;
    let mut removed = store
        .delete_document(
            "proj",
            "a.md",
            None,
            audit("agent:del", "delete", "proj", "a.md", at(3)),
        )
        .await
        .expect("delete");
    removed.sort();
    assert_eq!(
        removed,
        vec![
            edge("governs", "proj", "c.md", "proj", "a.md"),
            edge("references", "proj", "a.md", "proj", "b.md")
        ]
    );
    assert_eq!(store.document("proj", "a.md").await.expect("read"), None);
    assert_eq!(
        store.backlinks("proj", "a.md").await.expect("backlinks"),
        Backlinks::default()
    );
    assert_eq!(
        store
            .backlinks("proj", "b.md")
            .await
            .expect("backlinks")
            .incoming,
        vec![]
    );
    assert_eq!(
        store.backlinks("proj", "c.md").await.expect("backlinks"),
        Backlinks {
            outgoing: vec![],
            incoming: ends(&[("depends-on", "proj", "b.md")])
        }
    );
    let versions = store.versions("proj", "a.md", 10).await.expect("versions");
    assert_eq!(versions.len(), 1);
    let snapshot = store
        .version(versions[0].id, "proj", "a.md")
        .await
        .expect("version")
        .expect("exists");
    assert_eq!(
        (snapshot.title.as_deref(), snapshot.body.as_deref()),
        (Some("a.md"), Some("body of a.md"))
    );
    assert_eq!(
        (snapshot.doc_type.as_deref(), snapshot.status.as_deref()),
        (Some("note"), Some("published"))
    );
    assert_eq!(audit_count(store).await, audits + 1);
    assert_eq!(
        store
            .last_actor("proj", "a.md")
            .await
            .expect("last actor")
            .as_deref(),
        Some("agent:del")
    );
}

/// Delete of a missing row or with a stale body: refused, nothing changed.
pub async fn delete_refusals_change_nothing<S: Store>(store: &S) {
    triangle(store).await;
    let audits = audit_count(store).await;
    let err = store
        .delete_document(
            "proj",
            "zzz.md",
            None,
            audit("agent:del", "delete", "proj", "zzz.md", at(3)),
        )
        .await
        .expect_err("missing");
    assert!(
        matches!(err, StoreError::NotFound(_) | StoreError::Conflict(_)),
        "{err:?}"
    );
    let before = doc(store, "proj", "a.md").await;
    let err = store
        .delete_document(
            "proj",
            "a.md",
            Some("body of b.md"),
            audit("agent:del", "delete", "proj", "a.md", at(3)),
        )
        .await
        .expect_err("stale body");
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    assert_eq!(doc(store, "proj", "a.md").await, before);
    assert_eq!(
        store
            .backlinks("proj", "a.md")
            .await
            .expect("backlinks")
            .incoming,
        ends(&[("governs", "proj", "c.md")])
    );
    assert!(
        store
            .versions("proj", "a.md", 10)
            .await
            .expect("versions")
            .is_empty()
    );
    assert_eq!(audit_count(store).await, audits);
    let removed = store
        .delete_document(
            "proj",
            "a.md",
            Some("body of a.md"),
            audit("agent:del", "delete", "proj", "a.md", at(4)),
        )
        .await
        .expect("matching body");
    assert_eq!(removed.len(), 2);
}

/// Move renames the row, repoints edges at both ends, snapshots and audits.
pub async fn move_repoints_edges_and_snapshots<S: Store>(store: &S) {
    triangle(store).await;
    let before = doc(store, "proj", "a.md").await;
    let audits = audit_count(store).await;
    let repointed = store
        .move_document(
            "proj",
            "a.md",
            "moved/z.md",
            None,
            at(7),
            audit("agent:mv", "move", "proj", "a.md", at(7)),
        )
        .await
        .expect("move");
    assert_eq!(repointed, 2);
    assert_eq!(store.document("proj", "a.md").await.expect("read"), None);
    let moved = doc(store, "proj", "moved/z.md").await;
    assert_eq!(moved.id, before.id, "a move renames the row");
    assert_eq!((moved.title, moved.body), (before.title, before.body));
    assert_eq!(
        (moved.created_at, moved.updated_at),
        (before.created_at, at(7))
    );
    assert_eq!(
        store
            .backlinks("proj", "moved/z.md")
            .await
            .expect("backlinks"),
        Backlinks {
            outgoing: ends(&[("references", "proj", "b.md")]),
            incoming: ends(&[("governs", "proj", "c.md")])
        }
    );
    assert_eq!(
        store.backlinks("proj", "a.md").await.expect("backlinks"),
        Backlinks::default()
    );
    assert_eq!(
        store
            .backlinks("proj", "b.md")
            .await
            .expect("backlinks")
            .incoming,
        ends(&[("references", "proj", "moved/z.md")])
    );
    assert_eq!(
        store
            .backlinks("proj", "c.md")
            .await
            .expect("backlinks")
            .outgoing,
        ends(&[("governs", "proj", "moved/z.md")])
    );
    let snapshots = store
        .versions("proj", "a.md", 10)
        .await
        .expect("versions")
        .len()
        + store
            .versions("proj", "moved/z.md", 10)
            .await
            .expect("versions")
            .len();
    assert_eq!(snapshots, 1, "a move snapshots the prior row once");
    assert_eq!(audit_count(store).await, audits + 1);
}

/// Move onto an existing path, of a missing source, or with a stale body: refused, nothing
/// changed.
pub async fn move_refusals_change_nothing<S: Store>(store: &S) {
    triangle(store).await;
    let (a, b) = (
        doc(store, "proj", "a.md").await,
        doc(store, "proj", "b.md").await,
    );
    let audits = audit_count(store).await;
    let err = store
        .move_document(
            "proj",
            "a.md",
            "b.md",
            None,
            at(7),
            audit("agent:mv", "move", "proj", "a.md", at(7)),
        )
        .await
        .expect_err("target exists");
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    let err = store
        .move_document(
            "proj",
            "a.md",
            "n.md",
            Some("stale"),
            at(7),
            audit("agent:mv", "move", "proj", "a.md", at(7)),
        )
        .await
        .expect_err("stale body");
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    let err = store
        .move_document(
            "proj",
            "nope.md",
            "n.md",
            None,
            at(7),
            audit("agent:mv", "move", "proj", "nope.md", at(7)),
        )
        .await
        .expect_err("missing source");
    assert!(
        matches!(err, StoreError::NotFound(_) | StoreError::Conflict(_)),
        "{err:?}"
    );
    assert_eq!(
        (
            doc(store, "proj", "a.md").await,
            doc(store, "proj", "b.md").await
        ),
        (a, b)
    );
    assert_eq!(store.document("proj", "n.md").await.expect("read"), None);
    assert_eq!(
        store.backlinks("proj", "a.md").await.expect("backlinks"),
        Backlinks {
            outgoing: ends(&[("references", "proj", "b.md")]),
            incoming: ends(&[("governs", "proj", "c.md")])
        }
    );
    for path in ["a.md", "b.md", "n.md"] {
        assert!(
            store
                .versions("proj", path, 10)
                .await
                .expect("versions")
                .is_empty(),
            "{path}"
        );
    }
    assert_eq!(audit_count(store).await, audits);
}

/// `archive_documents` moves every pair or none.
pub async fn archive_documents_all_or_nothing<S: Store>(store: &S) {
    for (i, path) in ["e1.md", "e2.md", "e3.md", "e4.md"].into_iter().enumerate() {
        put(
            store,
            typed(
                "proj",
                path,
                "episodic",
                "published",
                &format!("episode {i}"),
                at(i as i64),
            ),
        )
        .await;
    }
    let mut hub = write("proj", "hub.md", Some("Hub"), Some("hub"), at(5));
    hub.links = Some(vec![
        link(LinkType::References, "proj", "e1.md"),
        link(LinkType::References, "proj", "e3.md"),
    ]);
    put(store, hub).await;
    put(
        store,
        write(
            "proj",
            "archive/e4.md",
            Some("old"),
            Some("already archived"),
            at(6),
        ),
    )
    .await;
    let audits = audit_count(store).await;

    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter().map(|(a, b)| ((*a).into(), (*b).into())).collect()
    };
    let moved = store
        .archive_documents(
            "proj",
            &pairs(&[("e1.md", "archive/e1.md"), ("e2.md", "archive/e2.md")]),
            at(10),
            audit("agent:lint", "lint_finalize", "proj", "", at(10)),
        )
        .await
        .expect("archive");
    assert_eq!(moved, 1, "one edge repointed (hub -> e1)");
    assert_eq!(
        audit_count(store).await,
        audits + 1,
        "one audit row for the batch"
    );
    for (gone, there) in [("e1.md", "archive/e1.md"), ("e2.md", "archive/e2.md")] {
        assert_eq!(store.document("proj", gone).await.expect("read"), None);
        assert_eq!(doc(store, "proj", there).await.updated_at, at(10));
    }
    assert_eq!(
        store
            .backlinks("proj", "hub.md")
            .await
            .expect("backlinks")
            .outgoing,
        ends(&[
            ("references", "proj", "archive/e1.md"),
            ("references", "proj", "e3.md")
        ])
    );

    let audits = audit_count(store).await;
    let e3 = doc(store, "proj", "e3.md").await;
    for batch in [
        pairs(&[
            ("e3.md", "archive/e3.md"),
            ("missing.md", "archive/missing.md"),
        ]),
        pairs(&[("e3.md", "archive/e3.md"), ("e4.md", "archive/e4.md")]),
    ] {
        let err = store
            .archive_documents(
                "proj",
                &batch,
                at(11),
                audit("agent:lint", "lint_finalize", "proj", "", at(11)),
            )
            .await
            .expect_err("one pair cannot move");
        assert!(
            matches!(err, StoreError::NotFound(_) | StoreError::Conflict(_)),
            "{batch:?}: {err:?}"
        );
        assert_eq!(doc(store, "proj", "e3.md").await, e3, "{batch:?}");
        assert_eq!(
            store.document("proj", "archive/e3.md").await.expect("read"),
            None
        );
        assert_eq!(
            doc(store, "proj", "e4.md").await.body.as_deref(),
            Some("episode 3")
        );
        assert_eq!(
            doc(store, "proj", "archive/e4.md").await.body.as_deref(),
            Some("already archived")
        );
        assert_eq!(
            store
                .backlinks("proj", "hub.md")
                .await
                .expect("backlinks")
                .outgoing,
            ends(&[
                ("references", "proj", "archive/e1.md"),
                ("references", "proj", "e3.md")
            ])
        );
        assert!(
            store
                .versions("proj", "e3.md", 10)
                .await
                .expect("versions")
                .is_empty()
        );
        assert!(
            store
                .versions("proj", "archive/e3.md", 10)
                .await
                .expect("versions")
                .is_empty()
        );
        assert_eq!(audit_count(store).await, audits);
    }
}
