//! Conformance cases for full-text search: ranking (a title match first), `[`/`]` snippets,
//! namespace and type filters, limits, and an index kept in step with writes and deletes.

use capsid_core::ports::Store;

use super::support::{at, audit, put, typed, write};

/// Search puts a title match first, marks snippets with `[`/`]`, filters and limits.
pub async fn search_ranks_title_first_with_marked_snippets<S: Store>(store: &S) {
    let filler = "The quarterly report covers staffing, budgets, the roadmap and several unrelated topics \
        that pad this body so the single mention below carries little weight in the ranking.";
    put(
        store,
        typed(
            "proj",
            "title.md",
            "decision",
            "active",
            "Notes about grazing animals.",
            at(0),
        ),
    )
    .await;
    let mut titled = write("proj", "title.md", Some("Zebra migration"), None, at(1));
    titled.tags = Some("t".into());
    put(store, titled).await;
    put(
        store,
        typed(
            "proj",
            "body.md",
            "note",
            "published",
            &format!("{filler} One zebra was seen. {filler}"),
            at(2),
        ),
    )
    .await;
    put(
        store,
        typed(
            "proj",
            "spec.md",
            "spec",
            "draft",
            &format!("{filler} A zebra crossing. {filler}"),
            at(3),
        ),
    )
    .await;
    put(
        store,
        typed(
            "other",
            "zoo.md",
            "note",
            "published",
            "zebra zebra zebra",
            at(4),
        ),
    )
    .await;
    put(
        store,
        typed(
            "proj",
            "none.md",
            "note",
            "published",
            "nothing to see",
            at(5),
        ),
    )
    .await;

    let hits = store
        .search_documents("zebra", Some("proj"), None, 25)
        .await
        .expect("search");
    let paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert_eq!(paths[0], "title.md", "a title match ranks first: {paths:?}");
    let mut rest = paths[1..].to_vec();
    rest.sort_unstable();
    assert_eq!(rest, ["body.md", "spec.md"]);
    let title_hit = &hits[0];
    assert_eq!(
        (
            title_hit.namespace.as_str(),
            title_hit.title.as_deref(),
            title_hit.doc_type.as_str(),
            title_hit.status.as_str()
        ),
        ("proj", Some("Zebra migration"), "decision", "active")
    );
    assert_eq!(title_hit.updated_at, at(1));
    for hit in &hits[1..] {
        assert!(
            hit.snippet.contains("[zebra]"),
            "snippet marks the match: {:?}",
            hit.snippet
        );
        assert!(
            hit.snippet.len() < filler.len() * 2,
            "a snippet is an excerpt: {:?}",
            hit.snippet
        );
    }

    let typed_hits = store
        .search_documents("zebra", Some("proj"), Some("spec"), 25)
        .await
        .expect("search");
    assert_eq!(
        typed_hits
            .iter()
            .map(|h| h.path.as_str())
            .collect::<Vec<_>>(),
        ["spec.md"]
    );
    let everywhere = store
        .search_documents("zebra", None, None, 25)
        .await
        .expect("search");
    assert_eq!(everywhere.len(), 4);
    assert!(everywhere.iter().any(|h| h.namespace == "other"));
    let limited = store
        .search_documents("zebra", None, None, 2)
        .await
        .expect("search");
    assert_eq!(limited.len(), 2);
    assert!(
        store
            .search_documents("okapi", None, None, 25)
            .await
            .expect("search")
            .is_empty()
    );
    assert_eq!(
        store
            .search_documents("ZEBRA", Some("proj"), None, 25)
            .await
            .expect("search")
            .len(),
        3,
        "case-folded"
    );
    assert_eq!(store.fts_probe("zebra").await.expect("probe"), 4);
}

