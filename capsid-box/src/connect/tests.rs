use super::*;
use crate::bridge::{Door, DoorTarget};
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixStream};

struct MapResolver(HashMap<&'static str, SocketAddr>);

impl Resolve for MapResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        _port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        let found = self.0.get(host).copied();
        Box::pin(async move {
            found
                .map(|a| vec![a])
                .ok_or_else(|| io::Error::other("unknown"))
        })
    }
}

async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = stream.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

async fn ask(socket: &std::path::Path, request: &str) -> (UnixStream, String) {
    let mut stream = UnixStream::connect(socket).await.expect("connects");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.expect("read") == 0 {
            break;
        }
        head.push(byte[0]);
    }
    (stream, String::from_utf8_lossy(&head).into_owned())
}

#[tokio::test]
async fn connect_refuses_off_list_tunnels_on_list_and_records_each() {
    let dir = tempfile::tempdir().expect("dir");
    let echo = echo_server().await;
    let attempts = RecordLog::new();
    let resolver = MapResolver(HashMap::from([
        ("pypi.org", echo),
        ("crates.io", "127.0.0.1:1".parse().expect("addr")),
    ]));
    let proxy = ConnectProxy::new(Egress::registries(), resolver, attempts.clone());
    let door = Door::open(
        "egress",
        dir.path().join("egress.sock"),
        DoorTarget::Http(proxy.router()),
        RecordLog::new(),
    )
    .await
    .expect("opens");

    let (mut refused, head) = ask(
        door.socket(),
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let mut body = vec![0u8; 70];
    refused.read_exact(&mut body).await.expect("the body");
    assert_eq!(
        String::from_utf8_lossy(&body),
        "refused: example.com:443 is not on the allowlist 'package registries'\n"
    );

    let (_, head) = ask(
        door.socket(),
        "GET http://pypi.org/simple HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 405"), "{head}");

    let (_, head) = ask(
        door.socket(),
        "CONNECT crates.io:443 HTTP/1.1\r\nHost: crates.io:443\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 502"), "{head}");

    let (mut tunnel, head) = ask(
        door.socket(),
        "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel
        .write_all(b"through the tunnel")
        .await
        .expect("write");
    let mut back = [0u8; 18];
    tunnel.read_exact(&mut back).await.expect("echoed");
    assert_eq!(&back, b"through the tunnel");
    drop(tunnel);

    let attempts = attempts
        .wait_for(Duration::from_secs(5), |a| a.len() == 4)
        .await
        .expect("four attempts");
    let summary: Vec<(&str, u16, bool)> = attempts
        .iter()
        .map(|a| (a.host.as_str(), a.port, a.decision == Decision::Allowed))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("example.com", 443, false),
            ("pypi.org", 0, false),
            ("crates.io", 443, true),
            ("pypi.org", 443, true)
        ]
    );
    assert!(
        attempts[2]
            .failure
            .as_deref()
            .is_some_and(|f| f.contains("could not be reached"))
    );
    assert_eq!((attempts[3].bytes_up, attempts[3].bytes_down), (18, 18));
    door.close().await;
}

#[tokio::test]
async fn closing_the_door_ends_a_live_tunnel() {
    let dir = tempfile::tempdir().expect("dir");
    let echo = echo_server().await;
    let attempts = RecordLog::new();
    let proxy = ConnectProxy::new(
        Egress::registries(),
        MapResolver(HashMap::from([("pypi.org", echo)])),
        attempts.clone(),
    );
    let connections = RecordLog::new();
    let door = Door::open(
        "egress",
        dir.path().join("egress.sock"),
        DoorTarget::Http(proxy.router()),
        connections.clone(),
    )
    .await
    .expect("opens");
    let (mut tunnel, head) = ask(door.socket(), "CONNECT pypi.org:443 HTTP/1.1\r\n\r\n").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(b"x").await.expect("write");
    let mut back = [0u8; 1];
    tunnel.read_exact(&mut back).await.expect("echoed");
    tokio::time::timeout(Duration::from_secs(5), door.close())
        .await
        .expect("close ends the tunnel");
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tunnel.read_to_end(&mut rest))
        .await
        .expect("ended");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert_eq!(connections.records().len(), 1);
    let attempts = attempts
        .wait_for(Duration::from_secs(5), |a| a.len() == 1)
        .await
        .expect("recorded");
    assert_eq!((attempts[0].bytes_up, attempts[0].bytes_down), (1, 1));
}

#[tokio::test]
async fn the_system_resolver_refuses_a_name_that_resolves_to_the_host_itself() {
    let err = SystemResolver
        .resolve("localhost", 443)
        .await
        .expect_err("loopback only");
    assert!(err.to_string().contains("no public address"), "{err}");
    let named = SystemResolver
        .resolve("[::1]", 8443)
        .await
        .expect("a literal");
    assert_eq!(named, vec!["[::1]:8443".parse().expect("addr")]);
}
