//! Credentials as callers meet them: admin-only `agents`, the read-only operator key, a
//! revoked agent, namespace and tool narrowing.

use capsid_core::crypto::sha256_hex;
use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::json;

use crate::e2e_memory::{OP_READ, OP_WRITE, reqwest_status, writer};

async fn agents_is_admin_only(s: &TestServer) {
    let agent = s.client(&writer(s).await).await;
    let refused = agent.ok("agents", json!({"action": "list"})).await;
    assert_eq!(
        refused["ok"], false,
        "a minted agent is never an admin: {refused}"
    );
    let admin = s.client(OP_WRITE).await;
    let minted = admin.ok("agents", json!({"action": "mint", "name": "driver-1", "kind": "driver", "namespaces": ["alpha"], "grants": ["read", "write"], "flags": {"can_merge": true}})).await;
    assert_eq!(minted["ok"], true);
    let key = minted["key"].as_str().unwrap();
    assert!(key.starts_with("capsid_agent_") && key.len() == "capsid_agent_".len() + 64);
    let listed = admin.ok("agents", json!({"action": "list"})).await;
    let text = listed.to_string();
    assert!(
        !text.contains(key) && !text.contains(&sha256_hex(key)),
        "neither the key nor its hash is ever listed"
    );
    assert!(admin.ok("agents", json!({"action": "mint", "name": "driver-1", "kind": "driver", "namespaces": ["alpha"]})).await["refusal"].as_str().unwrap().contains("never reused"));
    let upd = admin
        .ok(
            "agents",
            json!({"action": "update_scopes", "name": "driver-1", "flags": {"can_merge": false}}),
        )
        .await;
    assert_eq!(upd["after"]["flags"]["can_merge"], false);
    assert_eq!(
        upd["after"]["grants"],
        json!(["read", "write"]),
        "unnamed axes are kept"
    );
    let rev = admin
        .ok("agents", json!({"action": "revoke", "name": "driver-1"}))
        .await;
    assert!(rev["agent"]["revoked_at"].is_string());
    assert_eq!(
        admin
            .ok("agents", json!({"action": "revoke", "name": "driver-1"}))
            .await["ok"],
        false
    );
}

async fn read_only_operator_key_cannot_write(s: &TestServer) {
    s.namespace("alpha").await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "a"}),
    )
    .await;
    let ro = s.client(OP_READ).await;
    assert_eq!(
        ro.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "a"
    );
    for (tool, args) in [
        (
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "x", "body": "x", "confirm": true}),
        ),
        (
            "delete",
            json!({"namespace": "alpha", "path": "a.md", "confirm": true}),
        ),
        (
            "move",
            json!({"namespace": "alpha", "path": "a.md", "new_path": "b.md", "confirm": true}),
        ),
        (
            "register_namespace",
            json!({"namespace": "beta", "repo": "o/b"}),
        ),
        (
            "update_namespace",
            json!({"namespace": "alpha", "repos": "[{\"repo\":\"o/x\"}]"}),
        ),
        ("lint", json!({"namespace": "alpha", "mode": "report"})),
        (
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "t", "body": "b"}),
        ),
        ("agents", json!({"action": "list"})),
    ] {
        let e = ro.err(tool, args).await;
        assert!(e.contains("write grant"), "{tool}: {e}");
    }
    assert_eq!(
        s.admin("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "a",
        "nothing changed"
    );
    let names = ro.tool_names().await;
    assert!(
        names.contains(&"read".to_owned()) && !names.contains(&"write".to_owned()),
        "{names:?}"
    );
    // Every listed tool carries a title and its hints on the wire.
    let listed = ro.inner.peer().list_all_tools().await.expect("tools/list");
    for tool in &listed {
        let title = tool.title.as_deref().unwrap_or_default();
        assert!(
            !title.is_empty() && title != tool.name,
            "{}: {title:?}",
            tool.name
        );
        let hints = tool.annotations.as_ref().expect("annotations");
        assert_eq!(hints.title.as_deref(), Some(title), "{}", tool.name);
        assert!(
            hints.read_only_hint.is_some() && hints.open_world_hint.is_some(),
            "{}",
            tool.name
        );
    }
    let search_code = listed.iter().find(|t| t.name == "search_code");
    if let Some(tool) = search_code {
        assert_eq!(
            tool.annotations.as_ref().and_then(|a| a.open_world_hint),
            Some(true)
        );
    }
    // checkpoint posts to the owner's webhook when an agent blocks or asks: it says so
    // (issue 53, item 22).
    let admin = s.client(OP_WRITE).await;
    let all = admin
        .inner
        .peer()
        .list_all_tools()
        .await
        .expect("tools/list");
    let checkpoint = all
        .iter()
        .find(|t| t.name == "checkpoint")
        .expect("checkpoint is listed");
    assert_eq!(
        checkpoint
            .annotations
            .as_ref()
            .and_then(|a| a.open_world_hint),
        Some(true)
    );
}

