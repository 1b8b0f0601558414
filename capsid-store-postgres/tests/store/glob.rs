//! `find` against a table of SQLite `GLOB` answers: every glob translated to a Postgres regex
//! (plus a path-prefix range) must match exactly the paths SQLite's `GLOB` matches.

use capsid_core::ports::DocumentStore;
use capsid_store_postgres::glob;

use crate::common::{TestDb, at, put, write};

/// The paths the table is evaluated over.
const PATHS: &[&str] = &[
    "a.md",
    "A.md",
    "ab.md",
    "abc.md",
    "b.md",
    "z.md",
    "-.md",
    "].md",
    "[.md",
    "^.md",
    "\\.md",
    "*.md",
    "?.md",
    "%.md",
    "_.md",
    "notes/a.md",
    "notes/sub/b.md",
    "notes/",
    "x",
    "xy",
    "é.md",
    "ä",
    "a-b",
    "a]b",
    "a^b",
    ".md",
    "a.b",
    "a+b",
    "a(b)",
    "a{1}",
    "a|b",
    "a$",
    "$a",
    "anb",
];

/// `(glob, the paths SQLite's GLOB matches, in byte order)`, computed by SQLite 3.40.
const CASES: &[(&str, &[&str])] = &[
    (
        "*",
        &[
            "$a",
            "%.md",
            "*.md",
            "-.md",
            ".md",
            "?.md",
            "A.md",
            "[.md",
            "\\.md",
            "].md",
            "^.md",
            "_.md",
            "a$",
            "a(b)",
            "a+b",
            "a-b",
            "a.b",
            "a.md",
            "a]b",
            "a^b",
            "ab.md",
            "abc.md",
            "anb",
            "a{1}",
            "a|b",
            "b.md",
            "notes/",
            "notes/a.md",
            "notes/sub/b.md",
            "x",
            "xy",
            "z.md",
            "ä",
            "é.md",
        ],
    ),
    (
        "*.md",
        &[
            "%.md",
            "*.md",
            "-.md",
            ".md",
            "?.md",
            "A.md",
            "[.md",
            "\\.md",
            "].md",
            "^.md",
            "_.md",
            "a.md",
            "ab.md",
            "abc.md",
            "b.md",
            "notes/a.md",
            "notes/sub/b.md",
            "z.md",
            "é.md",
        ],
    ),
    (
        "?.md",
        &[
            "%.md", "*.md", "-.md", "?.md", "A.md", "[.md", "\\.md", "].md", "^.md", "_.md",
            "a.md", "b.md", "z.md", "é.md",
        ],
    ),
    ("??.md", &["ab.md"]),
    ("[ab].md", &["a.md", "b.md"]),
    (
        "[^ab].md",
        &[
            "%.md", "*.md", "-.md", "?.md", "A.md", "[.md", "\\.md", "].md", "^.md", "_.md",
            "z.md", "é.md",
        ],
    ),
    ("[a-c].md", &["a.md", "b.md"]),
    ("[z-a].md", &["z.md"]),
    ("[]].md", &["].md"]),
    (
        "[^]].md",
        &[
            "%.md", "*.md", "-.md", "?.md", "A.md", "[.md", "\\.md", "^.md", "_.md", "a.md",
            "b.md", "z.md", "é.md",
        ],
    ),
    ("[]-a].md", &["-.md", "].md", "a.md"]),
    ("[a-].md", &["-.md", "a.md"]),
    ("[-a].md", &["-.md", "a.md"]),
    (
        "[a-c-e]*",
        &[
            "-.md", "a$", "a(b)", "a+b", "a-b", "a.b", "a.md", "a]b", "a^b", "ab.md", "abc.md",
            "anb", "a{1}", "a|b", "b.md",
        ],
    ),
    ("[\\].md", &["\\.md"]),
    ("[[].md", &["[.md"]),
    ("[*].md", &["*.md"]),
    ("[?].md", &["?.md"]),
    ("[!-/].md", &["%.md", "*.md", "-.md"]),
    (
        "[^a-z]*",
        &[
            "$a", "%.md", "*.md", "-.md", ".md", "?.md", "A.md", "[.md", "\\.md", "].md", "^.md",
            "_.md", "ä", "é.md",
        ],
    ),
    ("notes/*", &["notes/", "notes/a.md", "notes/sub/b.md"]),
    ("notes/?.md", &["notes/a.md"]),
    ("notes/*/*", &["notes/sub/b.md"]),
    ("*/*", &["notes/", "notes/a.md", "notes/sub/b.md"]),
    ("a[]]b", &["a]b"]),
    ("a[^]]b", &["a+b", "a-b", "a.b", "a^b", "anb", "a|b"]),
    ("a[\\^]b", &["a^b"]),
    ("a[]^]b", &["a]b", "a^b"]),
    ("a?b", &["a+b", "a-b", "a.b", "a]b", "a^b", "anb", "a|b"]),
    ("a*b", &["a+b", "a-b", "a.b", "a]b", "a^b", "anb", "a|b"]),
    ("a.b", &["a.b"]),
    ("a+b", &["a+b"]),
    ("a(b)", &["a(b)"]),
    ("a{1}", &["a{1}"]),
    ("a|b", &["a|b"]),
    ("a$", &["a$"]),
    ("$a", &["$a"]),
    ("\\*.md", &["\\.md"]),
    ("\\.md", &["\\.md"]),
    ("é*", &["é.md"]),
    ("[é].md", &["é.md"]),
    (
        "[^é].md",
        &[
            "%.md", "*.md", "-.md", "?.md", "A.md", "[.md", "\\.md", "].md", "^.md", "_.md",
            "a.md", "b.md", "z.md",
        ],
    ),
    (
        "[a-é]*",
        &[
            "a$",
            "a(b)",
            "a+b",
            "a-b",
            "a.b",
            "a.md",
            "a]b",
            "a^b",
            "ab.md",
            "abc.md",
            "anb",
            "a{1}",
            "a|b",
            "b.md",
            "notes/",
            "notes/a.md",
            "notes/sub/b.md",
            "x",
            "xy",
            "z.md",
            "ä",
            "é.md",
        ],
    ),
    ("*[", &[]),
    ("[", &[]),
    ("[]", &[]),
    ("[^]", &[]),
    ("[abc", &[]),
    ("a*[b", &[]),
    ("[[:alpha:]]", &[]),
    ("*x*", &["x", "xy"]),
    ("x*", &["x", "xy"]),
    ("*.MD", &[]),
    ("A*", &["A.md"]),
    ("[A-Z]*", &["A.md"]),
    (
        "[^A-Z]*",
        &[
            "$a",
            "%.md",
            "*.md",
            "-.md",
            ".md",
            "?.md",
            "[.md",
            "\\.md",
            "].md",
            "^.md",
            "_.md",
            "a$",
            "a(b)",
            "a+b",
            "a-b",
            "a.b",
            "a.md",
            "a]b",
            "a^b",
            "ab.md",
            "abc.md",
            "anb",
            "a{1}",
            "a|b",
            "b.md",
            "notes/",
            "notes/a.md",
            "notes/sub/b.md",
            "x",
            "xy",
            "z.md",
            "ä",
            "é.md",
        ],
    ),
    ("a.md", &["a.md"]),
    ("notes/a.md", &["notes/a.md"]),
    ("no*es/[a-z].md", &["notes/a.md"]),
    ("*b", &["a+b", "a-b", "a.b", "a]b", "a^b", "anb", "a|b"]),
    ("?", &["x", "ä"]),
    ("??", &["$a", "a$", "xy"]),
    ("[ä]", &["ä"]),
    ("[^ä]", &["x"]),
];

