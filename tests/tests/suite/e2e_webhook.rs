//! End to end: with `CAPSID_WEBHOOK_URL` set, a job that blocks or fails, and an agent that
//! asks a question or blocks, is POSTed to it as JSON; a webhook that is down changes nothing
//! for the job or the checkpoint.

use std::time::Duration;

use axum::routing::post;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;

async fn receiver() -> (String, mpsc::UnboundedReceiver<Value>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        post(move |axum::Json(body): axum::Json<Value>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, rx)
}

/// A migrated SQLite store in a fresh folder (kept alive by the returned guard).
async fn sqlite_store() -> (tempfile::TempDir, capsid_store_sqlite::SqliteStore) {
    let dir = tempfile::tempdir().expect("dir");
    let store = capsid_store_sqlite::SqliteStore::open(&format!(
        "sqlite://{}",
        dir.path().join("w.db").display()
    ))
    .await
    .expect("open");
    store.migrate().await.expect("migrate");
    (dir, store)
}

async fn run_blocking_job(s: &TestServer) -> Value {
    s.namespace("alpha").await;
    let key = s
        .mint(
            "d",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let c = s.client(&key).await;
    let job = c
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Gate", "body": "b"}),
        )
        .await;
    c.ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    c.ok("jobs", json!({"action": "block", "id": job["job"]["id"], "namespace": "alpha", "reason": "needs a push", "command": "git push origin x"})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_job_is_posted_to_the_webhook() {
    let (_dir, store) = sqlite_store().await;
    let (url, mut rx) = receiver().await;
    let s = TestServer::start(
        std::sync::Arc::new(store),
        ServerOptions {
            webhook: Some(url),
            ..ServerOptions::default()
        },
    )
    .await;
    let blocked = run_blocking_job(&s).await;
    assert_eq!(blocked["job"]["status"], "blocked");
    // Waits for the delivery itself (bounded), not for time to pass.
    let got = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("delivered")
        .expect("a body");
    assert_eq!(got["event"], "job-blocked");
    assert_eq!(got["namespace"], "alpha");
    assert_eq!(got["command"], "git push origin x");
    assert_eq!(got["job_id"], blocked["job"]["id"]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_webhook_never_affects_the_job() {
    let (_dir, store) = sqlite_store().await;
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", closed.local_addr().expect("addr"));
    drop(closed);
    let s = TestServer::start(
        std::sync::Arc::new(store),
        ServerOptions {
            webhook: Some(url),
            ..ServerOptions::default()
        },
    )
    .await;
    let blocked = run_blocking_job(&s).await;
    assert_eq!(blocked["ok"], true);
    assert_eq!(blocked["job"]["status"], "blocked");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_asks_or_blocks_is_posted_to_the_webhook_with_a_console_link() {
    let (_dir, store) = sqlite_store().await;
    let (url, mut rx) = receiver().await;
    let s = TestServer::start(
        std::sync::Arc::new(store),
        ServerOptions {
            webhook: Some(url),
            ..ServerOptions::default()
        },
    )
    .await;
    s.namespace("alpha").await;
    let key = s
        .mint(
            "d1",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let c = s.client(&key).await;
    // Working: nothing to tell anyone.
    c.ok(
        "checkpoint",
        json!({"namespace": "alpha", "status": "working"}),
    )
    .await;
    let asked = c
        .ok(
            "checkpoint",
            json!({"namespace": "alpha", "status": "paused_for_input", "question": "Which region?",
                   "where_it_stopped": "deploy config"}),
        )
        .await;
    let got = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("delivered")
        .expect("a body");
    assert_eq!(got["event"], "checkmark-paused_for_input", "{got}");
    assert_eq!(got["namespace"], "alpha");
    assert_eq!(got["agent"], "d1");
    assert_eq!(got["question"], "Which region?");
    assert_eq!(got["reason"], "deploy config");
    assert_eq!(
        got["link"],
        format!(
            "{}/console?log_namespace=alpha&log_agent=d1#checkmarks",
            s.url
        )
    );
    assert!(got.get("job_id").is_none(), "no job fields: {got}");
    assert_eq!(got["at"], asked["log_entry"]["created_at"]);
    c.ok(
        "checkpoint",
        json!({"namespace": "alpha", "status": "blocked", "question": "Run: gh auth login"}),
    )
    .await;
    let got = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("delivered")
        .expect("a body");
    assert_eq!(got["event"], "checkmark-blocked", "{got}");
    assert_eq!(got["question"], "Run: gh auth login");
    assert!(
        rx.try_recv().is_err(),
        "the working checkpoint sent nothing"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_webhook_never_affects_a_checkpoint() {
    let (_dir, store) = sqlite_store().await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", closed.local_addr().expect("addr"));
    drop(closed);
    let s = TestServer::start(
        std::sync::Arc::new(store),
        ServerOptions {
            webhook: Some(url),
            ..ServerOptions::default()
        },
    )
    .await;
    s.namespace("alpha").await;
    let key = s
        .mint(
            "d1",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let c = s.client(&key).await;
    let asked = c
        .ok(
            "checkpoint",
            json!({"namespace": "alpha", "status": "paused_for_input", "question": "Which region?"}),
        )
        .await;
    assert_eq!(asked["checkmark"]["status"], "paused_for_input");
    let read = c
        .ok(
            "checkmarks",
            json!({"action": "get", "namespace": "alpha", "agent": "d1"}),
        )
        .await;
    assert_eq!(read["checkmark"]["open_question"], "Which region?");
    s.stop().await;
}

/// Keeps every notification the service hands it, in order (the service awaits it inline).
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<capsid_core::ports::Notification>>);

#[async_trait::async_trait]
impl capsid_core::ports::Notifier for Recorder {
    async fn notify(&self, notification: capsid_core::ports::Notification) {
        self.0.lock().expect("lock").push(notification);
    }
}

/// A namespace's budget alerts fire once each: at 80% and at 100%, whatever the number of
/// jobs that cross or pass them, for done and failed jobs alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_tells_the_owner_once_at_80_and_once_at_100_percent() {
    let (_dir, store) = sqlite_store().await;
    let recorder = std::sync::Arc::new(Recorder::default());
    let hook: std::sync::Arc<dyn capsid_core::ports::Notifier> = recorder.clone();
    let s = TestServer::start_customized(
        std::sync::Arc::new(store),
        ServerOptions::default(),
        |_| None,
        move |service| service.with_notifier(hook),
    )
    .await;
    s.namespace("alpha").await;
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 10}),
    )
    .await;
    let key = s
        .mint(
            "d",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let c = s.client(&key).await;
    let budget_events = || {
        recorder
            .0
            .lock()
            .expect("lock")
            .iter()
            .filter(|n| n.event.starts_with("budget-"))
            .map(|n| (n.event.clone(), n.reason.clone()))
            .collect::<Vec<_>>()
    };
    // 5 (50%), 8.5 (85%: crosses 80), 9.5 (no new share), 11.5 (crosses 100, a failed job).
    for (n, (cost, action), seen) in [
        (1, (5.0, "complete"), 0),
        (2, (3.5, "complete"), 1),
        (3, (1.0, "complete"), 1),
        (4, (2.0, "fail"), 2),
    ] {
        let job = c
            .ok(
                "jobs",
                json!({"action": "post", "namespace": "alpha", "title": format!("Job {n}"), "body": "b"}),
            )
            .await;
        let claimed = c
            .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
            .await;
        assert_eq!(claimed["ok"], true, "{claimed}");
        let finished = c
            .ok(
                "jobs",
                json!({"action": action, "id": job["job"]["id"], "namespace": "alpha",
                       "result_summary": "x", "reason": "red tests", "evidence": {"cost_usd": cost}}),
            )
            .await;
        assert_eq!(finished["ok"], true, "{finished}");
        assert_eq!(
            budget_events().len(),
            seen,
            "after job {n}: {:?}",
            budget_events()
        );
    }
    let events = budget_events();
    assert_eq!(events[0].0, "budget-80");
    assert!(
        events[0].1.contains("$8.50") && events[0].1.contains("$10.00"),
        "{events:?}"
    );
    assert_eq!(events[1].0, "budget-100");
    assert!(events[1].1.contains("$11.50"), "{events:?}");
    // Spent: the next claim is refused and no alert repeats.
    c.ok(
        "jobs",
        json!({"action": "post", "namespace": "alpha", "title": "Over", "body": "b"}),
    )
    .await;
    let refused = c
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(budget_events().len(), 2);
    s.stop().await;
}

/// Issue 53, item 22: every tool hint is true. A tool whose call reaches the owner's webhook
/// says so on `tools/list` (`openWorldHint: true`): the flows that post (an agent asking and
/// blocking, a job blocking, a job's cost crossing its namespace's budget) and some that do
/// not are called one at a time, each call's posts counted by a notifier the service awaits
/// inline, and the tools that posted are read back from the wire. Every hint the wire shows
/// is the registry's, so the registry's unit test of the table holds for what clients read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_that_posts_to_the_webhook_says_open_world_on_tools_list() {
    let (_dir, store) = sqlite_store().await;
    let recorder = std::sync::Arc::new(Recorder::default());
    let hook: std::sync::Arc<dyn capsid_core::ports::Notifier> = recorder.clone();
    let s = TestServer::start_customized(
        std::sync::Arc::new(store),
        ServerOptions::default(),
        |_| None,
        move |service| service.with_notifier(hook),
    )
    .await;
    s.namespace("alpha").await;
    s.admin(
        "update_namespace",
        json!({"namespace": "alpha", "monthly_budget_usd": 10}),
    )
    .await;
    let axes = json!({"namespaces": ["alpha"], "grants": ["read", "write"]});
    let driver_key = s.mint("d", "driver", axes.clone()).await;
    let driver = s.client(&driver_key).await;
    let person = s.client(&s.mint("p", "session", axes).await).await;
    let posts = || recorder.0.lock().expect("lock").len();
    let mut posted = std::collections::BTreeSet::new();
    let mut quiet = std::collections::BTreeSet::new();
    let job = driver
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Gate", "body": "b"}),
        )
        .await;
    let id = job["job"]["id"].clone();
    let calls: Vec<(&capsid_tests::server::Client, &str, serde_json::Value)> = vec![
        (
            &driver,
            "write",
            json!({"namespace": "alpha", "path": "notes/a.md", "title": "A", "body": "a"}),
        ),
        (
            &driver,
            "search",
            json!({"namespace": "alpha", "query": "a"}),
        ),
        (
            &driver,
            "checkpoint",
            json!({"namespace": "alpha", "status": "working"}),
        ),
        (
            &driver,
            "checkpoint",
            json!({"namespace": "alpha", "status": "paused_for_input", "question": "Which region?"}),
        ),
        (
            &person,
            "checkmarks",
            json!({"action": "answer", "namespace": "alpha", "agent": "d", "answer": "eu-west"}),
        ),
        (
            &driver,
            "checkpoint",
            json!({"namespace": "alpha", "status": "blocked", "question": "Run: gh auth login"}),
        ),
        (
            &driver,
            "jobs",
            json!({"action": "claim", "namespace": "alpha"}),
        ),
        (
            &driver,
            "jobs",
            json!({"action": "block", "id": id, "namespace": "alpha", "reason": "needs a push", "command": "git push origin x"}),
        ),
    ];
    for (client, tool, args) in calls {
        let before = posts();
        client.ok(tool, args.clone()).await;
        if posts() > before {
            posted.insert(tool);
        } else {
            quiet.insert(tool);
        }
    }
    // A job whose cost crosses 80% of the namespace's budget.
    let job = driver
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Costly", "body": "b"}),
        )
        .await;
    driver
        .ok(
            "jobs",
            json!({"action": "claim", "id": job["job"]["id"], "namespace": "alpha"}),
        )
        .await;
    let before = posts();
    let done = driver
        .ok(
            "jobs",
            json!({"action": "complete", "id": job["job"]["id"], "namespace": "alpha",
                   "result_summary": "x", "evidence": {"cost_usd": 9.0}}),
        )
        .await;
    assert_eq!(done["ok"], true, "{done}");
    assert!(posts() > before, "the budget alert was posted");
    assert_eq!(
        posted.iter().copied().collect::<Vec<_>>(),
        ["checkpoint", "jobs"],
        "the flows meant to post did, and only through these tools"
    );
    for tool in ["write", "search", "checkmarks"] {
        assert!(quiet.contains(tool), "{tool} posted nothing");
    }
    let listed = driver.inner.list_all_tools().await.expect("tools/list");
    let hint = |name: &str| {
        listed
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
            .annotations
            .as_ref()
            .and_then(|a| a.open_world_hint)
    };
    for tool in &posted {
        assert_eq!(hint(tool), Some(true), "{tool} posts to the webhook");
    }
    // What the wire says of every listed tool is the registry's.
    let caller = s
        .service
        .resolve_bearer(Some(&format!("Bearer {driver_key}")))
        .await
        .expect("resolves")
        .caller()
        .cloned()
        .expect("a caller");
    let registry = s.service.tools_for(&caller);
    assert_eq!(listed.len(), registry.len());
    for listing in registry {
        let tool = listed
            .iter()
            .find(|t| t.name == listing.spec.name)
            .unwrap_or_else(|| panic!("{} is listed", listing.spec.name));
        let a = tool.annotations.as_ref().expect("annotations");
        let want = listing.annotations;
        assert_eq!(
            (
                a.read_only_hint,
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint
            ),
            (
                Some(want.read_only),
                Some(want.destructive),
                Some(want.idempotent),
                Some(want.open_world)
            ),
            "{}",
            listing.spec.name
        );
    }
    s.stop().await;
}
