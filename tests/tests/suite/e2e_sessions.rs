//! End to end in session mode: a client that declared elicitation is asked to confirm an
//! overwrite (accept proceeds, decline refuses, a body changed meanwhile makes the consent
//! stale), and a session id is useless to another caller.

use capsid_tests::e2e_cases;
use capsid_tests::server::{Client, Confirming, ServerOptions, TestServer};
use serde_json::json;

fn sessions() -> ServerOptions {
    ServerOptions {
        operator_keys: None,
        sessions: true,
        repo_host: None,
        webhook: None,
        ..ServerOptions::default()
    }
}

async fn elicited_confirmation(s: &TestServer) {
    s.namespace("alpha").await;
    let key = s
        .mint(
            "seat",
            "seat",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "first"}),
    )
    .await;

    let accepting = Client::connect(
        &s.ops_url(),
        &key,
        Confirming {
            accept: true,
            meddle: None,
        },
    )
    .await;
    let out = accepting
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "second"}),
        )
        .await;
    assert_eq!(out["action"], "updated", "the human accepted: {out}");
    assert_eq!(
        s.admin("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "second"
    );

    let declining = Client::connect(
        &s.ops_url(),
        &key,
        Confirming {
            accept: false,
            meddle: None,
        },
    )
    .await;
    let e = declining
        .err(
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "third"}),
        )
        .await;
    assert!(e.contains("declined"), "{e}");
    let e = declining
        .err("delete", json!({"namespace": "alpha", "path": "a.md"}))
        .await;
    assert!(e.contains("declined"), "{e}");
    assert_eq!(
        s.admin("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "second"
    );

    // Consent goes stale: the body changed while the human was deciding, so the write aborts.
    let meddle = (
        s.service.clone(),
        "write".to_owned(),
        json!({"namespace": "alpha", "path": "a.md", "mode": "append", "body": "meanwhile"}),
    );
    let stale = Client::connect(
        &s.ops_url(),
        &key,
        Confirming {
            accept: true,
            meddle: Some(meddle),
        },
    )
    .await;
    let e = stale
        .err(
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "fourth"}),
        )
        .await;
    assert!(
        e.contains("stale confirmation") && e.contains("Nothing was written"),
        "{e}"
    );
    assert_eq!(
        s.admin("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "second\n\nmeanwhile"
    );

    // A client without the capability is told to pass confirm: true.
    let plain = s.client(&key).await;
    assert!(
        plain
            .err(
                "write",
                json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "x"})
            )
            .await
            .contains("confirm: true")
    );
}

async fn a_session_belongs_to_its_caller(s: &TestServer) {
    let alice = s
        .mint("alice", "session", json!({"namespaces": ["*"]}))
        .await;
    let bob = s.mint("bob", "session", json!({"namespaces": ["*"]})).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let http = reqwest::Client::new();
    let resp = http
        .post(s.ops_url())
        .bearer_auth(&alice)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .expect("initialize");
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let as_bob = http
        .post(s.ops_url())
        .bearer_auth(&bob)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(list.to_string())
        .send()
        .await
        .expect("bob's request");
    assert_eq!(
        as_bob.status().as_u16(),
        404,
        "alice's session does not exist for bob"
    );
}

e2e_cases!(super::sessions(); elicited_confirmation, a_session_belongs_to_its_caller);
