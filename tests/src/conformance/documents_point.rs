//! Conformance case for `document_with_actor`, the one-statement row `read` returns: the row
//! exactly as `document` reads it, beside the actor of its newest audit row.

use capsid_core::ports::{Store, WriteGuard};

use super::support::{at, audit, doc, write};

/// Reads `(namespace, path)` with its actor, failing on a store error.
async fn with_actor<S: Store>(
    store: &S,
    namespace: &str,
    path: &str,
) -> Option<(capsid_core::docs::document::Document, Option<String>)> {
    store
        .document_with_actor(namespace, path)
        .await
        .expect("document with actor")
        .map(|row| (row.document, row.last_actor))
}

/// The row equals `document`'s; the actor follows the newest audit row (a write's or one
/// appended later); a document with no audit row has none; a missing document (another
/// namespace, another case, or only audit rows) is `None`.
pub async fn document_with_actor_is_the_row_and_its_newest_actor<S: Store>(store: &S) {
    assert!(with_actor(store, "proj", "doc.md").await.is_none());

    let first = audit("agent:first", "write", "proj", "doc.md", at(0));
    store
        .write_document(
            write("proj", "doc.md", Some("T"), Some("one"), at(0)),
            WriteGuard::Upsert,
            vec![first],
        )
        .await
        .expect("write");
    let (row, actor) = with_actor(store, "proj", "doc.md").await.expect("exists");
    assert_eq!(row, doc(store, "proj", "doc.md").await);
    assert_eq!(row.body.as_deref(), Some("one"));
    assert_eq!(actor.as_deref(), Some("agent:first"));

    let second = audit("agent:second", "write", "proj", "doc.md", at(1));
    store
        .write_document(
            write("proj", "doc.md", None, Some("two"), at(1)),
            WriteGuard::Upsert,
            vec![second],
        )
        .await
        .expect("write");
    let (row, actor) = with_actor(store, "proj", "doc.md").await.expect("exists");
    assert_eq!(row, doc(store, "proj", "doc.md").await);
    assert_eq!(row.body.as_deref(), Some("two"));
    assert_eq!(actor.as_deref(), Some("agent:second"));

    store
        .append_audit(audit("github:owner", "console", "proj", "doc.md", at(2)))
        .await
        .expect("append");
    let (_, actor) = with_actor(store, "proj", "doc.md").await.expect("exists");
    assert_eq!(actor.as_deref(), Some("github:owner"));

    store
        .write_document(
            write("proj", "quiet.md", Some("Q"), Some("no audit"), at(3)),
            WriteGuard::Upsert,
            Vec::new(),
        )
        .await
        .expect("write without audit");
    let (row, actor) = with_actor(store, "proj", "quiet.md").await.expect("exists");
    assert_eq!(row, doc(store, "proj", "quiet.md").await);
    assert_eq!(actor, None);

    store
        .append_audit(audit("agent:ghost", "delete", "proj", "gone.md", at(4)))
        .await
        .expect("append");
    assert!(with_actor(store, "proj", "gone.md").await.is_none());
    assert!(with_actor(store, "other", "doc.md").await.is_none());
    assert!(with_actor(store, "proj", "DOC.md").await.is_none());
}
