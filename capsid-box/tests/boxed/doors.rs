//! The bridges with the real bubblewrap: a host loopback service is unreachable from the box
//! except through a door, each connection recorded with its bytes; the CONNECT door refuses a
//! host off the allowlist and tunnels an allowed one, recording both.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::common::{DOOR_INSIDE, Fixture, require_bwrap};
use capsid_box::bridge::{ConnectionRecord, Door, DoorEnd, DoorTarget, RecordLog};
use capsid_box::connect::{ConnectAttempt, ConnectProxy, Decision, Resolve};
use capsid_box::sandbox::{BoxStdio, check};
use capsid_core::drive::egress::Egress;
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A host loopback HTTP/1.0 server answering each request with `body`, counting the bytes it
/// read and wrote.
struct HostServer {
    addr: SocketAddr,
    read: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
}

async fn host_server(body: &'static str) -> HostServer {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let (read, written) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (r, w) = (Arc::clone(&read), Arc::clone(&written));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (r, w) = (Arc::clone(&r), Arc::clone(&w));
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|win| win == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                r.fetch_add(request.len() as u64, Ordering::SeqCst);
                let answer = format!(
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                if stream.write_all(answer.as_bytes()).await.is_ok() {
                    w.fetch_add(answer.len() as u64, Ordering::SeqCst);
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    HostServer {
        addr,
        read,
        written,
    }
}

async fn run_in_box(
    bwrap: &capsid_box::sandbox::Bwrap,
    fixture: &Fixture,
    agent: capsid_box::sandbox::AgentBox,
    args: &[&str],
) -> (i32, String, String) {
    let checked = check(agent.spec().expect("spec"), &fixture.forbidden()).expect("allowed");
    let mut child = bwrap
        .spawn(&checked, DOOR_INSIDE, args, BoxStdio::piped_output())
        .expect("the box starts");
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = child.stdout().expect("piped");
    let mut stderr = child.stderr().expect("piped");
    let (a, b) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.expect("stdout");
    b.expect("stderr");
    let status = child.wait().await.expect("ends");
    (status.code().unwrap_or(-1), out, err)
}

#[tokio::test]
async fn a_host_loopback_service_is_reached_only_through_its_door_and_recorded() {
    let Some(bwrap) =
        require_bwrap("a_host_loopback_service_is_reached_only_through_its_door_and_recorded")
            .await
    else {
        return;
    };
    let fixture = Fixture::new();
    let server = host_server("hello from the host").await;
    let log = RecordLog::new();
    let door = Door::open(
        "svc",
        fixture.doors.join("svc.sock"),
        DoorTarget::Tcp(server.addr),
        log.clone(),
    )
    .await
    .expect("the door opens");
    let mut agent = fixture.agent();
    agent
        .doors
        .push(("svc".into(), door.socket().to_path_buf()));
    let script = format!(
        "if curl -s --max-time 2 http://127.0.0.1:{port}/; then echo DIRECT-REACHED; else echo direct=$?; fi
         curl -sS --max-time 5 http://127.0.0.1:9000/through",
        port = server.addr.port()
    );
    let (code, out, err) = run_in_box(
        &bwrap,
        &fixture,
        agent,
        &[
            "--listen",
            "127.0.0.1:9000",
            "--to",
            "/run/doors/svc.sock",
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !out.contains("DIRECT-REACHED") && out.contains("direct=7"),
        "{out}\n{err}"
    );
    assert!(out.ends_with("hello from the host"), "{out}\n{err}");
    let records = log
        .wait_for(Duration::from_secs(5), |r: &[ConnectionRecord]| {
            !r.is_empty()
        })
        .await
        .expect("the connection is recorded");
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record.door, "svc");
    assert_eq!(
        record.target,
        DoorEnd::Tcp {
            host: "127.0.0.1".into(),
            port: server.addr.port()
        }
    );
    assert_eq!(record.bytes_up, server.read.load(Ordering::SeqCst));
    assert_eq!(record.bytes_down, server.written.load(Ordering::SeqCst));
    assert!(record.bytes_up > 0 && record.ended >= record.started && record.failure.is_none());
    door.close().await;
}

/// Maps names to loopback servers, as a test's registry.
struct MapResolver(HashMap<String, SocketAddr>);

impl Resolve for MapResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        _port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        let found = self.0.get(host).copied();
        Box::pin(async move {
            found.map(|a| vec![a]).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no test address for {host}"),
                )
            })
        })
    }
}

