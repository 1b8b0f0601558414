//! Hostile input: full-text query syntax, control characters and very long text in search
//! and `find` globs answer `Ok` (results or nothing), never an error or a
//! panic, and leave the store exactly as it was.

use capsid_core::docs::document::Document;
use capsid_core::ports::{AuditFilter, DocFilter, Store};

use super::support::{at, put, typed};

/// Search inputs that a naive query builder would pass to the engine as syntax.
pub fn hostile_queries() -> Vec<String> {
    let mut queries: Vec<String> = [
        "\"",
        "\"\"",
        "\"unbalanced",
        "zebra\"",
        "'",
        "''",
        "NEAR(a b)",
        "NEAR(zebra grazing, 2)",
        "NEAR(",
        "a AND b",
        "AND",
        "OR",
        "NOT",
        "a OR",
        "NOT zebra",
        "zebra NOT",
        "AND OR NOT",
        "*",
        "zeb*",
        "*zebra",
        "^",
        "^zebra",
        ":",
        "::",
        "title:zebra",
        "body:zebra",
        "nosuch:x",
        "{title body}: zebra",
        "-zebra",
        "+zebra",
        "zebra -",
        "(",
        ")",
        "((zebra)",
        "zebra))",
        "(a OR b",
        "a & b | !c",
        "a <-> b",
        "zebra:*",
        "!!",
        "&",
        "|",
        "\\",
        "\\\"",
        "%",
        "_",
        "';DROP TABLE documents;--",
        "\"; DELETE FROM documents; --",
        "",
        " ",
        "   ",
        "\t\n\r",
        "\0",
        "zebra\0grazing",
        "\u{1}\u{7f}\u{1b}[31m",
        "\u{200b}",
        "\u{feff}zebra",
        "ｚｅｂｒａ",
        "zébra",
        "斑马",
        "🦓",
        "a\u{301}",
        "NEAR/3",
        "zebra NEAR/2 grazing",
        "col:",
        ":zebra",
        "@@",
        "$1",
        "?",
        "%s%s%s",
        "{{}}",
        "[zebra]",
        "<b>zebra</b>",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    queries.push("zebra ".repeat(300));
    queries.push("\"".repeat(512));
    queries.push("(".repeat(512));
    queries.push(mixed_text(10 * 1024));
    queries
}

/// `len` bytes (roughly) of mixed words, operators, punctuation and non-ASCII text.
pub fn mixed_text(len: usize) -> String {
    let parts = [
        "zebra", "AND", "\"", "NEAR(", "title:", "*", "^", "OR", "(", ")", "NOT", "grazing", "ä",
        "🦓", "-", ":", "\t", "'", "\\", "%", "_", "<->", "&", "|", "!", "{", "}", "\u{1}", "斑马",
    ];
    let mut out = String::new();
    let mut i = 0usize;
    while out.len() < len {
        out.push_str(parts[(i * 7 + i / 3) % parts.len()]);
        out.push(if i.is_multiple_of(5) { ' ' } else { '\u{a0}' });
        i += 1;
    }
    out
}

/// Glob inputs that a naive LIKE or regex translation would mishandle.
pub fn hostile_globs() -> Vec<String> {
    let mut globs: Vec<String> = [
        "[",
        "[^",
        "[]",
        "[]]",
        "[^]",
        "[z-a]",
        "]",
        "\\",
        "\\*",
        "%",
        "_",
        "%%",
        "**",
        "*?*",
        "?",
        "[[:alpha:]]",
        "(",
        ".*",
        "^a",
        "a$",
        "'",
        "\"",
        "\0",
        "\u{1}",
        "{a,b}",
        "a|b",
        "[\\]",
        "é*",
        "🦓?",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    globs.push("*".repeat(512));
    globs.push("[".repeat(512));
    // Work bombs (SPEC 8): the core refuses them at `find`; a store asked anyway still
    // answers, within its own bound (Postgres's statement timeout).
    globs.push("*a".repeat(256));
    globs.push("*?".repeat(256));
    globs.push(format!("*[{}]", "bcdefghijklmnopqrstuvwxyz".repeat(20)));
    globs.push(format!("{}*", "?".repeat(511)));
    globs
}

async fn state<S: Store>(store: &S) -> (Vec<Document>, usize, usize) {
    let mut docs = Vec::new();
    for row in store
        .list_documents(&DocFilter::default(), 10_000)
        .await
        .expect("list")
    {
        docs.push(
            store
                .document(&row.namespace, &row.path)
                .await
                .expect("read")
                .expect("listed row"),
        );
    }
    let mut versions = 0;
    for d in &docs {
        versions += store
            .versions(&d.namespace, &d.path, 1000)
            .await
            .expect("versions")
            .len();
    }
    let audits = store
        .recent_audit(&AuditFilter::default(), 100_000)
        .await
        .expect("audit")
        .len();
    (docs, versions, audits)
}

/// Every hostile query answers `Ok` with every filter combination; nothing changes.
pub async fn hostile_search_input_is_harmless<S: Store>(store: &S) {
    put(
        store,
        typed(
            "proj",
            "zebra.md",
            "note",
            "published",
            "A zebra grazing near the river. AND OR NOT",
            at(0),
        ),
    )
    .await;
    put(
        store,
        typed(
            "proj",
            "other.md",
            "spec",
            "draft",
            "title:zebra \"quoted\" NEAR(a b) text",
            at(1),
        ),
    )
    .await;
    put(
        store,
        typed("zoo", "z.md", "note", "published", "斑马 🦓 zébra", at(2)),
    )
    .await;
    put(
        store,
        typed(
            "proj",
            "zebra.md",
            "note",
            "active",
            "A zebra grazing near the river, edited.",
            at(3),
        ),
    )
    .await;
    let before = state(store).await;
    for query in hostile_queries() {
        for (namespace, doc_type) in [
            (None, None),
            (Some("proj"), None),
            (Some("proj"), Some("note")),
            (None, Some("spec")),
        ] {
            let hits = store
                .search_documents(&query, namespace, doc_type, 25)
                .await
                .unwrap_or_else(|e| {
                    panic!("search {query:?} in {namespace:?}/{doc_type:?} failed: {e}")
                });
            assert!(hits.len() <= 3, "{query:?}: {hits:?}");
            for hit in &hits {
                assert!(
                    namespace.is_none_or(|ns| hit.namespace == ns),
                    "{query:?}: {hit:?}"
                );
                assert!(
                    doc_type.is_none_or(|t| hit.doc_type == t),
                    "{query:?}: {hit:?}"
                );
            }
        }
    }
    let plain = store
        .search_documents("zebra", Some("proj"), None, 25)
        .await
        .expect("search");
    assert_eq!(plain.len(), 2, "the store still searches: {plain:?}");
    assert_eq!(
        state(store).await,
        before,
        "hostile input changed the store"
    );
}

/// Every hostile glob answers `Ok`; nothing changes.
pub async fn hostile_glob_input_is_harmless<S: Store>(store: &S) {
    for (i, path) in ["a.md", "[x].md", "%.md", "_.md", "\\.md", "é.md", "*.md"]
        .into_iter()
        .enumerate()
    {
        put(
            store,
            typed("proj", path, "note", "published", "x", at(i as i64)),
        )
        .await;
    }
    let before = state(store).await;
    for glob in hostile_globs() {
        for namespace in [None, Some("proj")] {
            let rows = store
                .find_documents(namespace, &glob, 100)
                .await
                .unwrap_or_else(|e| panic!("find {glob:?} failed: {e}"));
            assert!(rows.len() <= 7, "{glob:?}");
        }
    }
    let found = |glob: &'static str| async move {
        let rows = store
            .find_documents(Some("proj"), glob, 100)
            .await
            .expect("find");
        rows.into_iter().map(|r| r.path).collect::<Vec<_>>()
    };
    assert_eq!(found("%").await, Vec::<String>::new(), "`%` is literal");
    assert_eq!(found("%.md").await, ["%.md"]);
    assert_eq!(found("_.md").await, ["_.md"]);
    assert_eq!(
        found("\\.md").await,
        ["\\.md"],
        "a backslash is literal in GLOB"
    );
    assert_eq!(
        found("[[]x].md").await,
        ["[x].md"],
        "`[[]` matches a literal `[`"
    );
    assert_eq!(
        found("[*].md").await,
        ["*.md"],
        "`[*]` matches a literal `*`"
    );
    assert_eq!(
        state(store).await,
        before,
        "hostile input changed the store"
    );
}
