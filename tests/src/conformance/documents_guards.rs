//! Conformance cases for the commit guards of `write_document`: a create collision, an update
//! of a missing row and a stale `expected_body` are refused and change nothing.

use capsid_core::docs::document::Document;
use capsid_core::docs::kinds::LinkType;
use capsid_core::ports::{Backlinks, Store, StoreError, WriteGuard};

use super::support::{at, audit, audit_count, doc, link, put, write};

/// `WriteGuard::Create` on an existing row: `Conflict`, and nothing changes.
pub async fn write_create_collision_changes_nothing<S: Store>(store: &S) {
    let mut original = write("proj", "x.md", Some("X"), Some("original"), at(0));
    original.links = Some(vec![link(LinkType::References, "proj", "y.md")]);
    let before = put(store, original).await.document;
    let audits = audit_count(store).await;

    // With links and without (a store may write the latter in one statement).
    for links in [Some(vec![link(LinkType::Governs, "proj", "z.md")]), None] {
        let mut again = write("proj", "x.md", Some("X2"), Some("intruder"), at(1));
        again.links = links.clone();
        let err = store
            .write_document(
                again,
                WriteGuard::Create,
                vec![audit("agent:b", "write", "proj", "x.md", at(1))],
            )
            .await
            .expect_err("create over an existing row");
        assert!(matches!(err, StoreError::Conflict(_)), "{links:?}: {err:?}");
        assert_unchanged(
            store,
            "x.md",
            &before,
            audits,
            &[("references", "proj", "y.md")],
        )
        .await;
    }
}

/// `WriteGuard::Update` on a missing row: `NotFound` or `Conflict`, and nothing is written.
pub async fn write_update_of_missing_row_writes_nothing<S: Store>(store: &S) {
    let bodies = [None, Some(String::new()), Some("something".to_owned())];
    // With links and without (a store may write the latter in one statement).
    for (expected_body, linked) in bodies
        .iter()
        .flat_map(|b| [(b.clone(), true), (b.clone(), false)])
    {
        let mut change = write("proj", "ghost.md", Some("G"), Some("g"), at(0));
        change.links = linked.then(|| vec![link(LinkType::References, "proj", "target.md")]);
        let err = store
            .write_document(
                change,
                WriteGuard::Update {
                    expected_body: expected_body.clone(),
                },
                vec![audit("agent:a", "write", "proj", "ghost.md", at(0))],
            )
            .await
            .expect_err("update of a missing row");
        assert!(
            matches!(err, StoreError::NotFound(_) | StoreError::Conflict(_)),
            "{expected_body:?}: {err:?}"
        );
        assert_eq!(
            store.document("proj", "ghost.md").await.expect("read"),
            None
        );
        assert_eq!(
            audit_count(store).await,
            0,
            "no audit row for an aborted write"
        );
        assert_eq!(
            store
                .backlinks("proj", "target.md")
                .await
                .expect("backlinks"),
            Backlinks::default()
        );
        assert!(
            store
                .versions("proj", "ghost.md", 10)
                .await
                .expect("versions")
                .is_empty()
        );
    }
}

/// An `expected_body` that no longer matches byte for byte: `Conflict`, nothing changed.
pub async fn write_expected_body_mismatch_changes_nothing<S: Store>(store: &S) {
    let mut original = write("proj", "m.md", Some("M"), Some("line one\n"), at(0));
    original.links = Some(vec![link(LinkType::References, "proj", "k.md")]);
    let before = put(store, original).await.document;
    let audits = audit_count(store).await;
    for stale in [
        "line two\n",
        "line one",
        "line one\n ",
        "Line one\n",
        "LINE ONE\n",
        "",
    ] {
        // With links and without (a store may write the latter in one statement).
        for links in [Some(vec![]), None] {
            let mut change = write("proj", "m.md", Some("M2"), Some("overwritten"), at(1));
            change.links = links.clone();
            change.status = Some("closed".into());
            let err = store
                .write_document(
                    change,
                    WriteGuard::Update {
                        expected_body: Some(stale.to_owned()),
                    },
                    vec![audit("agent:b", "write", "proj", "m.md", at(1))],
                )
                .await
                .expect_err("stale expected body");
            assert!(
                matches!(err, StoreError::Conflict(_)),
                "{stale:?}, {links:?}: {err:?}"
            );
            assert_unchanged(
                store,
                "m.md",
                &before,
                audits,
                &[("references", "proj", "k.md")],
            )
            .await;
        }
    }
    let receipt = store
        .write_document(
            write("proj", "m.md", None, Some("line two\n"), at(2)),
            WriteGuard::Update {
                expected_body: Some("line one\n".into()),
            },
            vec![audit("agent:b", "write", "proj", "m.md", at(2))],
        )
        .await
        .expect("matching expected body");
    assert!(receipt.snapshotted && !receipt.created);
    assert_eq!(receipt.document.body.as_deref(), Some("line two\n"));
    let receipt = store
        .write_document(
            write("proj", "m.md", None, Some("line three\n"), at(3)),
            WriteGuard::Update {
                expected_body: None,
            },
            vec![audit("agent:b", "write", "proj", "m.md", at(3))],
        )
        .await
        .expect("an update without a body to match");
    assert!(receipt.snapshotted && !receipt.created);
    assert_eq!(
        receipt.document.title.as_deref(),
        Some("M"),
        "a field not named is kept"
    );
    assert_eq!(
        audit_count(store).await,
        audits + 2,
        "one audit row per update"
    );
    let versions = store.versions("proj", "m.md", 10).await.expect("versions");
    assert_eq!(versions.len(), 2, "each update snapshots what it overwrote");
}

/// The document, its snapshots, its edges and the audit log are as they were.
pub async fn assert_unchanged<S: Store>(
    store: &S,
    path: &str,
    before: &Document,
    audits: usize,
    outgoing: &[(&str, &str, &str)],
) {
    assert_eq!(
        &doc(store, "proj", path).await,
        before,
        "document unchanged"
    );
    assert_eq!(
        store.versions("proj", path, 10).await.expect("versions"),
        vec![],
        "no snapshot"
    );
    assert_eq!(audit_count(store).await, audits, "no audit row");
    let want: Vec<(String, String, String)> = outgoing
        .iter()
        .map(|(t, n, p)| ((*t).to_owned(), (*n).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(
        store
            .backlinks("proj", path)
            .await
            .expect("backlinks")
            .outgoing,
        want,
        "edges unchanged"
    );
}