#[tokio::test]
async fn the_connect_door_refuses_example_com_and_tunnels_a_registry_both_recorded() {
    let Some(bwrap) =
        require_bwrap("the_connect_door_refuses_example_com_and_tunnels_a_registry_both_recorded")
            .await
    else {
        return;
    };
    let fixture = Fixture::new();
    let registry = host_server("crate bytes").await;
    let attempts = RecordLog::new();
    let resolver = MapResolver(HashMap::from([
        ("static.crates.io".to_owned(), registry.addr),
        ("example.com".to_owned(), registry.addr),
    ]));
    let proxy = ConnectProxy::new(Egress::registries(), resolver, attempts.clone());
    let connections = RecordLog::new();
    let door = Door::open(
        "egress",
        fixture.doors.join("egress.sock"),
        DoorTarget::Http(proxy.router()),
        connections.clone(),
    )
    .await
    .expect("the door opens");
    let mut agent = fixture.agent();
    agent
        .doors
        .push(("egress".into(), door.socket().to_path_buf()));
    agent.proxy_port = Some(3128);
    // curl finds the proxy in HTTPS_PROXY/HTTP_PROXY; `-p` tunnels plain HTTP through CONNECT.
    let script = "curl -sS --max-time 5 https://example.com/ -o /dev/null -w 'refused=%{http_connect}\\n' ; echo curl=$?
         curl -sS --max-time 5 -p http://static.crates.io:443/crate";
    let (code, out, err) = run_in_box(
        &bwrap,
        &fixture,
        agent,
        &[
            "--listen",
            "127.0.0.1:3128",
            "--to",
            "/run/doors/egress.sock",
            "--",
            "sh",
            "-c",
            script,
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("refused=403") && out.contains("curl=56"),
        "{out}\n{err}"
    );
    assert!(out.ends_with("crate bytes"), "{out}\n{err}");
    let attempts = attempts
        .wait_for(Duration::from_secs(5), |a: &[ConnectAttempt]| a.len() == 2)
        .await
        .expect("both attempts are recorded");
    let refused = &attempts[0];
    assert_eq!((refused.host.as_str(), refused.port), ("example.com", 443));
    assert_eq!(
        refused.decision,
        Decision::Refused(
            "refused: example.com:443 is not on the allowlist 'package registries'".into()
        )
    );
    assert_eq!((refused.bytes_up, refused.bytes_down), (0, 0));
    let tunneled = &attempts[1];
    assert_eq!(
        (tunneled.host.as_str(), tunneled.port),
        ("static.crates.io", 443)
    );
    assert_eq!(tunneled.decision, Decision::Allowed);
    assert_eq!(tunneled.bytes_up, registry.read.load(Ordering::SeqCst));
    assert_eq!(tunneled.bytes_down, registry.written.load(Ordering::SeqCst));
    assert!(tunneled.failure.is_none(), "{tunneled:?}");
    let connections = connections
        .wait_for(Duration::from_secs(5), |c: &[ConnectionRecord]| {
            c.len() == 2
        })
        .await
        .expect("both connections through the door are recorded");
    assert!(
        connections
            .iter()
            .all(|c| c.door == "egress" && c.target == DoorEnd::InProcess)
    );
    assert!(
        connections
            .iter()
            .any(|c| c.bytes_down > tunneled.bytes_down),
        "{connections:?}"
    );
    door.close().await;
}