async fn revoked_agent_gets_401(s: &TestServer) {
    let key = writer(s).await;
    let c = s.client(&key).await;
    c.ok("namespaces", json!({})).await;
    s.admin("agents", json!({"action": "revoke", "name": "writer"}))
        .await;
    assert!(
        c.raw("namespaces", json!({})).await.is_err(),
        "a revoked key stops at once"
    );
    let http = reqwest_status(&s.ops_url(), Some(&key)).await;
    assert_eq!(http.0, 401);
    // A revoked key is a presented key that resolves to no one: RFC 6750's invalid_token.
    assert_eq!(
        http.1.as_deref(),
        Some(
            "Bearer realm=\"capsid-operator\", error=\"invalid_token\", error_description=\"the bearer key was not recognised or has been revoked\""
        )
    );
    assert_eq!(reqwest_status(&s.ops_url(), None).await.0, 401);
    assert_eq!(
        reqwest_status(&s.ops_url(), Some("capsid_agent_not-a-real-key"))
            .await
            .0,
        401
    );
}

async fn narrowed_agent_must_name_its_namespace(s: &TestServer) {
    s.namespace("alpha").await;
    s.namespace("beta").await;
    let key = s
        .mint(
            "narrow",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let c = s.client(&key).await;
    c.ok(
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "a"}),
    )
    .await;
    assert!(
        c.err("search", json!({"query": "a"}))
            .await
            .contains("without a namespace")
    );
    assert!(
        c.err("list", json!({}))
            .await
            .contains("without a namespace")
    );
    let e = c
        .err(
            "write",
            json!({"namespace": "beta", "path": "a.md", "title": "A", "body": "a"}),
        )
        .await;
    assert!(e.contains("\"beta\"") && e.contains("alpha"), "{e}");
    assert!(
        c.err("read", json!({"namespace": "beta", "path": "a.md"}))
            .await
            .contains("beta")
    );
    assert_eq!(
        c.ok("search", json!({"query": "a", "namespace": "alpha"}))
            .await["count"],
        1
    );
}

async fn read_only_tool_scope_sees_only_read(s: &TestServer) {
    s.namespace("alpha").await;
    let key = s
        .mint(
            "reader",
            "session",
            json!({"namespaces": ["alpha"], "tools": ["read"], "grants": ["read"]}),
        )
        .await;
    let c = s.client(&key).await;
    assert_eq!(c.tool_names().await, vec!["read".to_owned()]);
    let e = c
        .err("search", json!({"query": "x", "namespace": "alpha"}))
        .await;
    assert!(
        e.contains("may not use search"),
        "a hidden tool gets the scope refusal, not 'unknown tool': {e}"
    );
}

e2e_cases!(crate::e2e_memory::options();
    agents_is_admin_only,
    read_only_operator_key_cannot_write,
    revoked_agent_gets_401,
    narrowed_agent_must_name_its_namespace,
    read_only_tool_scope_sees_only_read,
);
