//! FTS5 search: hostile input never surfaces an error, the phrase retry finds what the raw
//! query could not parse; ranking and ties, snippets, filters, the bounded rank window.

use crate::common;

use crate::common::{at, doc, put, store};
use capsid_core::ports::{DocumentStore, StoreHealth};

async fn seeded() -> (tempfile::TempDir, capsid_store_sqlite::SqliteStore) {
    let (dir, store) = store().await;
    put(
        &store,
        doc(
            "capsid",
            "notes/lease.md",
            "Lease rules",
            "The lease lease lease runs four hours.",
            "note",
            at(0),
        ),
    )
    .await;
    put(
        &store,
        doc(
            "capsid",
            "notes/other.md",
            "Other",
            "A lease is mentioned once among many other words here.",
            "note",
            at(1),
        ),
    )
    .await;
    put(
        &store,
        doc(
            "capsid",
            "specs/colon.md",
            "Colon",
            "nosuch lease appears as two words",
            "spec",
            at(2),
        ),
    )
    .await;
    put(
        &store,
        doc(
            "recova",
            "notes/lease.md",
            "Recova lease",
            "lease in another namespace",
            "decision",
            at(3),
        ),
    )
    .await;
    put(
        &store,
        doc(
            "capsid",
            "notes/quote.md",
            "Quote",
            "she said \"hello\" and AND near NEAR",
            "note",
            at(4),
        ),
    )
    .await;
    (dir, store)
}

#[tokio::test]
async fn hostile_queries_never_error() {
    let (_dir, store) = seeded().await;
    let long = "lease ".repeat(2_000);
    let nested = format!("{}lease{}", "(".repeat(500), ")".repeat(500));
    let hostile: Vec<&str> = vec![
        "\"",
        "\"\"",
        "\"lease",
        "lease\"",
        "a'b",
        "NEAR",
        "NEAR(",
        "NEAR(lease other, 2",
        "AND",
        "OR",
        "NOT",
        "lease AND",
        "OR lease",
        "NOT lease",
        "*",
        "lease*",
        "*lease",
        "^",
        "^lease",
        ":",
        "nosuch:lease",
        "title:",
        "{title body}:",
        "-lease",
        "multi-agent",
        "park.",
        "(",
        ")",
        "(lease",
        "lease)",
        "((lease)",
        "+",
        "\u{0}",
        "lease\u{0}lease",
        "\u{1}\u{2}\u{7f}",
        "\t\n\r",
        "😀 lease",
        &long,
        &nested,
    ];
    for query in hostile {
        let hits = store.search_documents(query, None, None, 25).await;
        assert!(hits.is_ok(), "{query:?}: {hits:?}");
    }
}

#[tokio::test]
async fn blank_queries_return_nothing() {
    let (_dir, store) = seeded().await;
    for query in ["", " ", "\t\n  "] {
        assert!(
            store
                .search_documents(query, None, None, 25)
                .await
                .unwrap()
                .is_empty(),
            "{query:?}"
        );
    }
}

#[tokio::test]
async fn a_refused_query_is_retried_as_one_phrase() {
    let (_dir, store) = seeded().await;
    // `nosuch:` is a column filter FTS5 refuses; as a phrase it is the words "nosuch lease".
    let hits = store
        .search_documents("nosuch:lease", None, None, 25)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["specs/colon.md"]
    );
    // An unbalanced quote becomes the phrase `"hello`, i.e. the word hello.
    let hits = store
        .search_documents("\"hello", None, None, 25)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, "notes/quote.md");
    // A bare operator becomes the word itself.
    let hits = store
        .search_documents("NEAR", None, None, 25)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
}

#[tokio::test]
async fn hits_are_ranked_marked_and_filtered() {
    let (_dir, store) = seeded().await;
    let hits = store
        .search_documents("lease", None, None, 25)
        .await
        .unwrap();
    assert_eq!(hits.len(), 4);
    assert_eq!(
        (hits[0].namespace.as_str(), hits[0].path.as_str()),
        ("capsid", "notes/lease.md")
    );
    assert!(hits[0].snippet.contains("[lease]"), "{}", hits[0].snippet);
    assert!(hits.iter().all(|h| h.id > 0));

    let in_ns = store
        .search_documents("lease", Some("recova"), None, 25)
        .await
        .unwrap();
    assert_eq!(in_ns.len(), 1);
    assert_eq!(in_ns[0].doc_type, "decision");
    let by_type = store
        .search_documents("lease", Some("capsid"), Some("spec"), 25)
        .await
        .unwrap();
    assert_eq!(
        by_type.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["specs/colon.md"]
    );
    assert_eq!(
        store
            .search_documents("lease", None, None, 2)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(store.fts_probe("lease").await.unwrap(), 4);
    assert_eq!(store.fts_probe("\"").await.unwrap(), 0);
}

#[tokio::test]
async fn a_filter_finds_weak_matches_behind_many_strong_ones() {
    let (_dir, store) = store().await;
    for i in 0..60 {
        put(
            &store,
            doc(
                "loud",
                &format!("d{i}.md"),
                "zebra",
                "zebra zebra zebra zebra",
                "note",
                at(i),
            ),
        )
        .await;
    }
    let quiet = "one zebra among a great many other words that dilute its weight considerably";
    put(&store, doc("quiet", "q.md", "q", quiet, "note", at(100))).await;
    let hits = store
        .search_documents("zebra", Some("quiet"), None, 5)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["q.md"]
    );
}

