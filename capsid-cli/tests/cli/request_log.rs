//! The real binary's log, as a new user reads it: `capsid serve` with the default filter logs
//! one INFO line per request (HTTP method and path, the caller's actor, the JSON-RPC method,
//! the tool, the handler's verdict, status and milliseconds), nothing else at INFO while it
//! serves, never rmcp's made-up `peer_info` of a stateless request, and no colour codes when
//! stderr is not a terminal.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_capsid");

/// `capsid <args>` on the data folder `dir`: its stdout.
fn cli(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("CAPSID_DATA_DIR", dir)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .output()
        .expect("run capsid");
    assert!(
        out.status.success(),
        "capsid {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The server, stopped should the test fail before it stops it.
struct Serving(std::process::Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn one_info_line_per_request_with_tool_and_actor_and_no_peer_info() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("CAPSID_DATA_DIR", dir.path())
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_OPERATOR_KEY_HASH")
        .env_remove("CAPSID_LOG")
        .env_remove("CAPSID_LOG_FORMAT")
        .env_remove("CAPSID_MCP_SESSIONS")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn capsid serve");
    let mut child = Serving(child);
    let mut lines = BufReader::new(child.0.stderr.take().expect("stderr")).lines();
    let mut startup = Vec::new();
    let mut url = None;
    for line in lines.by_ref() {
        let line = line.expect("a line of output");
        if let Some(rest) = line.strip_prefix("capsid is serving MCP at ") {
            url = Some(rest.trim().to_owned());
        }
        let done = line.contains("namespaces register");
        startup.push(line);
        if done {
            break;
        }
    }
    let url = url.unwrap_or_else(|| panic!("no banner in {startup:#?}"));

    let minted: serde_json::Value = serde_json::from_str(&cli(
        dir.path(),
        &[
            "agents",
            "mint",
            "--name",
            "me",
            "--namespaces",
            "*",
            "--grants",
            "read,write",
            "--json",
        ],
    ))
    .expect("mint --json");
    let key = minted["key"].as_str().expect("a key").to_owned();
    cli(
        dir.path(),
        &["namespaces", "register", "demo", "--repo", "you/demo"],
    );

    let calls = [
        (
            "hour-1",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"widgets"}}}"#,
        ),
        (
            "hour-2",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{"namespace":"nosuch","path":"a.md","title":"A","body":"b"}}}"#,
        ),
        (
            "hour-3",
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
        ),
        ("hour-4", "not json"),
    ];
    capsid_http::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let http = reqwest::Client::new();
        for (id, body) in calls {
            let resp = http
                .post(&url)
                .header("authorization", format!("Bearer {key}"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("x-request-id", id)
                .body(body)
                .send()
                .await
                .expect("POST");
            let want = if id == "hour-4" { 400 } else { 200 };
            assert_eq!(resp.status().as_u16(), want, "{id}");
        }
    });

    // Stop it and read the log to its end: every line it wrote is in hand.
    let status = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let serving: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(child.0.wait().expect("capsid exits").success());
    let all = startup.iter().chain(serving.iter());

    let log = serving.join("\n");
    assert!(!log.contains("peer_info"), "{log}");
    assert!(
        !all.clone().any(|l| l.contains('\u{1b}')),
        "no colour codes in a log that is not a terminal: {log}"
    );
    for (id, tool, outcome, status) in [
        ("hour-1", Some("search"), "ok", 200),
        ("hour-2", Some("write"), "refused", 200),
        ("hour-3", None, "", 200),
        ("hour-4", None, "rejected", 400),
    ] {
        let mine: Vec<&String> = serving
            .iter()
            .filter(|l| l.contains(&format!("request_id={id} ")))
            .collect();
        assert_eq!(mine.len(), 1, "one line for {id}: {log}");
        let line = mine[0];
        assert!(line.contains(" INFO "), "{line}");
        assert!(line.contains("actor=\"agent:me\""), "{line}");
        assert!(line.contains(&format!("status={status} ")), "{line}");
        assert!(line.contains(" ms="), "{line}");
        match tool {
            Some(t) => assert!(
                line.contains("rpc=\"tools/call\"") && line.contains(&format!("tool=\"{t}\"")),
                "{line}"
            ),
            None => assert!(!line.contains("tool="), "{line}"),
        }
        if id == "hour-3" {
            assert!(line.contains("rpc=\"tools/list\""), "{line}");
        }
        if !outcome.is_empty() {
            assert!(line.contains(&format!("outcome=\"{outcome}\"")), "{line}");
        }
    }
    // Nothing else at INFO while serving: the four request lines, then the shutdown's two. The
    // scheduler's daily backup may run at start (none is recorded in a fresh data folder, and the
    // clock may be past 09:00 UTC); that line says what the schedule did and is the one exception.
    let info: Vec<&String> = serving
        .iter()
        .filter(|l| l.contains(" INFO ") && !l.ends_with("capsid::tick: the daily backup ran"))
        .collect();
    let requests = info.iter().filter(|l| l.contains("request{")).count();
    assert_eq!(requests, 4, "{info:#?}");
    let others: Vec<&&String> = info.iter().filter(|l| !l.contains("request{")).collect();
    assert_eq!(others.len(), 2, "{others:#?}");
    assert!(
        others[0].ends_with("shutting down: finishing requests in flight")
            && others[1].ends_with("capsid::serve: stopped"),
        "{others:#?}"
    );
}
