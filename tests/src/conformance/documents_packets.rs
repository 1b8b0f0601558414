//! Conformance cases for the one-read packets (`brief_rows`, `lint_rows`) and `last_actor`.

use capsid_core::docs::kinds::LinkType;
use capsid_core::docs::packets::{BriefRows, LintRows, brief_packet, lint_packet};
use capsid_core::ports::{DocWithActor, DocumentWrite, Store, WriteGuard};

use super::support::{at, audit, link, typed, write};

/// Writes `change` as `actor` (upsert).
async fn put_as<S: Store>(store: &S, actor: &str, change: DocumentWrite) {
    let entry = audit(actor, "write", &change.namespace, &change.path, change.at);
    store
        .write_document(change, WriteGuard::Upsert, vec![entry])
        .await
        .expect("write");
}

fn paths(rows: &[DocWithActor]) -> Vec<(&str, Option<&str>)> {
    rows.iter()
        .map(|r| (r.document.path.as_str(), r.last_actor.as_deref()))
        .collect()
}

/// `brief_rows`: the shared documents, core, open tasks newest first (closed and archived
/// excluded), the three newest episodics, core's edges, each with its last actor.
pub async fn brief_rows_contents<S: Store>(store: &S) {
    put_as(
        store,
        "agent:conv",
        typed(
            "capsid",
            "conventions.md",
            "protocol",
            "published",
            "conventions",
            at(0),
        ),
    )
    .await;
    put_as(
        store,
        "agent:repo",
        typed(
            "capsid",
            "repo-structure.md",
            "reference",
            "published",
            "structure",
            at(0),
        ),
    )
    .await;
    let mut core = typed("proj", "core.md", "core", "published", "the core", at(1));
    core.links = Some(vec![
        link(LinkType::Governs, "proj", "t1.md"),
        link(LinkType::References, "capsid", "conventions.md"),
    ]);
    put_as(store, "agent:core", core).await;
    let mut into_core = typed("proj", "spec.md", "spec", "draft", "spec", at(1));
    into_core.links = Some(vec![link(LinkType::DependsOn, "proj", "core.md")]);
    put_as(store, "agent:core", into_core).await;
    put_as(
        store,
        "agent:t1",
        typed("proj", "t1.md", "task", "active", "task one", at(2)),
    )
    .await;
    put_as(
        store,
        "agent:t2",
        typed("proj", "t2.md", "task", "closed", "task two", at(3)),
    )
    .await;
    put_as(
        store,
        "agent:t3",
        typed("proj", "t3.md", "task", "draft", "task three", at(4)),
    )
    .await;
    put_as(
        store,
        "agent:t4",
        typed(
            "proj",
            "archive/t4.md",
            "task",
            "active",
            "archived task",
            at(5),
        ),
    )
    .await;
    put_as(
        store,
        "agent:t5",
        typed("other", "t5.md", "task", "active", "other namespace", at(6)),
    )
    .await;
    for (i, path) in ["e1.md", "e2.md", "e3.md", "e4.md"].into_iter().enumerate() {
        put_as(
            store,
            &format!("agent:e{}", i + 1),
            typed(
                "proj",
                path,
                "episodic",
                "published",
                path,
                at(10 + i as i64),
            ),
        )
        .await;
    }
    put_as(
        store,
        "agent:e5",
        typed(
            "proj",
            "archive/e5.md",
            "episodic",
            "published",
            "archived",
            at(20),
        ),
    )
    .await;
    put_as(
        store,
        "agent:e6",
        typed("other", "e6.md", "episodic", "published", "other", at(21)),
    )
    .await;
    put_as(
        store,
        "agent:t1b",
        write("proj", "t1.md", None, Some("task one, edited"), at(30)),
    )
    .await;

    let rows = BriefRows::from_packet(
        store
            .read_packet(&brief_packet("proj"))
            .await
            .expect("brief rows"),
    );
    let conventions = rows.conventions.expect("conventions");
    assert_eq!(
        (
            conventions.document.namespace.as_str(),
            conventions.document.path.as_str(),
            conventions.last_actor.as_deref()
        ),
        ("capsid", "conventions.md", Some("agent:conv"))
    );
    let structure = rows.repo_structure.expect("repo structure");
    assert_eq!(
        (
            structure.document.body.as_deref(),
            structure.last_actor.as_deref()
        ),
        (Some("structure"), Some("agent:repo"))
    );
    let core = rows.core.expect("core");
    assert_eq!(
        (
            core.document.namespace.as_str(),
            core.document.path.as_str()
        ),
        ("proj", "core.md")
    );
    assert_eq!(core.last_actor.as_deref(), Some("agent:core"));
    assert_eq!(
        paths(&rows.open_tasks),
        vec![("t1.md", Some("agent:t1b")), ("t3.md", Some("agent:t3"))]
    );
    assert_eq!(
        rows.open_tasks[0].document.body.as_deref(),
        Some("task one, edited")
    );
    assert_eq!(
        paths(&rows.recent_episodics),
        vec![
            ("e4.md", Some("agent:e4")),
            ("e3.md", Some("agent:e3")),
            ("e2.md", Some("agent:e2"))
        ]
    );
    let t = |v: &[(&str, &str, &str)]| {
        v.iter()
            .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows.core_links.outgoing,
        t(&[
            ("governs", "proj", "t1.md"),
            ("references", "capsid", "conventions.md")
        ])
    );
    assert_eq!(
        rows.core_links.incoming,
        t(&[("depends-on", "proj", "spec.md")])
    );

    let empty = BriefRows::from_packet(
        store
            .read_packet(&brief_packet("nobody"))
            .await
            .expect("brief rows"),
    );
    assert!(
        empty.core.is_none() && empty.open_tasks.is_empty() && empty.recent_episodics.is_empty()
    );
    assert!(
        empty.conventions.is_some(),
        "the shared documents are read for every namespace"
    );
}

