//! Full-text search on Postgres: `websearch_to_tsquery` semantics, hostile text that must
//! never reach the caller as an error, and `ts_headline` snippets.

mod common;

use capsid_core::ports::{DocumentStore, StoreHealth};

use common::{TestDb, at, put, write};

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
