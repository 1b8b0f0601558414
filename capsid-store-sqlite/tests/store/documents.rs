//! The document and namespace statements of this adapter, each run at least once (runtime SQL
//! is only checked when it runs): guards, snapshots with metadata, edges at both ends, the
//! move collision and edge merge, all-or-nothing archive, the brief/lint gathers and pages.

use crate::common::{at, audit, doc, link, put, store};
use capsid_core::docs::packets::{BriefRows, LintRows, brief_packet, lint_packet};
use capsid_core::ports::{
    AuditFilter, AuditLog, DocFilter, DocumentStore, NamespaceStore, StoreError, WriteGuard,
};

#[tokio::test]
async fn writes_guard_snapshot_and_keep_unset_fields() {
    let (_dir, store) = store().await;
    let mut first = doc("n", "a.md", "A", "one", "spec", at(0));
    first.tags = Some("x".into());
    first.status = Some("draft".into());
    let created = store
        .write_document(
            first.clone(),
            WriteGuard::Create,
            vec![audit("write", "n", "a.md", at(0))],
        )
        .await
        .unwrap();
    assert!(created.created && !created.snapshotted);
    let again = store
        .write_document(first, WriteGuard::Create, vec![])
        .await;
    assert!(
        matches!(again, Err(StoreError::Conflict(ref m)) if m.contains("n/a.md")),
        "{again:?}"
    );
    let missing = store
        .write_document(
            doc("n", "b.md", "B", "x", "note", at(1)),
            WriteGuard::Update {
                expected_body: None,
            },
            vec![],
        )
        .await;
    assert!(
        matches!(missing, Err(StoreError::NotFound(_))),
        "{missing:?}"
    );

    let mut body_only = doc("n", "a.md", "A", "two", "spec", at(5));
    body_only.title = None;
    body_only.doc_type = None;
    let updated = store
        .write_document(
            body_only,
            WriteGuard::Update {
                expected_body: Some("one".into()),
            },
            vec![],
        )
        .await
        .unwrap();
    assert!(!updated.created && updated.snapshotted);
    let d = updated.document;
    assert_eq!(
        (d.title.as_deref(), d.body.as_deref(), d.doc_type.as_str()),
        (Some("A"), Some("two"), "spec")
    );
    assert_eq!((d.status.as_str(), d.tags.as_deref()), ("draft", Some("x")));
    assert_eq!((d.created_at, d.updated_at), (at(0), at(5)));

    let versions = store.versions("n", "a.md", 10).await.unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!((versions[0].bytes, versions[0].snapshot_at), (3, at(5)));
    let version = store
        .version(versions[0].id, "n", "a.md")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (version.body.as_deref(), version.doc_type.as_deref()),
        (Some("one"), Some("spec"))
    );
    assert_eq!(
        (version.status.as_deref(), version.tags.as_deref()),
        (Some("draft"), Some("x"))
    );
    assert!(
        store
            .version(versions[0].id, "n", "other.md")
            .await
            .unwrap()
            .is_none()
    );

    let defaults = put(&store, doc("n", "c.md", "C", "ü", "note", at(6)))
        .await
        .document;
    assert_eq!(defaults.status, "published");
    assert_eq!(store.versions("n", "c.md", 10).await.unwrap().len(), 0);
}

