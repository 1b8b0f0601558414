//! The real binary, watched with the official MCP Python SDK in both its modes (issue 53, item
//! 22), on SQLite and on Postgres: `capsid serve --mcp-sessions` tells a 2026-07-28 client
//! (`subscriptions/listen`, no handshake) and a handshake client (`resources/subscribe` on a
//! session) of a document written by another client, and a SIGTERM closes an open listen
//! stream gracefully and lets the server stop.
//!
//! The watcher is `tests/py/watch.py` of the `capsid-tests` crate, run with the Python named by
//! `CAPSID_TEST_PYTHON`; without it the cases say they did not run, and fail under `CI=true`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use capsid_tests::server::Client;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_capsid");

/// What no line that must come waits longer than.
const NEVER: Duration = Duration::from_secs(60);

fn python() -> Option<String> {
    match std::env::var("CAPSID_TEST_PYTHON") {
        Ok(p) if !p.trim().is_empty() => Some(p),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CAPSID_TEST_PYTHON is not set and CI=true: the Python SDK cases must run")
        }
        _ => {
            eprintln!(
                "\n!!!!! PYTHON SDK CASE NOT RUN: set CAPSID_TEST_PYTHON to a Python with `mcp` \
                 installed (scripts/test.sh makes .tools/py). This is NOT a pass.\n"
            );
            None
        }
    }
}

