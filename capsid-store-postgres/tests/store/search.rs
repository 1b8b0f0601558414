//! Full-text search on Postgres: `websearch_to_tsquery` semantics, hostile text that must
//! never reach the caller as an error, `ts_headline` snippets, and rows kept whole (so
//! ranking a candidate reads no TOAST).

use capsid_core::ports::{DocumentStore, StoreHealth};

use crate::common::{TestDb, at, put, write};

fn paths(hits: &[capsid_core::ports::SearchHit]) -> Vec<&str> {
    let mut v: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    v.sort_unstable();
    v
}

#[tokio::test]
async fn websearch_syntax_phrases_or_and_negation() {
    let Some(db) = TestDb::new("websearch_syntax_phrases_or_and_negation", 4).await else {
        return;
    };
    let s = &db.store;
    put(
        s,
        write("n", "1.md", None, "the lease renewal runs hourly", at(0)),
    )
    .await;
    put(
        s,
        write("n", "2.md", None, "renewal of the lease is manual", at(1)),
    )
    .await;
    put(
        s,
        write("n", "3.md", None, "a lease without any renewal talk", at(2)),
    )
    .await;
    put(s, write("n", "4.md", None, "heartbeat only", at(3))).await;
    // A title match is still judged on the whole document.
    put(
        s,
        write("n", "5.md", Some("Lease notes"), "all manual", at(4)),
    )
    .await;
    let search = |q: &'static str| async move {
        s.search_documents(q, None, None, 25).await.expect("search")
    };

    assert_eq!(
        paths(&search("lease renewal").await),
        ["1.md", "2.md", "3.md"],
        "words are ANDed"
    );
    assert_eq!(
        paths(&search("\"lease renewal\"").await),
        ["1.md"],
        "a quoted phrase"
    );
    assert_eq!(
        paths(&search("heartbeat or manual").await),
        ["2.md", "4.md", "5.md"],
        "or"
    );
    assert_eq!(
        paths(&search("lease -manual").await),
        ["1.md", "3.md"],
        "a leading minus excludes, even a title match"
    );
    assert_eq!(paths(&search("LEASE").await).len(), 4, "case-folded");
    db.finish().await;
}

#[tokio::test]
async fn hostile_text_answers_ok_and_never_errors() {
    let Some(db) = TestDb::new("hostile_text_answers_ok_and_never_errors", 4).await else {
        return;
    };
    let s = &db.store;
    put(
        s,
        write(
            "n",
            "z.md",
            Some("Zebra"),
            "a zebra grazing: near(the) river & AND OR NOT",
            at(0),
        ),
    )
    .await;
    let mut inputs: Vec<String> = [
        "",
        " ",
        "\t\n",
        "\0",
        "zebra\0grazing",
        "\"",
        "\"zebra",
        "zebra\"",
        "'",
        "-",
        "--zebra",
        "!",
        "!zebra",
        "&",
        "|",
        "<->",
        "zebra <-> grazing",
        "zebra:*",
        "zebra:A",
        "(",
        ")",
        "((",
        "zebra)",
        "or",
        "OR zebra",
        "zebra or",
        "-zebra",
        "\\",
        "\\\\'",
        "%",
        "_",
        "*",
        "NEAR(zebra grazing)",
        "title:zebra",
        "$1",
        "::tsquery",
        "'zebra' & 'grazing'",
        "zebra & !grazing",
        "🦓",
        "斑马",
        "\u{200b}",
        "\u{feff}zebra",
        "é\u{301}",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    inputs.push("zebra ".repeat(2000));
    inputs.push("(".repeat(5000));
    inputs.push("\"".repeat(5000));
    inputs.push(format!("{} zebra", "x".repeat(3000)));
    inputs.push("a-".repeat(4000));
    for input in &inputs {
        for (ns, ty) in [
            (None, None),
            (Some("n"), None),
            (Some("n"), Some("note")),
            (None, Some("spec")),
        ] {
            let hits = s
                .search_documents(input, ns, ty, 25)
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "search {:?}: {e}",
                        input.chars().take(40).collect::<String>()
                    )
                });
            assert!(hits.len() <= 1);
        }
        s.fts_probe(input)
            .await
            .unwrap_or_else(|e| panic!("probe {input:?}: {e}"));
    }
    assert!(
        s.search_documents("", None, None, 25)
            .await
            .expect("blank")
            .is_empty()
    );
    assert_eq!(
        s.search_documents("zebra\0grazing", None, None, 25)
            .await
            .expect("nul")
            .len(),
        1,
        "NUL reads as a space"
    );
    assert_eq!(
        s.search_documents("zebra", None, None, 0)
            .await
            .expect("limit 0"),
        vec![]
    );
    db.finish().await;
}

