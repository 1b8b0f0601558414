//! Checklist rows 2-5: PKCE S256 only, single-use short-lived codes, and only the code
//! and refresh grants.

use capsid_core::oauth::CODE_TTL_MS;
use capsid_core::oauth::pkce::s256;
use serde_json::json;

use crate::env::*;

#[tokio::test]
async fn authorize_refuses_plain_pkce() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| {
            set(q, "code_challenge_method", "plain");
            set(q, "code_challenge", VERIFIER);
        },
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn authorize_refuses_a_missing_challenge() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| *q = without(q, "code_challenge"),
        "invalid_request",
    )
    .await;
    refused_to_client(
        &env,
        |q| *q = without(q, "code_challenge_method"),
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn pkce_downgrade_gets_no_code_and_a_verifier_cannot_stand_in() {
    // CVE-2025-4144: a request without a challenge must not yield a code that a verifier
    // (or its absence) can then redeem.
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = without(
        &without(&env.authorize_query(&client), "code_challenge"),
        "code_challenge_method",
    );
    let mut browser = Browser::new();
    let r = browser.get(&env.authorize_url(&q)).await;
    assert_eq!(r.status, 302);
    assert_eq!(query_of(&r.location())["error"], "invalid_request");
    assert!(
        !browser.jar.contains_key("capsid_csrf"),
        "no consent was offered"
    );
    // And a real code redeemed without its verifier, or with another one, fails.
    let (client, code) = env.code().await;
    for verifier in [None, Some("x".repeat(43)), Some(s256(VERIFIER))] {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("client_id", client.as_str()),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
        ];
        if let Some(v) = &verifier {
            form.push(("code_verifier", v.as_str()));
        }
        let r = env.token(&form).await;
        assert_eq!(
            r.error(),
            "invalid_grant",
            "verifier {verifier:?}: {}",
            r.body
        );
    }
    // The code is still good for its own verifier (a failed PKCE check does not spend it).
    assert_eq!(env.exchange(&client, &code).await.status, 200);
}

// ---------------------------------------------------------------------------------------------
// Rows 3 and 4: codes are single-use and short-lived.

#[tokio::test]
async fn a_replayed_code_is_refused_and_revokes_what_it_issued() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    let first = env.exchange(&client, &code).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let access = first.json()["access_token"].as_str().unwrap().to_owned();
    let refresh = first.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(env.mcp_status(&access).await.status, 200);
    let replay = env.exchange(&client, &code).await;
    assert_eq!(
        (replay.status, replay.error().as_str()),
        (400, "invalid_grant")
    );
    assert!(replay.body.contains("revoked"), "{}", replay.body);
    assert_eq!(
        env.mcp_status(&access).await.status,
        401,
        "the first access token is revoked"
    );
    assert_eq!(
        env.refresh(&client, &refresh).await.error(),
        "invalid_grant",
        "and its refresh token"
    );
}

#[tokio::test]
async fn a_code_expires_after_ten_minutes() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    env.advance(CODE_TTL_MS);
    let r = env.exchange(&client, &code).await;
    assert_eq!(r.error(), "invalid_grant", "{}", r.body);
    assert!(r.body.contains("expired"), "{}", r.body);
}

#[tokio::test]
async fn a_code_of_another_client_is_refused() {
    let env = Env::start().await;
    let (_, code) = env.code().await;
    let other = env.register(&[REDIRECT]).await;
    let r = env.exchange(&other, &code).await;
    assert_eq!(r.error(), "invalid_grant", "{}", r.body);
}

#[tokio::test]
async fn an_unknown_code_or_client_is_refused() {
    let env = Env::start().await;
    let (client, _) = env.code().await;
    assert_eq!(
        env.exchange(&client, "capsid_ac_guess").await.error(),
        "invalid_grant"
    );
    let r = env
        .exchange("capsid_client_nobody", "capsid_ac_guess")
        .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (401, "invalid_client"),
        "{}",
        r.body
    );
}

// ---------------------------------------------------------------------------------------------
// Row 5: only the code and refresh grants.

#[tokio::test]
async fn the_implicit_flow_is_refused() {
    let env = Env::start().await;
    refused_to_client(
        &env,
        |q| set(q, "response_type", "token"),
        "unsupported_response_type",
    )
    .await;
    refused_to_client(
        &env,
        |q| set(q, "response_type", "code token"),
        "unsupported_response_type",
    )
    .await;
}

#[tokio::test]
async fn the_password_and_client_credentials_grants_are_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    for grant in ["password", "client_credentials", "implicit", ""] {
        let r = env
            .token(&[
                ("grant_type", grant),
                ("client_id", &client),
                ("username", "octo"),
                ("password", "x"),
            ])
            .await;
        assert_eq!(r.status, 400, "{grant}: {}", r.body);
        assert!(
            matches!(
                r.error().as_str(),
                "unsupported_grant_type" | "invalid_request"
            ),
            "{}",
            r.body
        );
    }
}

#[tokio::test]
async fn register_refuses_the_implicit_grant() {
    let env = Env::start().await;
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "grant_types": ["implicit"]}))
        .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (400, "invalid_client_metadata")
    );
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "response_types": ["token"]}))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
}
