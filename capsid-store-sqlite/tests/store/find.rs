//! `find`: SQLite `GLOB` on the path (case-sensitive `*`, `?`, `[...]`), ordered by
//! namespace and path, bounded by the limit.

use crate::common::{at, doc, put, store};
use capsid_core::ports::DocumentStore;

#[tokio::test]
async fn find_uses_case_sensitive_glob() {
    let (_dir, store) = store().await;
    for path in [
        "notes/a.md",
        "notes/sub/b.md",
        "Notes/c.md",
        "notes/d.txt",
        "x/notes/e.md",
    ] {
        put(&store, doc("capsid", path, "t", "b", "note", at(0))).await;
    }
    put(&store, doc("other", "notes/z.md", "t", "b", "note", at(0))).await;
    let paths = |found: Vec<capsid_core::docs::DocumentSummary>| {
        found
            .into_iter()
            .map(|d| format!("{}/{}", d.namespace, d.path))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        paths(
            store
                .find_documents(Some("capsid"), "notes/*", 100)
                .await
                .unwrap()
        ),
        [
            "capsid/notes/a.md",
            "capsid/notes/d.txt",
            "capsid/notes/sub/b.md"
        ]
    );
    assert_eq!(
        paths(store.find_documents(None, "notes/*.md", 100).await.unwrap()),
        [
            "capsid/notes/a.md",
            "capsid/notes/sub/b.md",
            "other/notes/z.md"
        ]
    );
    assert_eq!(
        paths(
            store
                .find_documents(Some("capsid"), "[N]otes/?.md", 100)
                .await
                .unwrap()
        ),
        ["capsid/Notes/c.md"]
    );
    assert_eq!(
        paths(
            store
                .find_documents(Some("capsid"), "*e.md", 100)
                .await
                .unwrap()
        ),
        ["capsid/x/notes/e.md"]
    );
    assert_eq!(
        store
            .find_documents(None, "notes/*", 2)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        store
            .find_documents(Some("capsid"), "NOTES/*", 100)
            .await
            .unwrap()
            .is_empty()
    );
}