#[tokio::test]
async fn snippets_mark_matches_in_bounded_fragments() {
    let Some(db) = TestDb::new("snippets_mark_matches_in_bounded_fragments", 4).await else {
        return;
    };
    let s = &db.store;
    let filler = "word ".repeat(200);
    let body = format!("{filler} the okapi hides {filler} another okapi appears {filler}");
    put(s, write("n", "o.md", Some("Forest notes"), &body, at(0))).await;
    put(
        s,
        write(
            "n",
            "t.md",
            Some("Okapi facts"),
            "nothing in the body matches",
            at(1),
        ),
    )
    .await;
    let hits = s
        .search_documents("okapi", None, None, 25)
        .await
        .expect("search");
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].path, "t.md", "a title match ranks first");
    assert!(
        !hits[0].snippet.contains('['),
        "no mark when only the title matched: {:?}",
        hits[0].snippet
    );
    let snippet = &hits[1].snippet;
    assert_eq!(snippet.matches("[okapi]").count(), 2, "{snippet:?}");
    assert!(
        snippet.contains(" ... "),
        "two fragments joined by ` ... `: {snippet:?}"
    );
    assert!(snippet.split_whitespace().count() <= 40, "{snippet:?}");
    assert!(hits[1].id > 0 && hits[1].updated_at == at(0));
    db.finish().await;
}

/// `n` words of two to nine letters that compress poorly (a linear congruential sequence).
fn varied_words(seed: u64, n: usize) -> String {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..n)
        .map(|_| {
            let len = 2 + next() % 8;
            (0..len)
                .map(|_| char::from(b'a' + (next() % 26) as u8))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn a_document_up_to_a_page_is_searched_from_its_row() {
    let Some(db) = TestDb::new("a_document_up_to_a_page_is_searched_from_its_row", 2).await else {
        return;
    };
    let s = &db.store;
    // Bodies of about 1, 1.7 and 2.3 KB: with their search vectors, rows over TOAST's default
    // 2 KB threshold, which moved the vector out of the row (a TOAST lookup per candidate).
    for (i, words) in [150, 250, 350].into_iter().enumerate() {
        let body = format!("shared {}", varied_words(i as u64, words));
        put(
            s,
            write("n", &format!("{i}.md"), Some("T"), &body, at(i as i64)),
        )
        .await;
    }
    let toast: String = sqlx::query_scalar(
        "SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'documents'",
    )
    .fetch_one(s.pool())
    .await
    .expect("toast table");
    let toasted = |sql: String| async move {
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
            .fetch_one(s.pool())
            .await
            .expect("count")
    };
    let count = format!("SELECT count(DISTINCT chunk_id) FROM {toast}");
    assert_eq!(toasted(count.clone()).await, 0, "every row is whole");
    let widths: Vec<i32> =
        sqlx::query_scalar("SELECT pg_column_size(d.*) FROM documents d ORDER BY path")
            .fetch_all(s.pool())
            .await
            .expect("row sizes");
    assert!(
        widths.iter().all(|w| *w > 2_100),
        "the rows are over the default threshold, so the table's own setting kept them: {widths:?}"
    );
    // A body past a page still moves out of the row.
    put(
        s,
        write("n", "big.md", Some("T"), &varied_words(9, 3_000), at(9)),
    )
    .await;
    assert!(
        toasted(count).await > 0,
        "a row past a page is still toasted"
    );
    let hits = s
        .search_documents("shared", None, None, 25)
        .await
        .expect("search");
    assert_eq!(hits.len(), 3);
    db.finish().await;
}

#[tokio::test]
async fn a_one_connection_pool_ranks_both_candidate_sets_in_turn() {
    let Some(db) = TestDb::new("a_one_connection_pool_ranks_both_candidate_sets_in_turn", 1).await
    else {
        return;
    };
    let s = &db.store;
    put(
        s,
        write(
            "n",
            "body-once.md",
            None,
            "lease then filler words here",
            at(0),
        ),
    )
    .await;
    put(
        s,
        write("n", "body-twice.md", None, "lease lease renewal", at(1)),
    )
    .await;
    put(s, write("n", "titled.md", Some("Lease"), "filler", at(2))).await;
    put(s, write("n", "other.md", None, "heartbeat", at(3))).await;
    // The pool's one connection is the search's: the second set waits for none.
    let hits = s
        .search_documents("lease", None, None, 25)
        .await
        .expect("search");
    let order: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(
        order,
        ["titled.md", "body-twice.md", "body-once.md"],
        "the title match first, then the body matches by strength"
    );
    assert_eq!(
        hits[1].snippet, "[lease] [lease] renewal",
        "snippets come with each set"
    );
    db.finish().await;
}
