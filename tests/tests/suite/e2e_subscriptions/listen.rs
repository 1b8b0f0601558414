//! The 2026-07-28 era: `subscriptions/listen` (SEP-2575), one long-lived request whose stream
//! carries the notifications it asked for, with no handshake and no session. The server runs
//! as it does by default (stateless, JSON answers): a listen needs no `--mcp-sessions`.

use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use super::{
    Mode, WITHIN, Watch, Watcher, agents, heard_after, mirror_uri, post_job, python,
    streams_come_to,
};

async fn a_listen_stream_hears_a_jobs_transition_within_a_second(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, worker) = agents(s).await;
    let job = post_job(&worker, "alpha").await;
    let uri = mirror_uri(&job);
    let heard = heard_after(&python, Mode::Modern, &s.ops_url(), &watcher, &uri, async {
        let claimed = worker
            .ok(
                "jobs",
                json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
            )
            .await;
        assert_eq!(claimed["ok"], true, "claim: {claimed}");
    })
    .await;
    assert!(heard < WITHIN, "heard of the claim {heard:?} after it");
    // The client left: so did its stream.
    streams_come_to(s, 0).await;
}

/// One stream asks for a checkmark and the tool list: the acknowledgment says both, the next
/// checkpoint comes as an update of the checkmark, tagged for the stream, and the owner
/// granting the watcher `write` comes as a tool-list change.
async fn a_listen_stream_hears_a_checkpoint_then_its_tools_changing(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, worker) = agents(s).await;
    let at = |status: &str| json!({"namespace": "alpha", "status": status});
    worker.ok("checkpoint", at("working")).await;
    let uri = "capsid://alpha/agents/worker/checkmark";
    let mut stream = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &watcher,
        &Watch {
            uris: &[uri],
            tools: true,
            events: 2,
        },
    )
    .await;
    let watching = stream.watching().await;
    assert_eq!(watching["protocol"], "2026-07-28", "{watching}");
    assert_eq!(
        watching["honored"],
        json!({"toolsListChanged": true, "resourceSubscriptions": [uri]}),
        "the acknowledgment names what was asked: {watching}"
    );
    let mut asks = at("paused_for_input");
    asks["question"] = json!("Which region?");
    worker.ok("checkpoint", asks).await;
    let updated = stream.next().await;
    assert_eq!(updated, json!({"event": "updated", "uri": uri}));
    let granted = s
        .admin(
            "agents",
            json!({"action": "update_scopes", "name": "watcher", "grants": ["read", "write"]}),
        )
        .await;
    assert_eq!(granted["ok"], true, "{granted}");
    let changed = stream.next().await;
    assert_eq!(changed, json!({"event": "tools_changed"}));
    assert_eq!(stream.exit_code().await, Some(0));
}

/// What the caller may not read is refused before any acknowledgment, as the read is (the
/// refusal names the namespace), a document that does not exist is refused as not found, and
/// nothing is left watching.
async fn a_listen_stream_outside_the_callers_scope_is_refused(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, worker) = agents(s).await;
    let job = post_job(&worker, "beta").await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "notes/a.md", "title": "a", "body": "a"}),
    )
    .await;
    let mirror = mirror_uri(&job);
    for uris in [
        // One the caller may read beside one it may not: the whole stream is refused.
        vec!["capsid://alpha/notes/a.md", mirror.as_str()],
        vec!["capsid://beta/agents/worker/checkmark"],
    ] {
        let mut stream = Watcher::start(
            &python,
            Mode::Modern,
            &s.ops_url(),
            &watcher,
            &Watch::resources(&uris, 1),
        )
        .await;
        let refused = stream.next().await;
        assert_eq!(refused["event"], "refused", "{uris:?}: {refused}");
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("beta"),
            "{uris:?}: the refusal names the namespace: {error}"
        );
        assert_eq!(stream.exit_code().await, Some(1), "{uris:?}");
    }
    let missing = "capsid://alpha/notes/none.md";
    let mut stream = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &watcher,
        &Watch::resources(&[missing], 1),
    )
    .await;
    let refused = stream.next().await;
    assert_eq!(refused["event"], "refused", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("not found")),
        "{refused}"
    );
    assert_eq!(stream.exit_code().await, Some(1));
    assert_eq!(*s.subscriptions.streams().borrow(), 0);
    assert_eq!(s.subscriptions.watched(), 0);
}