/// Many matches: the limit holds and no hit repeats.
pub async fn search_limit_and_no_duplicates<S: Store>(store: &S) {
    for i in 0..40 {
        put(
            store,
            typed(
                "proj",
                &format!("m/{i:02}.md"),
                "note",
                "published",
                &format!("marmot number {i}"),
                at(i),
            ),
        )
        .await;
    }
    let hits = store
        .search_documents("marmot", Some("proj"), None, 25)
        .await
        .expect("search");
    assert_eq!(hits.len(), 25);
    let mut paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths.len(), 25, "no duplicate hits");
    put(
        store,
        write(
            "proj",
            "m/00.md",
            None,
            Some("no longer about that"),
            at(50),
        ),
    )
    .await;
    let hits = store
        .search_documents("marmot", Some("proj"), None, 100)
        .await
        .expect("search");
    assert_eq!(hits.len(), 39, "an update leaves the index in step");
    store
        .delete_document(
            "proj",
            "m/01.md",
            None,
            audit("agent:a", "delete", "proj", "m/01.md", at(51)),
        )
        .await
        .expect("delete");
    assert_eq!(
        store
            .search_documents("marmot", Some("proj"), None, 100)
            .await
            .expect("search")
            .len(),
        38
    );
}

/// Matches beyond any candidate cap: with more than 2,000 body matches, the one title match
/// (written last) still ranks first; "best first" holds over every match.
pub async fn search_ranks_best_first_among_many_matches<S: Store>(store: &S) {
    let filler = "a long day of field notes about marsupials, weather, and the state of the trail";
    for chunk in (0..2_100).collect::<Vec<usize>>().chunks(50) {
        let writes = chunk.iter().map(|i| {
            let body = format!("Entry {i}: {filler}; one quokka seen near the path. {filler}.");
            put(
                store,
                typed(
                    "proj",
                    &format!("field/{i:04}.md"),
                    "episodic",
                    "published",
                    &body,
                    at(0),
                ),
            )
        });
        futures::future::join_all(writes).await;
    }
    let mut best = write(
        "proj",
        "species/quokka.md",
        Some("Quokka"),
        Some(filler),
        at(1),
    );
    best.doc_type = Some("concept".into());
    put(store, best).await;
    let hits = store
        .search_documents("quokka", Some("proj"), None, 25)
        .await
        .expect("search");
    assert_eq!(hits.len(), 25);
    assert_eq!(
        hits[0].path, "species/quokka.md",
        "the title match ranks first among 2,101 matches"
    );
    let typed_hits = store
        .search_documents("quokka", None, Some("concept"), 25)
        .await
        .expect("search");
    assert_eq!(
        typed_hits
            .iter()
            .map(|h| h.path.as_str())
            .collect::<Vec<_>>(),
        ["species/quokka.md"]
    );
}

/// Without a title match, ranking still covers every match: among 1,200 documents that
/// mention a word once in a long body, a short body written last that is about little else
/// ranks first.
pub async fn search_ranks_strongest_body_match_first_among_many<S: Store>(store: &S) {
    let filler = "a long day of field notes about marsupials, weather, and the state of the trail";
    for chunk in (0..1_200).collect::<Vec<usize>>().chunks(50) {
        let writes = chunk.iter().map(|i| {
            let body = format!("Entry {i}: {filler}; one wombat seen near the path. {filler}.");
            put(
                store,
                typed(
                    "proj",
                    &format!("field/{i:04}.md"),
                    "episodic",
                    "published",
                    &body,
                    at(0),
                ),
            )
        });
        futures::future::join_all(writes).await;
    }
    let strongest = "Wombat burrows: wombat, wombat, wombat.";
    put(
        store,
        typed(
            "proj",
            "species/burrows.md",
            "concept",
            "published",
            strongest,
            at(1),
        ),
    )
    .await;
    let hits = store
        .search_documents("wombat", Some("proj"), None, 10)
        .await
        .expect("search");
    assert_eq!(hits.len(), 10);
    assert_eq!(
        hits[0].path, "species/burrows.md",
        "the strongest match ranks first among 1,201 matches"
    );
}
