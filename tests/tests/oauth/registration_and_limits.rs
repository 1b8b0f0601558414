//! Checklist rows 9 and 13: dynamic registration is bounded, limited and expires;
//! anti-automation on the unauthenticated endpoints.

use capsid_core::oauth::CLIENT_TTL_MS;
use capsid_core::time::HOUR_MS;
use serde_json::json;

use crate::env::*;

#[tokio::test]
async fn registration_is_limited_per_address_per_hour() {
    let env = Env::start().await;
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    for _ in 0..30 {
        env.register(&[REDIRECT]).await;
    }
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT]}))
        .await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(
        r.json()["error_description"]
            .as_str()
            .unwrap_or("")
            .contains("limit 30"),
        "{}",
        r.body
    );
    env.advance(HOUR_MS);
    env.register(&[REDIRECT]).await;
}

#[tokio::test]
async fn registration_is_limited_per_address_per_day() {
    let env = Env::start().await;
    // Start early in a day, so the five hours stay in one day.
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    let mut registered = 0;
    let mut refused_at = None;
    for _ in 0..5 {
        for _ in 0..30 {
            let r = env
                .register_json(json!({"redirect_uris": [REDIRECT]}))
                .await;
            if r.status == 201 {
                registered += 1;
            } else {
                assert_eq!(r.status, 429);
                if r.body.contains("day") {
                    refused_at.get_or_insert(registered);
                }
            }
        }
        env.advance(HOUR_MS);
    }
    assert_eq!(registered, 100, "refused at {refused_at:?}");
    assert_eq!(
        refused_at,
        Some(100),
        "the daily limit, with its description"
    );
    env.advance(24 * HOUR_MS);
    env.register(&[REDIRECT]).await;
}

#[tokio::test]
async fn registration_body_is_bounded_and_must_be_json() {
    let env = Env::start().await;
    let big = json!({"redirect_uris": [REDIRECT], "client_name": "x".repeat(20_000)});
    let r = env.register_json(big).await;
    assert_eq!(r.status, 413, "{}", r.body);
    let r = raw_post(
        &env.url("/register"),
        "application/json",
        "not json".into(),
        &[],
    )
    .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (400, "invalid_client_metadata")
    );
    let r = env.register_json(json!({"redirect_uris": []})).await;
    assert_eq!(r.status, 400);
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "client_name": "a\u{7}b"}))
        .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn registrations_expire_after_ninety_days() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    env.advance(CLIENT_TTL_MS);
    let r = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("unknown client"), "{}", r.body);
}

#[tokio::test]
async fn a_confidential_client_must_authenticate() {
    let env = Env::start().await;
    let r = env
        .register_json(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let client = r.json()["client_id"].as_str().unwrap().to_owned();
    let secret = r.json()["client_secret"].as_str().unwrap().to_owned();
    let mut browser = Browser::new();
    let done = env
        .sign_in(&mut browser, &env.authorize_query(&client))
        .await;
    let code = query_of(&done.location())["code"].clone();
    let resource = env.resource();
    let base = [
        ("grant_type", "authorization_code"),
        ("client_id", client.as_str()),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("resource", resource.as_str()),
    ];
    let mut wrong = base.to_vec();
    wrong.push(("client_secret", "capsid_cs_wrong"));
    let r = env.token(&wrong).await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (401, "invalid_client"),
        "{}",
        r.body
    );
    assert_eq!(
        env.token(&base).await.error(),
        "invalid_client",
        "no secret at all"
    );
    let mut right = base.to_vec();
    right.push(("client_secret", secret.as_str()));
    assert_eq!(env.token(&right).await.status, 200);
    assert!(
        !env.db_bytes()
            .windows(secret.len())
            .any(|w| w == secret.as_bytes()),
        "the secret is stored only hashed"
    );
}

// ---------------------------------------------------------------------------------------------
// Row 13: anti-automation on the unauthenticated endpoints.

#[tokio::test]
async fn token_requests_are_limited_per_address() {
    let env = Env::start().await;
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    let client = env.register(&[REDIRECT]).await;
    for i in 0..capsid_core::oauth::AUTH_PER_HOUR {
        let r = env.exchange(&client, &format!("capsid_ac_guess{i}")).await;
        assert_eq!(r.status, 400, "request {i}: {}", r.body);
    }
    let r = env.exchange(&client, "capsid_ac_guess").await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.body.contains("limit 120"), "{}", r.body);
    assert!(!r.header("retry-after").is_empty());
    env.advance(HOUR_MS);
    assert_eq!(env.exchange(&client, "capsid_ac_guess").await.status, 400);
}

#[tokio::test]
async fn authorize_and_console_sign_in_are_limited_per_address() {
    let env = Env::start().await;
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    let client = env.register(&[REDIRECT]).await;
    let url = env.authorize_url(&env.authorize_query(&client));
    for _ in 0..capsid_core::oauth::AUTH_PER_HOUR {
        assert_eq!(Browser::new().get(&url).await.status, 200);
    }
    let r = Browser::new().get(&url).await;
    assert_eq!(r.status, 429, "{}", r.body);
    for _ in 0..capsid_core::oauth::AUTH_PER_HOUR {
        assert_eq!(Browser::new().get(&env.url("/console")).await.status, 302);
    }
    assert_eq!(Browser::new().get(&env.url("/console")).await.status, 429);
}