#[tokio::test]
async fn edges_are_replaced_removed_and_repointed() {
    let (_dir, store) = store().await;
    let mut a = doc("n", "a.md", "A", "a", "note", at(0));
    a.links = Some(vec![
        link("n", "b.md"),
        link("m", "c.md"),
        link("n", "a.md"),
    ]);
    put(&store, a).await;
    let mut z = doc("n", "z.md", "Z", "z", "note", at(0));
    z.links = Some(vec![link("n", "a.md"), link("n", "moved.md")]);
    put(&store, z).await;

    let edges = store.backlinks("n", "a.md").await.unwrap();
    assert_eq!(edges.outgoing.len(), 3);
    assert_eq!(edges.incoming.len(), 2, "itself and z.md");
    assert_eq!(
        store
            .documents_exist(&[("n".into(), "a.md".into()), ("m".into(), "c.md".into())])
            .await
            .unwrap(),
        [true, false]
    );

    // z.md -> a.md merges into the existing z.md -> moved.md; the self-edge counts at both
    // ends: 3 outgoing + 2 incoming.
    let moved = store
        .move_document(
            "n",
            "a.md",
            "moved.md",
            Some("a"),
            at(1),
            audit("move", "n", "a.md", at(1)),
        )
        .await;
    assert_eq!(moved.unwrap(), 5);
    assert!(store.document("n", "a.md").await.unwrap().is_none());
    let edges = store.backlinks("n", "moved.md").await.unwrap();
    assert_eq!(
        edges.outgoing.iter().filter(|e| e.2 == "moved.md").count(),
        1
    );
    assert_eq!(edges.incoming.len(), 2, "{edges:?}");
    assert_eq!(
        store.versions("n", "a.md", 10).await.unwrap().len(),
        1,
        "a move snapshots"
    );

    let collide = store
        .move_document(
            "n",
            "moved.md",
            "z.md",
            None,
            at(2),
            audit("move", "n", "x", at(2)),
        )
        .await;
    assert!(
        matches!(collide, Err(StoreError::Conflict(_))),
        "{collide:?}"
    );
    let stale = store
        .delete_document(
            "n",
            "moved.md",
            Some("not it"),
            audit("delete", "n", "moved.md", at(3)),
        )
        .await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");

    let removed = store
        .delete_document(
            "n",
            "moved.md",
            Some("a"),
            audit("delete", "n", "moved.md", at(3)),
        )
        .await;
    let removed = removed.unwrap();
    assert_eq!(removed.len(), 4, "{removed:?}");
    assert!(
        store
            .backlinks("n", "z.md")
            .await
            .unwrap()
            .outgoing
            .is_empty()
    );
    let gone = store
        .delete_document(
            "n",
            "moved.md",
            None,
            audit("delete", "n", "moved.md", at(4)),
        )
        .await;
    assert!(matches!(gone, Err(StoreError::NotFound(_))), "{gone:?}");
    let actions: Vec<_> = store
        .recent_audit(
            &AuditFilter {
                namespace: Some("n".into()),
                actor: None,
            },
            10,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.action.unwrap_or_default())
        .collect();
    assert_eq!(actions, ["delete", "move", "write", "write"]);
}

#[tokio::test]
async fn archive_is_all_or_nothing() {
    let (_dir, store) = store().await;
    for p in ["e1.md", "e2.md"] {
        put(&store, doc("n", p, "E", "e", "episodic", at(0))).await;
    }
    let moves = |second: &str| {
        vec![
            ("e1.md".to_owned(), "archive/e1.md".to_owned()),
            (second.to_owned(), format!("archive/{second}")),
        ]
    };
    let failed = store
        .archive_documents(
            "n",
            &moves("missing.md"),
            at(1),
            audit("lint", "n", "", at(1)),
        )
        .await;
    assert!(matches!(failed, Err(StoreError::NotFound(_))), "{failed:?}");
    assert!(
        store.document("n", "e1.md").await.unwrap().is_some(),
        "the first move rolled back"
    );
    store
        .archive_documents("n", &moves("e2.md"), at(2), audit("lint", "n", "", at(2)))
        .await
        .unwrap();
    let paths: Vec<_> = store
        .list_documents(
            &DocFilter {
                namespace: Some("n".into()),
                ..DocFilter::default()
            },
            10,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.path)
        .collect();
    assert_eq!(paths, ["archive/e1.md", "archive/e2.md"]);
}

