//! End to end, on SQLite and Postgres: checkmarks, the log, answers and resumes, the global
//! feed and the shared context through real MCP clients on `/ops/mcp` and plain HTTP on the
//! Handler API (`/api/`, as curl would call it), with the one check deciding both. Each module
//! holds its scenarios and expands them once per store.

mod authority;
mod flow;
mod promote;
mod refusals;

use capsid_core::ports::AuditFilter;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

/// A Handler API call: (status, JSON body, WWW-Authenticate).
pub(crate) async fn api(
    s: &TestServer,
    key: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, Value, Option<String>) {
    let client = reqwest::Client::new();
    let url = format!("{}{path}", s.url);
    let mut req = match method {
        "GET" => client.get(&url),
        "POST" => client.post(&url),
        "PUT" => client.put(&url),
        "DELETE" => client.delete(&url),
        other => panic!("no method {other}"),
    };
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_owned());
    }
    let resp = req.send().await.expect("the server answers");
    let status = resp.status().as_u16();
    let www = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = resp.text().await.unwrap_or_default();
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{method} {path}: {status} is not JSON: {text}"));
    (status, json, www)
}

pub(crate) async fn get(s: &TestServer, key: &str, path: &str) -> (u16, Value) {
    let (status, body, _) = api(s, Some(key), "GET", path, None).await;
    (status, body)
}

/// Expects the API's error shape with `status` and a message containing `says`.
pub(crate) fn refused(got: (u16, Value), status: u16, code: &str, says: &str) {
    let (got_status, body) = got;
    assert_eq!(got_status, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message:?} should say {says:?}");
}

pub(crate) async fn audit_rows(s: &TestServer) -> usize {
    s.store
        .recent_audit(&AuditFilter::default(), 100_000)
        .await
        .expect("audit")
        .len()
}

/// Two namespaces, two agents each; b2 may write the shared context.
pub(crate) struct Team {
    pub(crate) a1: (String, Client),
    pub(crate) a2: (String, Client),
    pub(crate) b1: (String, Client),
    pub(crate) b2: (String, Client),
}

pub(crate) async fn team(s: &TestServer) -> Team {
    s.namespace("alpha").await;
    s.namespace("beta").await;
    let mut keys = Vec::new();
    for (name, ns, flags) in [
        ("a1", "alpha", json!({})),
        ("a2", "alpha", json!({})),
        ("b1", "beta", json!({})),
        ("b2", "beta", json!({"can_write_shared": true})),
    ] {
        let key = s
            .mint(
                name,
                "driver",
                json!({"namespaces": [ns], "grants": ["read", "write"], "flags": flags}),
            )
            .await;
        let client = s.client(&key).await;
        keys.push((key, client));
    }
    let mut it = keys.into_iter();
    let mut next = || it.next().expect("four agents");
    Team {
        a1: next(),
        a2: next(),
        b1: next(),
        b2: next(),
    }
}

pub(crate) async fn checkpoint(c: &Client, args: Value) -> Value {
    c.ok("checkpoint", args).await
}
