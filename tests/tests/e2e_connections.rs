//! Sessions and connections (SPEC 8): a session id the server does not know is refused (404)
//! and never served to anyone, the session-owner map forgets the least recently used session
//! first, a client that is slow to send its headers or its body is cut off, and past the
//! connection bound a connection is answered 503 while the others are served.

use std::time::Duration;

use capsid_http::ServeLimits;
use capsid_tests::e2e_cases;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Session mode, remembering two sessions' owners.
fn two_sessions() -> ServerOptions {
    ServerOptions {
        sessions: true,
        session_capacity: Some(2),
        ..ServerOptions::default()
    }
}

/// Short deadlines and a bound of two connections (`header_ms`: the header deadline).
fn tight(header_ms: u64) -> ServerOptions {
    ServerOptions {
        limits: Some(ServeLimits {
            header_timeout: Duration::from_millis(header_ms),
            body_timeout: Duration::from_millis(300),
            max_connections: 2,
        }),
        ..ServerOptions::default()
    }
}

/// A safety net for a read that must end: the server closing or answering ends it long
/// before; it only stops a broken server from hanging the suite.
const NEVER: Duration = Duration::from_secs(30);

async fn post(
    s: &TestServer,
    key: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, String) {
    let mut req = reqwest::Client::new()
        .post(s.ops_url())
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let resp = req.body(body.to_string()).send().await.expect("a response");
    let status = resp.status().as_u16();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, id, resp.text().await.unwrap_or_default())
}

async fn open_session(s: &TestServer, key: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, id, body) = post(s, key, None, init).await;
    assert_eq!(status, 200, "{body}");
    let id = id.expect("a session id");
    let (status, _, body) = post(
        s,
        key,
        Some(&id),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    id
}

async fn list(s: &TestServer, key: &str, session: &str) -> (u16, String) {
    let (status, _, body) = post(
        s,
        key,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    (status, body)
}

async fn forgotten_sessions_are_refused_and_the_least_recently_used_goes_first(s: &TestServer) {
    let alice = s
        .mint("alice", "session", json!({"namespaces": ["*"]}))
        .await;
    let bob = s.mint("bob", "session", json!({"namespaces": ["*"]})).await;
    let made_up = "0123456789abcdef0123456789abcdef";
    assert_eq!(
        list(s, &alice, made_up).await.0,
        404,
        "a session id nobody opened"
    );

    let a1 = open_session(s, &alice).await;
    let b1 = open_session(s, &bob).await;
    // alice's session is used after bob's: bob's is now the least recently used.
    assert_eq!(list(s, &alice, &a1).await.0, 200);
    let b2 = open_session(s, &bob).await;
    assert_eq!(
        list(s, &alice, &a1).await.0,
        200,
        "the recently used session is kept"
    );
    assert_eq!(list(s, &bob, &b2).await.0, 200);
    // b1 is still open in the transport, but its owner is forgotten: it exists for nobody.
    let (status, body) = list(s, &alice, &b1).await;
    assert_eq!(
        status, 404,
        "a forgotten session is not served to another caller: {body}"
    );
    assert_eq!(
        list(s, &bob, &b1).await.0,
        404,
        "nor to its opener (it opens a new one)"
    );
    // A session the client ends is forgotten at once.
    let ended = reqwest::Client::new()
        .delete(s.ops_url())
        .bearer_auth(&bob)
        .header("mcp-session-id", &b2)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("delete");
    assert!(ended.status().is_success(), "{}", ended.status());
    assert_eq!(list(s, &bob, &b2).await.0, 404);
    assert_eq!(list(s, &alice, &a1).await.0, 200);
}

e2e_cases!(super::two_sessions(); forgotten_sessions_are_refused_and_the_least_recently_used_goes_first);

fn authority(s: &TestServer) -> String {
    s.url.trim_start_matches("http://").to_owned()
}

/// Reads what the server sends until it closes the connection (`what`: for the message).
async fn read_to_close(tcp: &mut TcpStream, what: &str) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(NEVER, tcp.read_to_end(&mut out)).await;
    assert!(
        read.is_ok(),
        "the server never closed the connection ({what}); read so far: {}",
        String::from_utf8_lossy(&out)
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// One whole request on its own connection: the status line's code.
async fn health(s: &TestServer) -> String {
    let mut tcp = TcpStream::connect(authority(s)).await.expect("connect");
    let req = format!(
        "GET /health HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        authority(s)
    );
    tcp.write_all(req.as_bytes()).await.expect("write");
    let text = read_to_close(&mut tcp, "a whole request").await;
    text.split(' ').nth(1).unwrap_or_default().to_owned()
}

async fn slow_headers_and_bodies_are_cut_off(s: &TestServer) {
    // Headers that never end.
    let mut slow = TcpStream::connect(authority(s)).await.expect("connect");
    slow.write_all(
        format!(
            "POST /ops/mcp HTTP/1.1\r\nHost: {}\r\nX-Slow: ",
            authority(s)
        )
        .as_bytes(),
    )
    .await
    .expect("write");
    let answer = read_to_close(&mut slow, "headers that never end").await;
    assert!(!answer.contains(" 500 "), "{answer}");
    // A connection that sends nothing at all.
    let mut idle = TcpStream::connect(authority(s)).await.expect("connect");
    read_to_close(&mut idle, "a connection that sends nothing").await;
    // A body that never arrives: 408, nothing written.
    let key = s
        .mint(
            "slow",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    let before = s.admin("namespaces", json!({})).await;
    let mut body = TcpStream::connect(authority(s)).await.expect("connect");
    let partial =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"register_namespace","#;
    let head = format!(
        "POST /ops/mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 4000\r\n\r\n{partial}",
        authority(s)
    );
    body.write_all(head.as_bytes()).await.expect("write");
    let answer = read_to_close(&mut body, "a body that never arrives").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("not received within"), "{answer}");
    assert_eq!(
        s.admin("namespaces", json!({})).await,
        before,
        "nothing changed"
    );
    // The server still serves.
    assert_eq!(health(s).await, "200");
}

async fn past_the_connection_bound_a_connection_is_refused_not_queued(s: &TestServer) {
    // Two connections that opened and sent half a request hold the bound.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut tcp = TcpStream::connect(authority(s)).await.expect("connect");
        tcp.write_all(b"GET /health HTTP/1.1\r\n")
            .await
            .expect("write");
        held.push(tcp);
    }
    // The server has taken them once the half request is being read; a third is answered 503.
    let third = health(s).await;
    assert_eq!(third, "503", "past the bound of two connections");
    // The held ones are cut off by the header deadline, which frees the bound.
    for mut tcp in held {
        read_to_close(&mut tcp, "a held connection").await;
    }
    assert_eq!(health(s).await, "200");
}

mod bounds {
    use super::*;
    use capsid_store_sqlite::SqliteStore;
    use capsid_tests::e2e::run;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_headers_and_bodies_are_cut_off() {
        run::<SqliteStore, _>("slow_clients", tight(300), |s| {
            Box::pin(super::slow_headers_and_bodies_are_cut_off(s))
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn past_the_connection_bound_a_connection_is_refused_not_queued() {
        run::<SqliteStore, _>("connection_bound", tight(2000), |s| {
            Box::pin(super::past_the_connection_bound_a_connection_is_refused_not_queued(s))
        })
        .await;
    }
}