/// A child process killed should the test fail before it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Each line a child writes to `out`, read on a thread of its own so that a wait is bounded.
fn lines_of(out: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// `capsid serve --mcp-sessions` over `database` (the data folder's SQLite file when `None`).
struct Server {
    child: Running,
    url: String,
    log: mpsc::Receiver<String>,
}

impl Server {
    fn env(cmd: &mut Command, dir: &std::path::Path, database: Option<&str>) {
        cmd.env("CAPSID_DATA_DIR", dir)
            .env_remove("CAPSID_SIGNING_SECRET")
            .env_remove("CAPSID_OPERATOR_KEY_HASH")
            .env_remove("CAPSID_LOG_FORMAT")
            .env("CAPSID_LOG", "info");
        match database {
            Some(url) => cmd.env("CAPSID_DATABASE_URL", url),
            None => cmd.env_remove("CAPSID_DATABASE_URL"),
        };
    }

    fn start(dir: &std::path::Path, database: Option<&str>) -> Server {
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--mcp-sessions"]);
        Server::env(&mut cmd, dir, database);
        let mut child = Running(
            cmd.stderr(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn capsid serve"),
        );
        let log = lines_of(child.0.stderr.take().expect("stderr"));
        let mut seen = Vec::new();
        let url = loop {
            let line = log
                .recv_timeout(NEVER)
                .unwrap_or_else(|_| panic!("no banner in {seen:#?}"));
            if let Some(rest) = line.strip_prefix("capsid is serving MCP at ") {
                break rest.trim().to_owned();
            }
            seen.push(line);
        };
        Server { child, url, log }
    }

    /// `capsid <args>` on the same store: its stdout.
    fn cli(dir: &std::path::Path, database: Option<&str>, args: &[&str]) -> String {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        Server::env(&mut cmd, dir, database);
        let out = cmd.output().expect("run capsid");
        assert!(
            out.status.success(),
            "capsid {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// SIGTERM, then the exit within the bound, reading the log to its end meanwhile.
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.0.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(sent.success());
        let deadline = std::time::Instant::now() + NEVER;
        loop {
            if let Some(status) = self.child.0.try_wait().expect("its status") {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "capsid serve did not stop within {NEVER:?} of SIGTERM"
            );
            // Drains the log (a full pipe would stall the server) while waiting on the exit.
            let _ = self.log.recv_timeout(Duration::from_millis(50));
        }
    }
}

/// A running `watch.py`.
struct Watcher {
    _child: Running,
    events: mpsc::Receiver<String>,
    child_id: u32,
}

impl Watcher {
    fn start(
        python: &str,
        mode: &str,
        url: &str,
        key: &str,
        events: usize,
        args: &[&str],
    ) -> Watcher {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/py/watch.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([
                mode,
                url,
                key,
                &events.to_string(),
                &NEVER.as_secs().to_string(),
            ])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the Python watcher");
        let events = lines_of(child.stdout.take().expect("stdout"));
        Watcher {
            child_id: child.id(),
            _child: Running(child),
            events,
        }
    }

    fn next(&self) -> Value {
        let line = self
            .events
            .recv_timeout(NEVER)
            .expect("the watcher said something in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn exit_code(mut self) -> Option<i32> {
        let deadline = std::time::Instant::now() + NEVER;
        loop {
            if let Some(status) = self._child.0.try_wait().expect("its status") {
                return status.code();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "watcher {} did not end",
                self.child_id
            );
            // Waits on its output (it ends with its stdout) rather than on the clock alone.
            let _ = self.events.recv_timeout(Duration::from_millis(50));
        }
    }
}

fn both_modes_are_told_and_a_sigterm_closes_the_stream(database: Option<&str>) {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("temporary folder");
    let server = Server::start(dir.path(), database);
    let minted: Value = serde_json::from_str(&Server::cli(
        dir.path(),
        database,
        &[
            "agents",
            "mint",
            "--name",
            "watcher",
            "--namespaces",
            "*",
            "--grants",
            "read,write",
            "--json",
        ],
    ))
    .expect("mint --json");
    let key = minted["key"].as_str().expect("a key").to_owned();
    Server::cli(
        dir.path(),
        database,
        &["namespaces", "register", "demo", "--repo", "you/demo"],
    );
    capsid_http::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let writer = runtime.block_on(Client::connect(&server.url, &key, ()));
    // `ok` fails the test on a refused write.
    let write = |body: &str| {
        runtime.block_on(writer.ok(
            "write",
            json!({"namespace": "demo", "path": "notes/a.md", "title": "A", "body": body, "confirm": true}),
        ))
    };
    write("first");
    let uri = "capsid://demo/notes/a.md";
    for (mode, protocol) in [("modern", "2026-07-28"), ("handshake", "2025-11-25")] {
        let watcher = Watcher::start(&python, mode, &server.url, &key, 1, &[uri]);
        let watching = watcher.next();
        assert_eq!(watching["event"], "watching", "{mode}: {watching}");
        assert_eq!(watching["protocol"], protocol, "{mode}: {watching}");
        write(&format!("changed while {mode} watched"));
        let updated = watcher.next();
        assert_eq!(
            updated,
            json!({"event": "updated", "uri": uri}),
            "{mode}: {updated}"
        );
        assert_eq!(watcher.exit_code(), Some(0), "{mode}");
    }
    // The writer's handshake session ends with its runtime, which runs its connections: an
    // open session's own stream holds `capsid serve`'s shutdown until its client leaves.
    drop(writer);
    drop(runtime);
    // An open stream at SIGTERM: closed gracefully, and the server still stops.
    let watcher = Watcher::start(&python, "modern", &server.url, &key, 0, &["--tools", uri]);
    let watching = watcher.next();
    assert_eq!(watching["event"], "watching", "{watching}");
    let status = server.terminate();
    assert!(
        status.success(),
        "a SIGTERM is a clean shutdown: {status:?}"
    );
    assert_eq!(watcher.next(), json!({"event": "closed"}));
    assert_eq!(watcher.exit_code(), Some(4));
}

#[test]
fn sqlite_both_modes_are_told_and_a_sigterm_closes_the_stream() {
    both_modes_are_told_and_a_sigterm_closes_the_stream(None);
}

#[test]
fn postgres_both_modes_are_told_and_a_sigterm_closes_the_stream() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let Some((database, url)) =
        runtime.block_on(capsid_tests::harness::fresh_database("cli_listen"))
    else {
        return;
    };
    both_modes_are_told_and_a_sigterm_closes_the_stream(Some(&url));
    runtime.block_on(database.remove());
}
