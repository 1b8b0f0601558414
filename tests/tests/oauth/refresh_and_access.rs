//! Checklist rows 6-8: refresh rotation and reuse revocation, absolute grant ends, and
//! short audience-bound access tokens as the resource server checks them.

use capsid_core::oauth::{ACCESS_TOKEN_TTL_MS, GRANT_TTL_MS};
use capsid_core::time::HOUR_MS;
use serde_json::Value;

use crate::env::*;

#[tokio::test]
async fn refresh_tokens_rotate_and_reuse_revokes_the_whole_grant() {
    let env = Env::start().await;
    let (client, access0, rt0) = env.tokens().await;
    let r1 = env.refresh(&client, &rt0).await;
    assert_eq!(r1.status, 200, "{}", r1.body);
    let rt1 = r1.json()["refresh_token"].as_str().unwrap().to_owned();
    let access1 = r1.json()["access_token"].as_str().unwrap().to_owned();
    assert_ne!(rt1, rt0, "rotated");
    assert_eq!(env.mcp_status(&access1).await.status, 200);
    let reuse = env.refresh(&client, &rt0).await;
    assert_eq!(reuse.error(), "invalid_grant", "{}", reuse.body);
    assert!(reuse.body.contains("reuse"), "{}", reuse.body);
    assert_eq!(
        env.refresh(&client, &rt1).await.error(),
        "invalid_grant",
        "RT1 is revoked too"
    );
    assert_eq!(
        env.mcp_status(&access1).await.status,
        401,
        "and the grant's access tokens"
    );
    assert_eq!(env.mcp_status(&access0).await.status, 401);
}

#[tokio::test]
async fn a_refresh_token_of_another_client_is_refused() {
    let env = Env::start().await;
    let (_, _, rt) = env.tokens().await;
    let other = env.register(&[REDIRECT]).await;
    assert_eq!(env.refresh(&other, &rt).await.error(), "invalid_grant");
}

#[tokio::test]
async fn a_grant_has_an_absolute_end_however_often_it_rotates() {
    let env = Env::start().await;
    let (client, _, mut rt) = env.tokens().await;
    let mut elapsed = 0;
    while elapsed + 7 * 24 * HOUR_MS < GRANT_TTL_MS {
        env.advance(7 * 24 * HOUR_MS);
        elapsed += 7 * 24 * HOUR_MS;
        let r = env.refresh(&client, &rt).await;
        assert_eq!(
            r.status,
            200,
            "day {}: {}",
            elapsed / (24 * HOUR_MS),
            r.body
        );
        rt = r.json()["refresh_token"].as_str().unwrap().to_owned();
    }
    env.advance(GRANT_TTL_MS - elapsed);
    let r = env.refresh(&client, &rt).await;
    assert_eq!(r.error(), "invalid_grant", "{}", r.body);
}

#[tokio::test]
async fn refresh_refuses_a_wider_scope_and_another_resource() {
    let env = Env::start().await;
    let (client, _, rt) = env.tokens().await;
    let r = env
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client),
            ("refresh_token", &rt),
            ("scope", "mcp admin"),
        ])
        .await;
    assert_eq!(r.error(), "invalid_scope", "{}", r.body);
    let r = env
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client),
            ("refresh_token", &rt),
            ("resource", "https://other.example/mcp"),
        ])
        .await;
    assert_eq!(r.error(), "invalid_target", "{}", r.body);
}

// ---------------------------------------------------------------------------------------------
// Row 8: short access tokens bound to this audience; the resource server's checks.

#[tokio::test]
async fn access_tokens_are_short_lived() {
    let env = Env::start().await;
    let (_, access, _) = env.tokens().await;
    env.advance(ACCESS_TOKEN_TTL_MS - 1000);
    assert_eq!(env.mcp_status(&access).await.status, 200);
    env.advance(1000);
    let r = env.mcp_status(&access).await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate").contains("invalid_token"),
        "{}",
        r.header("www-authenticate")
    );
}

#[tokio::test]
async fn a_token_for_another_audience_gets_401() {
    let env = Env::start().await;
    let (_, access, _) = env.tokens().await;
    // The same store behind another public URL: another protected resource.
    let other = env.twin(OWNER).await;
    let r = mcp_ping(&format!("{}/mcp", other.url), &access).await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("issued for"), "{}", r.body);
    other.stop().await;
}

