//! Long calls a client can follow and stop, in session mode (answers are SSE streams, so a
//! notification reaches the client before the answer): `search_code` over a large tree, as
//! a plain HTTP client sees it on the wire, reports increasing progress up to the total;
//! `lint` gather, called by a real MCP client (rmcp sends a `progressToken` with every
//! request), reports its stages; a `search_code` the client cancels stops reading files at
//! its next one (the fake GitHub holds a read mid-scan, so no timing is involved).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::{Client, TestServer};
use capsid_tests::wire::{next_event, open_session, post};
use rmcp::model::ProgressNotificationParam;
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

capsid_tests::github_cases!(
    sessions:
    search_code_reports_progress_up_to_its_total,
    a_cancelled_search_code_stops_reading,
    lint_gather_reports_its_stages,
);

/// Files in the large tree: at `search_code`'s 200-file cap.
const FILES: usize = 200;

/// One progress notification: how far, of what total, and the message.
type Note = (f64, Option<f64>, Option<String>);

/// The progress notifications a client heard, in order.
#[derive(Clone, Default)]
struct Heard {
    progress: Arc<Mutex<Vec<Note>>>,
    complete: Arc<tokio::sync::Notify>,
}

impl Heard {
    fn progress(&self) -> Vec<Note> {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits (at most a minute, as a guard against a hang) for the notification whose
    /// progress reaches its total.
    async fn until_complete(&self) {
        tokio::time::timeout(Duration::from_secs(60), async {
            while !self
                .progress()
                .iter()
                .any(|(done, total, _)| Some(*done) == *total)
            {
                self.complete.notified().await;
            }
        })
        .await
        .expect("the progress reached its total");
    }
}

impl ClientHandler for Heard {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((params.progress, params.total, params.message));
        self.complete.notify_one();
        std::future::ready(())
    }
}

async fn large_tree(s: &TestServer, g: &FakeGitHub) -> String {
    let bodies: Vec<(String, String)> = (0..FILES)
        .map(|i| {
            (
                format!("src/m{i:03}.rs"),
                format!("// module {i}\npub fn f{i}() -> u32 {{ {i} }}\n"),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = bodies
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_str()))
        .collect();
    g.add_repo("octo/alpha", &files);
    s.namespace("alpha").await;
    s.mint(
        "reader",
        "driver",
        json!({"namespaces": ["alpha"], "grants": ["read"]}),
    )
    .await
}

/// On the wire, in order: every notification of the call's stream before its answer, each
/// further than the last, up to the total.
async fn search_code_reports_progress_up_to_its_total(s: &TestServer, g: &FakeGitHub) {
    let key = large_tree(s, g).await;
    let session = open_session(s, &key).await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "search_code", "_meta": {"progressToken": 41},
                                 "arguments": {"namespace": "alpha", "query": "pub fn f199(",
                                               "max_files": FILES}}});
    let mut stream = post(s, &key, Some(&session), call).await;
    let mut buffer = String::new();
    let mut progress = Vec::new();
    let answer = loop {
        let event = next_event(&mut stream, &mut buffer)
            .await
            .expect("the stream carries the answer");
        if event["id"] == 3 {
            break event;
        }
        assert_eq!(event["method"], "notifications/progress", "{event}");
        let params = &event["params"];
        assert_eq!(params["progressToken"], 41, "{event}");
        assert_eq!(params["total"], FILES as f64, "{event}");
        assert!(
            params["message"]
                .as_str()
                .is_some_and(|m| m.contains("files of octo/alpha")),
            "{event}"
        );
        progress.push(params["progress"].as_f64().expect("a number"));
    };
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let out: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{answer}"));
    assert_eq!(out["files_scanned"], FILES, "{out}");
    assert_eq!(out["total_results"], 1, "{out}");
    assert!(progress.len() >= 10, "{progress:?}");
    assert_eq!(progress.first(), Some(&0.0), "{progress:?}");
    assert_eq!(progress.last(), Some(&(FILES as f64)), "{progress:?}");
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
}

