//! Conformance cases for the document reads: list order (byte order), GLOB find, backlink
//! order, existence checks and keyset pages.

use capsid_core::docs::kinds::LinkType;
use capsid_core::ports::{DocFilter, Store};

use super::support::{at, doc, link, put, typed, write};

/// Paths chosen to expose collation differences: case, digits, punctuation, non-ASCII.
pub const AWKWARD_PATHS: [&str; 16] = [
    "B.md", "a.md", "a/b.md", "a-b.md", "a.b", "Z", "z", "ä.md", "é", "10.md", "9.md", "_x", "~x",
    "a b", "A.md", "ab",
];

/// Namespaces chosen the same way.
pub const AWKWARD_NAMESPACES: [&str; 4] = ["proj", "Proj", "proj-2", "p_roj"];

fn keys(rows: &[capsid_core::docs::document::DocumentSummary]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| (r.namespace.clone(), r.path.clone()))
        .collect()
}

fn byte_order(pairs: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = pairs.into_iter().collect();
    v.sort();
    v
}

/// `list` orders by namespace then path in byte order, filters and respects the limit.
pub async fn list_orders_by_namespace_then_path_bytewise<S: Store>(store: &S) {
    let mut all = Vec::new();
    for (n, ns) in AWKWARD_NAMESPACES.iter().enumerate() {
        for (i, path) in AWKWARD_PATHS.iter().enumerate() {
            let (doc_type, status) = if i % 3 == 0 {
                ("task", "active")
            } else {
                ("note", "published")
            };
            put(
                store,
                typed(ns, path, doc_type, status, "b", at((n * 20 + i) as i64)),
            )
            .await;
            all.push(((*ns).to_owned(), (*path).to_owned()));
        }
    }
    let want = byte_order(all.clone());
    let rows = store
        .list_documents(&DocFilter::default(), 1000)
        .await
        .expect("list");
    assert_eq!(keys(&rows), want);
    let rows = store
        .list_documents(&DocFilter::default(), 7)
        .await
        .expect("list");
    assert_eq!(keys(&rows), want[..7].to_vec());

    let only = DocFilter {
        namespace: Some("Proj".into()),
        ..DocFilter::default()
    };
    let rows = store.list_documents(&only, 1000).await.expect("list");
    assert_eq!(
        keys(&rows),
        byte_order(all.iter().filter(|(n, _)| n == "Proj").cloned())
    );
    let tasks = DocFilter {
        namespace: Some("proj".into()),
        doc_type: Some("task".into()),
        status: None,
    };
    let rows = store.list_documents(&tasks, 1000).await.expect("list");
    let want_tasks: Vec<_> = byte_order(
        AWKWARD_PATHS
            .iter()
            .step_by(3)
            .map(|p| ("proj".to_owned(), (*p).to_owned())),
    );
    assert_eq!(keys(&rows), want_tasks);
    assert!(
        rows.iter()
            .all(|r| r.doc_type == "task" && r.status == "active")
    );
    let active = DocFilter {
        namespace: None,
        doc_type: None,
        status: Some("active".into()),
    };
    assert_eq!(
        store
            .list_documents(&active, 1000)
            .await
            .expect("list")
            .len(),
        4 * 6
    );
    let none = DocFilter {
        namespace: Some("PROJ".into()),
        ..DocFilter::default()
    };
    assert!(
        store
            .list_documents(&none, 1000)
            .await
            .expect("list")
            .is_empty(),
        "namespaces are case-sensitive"
    );
    let summary = &store.list_documents(&only, 1).await.expect("list")[0];
    assert_eq!(summary, &doc(store, "Proj", &summary.path).await.summary());
}

