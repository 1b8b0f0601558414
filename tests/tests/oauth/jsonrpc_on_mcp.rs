//! `/mcp` behind the same JSON-RPC layer as `/ops/mcp` (tests/first_hour.rs): with a live
//! access token a body that is not JSON is HTTP 400 `-32700`, JSON that is not JSON-RPC
//! `-32600`, an unknown method is named; a wrong token's 401 carries `error="invalid_token"`
//! and a missing one only the challenge.

use super::env::{Env, mcp_ping, raw_post};

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

#[tokio::test]
async fn mcp_answers_bad_bodies_with_json_rpc_errors() {
    let env = Env::start().await;
    let (_, access, _) = env.tokens().await;
    let auth = format!("Bearer {access}");
    let headers = [("authorization", auth.as_str()), ACCEPT];
    let url = env.resource();

    let r = raw_post(&url, "application/json", "not json".into(), &headers).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], -32700, "{}", r.body);

    let r = raw_post(&url, "application/json", "{\"a\":1}".into(), &headers).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], -32600, "{}", r.body);

    let typo = r#"{"jsonrpc":"2.0","id":3,"method":"tools/cal"}"#;
    let r = raw_post(&url, "application/json", typo.into(), &headers).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], -32601, "{}", r.body);
    assert_eq!(
        r.json()["error"]["message"],
        "method not found: tools/cal",
        "{}",
        r.body
    );
    env.server.stop().await;
}

#[tokio::test]
async fn a_wrong_token_on_mcp_is_an_invalid_token() {
    let env = Env::start().await;
    let r = mcp_ping(&env.resource(), "not-a-token").await;
    assert_eq!(r.status, 401, "{}", r.body);
    let challenge = r.header("www-authenticate");
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\"")
            && challenge.contains("resource_metadata=\""),
        "{challenge}"
    );
    assert_eq!(r.json()["error"], "invalid_token", "{}", r.body);

    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let r = raw_post(&env.resource(), "application/json", ping.into(), &[ACCEPT]).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let challenge = r.header("www-authenticate");
    assert!(
        challenge.contains("resource_metadata=\"") && !challenge.contains("error="),
        "no error code when no token was sent (RFC 6750 3.1): {challenge}"
    );
    env.server.stop().await;
}