#[tokio::test]
async fn find_answers_like_sqlite_glob() {
    let Some(db) = TestDb::new("find_answers_like_sqlite_glob", 4).await else {
        return;
    };
    for (i, path) in PATHS.iter().enumerate() {
        put(&db.store, write("g", path, None, "x", at(i as i64))).await;
        // The same paths in another namespace must never leak into a namespaced find.
        put(&db.store, write("h", path, None, "x", at(i as i64))).await;
    }
    let mut wrong = Vec::new();
    for (pattern, want) in CASES {
        let rows = db.store.find_documents(Some("g"), pattern, 1000).await;
        let got: Vec<String> = rows
            .unwrap_or_else(|e| panic!("find {pattern:?}: {e}"))
            .into_iter()
            .map(|r| r.path)
            .collect();
        if got != *want {
            wrong.push(format!("{pattern:?}: got {got:?}, SQLite says {want:?}"));
        }
        let everywhere = db
            .store
            .find_documents(None, pattern, 1000)
            .await
            .expect("find");
        assert_eq!(
            everywhere.len(),
            want.len() * 2,
            "{pattern:?} across namespaces"
        );
    }
    assert!(
        wrong.is_empty(),
        "{} globs disagree with SQLite:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    db.finish().await;
}

#[tokio::test]
async fn regexes_evaluated_by_postgres_agree_with_the_table() {
    let Some(db) = TestDb::new("regexes_evaluated_by_postgres_agree_with_the_table", 2).await
    else {
        return;
    };
    for (pattern, want) in CASES {
        let translated = glob::to_regex(pattern);
        for path in PATHS {
            let matched = match &translated {
                None => false,
                Some(g) => sqlx::query_scalar::<_, bool>("SELECT $1::text COLLATE \"C\" ~ $2")
                    .bind(path)
                    .bind(&g.regex)
                    .fetch_one(db.store.pool())
                    .await
                    .unwrap_or_else(|e| panic!("{pattern:?} as {:?}: {e}", g.regex)),
            };
            assert_eq!(
                matched,
                want.contains(path),
                "{pattern:?} on {path:?} (regex {translated:?})"
            );
            if matched {
                let prefix = translated.as_ref().map_or("", |g| g.prefix.as_str());
                assert!(
                    path.starts_with(prefix),
                    "{pattern:?}: {path:?} lacks the prefix {prefix:?}"
                );
            }
        }
    }
    db.finish().await;
}

#[tokio::test]
async fn prefix_ranges_keep_every_match_and_respect_the_limit() {
    let Some(db) = TestDb::new("prefix_ranges_keep_every_match_and_respect_the_limit", 4).await
    else {
        return;
    };
    let paths = [
        "notes",
        "notes/",
        "notes/a",
        "notes/\u{10FFFF}",
        "notes0",
        "notes.",
        "note",
        "notez/x",
    ];
    for (i, path) in paths.iter().enumerate() {
        put(&db.store, write("p", path, None, "x", at(i as i64))).await;
    }
    let found = |pattern: &'static str, limit: usize| {
        let store = db.store.clone();
        async move {
            let rows = store
                .find_documents(Some("p"), pattern, limit)
                .await
                .expect("find");
            rows.into_iter().map(|r| r.path).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        found("notes/*", 100).await,
        ["notes/", "notes/a", "notes/\u{10FFFF}"]
    );
    assert_eq!(
        found("notes*", 100).await,
        [
            "notes",
            "notes.",
            "notes/",
            "notes/a",
            "notes/\u{10FFFF}",
            "notes0"
        ]
    );
    assert_eq!(found("notes*", 2).await, ["notes", "notes."]);
    assert_eq!(found("notes", 100).await, ["notes"]);
    db.finish().await;
}
