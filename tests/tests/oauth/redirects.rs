//! Checklist row 1: redirect URIs match exactly at /authorize and /token, and
//! registration validates them.

use crate::env::*;

#[tokio::test]
async fn authorize_refuses_a_redirect_registered_only_by_another_client() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    env.register(&["https://evil.example/cb"]).await;
    refused_on_page(&env, &client, "https://evil.example/cb").await;
}

#[tokio::test]
async fn authorize_refuses_a_trailing_slash() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    refused_on_page(&env, &client, &format!("{REDIRECT}/")).await;
}

#[tokio::test]
async fn authorize_refuses_a_case_change_in_the_path() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    refused_on_page(&env, &client, "http://127.0.0.1:7777/Callback").await;
}

#[tokio::test]
async fn authorize_refuses_an_encoded_slash() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/a/b"]).await;
    refused_on_page(&env, &client, "https://app.example/a%2Fb").await;
}

#[tokio::test]
async fn authorize_refuses_userinfo() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/cb"]).await;
    refused_on_page(&env, &client, "https://app.example@evil.example/cb").await;
    refused_on_page(&env, &client, "https://evil.example@app.example/cb").await;
}

#[tokio::test]
async fn authorize_refuses_a_fragment_and_an_extra_query() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/cb"]).await;
    refused_on_page(&env, &client, "https://app.example/cb#x").await;
    refused_on_page(&env, &client, "https://app.example/cb?next=evil").await;
}

#[tokio::test]
async fn authorize_refuses_a_scheme_swap() {
    let env = Env::start().await;
    let client = env.register(&["https://app.example/cb"]).await;
    refused_on_page(&env, &client, "http://app.example/cb").await;
    let loopback = env.register(&[REDIRECT]).await;
    refused_on_page(&env, &loopback, "https://127.0.0.1:7777/callback").await;
}

#[tokio::test]
async fn authorize_refuses_whitespace_and_control_characters() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    for trick in [
        format!(" {REDIRECT}"),
        format!("{REDIRECT} "),
        format!("{REDIRECT}\t"),
        format!("{REDIRECT}\u{0}"),
        format!("{REDIRECT}\r\nX: y"),
        "HTTP://127.0.0.1:7777/callback".to_owned(),
    ] {
        refused_on_page(&env, &client, &trick).await;
    }
}

#[tokio::test]
async fn register_refuses_mixed_case_schemes_and_hosts() {
    let env = Env::start().await;
    register_refused(&env, "HTTPS://app.example/cb").await;
    register_refused(&env, "Https://app.example/cb").await;
    register_refused(&env, "https://App.Example/cb").await;
}

#[tokio::test]
async fn register_refuses_whitespace_and_control_characters() {
    let env = Env::start().await;
    register_refused(&env, " https://app.example/cb").await;
    register_refused(&env, "https://app.example/cb\n").await;
    register_refused(&env, "https://app.example/c\tb").await;
    register_refused(&env, "https://app.example/c\u{0}b").await;
    register_refused(&env, "https://app.example/c\u{7f}b").await;
}

#[tokio::test]
async fn register_refuses_dangerous_schemes() {
    let env = Env::start().await;
    register_refused(&env, "javascript:alert(1)").await;
    register_refused(&env, "data:text/html,hi").await;
    register_refused(&env, "file:///etc/passwd").await;
    register_refused(&env, "//evil.example/cb").await;
}

#[tokio::test]
async fn register_refuses_plain_http_off_loopback() {
    let env = Env::start().await;
    register_refused(&env, "http://app.example/cb").await;
    register_refused(&env, "http://10.0.0.1/cb").await;
}

#[tokio::test]
async fn register_refuses_userinfo_and_fragments() {
    let env = Env::start().await;
    register_refused(&env, "https://app.example@evil.example/cb").await;
    register_refused(&env, "https://app.example/cb#frag").await;
    register_refused(&env, "https://app.example\\@evil.example/cb").await;
}

#[tokio::test]
async fn token_refuses_a_redirect_other_than_the_codes() {
    let env = Env::start().await;
    let (client, code) = env.code().await;
    let resource = env.resource();
    let r = env
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:7777/callback/"),
            ("code_verifier", VERIFIER),
            ("resource", &resource),
        ])
        .await;
    assert_eq!(
        (r.status, r.error().as_str()),
        (400, "invalid_grant"),
        "{}",
        r.body
    );
    let r = env
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("code_verifier", VERIFIER),
        ])
        .await;
    assert_eq!(
        r.error(),
        "invalid_grant",
        "a missing redirect_uri: {}",
        r.body
    );
}