/// `find` has SQLite GLOB semantics: `*`, `?`, `[a-c]`, `[^x]`, case-sensitive, with `%` and
/// `_` literal.
pub async fn find_uses_case_sensitive_glob<S: Store>(store: &S) {
    let paths = [
        "notes/a.md",
        "notes/B.md",
        "notes/b.md",
        "notes/c.md",
        "notes/d.md",
        "notes/ab.md",
        "notes/sub/e.md",
        "Notes/a.md",
        "notes/a_b.md",
        "notes/a%b.md",
        "notes/axb.md",
        "x.md",
    ];
    for (i, path) in paths.iter().enumerate() {
        put(
            store,
            write("proj", path, Some(path), Some("b"), at(i as i64)),
        )
        .await;
    }
    put(store, write("other", "notes/a.md", None, Some("b"), at(30))).await;
    let find = |ns: Option<&'static str>, glob: &'static str, limit: usize| async move {
        let rows = store
            .find_documents(ns, glob, limit)
            .await
            .unwrap_or_else(|e| panic!("find {glob}: {e}"));
        rows.iter()
            .map(|r| format!("{}:{}", r.namespace, r.path))
            .collect::<Vec<_>>()
    };
    let p = |v: &[&str]| v.iter().map(|s| format!("proj:{s}")).collect::<Vec<_>>();
    assert_eq!(
        find(Some("proj"), "notes/*.md", 100).await,
        p(&[
            "notes/B.md",
            "notes/a%b.md",
            "notes/a.md",
            "notes/a_b.md",
            "notes/ab.md",
            "notes/axb.md",
            "notes/b.md",
            "notes/c.md",
            "notes/d.md",
            "notes/sub/e.md"
        ]),
        "`*` also crosses `/`"
    );
    assert_eq!(
        find(Some("proj"), "notes/?.md", 100).await,
        p(&[
            "notes/B.md",
            "notes/a.md",
            "notes/b.md",
            "notes/c.md",
            "notes/d.md"
        ])
    );
    assert_eq!(
        find(Some("proj"), "notes/[a-c].md", 100).await,
        p(&["notes/a.md", "notes/b.md", "notes/c.md"])
    );
    assert_eq!(
        find(Some("proj"), "notes/[^a].md", 100).await,
        p(&["notes/B.md", "notes/b.md", "notes/c.md", "notes/d.md"])
    );
    assert_eq!(
        find(Some("proj"), "notes/a_b.md", 100).await,
        p(&["notes/a_b.md"]),
        "`_` is literal"
    );
    assert_eq!(
        find(Some("proj"), "notes/a%b.md", 100).await,
        p(&["notes/a%b.md"]),
        "`%` is literal"
    );
    assert_eq!(
        find(Some("proj"), "notes/a?b.md", 100).await,
        p(&["notes/a%b.md", "notes/a_b.md", "notes/axb.md"])
    );
    assert_eq!(
        find(Some("proj"), "NOTES/*", 100).await,
        Vec::<String>::new(),
        "case-sensitive"
    );
    assert_eq!(find(Some("proj"), "Notes/*", 100).await, p(&["Notes/a.md"]));
    assert_eq!(find(Some("proj"), "x.md", 100).await, p(&["x.md"]));
    assert_eq!(find(Some("proj"), "*.MD", 100).await, Vec::<String>::new());
    assert_eq!(
        find(None, "notes/a.md", 100).await,
        vec!["other:notes/a.md".to_owned(), "proj:notes/a.md".to_owned()]
    );
    assert_eq!(
        find(Some("proj"), "notes/*", 3).await,
        p(&["notes/B.md", "notes/a%b.md", "notes/a.md"])
    );
}

