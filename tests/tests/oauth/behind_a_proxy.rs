//! Rate limits behind a reverse proxy (SPEC 8): junk token requests cannot starve the owner's
//! refreshes (a live refresh token is counted per client), and with CAPSID_TRUSTED_PROXIES
//! the client address comes from the right-most untrusted `X-Forwarded-For` entry of a
//! trusted peer, never from anyone else's header.

use capsid_core::oauth::{AUTH_PER_HOUR, DCR_PER_HOUR};
use serde_json::json;

use crate::env::*;

#[tokio::test]
async fn junk_token_requests_cannot_starve_the_owners_refreshes() {
    let env = Env::start().await;
    let morning = capsid_core::time::Timestamp::parse("2026-11-30T01:00:00Z").unwrap();
    env.server.clock.set(morning);
    let (client, _, refresh) = env.tokens().await;
    // Every client shares the one address here (as behind a proxy nobody configured).
    for i in 0..=AUTH_PER_HOUR {
        let junk = env
            .token(&[
                ("grant_type", "refresh_token"),
                ("client_id", &client),
                ("refresh_token", &format!("capsid_rt_junk{i}")),
            ])
            .await;
        assert!(junk.status == 400 || junk.status == 429, "{}", junk.body);
    }
    let junk = env
        .token(&[("grant_type", "refresh_token"), ("refresh_token", "x")])
        .await;
    assert_eq!(
        junk.status, 429,
        "anonymous failures are limited: {}",
        junk.body
    );
    let r = env.refresh(&client, &refresh).await;
    assert_eq!(r.status, 200, "the owner's refresh still works: {}", r.body);
}

fn xff(ip: &str) -> [(&'static str, String); 1] {
    [("x-forwarded-for", ip.to_owned())]
}

async fn register_from(env: &Env, forwarded: &str) -> u16 {
    let headers = xff(forwarded);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    raw_post(
        &env.url("/register"),
        "application/json",
        json!({"client_name": "t", "redirect_uris": [REDIRECT]}).to_string(),
        &headers,
    )
    .await
    .status
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_client_has_its_own_limit() {
    // The test connects from 127.0.0.1: that peer is the trusted proxy.
    let env = Env::start_behind_proxy(&["127.0.0.1/32", "10.0.0.0/8"]).await;
    for _ in 0..DCR_PER_HOUR {
        assert_eq!(register_from(&env, "203.0.113.5").await, 201);
    }
    assert_eq!(register_from(&env, "203.0.113.5").await, 429);
    // Another client behind the same proxy is not locked out.
    assert_eq!(register_from(&env, "203.0.113.6").await, 201);
    // The right-most untrusted entry counts: what the client wrote before it does not.
    assert_eq!(
        register_from(&env, "198.51.100.1, 203.0.113.5").await,
        429,
        "a forged left-most entry changes nothing"
    );
    assert_eq!(
        register_from(&env, "203.0.113.5, 10.1.2.3").await,
        429,
        "trusted hops on the right are skipped"
    );
}

#[tokio::test]
async fn an_untrusted_peer_cannot_choose_its_address() {
    let env = Env::start().await;
    for i in 0..DCR_PER_HOUR {
        assert_eq!(register_from(&env, &format!("203.0.113.{i}")).await, 201);
    }
    assert_eq!(
        register_from(&env, "198.51.100.77").await,
        429,
        "without a trusted proxy the header is ignored"
    );
}