#[tokio::test]
async fn search_sees_updates_moves_and_deletes() {
    let (_dir, store) = seeded().await;
    put(
        &store,
        doc(
            "capsid",
            "notes/other.md",
            "Other",
            "now about giraffes",
            "note",
            at(10),
        ),
    )
    .await;
    assert_eq!(
        store
            .search_documents("lease", Some("capsid"), None, 25)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        store
            .search_documents("giraffes", None, None, 25)
            .await
            .unwrap()
            .len(),
        1
    );
    store
        .delete_document(
            "capsid",
            "notes/other.md",
            None,
            common::audit("delete", "capsid", "notes/other.md", at(11)),
        )
        .await
        .unwrap();
    assert!(
        store
            .search_documents("giraffes", None, None, 25)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn equal_scores_come_in_creation_order() {
    let (_dir, store) = store().await;
    for (ns, path) in [("b", "a.md"), ("a", "z.md"), ("a", "m.md")] {
        put(
            &store,
            doc(ns, path, "same", "identical quokka text", "note", at(0)),
        )
        .await;
    }
    let hits = store
        .search_documents("quokka", None, None, 10)
        .await
        .unwrap();
    let found: Vec<_> = hits
        .iter()
        .map(|h| format!("{}/{}", h.namespace, h.path))
        .collect();
    assert_eq!(found, ["b/a.md", "a/z.md", "a/m.md"]);
}

/// Inserts `n` documents of namespace `ns` whose body holds `body`, straight through SQL.
async fn bulk(db_url: &str, ns: &str, n: usize, body: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::sqlite::SqliteConnection::connect(db_url)
        .await
        .unwrap();
    let mut tx = conn.begin().await.unwrap();
    for i in 0..n {
        sqlx::query(
            "INSERT INTO documents (namespace, path, title, body, created_at, updated_at) \
             VALUES (?, ?, 't', ?, '2026-11-30T00:00:00.000Z', '2026-11-30T00:00:00.000Z')",
        )
        .bind(ns)
        .bind(format!("bulk/{i}.md"))
        .bind(body)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn very_common_terms_rank_their_newest_matches_and_filters_narrow_in_the_index() {
    let (dir, store) = store().await;
    // Two old documents (the lowest row ids), then 2,500 newer weak matches.
    put(
        &store,
        doc(
            "big",
            "old.md",
            "zebra",
            "zebra zebra zebra zebra",
            "note",
            at(0),
        ),
    )
    .await;
    put(
        &store,
        doc("tiny", "old.md", "zebra", "zebra zebra", "decision", at(1)),
    )
    .await;
    bulk(
        &common::url(&dir),
        "big",
        2_500,
        "a zebra among many many other words in a long body",
    )
    .await;

    // Unfiltered: 2,502 matches, more than the rank window, so the oldest are not ranked.
    let hits = store
        .search_documents("zebra", None, None, 5)
        .await
        .unwrap();
    assert_eq!(hits.len(), 5);
    assert!(hits.iter().all(|h| h.path.starts_with("bulk/")), "{hits:?}");
    // A namespace filter narrows inside the index: the tiny namespace has one match.
    let hits = store
        .search_documents("zebra", Some("tiny"), None, 5)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["old.md"]
    );
    let hits = store
        .search_documents("zebra", Some("big"), Some("decision"), 5)
        .await
        .unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    let hits = store
        .search_documents("zebra", None, Some("decision"), 5)
        .await
        .unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| h.namespace.as_str())
            .collect::<Vec<_>>(),
        ["tiny"]
    );
    // The window applies to the whole expression's matches: a narrower query ranks them all.
    let hits = store
        .search_documents("zebra NOT among", None, None, 5)
        .await
        .unwrap();
    let found: Vec<_> = hits
        .iter()
        .map(|h| format!("{}/{}", h.namespace, h.path))
        .collect();
    assert_eq!(found, ["big/old.md", "tiny/old.md"]);
}

#[tokio::test]
async fn the_filter_keys_follow_metadata_changes() {
    let (_dir, store) = store().await;
    put(&store, doc("n", "a.md", "A", "okapi", "note", at(0))).await;
    assert_eq!(
        store
            .search_documents("okapi", Some("n"), Some("note"), 5)
            .await
            .unwrap()
            .len(),
        1
    );
    let mut meta = doc("n", "a.md", "A", "okapi", "decision", at(1));
    meta.title = None;
    meta.body = None;
    put(&store, meta).await;
    assert!(
        store
            .search_documents("okapi", Some("n"), Some("note"), 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .search_documents("okapi", Some("n"), Some("decision"), 5)
            .await
            .unwrap()
            .len(),
        1
    );
    store
        .move_document(
            "n",
            "a.md",
            "b.md",
            None,
            at(2),
            common::audit("move", "n", "a.md", at(2)),
        )
        .await
        .unwrap();
    let hits = store
        .search_documents("okapi", Some("n"), Some("decision"), 5)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["b.md"]
    );
}