/// Backlinks are sorted by type, namespace, path at both ends.
pub async fn backlinks_sorted_by_type_namespace_path<S: Store>(store: &S) {
    let mut hub = write("proj", "hub.md", Some("Hub"), Some("h"), at(0));
    hub.links = Some(vec![
        link(LinkType::References, "proj", "z.md"),
        link(LinkType::Governs, "zeta", "a.md"),
        link(LinkType::References, "alpha", "y.md"),
        link(LinkType::DependsOn, "proj", "B.md"),
        link(LinkType::References, "proj", "a.md"),
        link(LinkType::Governs, "Zeta", "a.md"),
    ]);
    put(store, hub).await;
    for (ns, path, kind) in [
        ("proj", "q.md", LinkType::Supersedes),
        ("beta", "a.md", LinkType::Governs),
        ("proj", "c.md", LinkType::Governs),
        ("Beta", "a.md", LinkType::Governs),
    ] {
        let mut change = write(ns, path, None, Some("x"), at(1));
        change.links = Some(vec![link(kind, "proj", "hub.md")]);
        put(store, change).await;
    }
    let got = store.backlinks("proj", "hub.md").await.expect("backlinks");
    let t = |v: &[(&str, &str, &str)]| {
        v.iter()
            .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        got.outgoing,
        t(&[
            ("depends-on", "proj", "B.md"),
            ("governs", "Zeta", "a.md"),
            ("governs", "zeta", "a.md"),
            ("references", "alpha", "y.md"),
            ("references", "proj", "a.md"),
            ("references", "proj", "z.md"),
        ])
    );
    assert_eq!(
        got.incoming,
        t(&[
            ("governs", "Beta", "a.md"),
            ("governs", "beta", "a.md"),
            ("governs", "proj", "c.md"),
            ("supersedes", "proj", "q.md")
        ])
    );
}

/// `documents_exist` answers in the order asked.
pub async fn documents_exist_in_order<S: Store>(store: &S) {
    put(store, write("proj", "a.md", None, Some("a"), at(0))).await;
    put(store, write("other", "b.md", None, Some("b"), at(0))).await;
    let refs: Vec<(String, String)> = [
        ("other", "b.md"),
        ("proj", "b.md"),
        ("proj", "a.md"),
        ("proj", "A.md"),
        ("proj", "a.md"),
    ]
    .iter()
    .map(|(n, p)| ((*n).to_owned(), (*p).to_owned()))
    .collect();
    assert_eq!(
        store.documents_exist(&refs).await.expect("exist"),
        vec![true, false, true, false, true]
    );
    assert_eq!(
        store.documents_exist(&[]).await.expect("exist"),
        Vec::<bool>::new()
    );
}

/// `page_documents` filters by type and readable namespaces and pages by `(namespace, path)`.
pub async fn page_documents_keyset<S: Store>(store: &S) {
    for ns in ["a", "B", "c"] {
        for path in ["p1.md", "P2.md", "p3.md"] {
            put(
                store,
                typed(ns, path, "prompt", "published", "prompt text", at(0)),
            )
            .await;
        }
        put(
            store,
            typed(ns, "note.md", "note", "published", "not a prompt", at(0)),
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut after: Option<(String, String)> = None;
    loop {
        let page = store
            .page_documents(
                None,
                Some("prompt"),
                after.as_ref().map(|(n, p)| (n.as_str(), p.as_str())),
                4,
            )
            .await
            .expect("page");
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 4);
        after = page.last().map(|r| (r.namespace.clone(), r.path.clone()));
        seen.extend(keys(&page));
    }
    let want = byte_order(
        ["a", "B", "c"]
            .iter()
            .flat_map(|ns| ["p1.md", "P2.md", "p3.md"].map(|p| ((*ns).to_owned(), p.to_owned()))),
    );
    assert_eq!(seen, want);
    let readable = vec!["c".to_owned(), "a".to_owned()];
    let page = store
        .page_documents(Some(&readable), Some("prompt"), Some(("a", "p1.md")), 10)
        .await
        .expect("page");
    assert_eq!(
        keys(&page),
        byte_order(
            [
                ("a", "p3.md"),
                ("c", "P2.md"),
                ("c", "p1.md"),
                ("c", "p3.md")
            ]
            .map(|(n, p)| (n.to_owned(), p.to_owned()))
        )
    );
    let all = store
        .page_documents(Some(&readable), None, None, 100)
        .await
        .expect("page");
    assert_eq!(all.len(), 8);
    assert!(
        store
            .page_documents(Some(&[]), None, None, 100)
            .await
            .expect("page")
            .is_empty()
    );
}