#[tokio::test]
async fn authorize_and_token_refuse_another_resource() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| set(q, "resource", "https://other.example/mcp"),
        "invalid_target",
    )
    .await;
    let (client, code) = env.code().await;
    let r = env
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", "https://other.example/mcp"),
        ])
        .await;
    assert_eq!(r.error(), "invalid_target", "{}", r.body);
}

#[tokio::test]
async fn mcp_without_a_token_points_at_the_resource_metadata() {
    let env = Env::start().await;
    let r = raw_post(&env.resource(), "application/json", "{}".into(), &[]).await;
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate");
    let metadata = env.url("/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
        "{challenge}"
    );
    let prm: Value = http()
        .get(&metadata)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prm["resource"], env.resource());
    assert_eq!(prm["authorization_servers"][0], env.server.url);
}

#[tokio::test]
async fn mcp_refuses_garbage_refresh_and_query_tokens() {
    let env = Env::start().await;
    let (_, access, refresh) = env.tokens().await;
    assert_eq!(env.mcp_status("capsid_at_guess").await.status, 401);
    assert_eq!(
        env.mcp_status(&refresh).await.status,
        401,
        "a refresh token is not an access token"
    );
    let r = raw_post(
        &format!("{}?access_token={access}", env.resource()),
        "application/json",
        "{}".into(),
        &[],
    )
    .await;
    assert_eq!(r.status, 401, "tokens only in the Authorization header");
}

#[tokio::test]
async fn mcp_rechecks_the_owner_on_every_request() {
    let env = Env::start().await;
    let (_, access, _) = env.tokens().await;
    assert_eq!(env.mcp_status(&access).await.status, 200);
    // The same server (its public URL, so the audience still matches, and its store) started
    // again with another owner configured: the token's holder is no longer admitted.
    let config = capsid_http::HttpConfig {
        public_url: env.server.url.clone(),
        mcp_sessions: false,
        build: capsid_http::BuildInfo {
            sha: "test".into(),
            dirty: false,
            built_at: "test".into(),
            version: "test".into(),
        },
        oauth_missing: Vec::new(),
        owner: Some(env.github.owner_config("someone-else")),
        trusted_proxies: Vec::new(),
    };
    let app = capsid_http::router(capsid_http::AppState::new(
        env.server.service.clone(),
        config,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let r = mcp_ping(&format!("http://127.0.0.1:{port}/mcp"), &access).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body.contains("octo is not this server's owner"),
        "{}",
        r.body
    );
    // Back on the original server, the owner is still admitted.
    assert_eq!(env.mcp_status(&access).await.status, 200);
}

/// Issue 53, item 9: a session the owner opened on `/mcp` is re-checked with its access token,
/// as an agent's is with its key: once the token has expired, the watch on the session's
/// tools sees no caller and tells the client its tools changed (before, an owner's session
/// was never re-checked and kept its view).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_session_is_rechecked_when_its_token_expires() {
    #[derive(Clone)]
    struct ToolsChanged(tokio::sync::mpsc::UnboundedSender<()>);
    impl rmcp::ClientHandler for ToolsChanged {
        async fn on_tool_list_changed(
            &self,
            _: rmcp::service::NotificationContext<rmcp::RoleClient>,
        ) {
            let _ = self.0.send(());
        }
    }
    let env = Env::start_with_sessions().await;
    let (_, access, _) = env.tokens().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client =
        capsid_tests::server::Client::connect(&env.resource(), &access, ToolsChanged(tx)).await;
    let tools = client.inner.list_all_tools().await.expect("tools/list");
    assert!(
        tools.iter().any(|t| t.name == "agents"),
        "the owner sees agents"
    );
    assert!(rx.try_recv().is_err(), "nothing changed yet");
    env.advance(ACCESS_TOKEN_TTL_MS + 1000);
    tokio::time::timeout(std::time::Duration::from_secs(60), rx.recv())
        .await
        .expect("notifications/tools/list_changed came once the token expired")
        .expect("the handler lives");
}
