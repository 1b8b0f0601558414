//! The real `capsid serve` over a Postgres cluster of the test's own, stopped and started
//! again: while Postgres is down `/health` answers 503 naming the failing probe, and a tool
//! call and a Handler API call answer 503 with `Retry-After` and the real cause ("connection
//! refused at 127.0.0.1:<port>"), each in under 2 s; once Postgres is back, calls succeed
//! without a restart. With Postgres down at start, `serve` names the cause and exits
//! (`--store-wait-secs 0`) or waits and comes up once Postgres starts. Bad values of the new
//! flags are refused with exit 2 naming the flag.
//!
//! The elapsed-time bounds are the requirement itself (an outage answers within 2 s), not a
//! stand-in for time in logic.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use capsid_tests::pg_cluster::PgCluster;
use serde_json::{Value, json};

/// The requirement: an outage is answered within this.
const OUTAGE_ANSWER: Duration = Duration::from_secs(2);

fn capsid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_capsid"))
}

/// The cluster's port, from its URL.
fn port_of(url: &str) -> u16 {
    url.rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("a port in the cluster URL")
}

/// A `capsid serve` child whose JSON log lines arrive on a channel.
struct Serve {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Serve {
    fn spawn(database: &str, data: &std::path::Path, extra: &[&str]) -> Serve {
        let mut child = capsid()
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .env("CAPSID_DATABASE_URL", database)
            .env("CAPSID_DATA_DIR", data)
            .env("CAPSID_LOG", "info")
            .env("CAPSID_LOG_FORMAT", "json")
            .env_remove("CAPSID_OPERATOR_KEY_HASH")
            .env_remove("CAPSID_STORE_WAIT_SECS")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn capsid serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel::<String>();
        // Drain the log for the process's whole life, so a full pipe never stalls it.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Serve {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first log line (JSON) `pick` accepts, waiting at most a minute for it.
    fn wait_for(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + Duration::from_secs(60);
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            let Ok(line) = self.lines.recv_timeout(left) else {
                break;
            };
            self.seen.push(line.clone());
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && pick(&v)
            {
                return v;
            }
        }
        panic!(
            "capsid serve never logged {what}; it logged:\n{}",
            self.seen.join("\n")
        );
    }

    /// The URL of the `capsid listening` line.
    fn url(&mut self) -> String {
        let line = self.wait_for("capsid listening", |v| {
            v["fields"]["message"] == "capsid listening"
        });
        line["fields"]["url"].as_str().expect("url").to_owned()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a CLI command against `database` and returns its JSON output.
fn cli_json(database: &str, data: &std::path::Path, args: &[&str]) -> Value {
    let out = capsid()
        .args(args)
        .env("CAPSID_DATABASE_URL", database)
        .env("CAPSID_DATA_DIR", data)
        .output()
        .expect("run capsid");
    assert!(
        out.status.success(),
        "capsid {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// An answer: status, lower-cased headers, body, and how long it took.
struct Answer {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
    took: Duration,
}

async fn send(req: reqwest::RequestBuilder) -> Answer {
    let started = Instant::now();
    let resp = req.send().await.expect("the server answers");
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = resp.text().await.unwrap_or_default();
    Answer {
        status,
        headers,
        body,
        took: started.elapsed(),
    }
}

async fn health(url: &str) -> Answer {
    send(reqwest::Client::new().get(format!("{url}/health"))).await
}

async fn write(url: &str, key: &str, path: &str) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write", "arguments":
            {"namespace": "alpha", "path": path, "title": "t", "body": "kept\n"}}});
    send(
        reqwest::Client::new()
            .post(format!("{url}/ops/mcp"))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string()),
    )
    .await
}

async fn projects(url: &str, key: &str) -> Answer {
    send(
        reqwest::Client::new()
            .get(format!("{url}/api/projects"))
            .bearer_auth(key),
    )
    .await
}

/// A tool call's answer was a successful write.
fn written(answer: &Answer) -> bool {
    answer.status == 200
        && serde_json::from_str::<Value>(&answer.body)
            .is_ok_and(|v| v["result"].is_object() && v["result"]["isError"] != json!(true))
}

