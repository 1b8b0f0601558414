//! The handshake era (`initialize`, a session, `resources/subscribe`), as clients of
//! 2025-11-25 and before watch, on a server with `--mcp-sessions`: the path older clients keep.

use capsid_tests::e2e_cases;
use capsid_tests::server::{Client, ServerOptions, TestServer};
use serde_json::{Value, json};

use super::{
    Mode, NEVER, WITHIN, Watch, Watcher, agents, heard_after, mirror_uri, post_job, python,
};

fn sessions() -> ServerOptions {
    ServerOptions {
        sessions: true,
        ..ServerOptions::default()
    }
}

async fn a_job_subscriber_hears_its_transition_within_a_second(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, worker) = agents(s).await;
    let job = post_job(&worker, "alpha").await;
    let uri = mirror_uri(&job);
    let heard = heard_after(
        &python,
        Mode::Handshake,
        &s.ops_url(),
        &watcher,
        &uri,
        async {
            let claimed = worker
                .ok(
                    "jobs",
                    json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
                )
                .await;
            assert_eq!(claimed["ok"], true, "claim: {claimed}");
        },
    )
    .await;
    assert!(heard < WITHIN, "heard of the claim {heard:?} after it");
}

async fn a_checkmark_subscriber_hears_the_next_checkpoint(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, worker) = agents(s).await;
    let at = |status: &str| json!({"namespace": "alpha", "status": status});
    worker.ok("checkpoint", at("working")).await;
    let uri = "capsid://alpha/agents/worker/checkmark";
    let reader = s.client(&watcher).await;
    let templates = reader
        .inner
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    let checkmark = templates
        .iter()
        .find(|t| t.uri_template == "capsid://{namespace}/agents/{agent}/checkmark")
        .unwrap_or_else(|| panic!("the checkmark template is listed: {templates:?}"));
    assert_eq!(checkmark.mime_type.as_deref(), Some("application/json"));
    // The resource reads as `checkmarks get` answers.
    let read = reader
        .inner
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
        .await
        .expect("the watcher reads the checkmark");
    let text = match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("text expected: {other:?}"),
    };
    let body: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(body["checkmark"]["status"], "working", "{body}");
    // The agent pauses with a question: what a person watching the checkmark waits for.
    let heard = heard_after(
        &python,
        Mode::Handshake,
        &s.ops_url(),
        &watcher,
        uri,
        async {
            let mut asks = at("paused_for_input");
            asks["question"] = json!("Which region?");
            worker.ok("checkpoint", asks).await;
        },
    )
    .await;
    assert!(heard < WITHIN, "heard of the checkpoint {heard:?} after it");
}

async fn a_subscription_outside_the_callers_scope_is_refused(s: &TestServer) {
    let Some(python) = python() else { return };
    let (watcher, worker) = agents(s).await;
    let job = post_job(&worker, "beta").await;
    // The watcher may not read beta: refused as the read is, with nothing subscribed.
    for uri in [
        mirror_uri(&job),
        "capsid://beta/agents/worker/checkmark".to_owned(),
    ] {
        let mut sub = Watcher::start(
            &python,
            Mode::Handshake,
            &s.ops_url(),
            &watcher,
            &Watch::resources(&[uri.as_str()], 1),
        )
        .await;
        let refused = sub.next().await;
        assert_eq!(refused["event"], "refused", "{uri}: {refused}");
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("beta"),
            "{uri}: the refusal names the namespace: {error}"
        );
        assert_eq!(sub.exit_code().await, Some(1), "{uri}");
    }
    // A document that does not exist is refused as not found.
    let missing = "capsid://alpha/notes/none.md";
    let mut sub = Watcher::start(
        &python,
        Mode::Handshake,
        &s.ops_url(),
        &watcher,
        &Watch::resources(&[missing], 1),
    )
    .await;
    let refused = sub.next().await;
    assert_eq!(refused["event"], "refused", "{refused}");
    assert_eq!(sub.exit_code().await, Some(1));
}

/// Counts `notifications/tools/list_changed`.
#[derive(Clone)]
struct ToolsChanged(tokio::sync::mpsc::UnboundedSender<()>);

impl rmcp::ClientHandler for ToolsChanged {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        let _ = self.0.send(());
    }
}

async fn a_session_is_told_when_its_callers_tools_change(s: &TestServer) {
    let (watcher, _worker) = agents(s).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::connect(&s.ops_url(), &watcher, ToolsChanged(tx)).await;
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let before = names(client.inner.list_all_tools().await.expect("tools/list"));
    assert!(!before.contains(&"write".to_owned()), "{before:?}");
    // The owner grants the watcher write: its visible tools change mid-session.
    let updated = s
        .admin(
            "agents",
            json!({"action": "update_scopes", "name": "watcher", "grants": ["read", "write"]}),
        )
        .await;
    assert_eq!(updated["ok"], true, "{updated}");
    tokio::time::timeout(NEVER, rx.recv())
        .await
        .expect("notifications/tools/list_changed came")
        .expect("the handler lives");
    let after = names(client.inner.list_all_tools().await.expect("tools/list"));
    assert!(after.contains(&"write".to_owned()), "{after:?}");
    // Nothing changed since the second listing: no second notice.
    assert!(rx.try_recv().is_err(), "told twice");
}

