//! Conformance cases for namespaces and the audit log.

use capsid_core::ports::{AuditEntry, AuditFilter, Store, StoreError};
use serde_json::json;

use super::support::{at, audit, audit_count, put, typed};

/// Register (create-only, audited), update (returns the previous repos), and the namespace
/// list in byte order with unconsolidated counts.
pub async fn namespaces_register_update_and_count<S: Store>(store: &S) {
    let repos = r#"[{"repo":"acme/api","label":"primary"}]"#;
    for (i, name) in ["proj", "Beta", "alpha", "_under"].into_iter().enumerate() {
        store
            .register_namespace(
                name,
                repos,
                at(i as i64),
                audit("github:owner", "register_namespace", name, "", at(i as i64)),
            )
            .await
            .expect("register");
    }
    assert_eq!(audit_count(store).await, 4);
    for (name, registered) in [
        ("proj", true),
        ("Beta", true),
        ("beta", false),
        ("ghost", false),
    ] {
        assert_eq!(
            store.namespace_exists(name).await.expect("exists"),
            registered,
            "namespace_exists({name:?})"
        );
    }
    let err = store
        .register_namespace(
            "proj",
            "[]",
            at(9),
            audit("github:owner", "register_namespace", "proj", "", at(9)),
        )
        .await
        .expect_err("registered twice");
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    assert_eq!(
        audit_count(store).await,
        4,
        "a refused registration is not audited"
    );

    for (path, doc_type, status) in [
        ("log/1.md", "episodic", "published"),
        ("log/2.md", "episodic", "closed"),
        ("src/3.md", "source", "draft"),
        ("archive/log/0.md", "episodic", "published"),
        ("notes/n.md", "note", "published"),
        ("wiki/c.md", "concept", "published"),
    ] {
        put(store, typed("proj", path, doc_type, status, "x", at(10))).await;
    }
    put(
        store,
        typed("alpha", "log/9.md", "episodic", "published", "x", at(10)),
    )
    .await;

    let rows = store.namespaces().await.expect("namespaces");
    let got: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| (r.namespace.as_str(), r.unconsolidated))
        .collect();
    assert_eq!(
        got,
        [("Beta", 0), ("_under", 0), ("alpha", 1), ("proj", 3)],
        "byte order, archive excluded"
    );
    let proj = store
        .namespace("proj")
        .await
        .expect("namespace")
        .expect("exists");
    assert_eq!(
        (proj.repos.as_deref(), proj.created_at, proj.unconsolidated),
        (Some(repos), at(0), 3)
    );
    assert_eq!(store.namespace("PROJ").await.expect("namespace"), None);

    let new = r#"[{"repo":"acme/web","label":"primary"}]"#;
    let previous = store
        .update_namespace(
            "proj",
            new,
            audit("github:owner", "update_namespace", "proj", "", at(11)),
        )
        .await
        .expect("update");
    assert_eq!(previous.as_deref(), Some(repos));
    assert_eq!(
        store
            .namespace("proj")
            .await
            .expect("namespace")
            .expect("exists")
            .repos
            .as_deref(),
        Some(new)
    );
    let audits = audit_count(store).await;
    let err = store
        .update_namespace(
            "nobody",
            new,
            audit("github:owner", "update_namespace", "nobody", "", at(12)),
        )
        .await
        .expect_err("missing namespace");
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
    assert_eq!(audit_count(store).await, audits);
    assert_eq!(store.namespace("nobody").await.expect("namespace"), None);
}

/// `recent_audit` is newest first, filtered by namespace and actor, limited, and keeps NULLs.
pub async fn recent_audit_filters_and_orders<S: Store>(store: &S) {
    let entries = [
        ("agent:a", Some("proj"), Some("x.md")),
        ("agent:b", Some("proj"), None),
        ("agent:a", Some("other"), Some("y.md")),
        ("github:owner", None, None),
        ("agent:a", Some("proj"), Some("z.md")),
    ];
    for (i, (actor, ns, path)) in entries.into_iter().enumerate() {
        store
            .append_audit(AuditEntry {
                actor: actor.into(),
                action: format!("act-{i}"),
                namespace: ns.map(str::to_owned),
                path: path.map(str::to_owned),
                params: json!({ "i": i, "s": "tab\there \"quoted\" ünïcode" }),
                at: at(i as i64),
            })
            .await
            .expect("append");
    }
    let actions = |rows: &[capsid_core::ports::AuditRow]| {
        rows.iter()
            .map(|r| r.action.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let all = store
        .recent_audit(&AuditFilter::default(), 100)
        .await
        .expect("audit");
    assert_eq!(actions(&all), ["act-4", "act-3", "act-2", "act-1", "act-0"]);
    assert!(all.windows(2).all(|w| w[0].id > w[1].id));
    assert_eq!(
        actions(
            &store
                .recent_audit(&AuditFilter::default(), 2)
                .await
                .expect("audit")
        ),
        ["act-4", "act-3"]
    );
    let proj = AuditFilter {
        namespace: Some("proj".into()),
        actor: None,
    };
    assert_eq!(
        actions(&store.recent_audit(&proj, 100).await.expect("audit")),
        ["act-4", "act-1", "act-0"]
    );
    let a = AuditFilter {
        namespace: None,
        actor: Some("agent:a".into()),
    };
    assert_eq!(
        actions(&store.recent_audit(&a, 100).await.expect("audit")),
        ["act-4", "act-2", "act-0"]
    );
    let both = AuditFilter {
        namespace: Some("proj".into()),
        actor: Some("agent:a".into()),
    };
    assert_eq!(
        actions(&store.recent_audit(&both, 1).await.expect("audit")),
        ["act-4"]
    );
    let owner = &all[1];
    assert_eq!(
        (
            owner.actor.as_deref(),
            owner.namespace.clone(),
            owner.path.clone()
        ),
        (Some("github:owner"), None, None)
    );
    assert_eq!(owner.at, at(3));
    let params: serde_json::Value =
        serde_json::from_str(owner.params.as_deref().expect("params")).expect("json");
    assert_eq!(
        params,
        json!({ "i": 3, "s": "tab\there \"quoted\" ünïcode" })
    );
}
