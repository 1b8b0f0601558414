//! End to end: the memory tools over a real MCP client against the real server, on SQLite and
//! Postgres; credentials and the one enforcement point as callers meet them. Each module holds
//! its scenarios and expands them once per store.

mod bounds;
mod credentials;
mod enforcement;
mod metadata;
mod round_trip;
mod slow_clients;
mod surfaces;
mod writes;

use capsid_core::crypto::sha256_hex;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::json;

/// An operator key pair: the plain key and its `CAPSID_OPERATOR_KEY_HASH` entry.
pub(crate) const OP_WRITE: &str = "operator-write-key-for-tests";
pub(crate) const OP_READ: &str = "operator-read-key-for-tests";

pub(crate) fn options() -> ServerOptions {
    ServerOptions {
        operator_keys: Some(format!(
            "{}, ro:{}",
            sha256_hex(OP_WRITE),
            sha256_hex(OP_READ)
        )),
        sessions: false,
        repo_host: None,
        webhook: None,
        ..ServerOptions::default()
    }
}

pub(crate) async fn writer(s: &TestServer) -> String {
    s.mint(
        "writer",
        "session",
        json!({"namespaces": ["*"], "grants": ["read", "write"]}),
    )
    .await
}

/// POSTs an initialize and returns (status, WWW-Authenticate).
pub(crate) async fn reqwest_status(url: &str, key: Option<&str>) -> (u16, Option<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let resp = raw_post(url, key, &body.to_string()).await;
    (resp.0, resp.2)
}

/// A raw HTTP POST (status, body, WWW-Authenticate).
pub(crate) async fn raw_post(
    url: &str,
    key: Option<&str>,
    body: &str,
) -> (u16, String, Option<String>) {
    let client = reqwest::Client::new();
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.expect("the server answers");
    let status = resp.status().as_u16();
    let www = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, resp.text().await.unwrap_or_default(), www)
}