/// Issue 53, item 9: one key holds at most `MAX_PER_CALLER` subscriptions over all its
/// sessions (each is read again every 250 ms), not 64 in each of its sixteen sessions. rmcp
/// marks `resources/subscribe` legacy (2026-07-28 has `subscriptions/listen`); the server
/// keeps serving it for older clients, and this is the path the bound holds on.
#[allow(deprecated)]
async fn one_key_watches_a_bounded_number_of_resources_over_its_sessions(s: &TestServer) {
    use capsid_http::MAX_SUBSCRIPTIONS_PER_CALLER as MAX_PER_CALLER;
    let (watcher, _worker) = agents(s).await;
    for i in 0..=MAX_PER_CALLER {
        s.admin(
            "write",
            json!({"namespace": "alpha", "path": format!("notes/n{i}.md"), "title": "n", "body": "b"}),
        )
        .await;
    }
    let uri = |i: usize| format!("capsid://alpha/notes/n{i}.md");
    let subscribe = |c: &Client, i: usize| {
        let params = rmcp::model::SubscribeRequestParams::new(uri(i));
        let peer = c.inner.peer().clone();
        async move { peer.subscribe(params).await }
    };
    let first = s.client(&watcher).await;
    let second = s.client(&watcher).await;
    let half = MAX_PER_CALLER / 2;
    for i in 0..half {
        subscribe(&first, i).await.expect("within the bound");
    }
    for i in half..MAX_PER_CALLER {
        subscribe(&second, i).await.expect("within the bound");
    }
    // Subscribing again to one it watches is no new subscription.
    subscribe(&second, half)
        .await
        .expect("the same subscription");
    let refused = subscribe(&second, MAX_PER_CALLER)
        .await
        .expect_err("one past the key's bound");
    let said = refused.to_string();
    assert!(
        said.contains("agent:watcher") && said.contains(&format!("{MAX_PER_CALLER} resources")),
        "{said}"
    );
    // Another key has its own bound.
    let other = s
        .mint(
            "other-watcher",
            "session",
            json!({"namespaces": ["alpha"], "grants": ["read"]}),
        )
        .await;
    let other = s.client(&other).await;
    subscribe(&other, MAX_PER_CALLER)
        .await
        .expect("another key");
    // One unsubscribed makes room again.
    first
        .inner
        .peer()
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri(0)))
        .await
        .expect("unsubscribe");
    subscribe(&second, MAX_PER_CALLER)
        .await
        .expect("room again");
}

/// Issue 53, item 22: a `subscriptions/listen` stream's resources count against the same bound
/// per key as its sessions' subscriptions. With its sessions watching all but one, a stream
/// asking for two is refused before it is acknowledged, naming the bound; one asking for one
/// is admitted, after which a session may subscribe to nothing more; when the stream's client
/// goes, there is room again.
#[allow(deprecated)]
async fn a_listen_stream_counts_against_the_keys_bound_with_its_sessions(s: &TestServer) {
    use capsid_http::MAX_SUBSCRIPTIONS_PER_CALLER as MAX_PER_CALLER;
    let Some(python) = python() else { return };
    let (watcher, _worker) = agents(s).await;
    for i in 0..=MAX_PER_CALLER {
        s.admin(
            "write",
            json!({"namespace": "alpha", "path": format!("notes/n{i}.md"), "title": "n", "body": "b"}),
        )
        .await;
    }
    let uri = |i: usize| format!("capsid://alpha/notes/n{i}.md");
    let session = s.client(&watcher).await;
    let subscribe = |i: usize| {
        let params = rmcp::model::SubscribeRequestParams::new(uri(i));
        let peer = session.inner.peer().clone();
        async move { peer.subscribe(params).await }
    };
    for i in 0..MAX_PER_CALLER - 1 {
        subscribe(i).await.expect("within the bound");
    }
    let (last, past) = (uri(MAX_PER_CALLER - 1), uri(MAX_PER_CALLER));
    let mut over = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &watcher,
        &Watch::resources(&[last.as_str(), past.as_str()], 1),
    )
    .await;
    let refused = over.next().await;
    assert_eq!(refused["event"], "refused", "{refused}");
    let said = refused["error"].as_str().unwrap_or_default();
    assert!(
        said.contains("agent:watcher") && said.contains(&format!("{MAX_PER_CALLER} resources")),
        "{said}"
    );
    assert_eq!(over.exit_code().await, Some(1));
    super::streams_come_to(s, 0).await;
    let mut one = Watcher::start(
        &python,
        Mode::Modern,
        &s.ops_url(),
        &watcher,
        &Watch::resources(&[last.as_str()], 0),
    )
    .await;
    let watching = one.watching().await;
    assert_eq!(
        watching["honored"]["resourceSubscriptions"],
        json!([last]),
        "{watching}"
    );
    let refused = subscribe(MAX_PER_CALLER)
        .await
        .expect_err("the stream holds the key's last place");
    assert!(refused.to_string().contains("agent:watcher"), "{refused}");
    // The stream's client goes: its place comes back.
    drop(one);
    super::streams_come_to(s, 0).await;
    subscribe(MAX_PER_CALLER).await.expect("room again");
}

e2e_cases!(super::sessions();
    a_listen_stream_counts_against_the_keys_bound_with_its_sessions,
    one_key_watches_a_bounded_number_of_resources_over_its_sessions,
    a_session_is_told_when_its_callers_tools_change,
    a_job_subscriber_hears_its_transition_within_a_second,
    a_checkmark_subscriber_hears_the_next_checkpoint,
    a_subscription_outside_the_callers_scope_is_refused,
);
