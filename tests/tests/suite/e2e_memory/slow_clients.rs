//! The hostile corpus's slow clients (SPEC 8): headers that never end, a body that never
//! arrives, a connection that sends nothing. Each is cut off by the server (never a 500),
//! the others are served meanwhile, and the half-sent write changes nothing.

use std::time::Duration;

use capsid_http::ServeLimits;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Only stops a server that never cuts a slow client off from hanging the suite; the
/// server's deadlines here are a fraction of a second.
const NEVER: Duration = Duration::from_secs(30);

/// What the server sent before it closed the connection.
async fn until_closed(tcp: &mut TcpStream, what: &str) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(NEVER, tcp.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    assert!(
        read.is_ok(),
        "the server never cut off {what}; read so far: {text}"
    );
    assert!(!text.starts_with("HTTP/1.1 5"), "{what}: {text}");
    text
}

/// Runs the slow cases against a second server on `s`'s store with short deadlines, as
/// `key` (a writer), each aimed at overwriting `alpha/keep.md`.
pub(crate) async fn slow_clients_are_cut_off(s: &TestServer, options: ServerOptions, key: &str) {
    let twin = TestServer::start(
        s.store.clone(),
        ServerOptions {
            limits: Some(ServeLimits {
                header_timeout: Duration::from_millis(400),
                body_timeout: Duration::from_millis(400),
                ..ServeLimits::default()
            }),
            ..options
        },
    )
    .await;
    let host = twin.url.trim_start_matches("http://").to_owned();
    let write = json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                       "params": {"name": "write", "arguments": {"namespace": "alpha", "path": "keep.md", "title": "K", "body": "changed", "confirm": true}}})
    .to_string();
    let head = format!(
        "POST /ops/mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        write.len() + 100
    );
    // Headers that never end (the blank line never comes).
    let mut slow_head = TcpStream::connect(&host).await.expect("connect");
    slow_head.write_all(head.as_bytes()).await.expect("write");
    // A body that stops short of its Content-Length.
    let mut slow_body = TcpStream::connect(&host).await.expect("connect");
    slow_body
        .write_all(format!("{head}\r\n{write}").as_bytes())
        .await
        .expect("write");
    // A connection that sends nothing.
    let mut silent = TcpStream::connect(&host).await.expect("connect");
    // Meanwhile everyone else is served.
    let health = reqwest::get(format!("{}/health", twin.url))
        .await
        .expect("health");
    assert_eq!(health.status().as_u16(), 200);
    until_closed(&mut slow_head, "headers that never end").await;
    let answer = until_closed(&mut slow_body, "a body that never arrives").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("not received within"), "{answer}");
    until_closed(&mut silent, "a connection that sends nothing").await;
    twin.stop().await;
}
