use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

#[tokio::test]
async fn a_door_forwards_to_its_tcp_target_and_records_the_bytes() {
    let dir = tempfile::tempdir().expect("dir");
    let target = echo_server().await;
    let log = RecordLog::new();
    let door = Door::open(
        "echo",
        dir.path().join("echo.sock"),
        DoorTarget::Tcp(target),
        log.clone(),
    )
    .await
    .expect("opens");
    let mode = std::fs::metadata(door.socket())
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let mut client = UnixStream::connect(door.socket()).await.expect("connects");
    client.write_all(b"twelve bytes").await.expect("write");
    let mut back = [0u8; 12];
    client.read_exact(&mut back).await.expect("echoed");
    assert_eq!(&back, b"twelve bytes");
    drop(client);
    let records = log
        .wait_for(Duration::from_secs(5), |r| !r.is_empty())
        .await
        .expect("recorded");
    assert_eq!(records[0].door, "echo");
    assert_eq!((records[0].bytes_up, records[0].bytes_down), (12, 12));
    assert_eq!(
        records[0].target,
        DoorEnd::Tcp {
            host: "127.0.0.1".into(),
            port: target.port()
        }
    );
    door.close().await;
}

#[tokio::test]
async fn closing_a_door_ends_live_connections_records_them_and_stops_accepting() {
    let dir = tempfile::tempdir().expect("dir");
    let log = RecordLog::new();
    let socket = dir.path().join("echo.sock");
    let door = Door::open(
        "echo",
        &socket,
        DoorTarget::Tcp(echo_server().await),
        log.clone(),
    )
    .await
    .expect("opens");
    let mut client = UnixStream::connect(&socket).await.expect("connects");
    client.write_all(b"abc").await.expect("write");
    let mut back = [0u8; 3];
    client.read_exact(&mut back).await.expect("echoed");
    tokio::time::timeout(Duration::from_secs(5), door.close())
        .await
        .expect("close does not wait for the client");
    let records = log.records();
    assert_eq!(records.len(), 1, "the live connection is recorded by close");
    assert_eq!((records[0].bytes_up, records[0].bytes_down), (3, 3));
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut rest))
        .await
        .expect("the connection was ended");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(
        UnixStream::connect(&socket).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn an_unreachable_target_is_recorded_with_its_failure() {
    let dir = tempfile::tempdir().expect("dir");
    let unused = TcpListener::bind("127.0.0.1:0").await.expect("port");
    let addr = unused.local_addr().expect("addr");
    drop(unused);
    let log = RecordLog::new();
    let door = Door::open(
        "gone",
        dir.path().join("gone.sock"),
        DoorTarget::Tcp(addr),
        log.clone(),
    )
    .await
    .expect("opens");
    let mut client = UnixStream::connect(door.socket()).await.expect("connects");
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest).await;
    let records = log
        .wait_for(Duration::from_secs(5), |r| !r.is_empty())
        .await
        .expect("recorded");
    assert!(
        records[0]
            .failure
            .as_deref()
            .is_some_and(|f| f.contains(&addr.to_string())),
        "{records:?}"
    );
    door.close().await;
}

#[test]
fn inside_arguments_come_in_pairs_with_an_optional_program() {
    let parse = |args: &[&str]| parse_inside_args(args.iter().map(OsString::from));
    let parsed = parse(&[
        "--listen",
        "127.0.0.1:9000",
        "--to",
        "/run/doors/a.sock",
        "--listen",
        "127.0.0.1:9001",
        "--to",
        "/run/doors/b.sock",
        "--",
        "sh",
        "-c",
        "echo --listen",
    ])
    .expect("parses");
    assert_eq!(parsed.pairs.len(), 2);
    assert_eq!(parsed.pairs[1].to, PathBuf::from("/run/doors/b.sock"));
    let (program, args) = parsed.program.expect("a program");
    assert_eq!(program, "sh");
    assert_eq!(
        args,
        vec![OsString::from("-c"), OsString::from("echo --listen")]
    );
    assert_eq!(parse(&[]), Err(InsideArgsError::Unpaired));
    assert_eq!(
        parse(&["--listen", "127.0.0.1:9000"]),
        Err(InsideArgsError::Unpaired)
    );
    assert_eq!(parse(&["--to", "/x"]), Err(InsideArgsError::Unpaired));
    assert_eq!(
        parse(&["--listen", "9000", "--to", "/x"]),
        Err(InsideArgsError::Listen("9000".into()))
    );
    assert_eq!(
        parse(&["--listen"]),
        Err(InsideArgsError::Missing("--listen"))
    );
    assert_eq!(
        parse(&["--bogus"]),
        Err(InsideArgsError::Unknown("--bogus".into()))
    );
}