/// A stream whose caller is narrowed out of what it watches ends with an error saying so, and
/// one whose key is revoked ends saying its credential no longer resolves.
async fn a_narrowed_or_revoked_key_loses_its_listen_stream(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, _worker) = agents(s).await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "notes/a.md", "title": "a", "body": "a"}),
    )
    .await;
    let uri = "capsid://alpha/notes/a.md";
    let mut stream = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &watcher,
        &Watch::resources(&[uri], 0),
    )
    .await;
    stream.watching().await;
    let narrowed = s
        .admin(
            "agents",
            json!({"action": "update_scopes", "name": "watcher", "namespaces": ["beta"]}),
        )
        .await;
    assert_eq!(narrowed["ok"], true, "{narrowed}");
    let lost = stream.next().await;
    assert_eq!(lost["event"], "lost", "{lost}");
    let error = lost["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("agent:watcher may no longer read") && error.contains(uri),
        "{error}"
    );
    assert_eq!(stream.exit_code().await, Some(3));
    streams_come_to(s, 0).await;

    let other = s
        .mint(
            "other-watcher",
            "session",
            json!({"namespaces": ["alpha"], "grants": ["read"]}),
        )
        .await;
    let mut stream = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &other,
        &Watch {
            uris: &[uri],
            tools: true,
            events: 0,
        },
    )
    .await;
    stream.watching().await;
    let revoked = s
        .admin(
            "agents",
            json!({"action": "revoke", "name": "other-watcher"}),
        )
        .await;
    assert_eq!(revoked["ok"], true, "{revoked}");
    let lost = stream.next().await;
    assert_eq!(lost["event"], "lost", "{lost}");
    let error = lost["error"].as_str().unwrap_or_default();
    assert!(error.contains("no longer resolves"), "{error}");
    assert_eq!(stream.exit_code().await, Some(3));
    streams_come_to(s, 0).await;
}

/// The server shutting down closes a stream gracefully (the final result, not a drop), and
/// admits no new one.
async fn a_listen_stream_closes_gracefully_when_the_server_shuts_down(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, _worker) = agents(s).await;
    let mut stream = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &watcher,
        &Watch {
            uris: &[],
            tools: true,
            events: 0,
        },
    )
    .await;
    stream.watching().await;
    streams_come_to(s, 1).await;
    s.subscriptions.close();
    assert_eq!(stream.next().await, json!({"event": "closed"}));
    assert_eq!(stream.exit_code().await, Some(4));
    let mut late = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &watcher,
        &Watch {
            uris: &[],
            tools: true,
            events: 0,
        },
    )
    .await;
    let refused = late.next().await;
    assert_eq!(refused["event"], "refused", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("shutting down")),
        "{refused}"
    );
}

/// One key holds at most `MAX_STREAMS_PER_CALLER` streams at once, each refused past it before
/// any acknowledgment, on the wire as a plain JSON-RPC error; one closed makes room again.
/// Raw HTTP here, so the wire is what is read: the SDK is the other cases' client.
async fn one_key_holds_a_bounded_number_of_listen_streams(s: &TestServer) {
    use capsid_http::MAX_STREAMS_PER_CALLER;
    let (watcher, _worker) = agents(s).await;
    let http = reqwest::Client::new();
    let listen = |id: usize| {
        http.post(s.ops_url())
            .bearer_auth(&watcher)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .json(&json!({
                "jsonrpc": "2.0",
                "id": format!("raw-{id}"),
                "method": "subscriptions/listen",
                "params": {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                    "notifications": {"toolsListChanged": true},
                },
            }))
            .send()
    };
    let mut open = Vec::new();
    for id in 0..MAX_STREAMS_PER_CALLER {
        let mut resp = listen(id).await.expect("listen");
        assert_eq!(resp.status(), 200);
        let kind = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        // The first event on the stream is the acknowledgment, tagged with the request's id.
        let mut seen = String::new();
        while !seen.contains("notifications/subscriptions/acknowledged") {
            let chunk = tokio::time::timeout(super::NEVER, resp.chunk())
                .await
                .expect("the acknowledgment came")
                .expect("the stream reads")
                .expect("the stream is open");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(seen.contains(&format!("\"raw-{id}\"")), "{seen}");
        open.push(resp);
    }
    let refused = listen(MAX_STREAMS_PER_CALLER).await.expect("listen");
    assert_eq!(refused.status(), 200);
    let body: Value = refused.json().await.expect("a JSON-RPC error");
    assert_eq!(
        body["id"],
        format!("raw-{MAX_STREAMS_PER_CALLER}"),
        "{body}"
    );
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let said = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("agent:watcher")
            && said.contains(&format!(
                "{MAX_STREAMS_PER_CALLER} subscriptions/listen streams"
            )),
        "{said}"
    );
    drop(open.pop());
    streams_come_to(s, MAX_STREAMS_PER_CALLER - 1).await;
    let again = listen(MAX_STREAMS_PER_CALLER + 1).await.expect("listen");
    let kind = again
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(kind.starts_with("text/event-stream"), "room again: {kind}");
    drop((open, again));
}

e2e_cases!(capsid_tests::server::ServerOptions::default();
    a_listen_stream_hears_a_jobs_transition_within_a_second,
    a_listen_stream_hears_a_checkpoint_then_its_tools_changing,
    a_listen_stream_outside_the_callers_scope_is_refused,
    a_narrowed_or_revoked_key_loses_its_listen_stream,
    a_listen_stream_closes_gracefully_when_the_server_shuts_down,
    one_key_holds_a_bounded_number_of_listen_streams,
);
