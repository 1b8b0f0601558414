//! MCP in session mode as a plain HTTP client speaks it (curl, or any client written from the
//! transport's text): open a session, POST JSON-RPC messages to it and read a call's SSE
//! stream message by message, so a test sees the notifications before the answer in the
//! order the server sent them.

use serde_json::{Value, json};

use crate::server::TestServer;

/// Opens a session as a plain HTTP client does (initialize, then `initialized`); its id.
pub async fn open_session(s: &TestServer, key: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "curl", "version": "1"}}});
    let opened = post(s, key, None, init).await;
    assert_eq!(opened.status(), 200);
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .expect("a session id");
    let _ = opened.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(s, key, Some(&session), initialized).await.status(),
        202
    );
    session
}

/// One JSON-RPC message POSTed to the session: the response to read.
pub async fn post(
    s: &TestServer,
    key: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(s.ops_url())
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    req.body(body.to_string()).send().await.expect("a response")
}

/// The next complete SSE `data:` message of `stream`, parsed (`None` at its end).
pub async fn next_event(stream: &mut reqwest::Response, buffer: &mut String) -> Option<Value> {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data: String = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            if data.is_empty() {
                continue;
            }
            return Some(serde_json::from_str(&data).expect("an SSE message is JSON"));
        }
        let chunk = stream.chunk().await.expect("the stream reads")?;
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// Reads a call's stream up to the answer to request `id`: the answer, and the `params` of
/// every progress notification before it, in the order sent (a notification that is not
/// progress fails the test).
pub async fn answer_with_progress(stream: &mut reqwest::Response, id: u64) -> (Value, Vec<Value>) {
    let mut buffer = String::new();
    let mut progress = Vec::new();
    loop {
        let event = next_event(stream, &mut buffer)
            .await
            .expect("the stream carries the answer");
        if event["id"] == id {
            return (event, progress);
        }
        assert_eq!(event["method"], "notifications/progress", "{event}");
        progress.push(event["params"].clone());
    }
}
