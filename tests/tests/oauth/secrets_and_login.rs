//! Secrets stay out of the database; the full login through GitHub ends in a real MCP
//! client.

use capsid_core::ports::AuditFilter;
use capsid_tests::server::Client;
use serde_json::{Value, json};

use crate::env::*;

#[tokio::test]
async fn codes_and_tokens_are_stored_only_as_hashes() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    let t = env.exchange(&client, &code).await.json();
    let refresh = t["refresh_token"].as_str().unwrap().to_owned();
    let r = env.refresh(&client, &refresh).await.json();
    let bytes = env.db_bytes();
    for secret in [
        code.as_str(),
        t["access_token"].as_str().unwrap(),
        refresh.as_str(),
        r["access_token"].as_str().unwrap(),
        r["refresh_token"].as_str().unwrap(),
        capsid_tests::fake_github_login::GITHUB_CLIENT_SECRET,
    ] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} is in the database"
        );
    }
    let audit = env
        .server
        .store
        .recent_audit(&AuditFilter::default(), 500)
        .await
        .unwrap();
    for row in audit {
        let text = format!("{:?}", row);
        assert!(!text.contains(&refresh) && !text.contains(&code), "{text}");
    }
}

#[tokio::test]
async fn full_login_through_github_ends_in_an_mcp_client_reading_as_the_owner() {
    let env = Env::start().await;
    env.server.namespace("alpha").await;
    env.server
        .admin("write", json!({"namespace": "alpha", "path": "notes/hello.md", "title": "Hello", "type": "note", "body": "Hello from the owner.\n"}))
        .await;
    // Discovery as a client does it: 401 → protected resource metadata → AS metadata.
    let challenge = raw_post(&env.resource(), "application/json", "{}".into(), &[]).await;
    assert_eq!(challenge.status, 401);
    let prm: Value = http()
        .get(env.url("/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issuer = prm["authorization_servers"][0].as_str().unwrap().to_owned();
    let meta: Value = http()
        .get(format!("{issuer}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let reg = raw_post(
        meta["registration_endpoint"].as_str().unwrap(),
        "application/json",
        json!({"client_name": "e2e", "redirect_uris": [REDIRECT]}).to_string(),
        &[],
    )
    .await;
    let client = reg.json()["client_id"].as_str().unwrap().to_owned();
    let mut browser = Browser::new();
    let done = env
        .sign_in(&mut browser, &env.authorize_query(&client))
        .await;
    let code = query_of(&done.location())["code"].clone();
    let t = env.exchange(&client, &code).await;
    assert_eq!(t.status, 200, "{}", t.body);
    assert_eq!(t.header("cache-control"), "no-store");
    let access = t.json()["access_token"].as_str().unwrap().to_owned();
    let mcp = Client::connect(&env.resource(), &access, ()).await;
    let doc = mcp
        .ok(
            "read",
            json!({"namespace": "alpha", "path": "notes/hello.md"}),
        )
        .await;
    assert!(doc.to_string().contains("Hello from the owner."), "{doc}");
    // The caller is the owner: a write through /mcp is audited as github:octo.
    mcp.ok("write", json!({"namespace": "alpha", "path": "notes/two.md", "title": "Two", "type": "note", "body": "Second.\n"})).await;
    let actions = env.audit_actions().await;
    assert!(
        actions.iter().any(|(_, actor)| actor == "github:octo"),
        "{actions:?}"
    );
    let _ = mcp.inner.cancel().await;
}