#[tokio::test]
async fn namespaces_gathers_and_pages() {
    let (_dir, store) = store().await;
    store
        .register_namespace(
            "n",
            "[]",
            at(0),
            audit("register_namespace", "n", "", at(0)),
        )
        .await
        .unwrap();
    let twice = store
        .register_namespace(
            "n",
            "[]",
            at(0),
            audit("register_namespace", "n", "", at(0)),
        )
        .await;
    assert!(matches!(twice, Err(StoreError::Conflict(_))), "{twice:?}");
    let previous = store
        .update_namespace(
            "n",
            r#"[{"repo":"o/r","label":"primary"}]"#,
            audit("u", "n", "", at(1)),
        )
        .await;
    assert_eq!(previous.unwrap().as_deref(), Some("[]"));
    let unknown = store
        .update_namespace("nope", "[]", audit("u", "nope", "", at(1)))
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(_))),
        "{unknown:?}"
    );

    put(
        &store,
        doc(
            "capsid",
            "conventions.md",
            "Conv",
            "rules",
            "protocol",
            at(0),
        ),
    )
    .await;
    put(&store, doc("n", "core.md", "Core", "core", "core", at(1))).await;
    let mut core_link = doc("n", "tasks/t1.md", "T1", "t", "task", at(2));
    core_link.links = Some(vec![link("n", "core.md"), link("n", "gone.md")]);
    put(&store, core_link).await;
    put(&store, doc("n", "tasks/t2.md", "T2", "t", "task", at(3))).await;
    put(&store, doc("n", "archive/t3.md", "T3", "t", "task", at(4))).await;
    put(
        &store,
        doc("n", "Archive/e0.md", "E0", "e", "episodic", at(5)),
    )
    .await;
    for i in 1..=4 {
        put(
            &store,
            doc(
                "n",
                &format!("log/e{i}.md"),
                "E",
                "e",
                "episodic",
                at(5 + i),
            ),
        )
        .await;
    }
    put(&store, doc("n", "wiki/c.md", "C", "c", "concept", at(10))).await;

    let ns = store.namespace("n").await.unwrap().unwrap();
    assert_eq!(ns.unconsolidated, 5, "archive/ is case-sensitive");
    assert_eq!(store.namespaces().await.unwrap().len(), 1);

    let brief = BriefRows::from_packet(store.read_packet(&brief_packet("n")).await.unwrap());
    assert_eq!(
        brief.conventions.unwrap().last_actor.as_deref(),
        Some("agent:tester")
    );
    assert!(brief.repo_structure.is_none());
    assert_eq!(brief.core.unwrap().document.title.as_deref(), Some("Core"));
    let tasks: Vec<_> = brief
        .open_tasks
        .iter()
        .map(|t| t.document.path.as_str())
        .collect();
    assert_eq!(tasks, ["tasks/t2.md", "tasks/t1.md"]);
    let episodics: Vec<_> = brief
        .recent_episodics
        .iter()
        .map(|t| t.document.path.as_str())
        .collect();
    assert_eq!(episodics, ["log/e4.md", "log/e3.md", "log/e2.md"]);
    assert_eq!(
        brief.core_links.incoming,
        [("references".into(), "n".into(), "tasks/t1.md".into())]
    );

    let lint = LintRows::from_packet(store.read_packet(&lint_packet("n")).await.unwrap());
    assert_eq!(lint.wiki.len(), 1);
    assert_eq!(lint.unconsolidated.len(), 5);
    assert_eq!(lint.rules.len(), 1);
    let others: Vec<_> = lint.others.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(others, ["tasks/t1.md", "tasks/t2.md"]);
    let capsid = LintRows::from_packet(store.read_packet(&lint_packet("capsid")).await.unwrap());
    assert_eq!(capsid.rules.len(), 1);
    assert!(
        capsid.others.is_empty(),
        "rules documents are not counted twice"
    );
    assert_eq!(lint.archived.len(), 1);
    assert_eq!(lint.edges.len(), 2);
    assert_eq!(
        lint.dangling_edges,
        [(
            "references".into(),
            "n".into(),
            "tasks/t1.md".into(),
            "n".into(),
            "gone.md".into()
        )]
    );

    let all = store.page_documents(None, None, None, 100).await.unwrap();
    assert_eq!(all.len(), 11);
    let tasks = store
        .page_documents(
            Some(&["n".to_owned()]),
            Some("task"),
            Some(("n", "archive/t3.md")),
            10,
        )
        .await;
    assert_eq!(
        tasks
            .unwrap()
            .iter()
            .map(|d| d.path.as_str())
            .collect::<Vec<_>>(),
        ["tasks/t1.md", "tasks/t2.md"]
    );
    assert!(
        store
            .page_documents(Some(&[]), None, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let listed = store
        .list_documents(
            &DocFilter {
                namespace: Some("n".into()),
                doc_type: Some("task".into()),
                status: Some("published".into()),
            },
            2,
        )
        .await
        .unwrap();
    assert_eq!(listed.len(), 2);
}