/// As a client speaking plain HTTP would: the scan is caught mid-way (the fake GitHub holds
/// its fourth read), the client posts `notifications/cancelled`, the call's stream ends
/// unanswered, and the handler stops at the next file of the 200.
async fn a_cancelled_search_code_stops_reading(s: &TestServer, g: &FakeGitHub) {
    let key = large_tree(s, g).await;
    let session = open_session(s, &key).await;
    let blobs_before = g.count("GET", "/git/blobs/");
    g.hold_blobs_after(3);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "search_code", "_meta": {"progressToken": "scan-1"},
                                 "arguments": {"namespace": "alpha", "query": "no such text",
                                               "max_files": FILES}}});
    let mut stream = post(s, &key, Some(&session), call).await;
    assert_eq!(stream.status(), 200);
    tokio::time::timeout(Duration::from_secs(60), g.blob_held())
        .await
        .expect("the scan reached the held read");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "the user moved on"}});
    assert_eq!(post(s, &key, Some(&session), cancel).await.status(), 202);
    // The call's stream ends: a cancelled request is not answered (the MCP rule), and the
    // held read was not let through yet, so the handler cannot have answered first.
    let mut buffer = String::new();
    let mut progress = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = next_event(&mut stream, &mut buffer).await {
            assert_eq!(event["method"], "notifications/progress", "{event}");
            assert_eq!(event["params"]["progressToken"], "scan-1", "{event}");
            progress.push(event["params"]["progress"].as_f64().expect("a number"));
        }
    })
    .await
    .expect("the stream of the cancelled call ends");
    assert!(
        !progress.is_empty() && progress.windows(2).all(|w| w[0] < w[1]),
        "{progress:?}"
    );
    // The held read goes through; the handler sees the cancellation at its next file and
    // ends as cancelled (a scan that ignored it would read all 200 and end as ok).
    g.open_blobs();
    tokio::time::timeout(Duration::from_secs(60), async {
        while s.metrics.tool_call_count("search_code", "cancelled") == 0 {
            assert_eq!(
                s.metrics.tool_call_count("search_code", "ok"),
                0,
                "the scan ran to its end"
            );
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the call ends as cancelled");
    let read = g.count("GET", "/git/blobs/") - blobs_before;
    assert!(
        (4..=6).contains(&read),
        "{read} of {FILES} files were read for a scan cancelled at the fourth"
    );
    // Nothing half-way: the session still answers, and the next scan runs whole.
    let again = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                       "params": {"name": "search_code",
                                  "arguments": {"namespace": "alpha", "query": "module 7\n",
                                                "max_files": FILES}}});
    let mut stream = post(s, &key, Some(&session), again).await;
    let mut buffer = String::new();
    let whole = loop {
        let event = next_event(&mut stream, &mut buffer)
            .await
            .expect("the stream carries the answer");
        if event["id"] == 8 {
            break event;
        }
    };
    let text = whole["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let out: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{whole}"));
    assert_eq!(out["files_scanned"], FILES, "{out}");
}

async fn lint_gather_reports_its_stages(s: &TestServer, g: &FakeGitHub) {
    let key = large_tree(s, g).await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "notes/a.md", "title": "A", "body": "see [[b]]"}),
    )
    .await;
    let heard = Heard::default();
    let client = Client::connect(&s.ops_url(), &key, heard.clone()).await;
    let packet = client
        .ok("lint", json!({"namespace": "alpha", "mode": "gather"}))
        .await;
    assert_eq!(packet["namespace"], "alpha", "{packet}");
    heard.until_complete().await;
    // The client runs its handlers concurrently: the order heard is not the wire's (the
    // search test reads the wire itself).
    let mut stages: Vec<f64> = heard.progress().iter().map(|p| p.0).collect();
    stages.sort_by(f64::total_cmp);
    assert_eq!(stages, [0.0, 1.0, 2.0], "{:?}", heard.progress());
    assert!(heard.progress().iter().all(|p| p.1 == Some(2.0)));
}