fn assert_outage_answer(what: &str, answer: &Answer, cause: &str) {
    eprintln!(
        "{what} during the outage: {} in {:?}",
        answer.status, answer.took
    );
    assert_eq!(answer.status, 503, "{what}: {}", answer.body);
    assert!(
        answer.took < OUTAGE_ANSWER,
        "{what} took {:?}, over {OUTAGE_ANSWER:?}",
        answer.took
    );
    assert!(
        answer.headers.contains_key("retry-after"),
        "{what}: {:?}",
        answer.headers
    );
    assert!(answer.body.contains(cause), "{what}: {}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_outage_is_answered_fast_with_its_cause_and_calls_recover_without_a_restart() {
    capsid_http::install_tls_provider();
    let Some(cluster) = PgCluster::start("store_outage_under_a_running_server") else {
        return;
    };
    let database = cluster.url();
    let cause = format!("connection refused at 127.0.0.1:{}", port_of(&database));
    let data = tempfile::tempdir().expect("data folder");
    cli_json(&database, data.path(), &["migrate", "--json"]);
    cli_json(
        &database,
        data.path(),
        &[
            "namespaces",
            "register",
            "alpha",
            "--repo",
            "octo/alpha",
            "--json",
        ],
    );
    let minted = cli_json(
        &database,
        data.path(),
        &[
            "agents",
            "mint",
            "--name",
            "writer",
            "--kind",
            "session",
            "--namespaces",
            "*",
            "--grants",
            "read,write",
            "--json",
        ],
    );
    let key = minted["key"].as_str().expect("a key").to_owned();
    let mut serve = Serve::spawn(&database, data.path(), &[]);
    let url = serve.url();
    assert_eq!(health(&url).await.status, 200);
    let before = write(&url, &key, "notes/before.md").await;
    assert!(written(&before), "{}", before.body);

    cluster.stop_server();
    let degraded = health(&url).await;
    assert_outage_answer("/health", &degraded, &cause);
    let report: Value = serde_json::from_str(&degraded.body).expect("JSON report");
    assert_eq!(report["status"], "degraded", "{report}");
    assert_eq!(report["failing"], json!(["db"]), "{report}");
    let call = write(&url, &key, "notes/during.md").await;
    assert_outage_answer("a tool call", &call, &cause);
    let api = projects(&url, &key).await;
    assert_outage_answer("GET /api/projects", &api, &cause);
    // A second call in the same outage is as fast (nothing waits on a stale cause).
    let again = write(&url, &key, "notes/during.md").await;
    assert_outage_answer("a second tool call", &again, &cause);

    cluster.start_server();
    let mut recovered = None;
    for _ in 0..100 {
        let answer = write(&url, &key, "notes/after.md").await;
        if written(&answer) {
            recovered = Some(answer);
            break;
        }
        assert_eq!(
            answer.status, 503,
            "only a 503 while reconnecting: {}",
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        recovered.is_some(),
        "calls never succeeded after Postgres returned"
    );
    assert_eq!(health(&url).await.status, 200);
    assert_eq!(projects(&url, &key).await.status, 200);
    assert!(
        serve.child.try_wait().expect("status").is_none(),
        "the same process served throughout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_postgres_down_names_the_cause_then_exits_or_waits_as_told() {
    capsid_http::install_tls_provider();
    let Some(cluster) = PgCluster::start("serve_with_postgres_down") else {
        return;
    };
    let port = port_of(&cluster.url());
    let cause = format!("connection refused at 127.0.0.1:{port}");
    // A password in the URL (trust authentication ignores it) must never be printed.
    let database = format!("postgres://postgres:pg-s3cret-word@127.0.0.1:{port}/postgres");
    let data = tempfile::tempdir().expect("data folder");
    cluster.stop_server();

    // Told not to wait: exits non-zero at once, with the cause.
    let out = capsid()
        .args(["serve", "--listen", "127.0.0.1:0", "--store-wait-secs", "0"])
        .env("CAPSID_DATABASE_URL", &database)
        .env("CAPSID_DATA_DIR", data.path())
        .env_remove("CAPSID_OPERATOR_KEY_HASH")
        .output()
        .expect("run capsid serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&cause), "{stderr}");
    assert!(stderr.contains("--store-wait-secs"), "{stderr}");
    assert!(!stderr.contains("pg-s3cret-word"), "{stderr}");

    // By default it waits, logging each attempt with the cause, and comes up once Postgres
    // starts.
    let mut serve = Serve::spawn(&database, data.path(), &[]);
    let attempt = serve.wait_for("a retried attempt", |v| {
        v["fields"]["message"] == "the Postgres store cannot be reached; retrying"
    });
    assert_eq!(attempt["fields"]["cause"], json!(cause), "{attempt}");
    assert_eq!(attempt["fields"]["attempt"], json!(1), "{attempt}");
    cluster.start_server();
    let url = serve.url();
    assert_eq!(health(&url).await.status, 200);
    let log = serve.seen.join("\n");
    assert!(!log.contains("pg-s3cret-word"), "{log}");
}

#[test]
fn bad_store_flags_are_refused_naming_the_flag() {
    let data = tempfile::tempdir().expect("data folder");
    for (args, env, flag) in [
        (
            vec!["--store-wait-secs", "forever"],
            None,
            "--store-wait-secs",
        ),
        (
            vec!["--store-acquire-timeout-ms", "soon"],
            None,
            "--store-acquire-timeout-ms",
        ),
        (
            vec!["--store-connect-timeout-ms", "0"],
            None,
            "--store-connect-timeout-ms",
        ),
        (
            vec![],
            Some(("CAPSID_STORE_PROBE_TIMEOUT_MS", "99999999")),
            "--store-probe-timeout-ms",
        ),
    ] {
        let mut cmd = capsid();
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .args(&args)
            .env("CAPSID_DATA_DIR", data.path());
        if let Some((name, value)) = env {
            cmd.env(name, value);
        }
        let out = cmd.output().expect("run capsid serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}