/// `lint_rows`: core, wiki, unconsolidated oldest first (status ignored, archive excluded),
/// rules, the others, and dangling edges on either side.
pub async fn lint_rows_contents<S: Store>(store: &S) {
    put_as(
        store,
        "agent:a",
        typed("capsid", "schema.md", "spec", "published", "schema", at(0)),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed(
            "capsid",
            "conventions.md",
            "protocol",
            "published",
            "conv",
            at(0),
        ),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed("proj", "core.md", "core", "published", "core", at(1)),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed(
            "proj",
            "wiki/c.md",
            "concept",
            "published",
            "concept",
            at(2),
        ),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed(
            "proj",
            "wiki/d.md",
            "decision",
            "superseded",
            "decision",
            at(3),
        ),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed(
            "proj",
            "archive/wiki/old.md",
            "concept",
            "published",
            "old concept",
            at(4),
        ),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed("proj", "log/3.md", "episodic", "closed", "third", at(7)),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed("proj", "log/1.md", "episodic", "draft", "first", at(5)),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed("proj", "src/2.md", "source", "published", "second", at(6)),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed(
            "proj",
            "archive/log/0.md",
            "episodic",
            "published",
            "archived",
            at(4),
        ),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed("proj", "notes/n.md", "note", "published", "note", at(8)),
    )
    .await;
    put_as(
        store,
        "agent:a",
        typed("other", "log/x.md", "episodic", "published", "other", at(9)),
    )
    .await;

    let mut a = typed("proj", "notes/a.md", "task", "active", "a", at(10));
    a.links = Some(vec![
        link(LinkType::References, "proj", "ghost.md"),
        link(LinkType::References, "other", "ghost.md"),
        link(LinkType::References, "proj", "core.md"),
    ]);
    put_as(store, "agent:a", a).await;
    let mut x = typed("other", "x.md", "note", "published", "x", at(11));
    x.links = Some(vec![
        link(LinkType::Governs, "proj", "ghost2.md"),
        link(LinkType::Governs, "proj", "notes/n.md"),
    ]);
    put_as(store, "agent:a", x).await;
    let mut y = typed("other", "y.md", "note", "published", "y", at(11));
    y.links = Some(vec![link(LinkType::Governs, "other", "ghost3.md")]);
    put_as(store, "agent:a", y).await;

    let rows = LintRows::from_packet(
        store
            .read_packet(&lint_packet("proj"))
            .await
            .expect("lint rows"),
    );
    assert_eq!(rows.core.as_ref().map(|d| d.path.as_str()), Some("core.md"));
    let mut wiki: Vec<&str> = rows.wiki.iter().map(|d| d.path.as_str()).collect();
    wiki.sort_unstable();
    assert_eq!(wiki, ["wiki/c.md", "wiki/d.md"]);
    let unconsolidated: Vec<&str> = rows
        .unconsolidated
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        unconsolidated,
        ["log/1.md", "src/2.md", "log/3.md"],
        "oldest first"
    );
    assert_eq!(
        rows.unconsolidated[0].body.as_deref(),
        Some("first"),
        "bodies are read"
    );
    let mut rules: Vec<(&str, &str)> = rows
        .rules
        .iter()
        .map(|d| (d.namespace.as_str(), d.path.as_str()))
        .collect();
    rules.sort_unstable();
    assert_eq!(
        rules,
        [("capsid", "conventions.md"), ("capsid", "schema.md")]
    );
    let mut others: Vec<&str> = rows.others.iter().map(|d| d.path.as_str()).collect();
    others.sort_unstable();
    assert_eq!(others, ["notes/a.md", "notes/n.md"]);
    let mut dangling = rows.dangling_edges.clone();
    dangling.sort();
    let e = |t: &str, a: &str, b: &str, c: &str, d: &str| {
        (
            t.to_owned(),
            a.to_owned(),
            b.to_owned(),
            c.to_owned(),
            d.to_owned(),
        )
    };
    assert_eq!(
        dangling,
        vec![
            e("governs", "other", "x.md", "proj", "ghost2.md"),
            e("references", "proj", "notes/a.md", "other", "ghost.md"),
            e("references", "proj", "notes/a.md", "proj", "ghost.md"),
        ]
    );
}

/// `last_actor` is the actor of the newest audit row for the document, whatever wrote it.
pub async fn last_actor_follows_the_newest_audit_row<S: Store>(store: &S) {
    put_as(
        store,
        "agent:first",
        write("proj", "doc.md", None, Some("1"), at(0)),
    )
    .await;
    put_as(
        store,
        "agent:second",
        write("proj", "doc.md", None, Some("2"), at(1)),
    )
    .await;
    put_as(
        store,
        "agent:other",
        write("proj", "else.md", None, Some("3"), at(2)),
    )
    .await;
    assert_eq!(
        store
            .last_actor("proj", "doc.md")
            .await
            .expect("last actor")
            .as_deref(),
        Some("agent:second")
    );
    store
        .append_audit(audit("github:owner", "console", "proj", "doc.md", at(3)))
        .await
        .expect("append");
    assert_eq!(
        store
            .last_actor("proj", "doc.md")
            .await
            .expect("last actor")
            .as_deref(),
        Some("github:owner")
    );
    assert_eq!(
        store
            .last_actor("other", "doc.md")
            .await
            .expect("last actor"),
        None
    );
    assert_eq!(
        store
            .last_actor("proj", "DOC.md")
            .await
            .expect("last actor"),
        None
    );
}
