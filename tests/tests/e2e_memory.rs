//! End to end: the memory tools over a real MCP client against the real server, on SQLite and
//! Postgres; credentials and the one enforcement point as callers meet them.

use capsid_core::crypto::sha256_hex;
use capsid_tests::e2e_cases;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

/// An operator key pair: the plain key and its `CAPSID_OPERATOR_KEY_HASH` entry.
const OP_WRITE: &str = "operator-write-key-for-tests";
const OP_READ: &str = "operator-read-key-for-tests";

fn options() -> ServerOptions {
    ServerOptions {
        operator_keys: Some(format!(
            "{}, ro:{}",
            sha256_hex(OP_WRITE),
            sha256_hex(OP_READ)
        )),
        sessions: false,
        repo_host: None,
        webhook: None,
    }
}

async fn writer(s: &TestServer) -> String {
    s.mint(
        "writer",
        "session",
        json!({"namespaces": ["*"], "grants": ["read", "write"]}),
    )
    .await
}

async fn memory_tools_round_trip(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    // Registration through the tool, with its refusals.
    let reg = c
        .ok(
            "register_namespace",
            json!({"namespace": "alpha", "repo": "octo/alpha"}),
        )
        .await;
    assert_eq!(reg["action"], "registered");
    assert!(
        reg["next"].as_str().unwrap().contains("agents mint"),
        "{reg}"
    );
    assert!(
        c.err(
            "register_namespace",
            json!({"namespace": "alpha", "repo": "octo/alpha"})
        )
        .await
        .contains("already registered")
    );
    assert!(
        c.err("register_namespace", json!({"namespace": "beta"}))
            .await
            .contains("owner/name")
    );
    let err = c
        .err(
            "write",
            json!({"namespace": "nowhere", "path": "a.md", "title": "t", "body": "b"}),
        )
        .await;
    assert!(err.contains("nowhere"), "unknown namespace is named: {err}");

    // write: create, with dash normalization of title and body.
    let created = c
        .ok("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core — the hub", "body": "# Plan — now\n\nSteps 3–5 matter — a lot.", "type": "core"}))
        .await;
    assert_eq!(created["action"], "created");
    let read = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    assert_eq!(read["title"], "Core - the hub");
    assert_eq!(read["body"], "# Plan - now\n\nSteps 3-5 matter, a lot.");
    assert_eq!(read["last_actor"], "agent:writer");
    assert_eq!(read["type"], "core");
    assert_eq!(
        created["sha256"],
        sha256_hex(read["body"].as_str().unwrap())
    );

    // append needs no confirmation; bytes_before is reported.
    let appended = c
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "core.md", "mode": "append", "body": "\n\nMore."}),
        )
        .await;
    assert_eq!(appended["action"], "updated");
    assert!(appended["bytes_before"].is_number());
    assert!(
        appended["concurrency_warning"].is_string(),
        "rewritten within the hour without if_match: {appended}"
    );
    let body = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(body.ends_with("a lot.\n\nMore."), "{body}");

    // patch overwrites: confirmation required, then applied.
    let patch = json!({"namespace": "alpha", "path": "core.md", "mode": "patch", "find": "More.", "replace_with": "Much more."});
    assert!(
        c.err("write", patch.clone())
            .await
            .contains("confirm: true")
    );
    let mut confirmed = patch.clone();
    confirmed["confirm"] = json!(true);
    c.ok("write", confirmed).await;
    assert!(
        c.ok("read", json!({"namespace": "alpha", "path": "core.md"}))
            .await["body"]
            .as_str()
            .unwrap()
            .ends_with("Much more.")
    );
    assert!(c.err("write", json!({"namespace": "alpha", "path": "core.md", "mode": "patch", "find": "absent", "replace_with": "x", "confirm": true})).await.contains("anchor not found"));

    // meta changes metadata only.
    let before = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    c.ok("write", json!({"namespace": "alpha", "path": "core.md", "mode": "meta", "status": "active", "tags": "hub"})).await;
    let after = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    assert_eq!(after["body"], before["body"]);
    assert_eq!(after["status"], "active");
    assert!(c.err("write", json!({"namespace": "alpha", "path": "core.md", "type": "memo", "title": "t", "body": "b"})).await.contains("episodic"));

    // Links, backlinks and the dangling warning.
    let linked = c
        .ok("write", json!({"namespace": "alpha", "path": "notes/a.md", "title": "A", "body": "a", "type": "episodic",
                            "links": "[{\"type\":\"references\",\"to_path\":\"core.md\"},{\"type\":\"depends-on\",\"to_path\":\"missing.md\"}]"}))
        .await;
    assert_eq!(linked["links"], 2);
    assert!(
        linked["warning"]
            .as_str()
            .unwrap()
            .contains("alpha/missing.md"),
        "{linked}"
    );
    let back = c
        .ok(
            "backlinks",
            json!({"namespace": "alpha", "path": "core.md"}),
        )
        .await;
    assert_eq!(
        back["incoming"],
        json!([{"type": "references", "from_ns": "alpha", "from_path": "notes/a.md"}])
    );

    // list, find, search, namespaces.
    let list = c.ok("list", json!({"namespace": "alpha"})).await;
    assert_eq!(list["count"], 2);
    assert!(
        list["documents"][0].get("body").is_none(),
        "list carries no bodies"
    );
    let found = c
        .ok("find", json!({"namespace": "alpha", "glob": "notes/*"}))
        .await;
    assert_eq!(found["documents"][0]["path"], "notes/a.md");
    let hits = c
        .ok("search", json!({"query": "hub", "namespace": "alpha"}))
        .await;
    assert_eq!(
        hits["documents"][0]["path"], "core.md",
        "a title match is found: {hits}"
    );
    let hits = c
        .ok("search", json!({"query": "matter", "namespace": "alpha"}))
        .await;
    assert_eq!(hits["documents"][0]["path"], "core.md", "{hits}");
    assert!(
        hits["documents"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("[matter]"),
        "{hits}"
    );
    let nss = c.ok("namespaces", json!({})).await;
    assert_eq!(nss[0]["namespace"], "alpha");
    assert_eq!(nss[0]["unconsolidated"], 1);

    // history and restore.
    let hist = c
        .ok("history", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    let versions = hist["versions"].as_array().unwrap();
    assert!(versions.len() >= 3, "every overwrite snapshots: {hist}");
    let first = versions.last().unwrap()["id"].as_i64().unwrap();
    let v = c
        .ok(
            "history",
            json!({"namespace": "alpha", "path": "core.md", "version_id": first}),
        )
        .await;
    assert_eq!(v["body"], "# Plan - now\n\nSteps 3-5 matter, a lot.");
    assert!(
        c.err(
            "restore",
            json!({"namespace": "alpha", "path": "core.md", "version_id": first})
        )
        .await
        .contains("confirm")
    );
    let restored = c
        .ok(
            "restore",
            json!({"namespace": "alpha", "path": "core.md", "version_id": first, "confirm": true}),
        )
        .await;
    assert_eq!(restored["action"], "restored");
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "core.md"}))
            .await["body"],
        v["body"]
    );

    // brief.
    let brief = c.ok("brief", json!({"namespace": "alpha"})).await;
    assert_eq!(brief["core"]["path"], "core.md");
    assert_eq!(brief["recent_episodics"][0]["path"], "notes/a.md");

    // move repoints edges; delete removes them.
    let moved = c.ok("move", json!({"namespace": "alpha", "path": "notes/a.md", "new_path": "notes/b.md", "confirm": true})).await;
    assert_eq!(moved["action"], "moved");
    let back = c
        .ok(
            "backlinks",
            json!({"namespace": "alpha", "path": "core.md"}),
        )
        .await;
    assert_eq!(back["incoming"][0]["from_path"], "notes/b.md");
    c.ok("write", json!({"namespace": "alpha", "path": "notes/c.md", "title": "C", "body": "c", "type": "episodic"})).await;
    assert!(c.err("move", json!({"namespace": "alpha", "path": "notes/b.md", "new_path": "notes/c.md", "confirm": true})).await.contains("nothing changed"));
    let deleted = c
        .ok(
            "delete",
            json!({"namespace": "alpha", "path": "notes/c.md", "confirm": true}),
        )
        .await;
    assert_eq!(deleted["action"], "deleted");
    assert!(
        c.err("read", json!({"namespace": "alpha", "path": "notes/c.md"}))
            .await
            .contains("not found: alpha/notes/c.md")
    );

    // lint: gather, finalize (confirmed), report (stored as a document).
    let packet = c.ok("lint", json!({"namespace": "alpha"})).await;
    assert_eq!(packet["unconsolidated"][0]["path"], "notes/b.md");
    let fin = c.ok("lint", json!({"namespace": "alpha", "mode": "finalize", "consumed": ["notes/b.md"], "confirm": true})).await;
    assert_eq!(fin["archived"][0]["to"], "archive/notes/b.md");
    assert_eq!(c.ok("namespaces", json!({})).await[0]["unconsolidated"], 0);
    let report = c
        .ok("lint", json!({"namespace": "alpha", "mode": "report"}))
        .await;
    let stored = report["stored"].as_str().unwrap().to_owned();
    assert!(stored.starts_with("alpha/reports/lint-"), "{report}");
    let doc = c
        .ok(
            "read",
            json!({"namespace": "alpha", "path": stored.trim_start_matches("alpha/")}),
        )
        .await;
    assert!(
        doc["body"].as_str().unwrap().contains("not checked"),
        "repo drift is not checked without repo access"
    );

    // update_namespace keeps the previous mapping.
    let upd = c
        .ok(
            "update_namespace",
            json!({"namespace": "alpha", "repos": "[{\"repo\":\"octo/alpha2\"}]"}),
        )
        .await;
    assert_eq!(
        upd["previous"],
        "[{\"repo\":\"octo/alpha\",\"label\":\"primary\"}]"
    );
}

async fn agents_is_admin_only(s: &TestServer) {
    let agent = s.client(&writer(s).await).await;
    let refused = agent.ok("agents", json!({"action": "list"})).await;
    assert_eq!(
        refused["ok"], false,
        "a minted agent is never an admin: {refused}"
    );
    let admin = s.client(OP_WRITE).await;
    let minted = admin.ok("agents", json!({"action": "mint", "name": "driver-1", "kind": "driver", "namespaces": ["alpha"], "grants": ["read", "write"], "flags": {"can_merge": true}})).await;
    assert_eq!(minted["ok"], true);
    let key = minted["key"].as_str().unwrap();
    assert!(key.starts_with("capsid_agent_") && key.len() == "capsid_agent_".len() + 64);
    let listed = admin.ok("agents", json!({"action": "list"})).await;
    let text = listed.to_string();
    assert!(
        !text.contains(key) && !text.contains(&sha256_hex(key)),
        "neither the key nor its hash is ever listed"
    );
    assert!(admin.ok("agents", json!({"action": "mint", "name": "driver-1", "kind": "driver", "namespaces": ["alpha"]})).await["refusal"].as_str().unwrap().contains("never reused"));
    let upd = admin
        .ok(
            "agents",
            json!({"action": "update_scopes", "name": "driver-1", "flags": {"can_merge": false}}),
        )
        .await;
    assert_eq!(upd["after"]["flags"]["can_merge"], false);
    assert_eq!(
        upd["after"]["grants"],
        json!(["read", "write"]),
        "unnamed axes are kept"
    );
    let rev = admin
        .ok("agents", json!({"action": "revoke", "name": "driver-1"}))
        .await;
    assert!(rev["agent"]["revoked_at"].is_string());
    assert_eq!(
        admin
            .ok("agents", json!({"action": "revoke", "name": "driver-1"}))
            .await["ok"],
        false
    );
}

async fn read_only_operator_key_cannot_write(s: &TestServer) {
    s.namespace("alpha").await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "a"}),
    )
    .await;
    let ro = s.client(OP_READ).await;
    assert_eq!(
        ro.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "a"
    );
    for (tool, args) in [
        (
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "x", "body": "x", "confirm": true}),
        ),
        (
            "delete",
            json!({"namespace": "alpha", "path": "a.md", "confirm": true}),
        ),
        (
            "move",
            json!({"namespace": "alpha", "path": "a.md", "new_path": "b.md", "confirm": true}),
        ),
        (
            "register_namespace",
            json!({"namespace": "beta", "repo": "o/b"}),
        ),
        (
            "update_namespace",
            json!({"namespace": "alpha", "repos": "[{\"repo\":\"o/x\"}]"}),
        ),
        ("lint", json!({"namespace": "alpha", "mode": "report"})),
        (
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "t", "body": "b"}),
        ),
        ("agents", json!({"action": "list"})),
    ] {
        let e = ro.err(tool, args).await;
        assert!(e.contains("write grant"), "{tool}: {e}");
    }
    assert_eq!(
        s.admin("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "a",
        "nothing changed"
    );
    let names = ro.tool_names().await;
    assert!(
        names.contains(&"read".to_owned()) && !names.contains(&"write".to_owned()),
        "{names:?}"
    );
}

async fn revoked_agent_gets_401(s: &TestServer) {
    let key = writer(s).await;
    let c = s.client(&key).await;
    c.ok("namespaces", json!({})).await;
    s.admin("agents", json!({"action": "revoke", "name": "writer"}))
        .await;
    assert!(
        c.raw("namespaces", json!({})).await.is_err(),
        "a revoked key stops at once"
    );
    let http = reqwest_status(&s.ops_url(), Some(&key)).await;
    assert_eq!(http.0, 401);
    assert_eq!(http.1.as_deref(), Some("Bearer realm=\"capsid-operator\""));
    assert_eq!(reqwest_status(&s.ops_url(), None).await.0, 401);
    assert_eq!(
        reqwest_status(&s.ops_url(), Some("capsid_agent_not-a-real-key"))
            .await
            .0,
        401
    );
}

/// POSTs an initialize and returns (status, WWW-Authenticate).
async fn reqwest_status(url: &str, key: Option<&str>) -> (u16, Option<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let resp = raw_post(url, key, &body.to_string()).await;
    (resp.0, resp.2)
}

/// A raw HTTP POST (status, body, WWW-Authenticate).
pub async fn raw_post(url: &str, key: Option<&str>, body: &str) -> (u16, String, Option<String>) {
    let client = reqwest::Client::new();
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.expect("the server answers");
    let status = resp.status().as_u16();
    let www = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, resp.text().await.unwrap_or_default(), www)
}

async fn narrowed_agent_must_name_its_namespace(s: &TestServer) {
    s.namespace("alpha").await;
    s.namespace("beta").await;
    let key = s
        .mint(
            "narrow",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let c = s.client(&key).await;
    c.ok(
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "a"}),
    )
    .await;
    assert!(
        c.err("search", json!({"query": "a"}))
            .await
            .contains("without a namespace")
    );
    assert!(
        c.err("list", json!({}))
            .await
            .contains("without a namespace")
    );
    let e = c
        .err(
            "write",
            json!({"namespace": "beta", "path": "a.md", "title": "A", "body": "a"}),
        )
        .await;
    assert!(e.contains("\"beta\"") && e.contains("alpha"), "{e}");
    assert!(
        c.err("read", json!({"namespace": "beta", "path": "a.md"}))
            .await
            .contains("beta")
    );
    assert_eq!(
        c.ok("search", json!({"query": "a", "namespace": "alpha"}))
            .await["count"],
        1
    );
}

async fn read_only_tool_scope_sees_only_read(s: &TestServer) {
    s.namespace("alpha").await;
    let key = s
        .mint(
            "reader",
            "session",
            json!({"namespaces": ["alpha"], "tools": ["read"], "grants": ["read"]}),
        )
        .await;
    let c = s.client(&key).await;
    assert_eq!(c.tool_names().await, vec!["read".to_owned()]);
    let e = c
        .err("search", json!({"query": "x", "namespace": "alpha"}))
        .await;
    assert!(
        e.contains("may not use search"),
        "a hidden tool gets the scope refusal, not 'unknown tool': {e}"
    );
}

async fn overwrite_without_confirm_changes_nothing(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    s.namespace("alpha").await;
    c.ok(
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "first"}),
    )
    .await;
    let e = c
        .err(
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "second"}),
        )
        .await;
    assert!(
        e.contains("confirmation required") && e.contains("confirm: true"),
        "{e}"
    );
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "first"
    );
    assert_eq!(
        c.ok("history", json!({"namespace": "alpha", "path": "a.md"}))
            .await["versions"],
        json!([]),
        "no snapshot either"
    );
    assert!(
        c.err("delete", json!({"namespace": "alpha", "path": "a.md"}))
            .await
            .contains("confirm")
    );
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "first"
    );
}

async fn if_match_mismatch_returns_the_current_hash(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    s.namespace("alpha").await;
    let w = c
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "v1"}),
        )
        .await;
    let e = c.err("write", json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "v2", "confirm": true, "if_match": sha256_hex("stale")})).await;
    assert!(
        e.contains(w["sha256"].as_str().unwrap()),
        "the refusal carries the current sha256: {e}"
    );
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "v1"
    );
    let ok = c.ok("write", json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "v2", "confirm": true, "if_match": w["sha256"]})).await;
    assert!(
        ok.get("concurrency_warning").is_none(),
        "if_match given: no warning"
    );
}

async fn hostile_paths_are_refused_and_nothing_changes(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    s.namespace("alpha").await;
    let long = "p".repeat(600);
    for path in [
        "../x",
        "/x",
        "a//b",
        "x/",
        "a\u{0}b",
        "a\u{7f}",
        long.as_str(),
    ] {
        let e = c
            .err(
                "write",
                json!({"namespace": "alpha", "path": path, "title": "t", "body": "b"}),
            )
            .await;
        assert!(e.contains("path"), "{path:?}: {e}");
    }
    assert_eq!(
        c.ok("list", json!({"namespace": "alpha"})).await["count"],
        0
    );
}

async fn resources_and_prompts(s: &TestServer) {
    s.namespace("alpha").await;
    s.namespace("secret").await;
    s.admin("write", json!({"namespace": "alpha", "path": "prompts/review.md", "title": "Review a diff", "type": "prompt",
                            "body": "Review {{ diff }} for {{focus}}. Mind {{diff}}."})).await;
    s.admin(
        "write",
        json!({"namespace": "secret", "path": "hidden.md", "title": "H", "body": "h"}),
    )
    .await;
    let key = s
        .mint("narrow", "session", json!({"namespaces": ["alpha"]}))
        .await;
    let c = s.client(&key).await;
    let peer = c.inner.peer();
    let listed = peer.list_all_resources().await.expect("resources/list");
    let uris: Vec<_> = listed.iter().map(|r| r.uri.clone()).collect();
    assert_eq!(
        uris,
        vec!["capsid://alpha/prompts/review.md".to_owned()],
        "only readable namespaces"
    );
    let read = peer
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "capsid://alpha/prompts/review.md",
        ))
        .await
        .expect("read");
    assert!(format!("{read:?}").contains("Review {{ diff }}"));
    assert!(
        peer.read_resource(rmcp::model::ReadResourceRequestParams::new(
            "capsid://secret/hidden.md"
        ))
        .await
        .is_err()
    );
    let prompts = peer.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts[0].name, "alpha/prompts/review");
    let args: Vec<_> = prompts[0]
        .arguments
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(args, vec!["diff", "focus"]);
    let mut map = serde_json::Map::new();
    map.insert("diff".into(), json!("the patch"));
    let missing = peer
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("alpha/prompts/review")
                .with_arguments(map.clone()),
        )
        .await;
    assert!(
        format!("{missing:?}").contains("focus"),
        "missing arguments are named: {missing:?}"
    );
    map.insert("focus".into(), json!("safety"));
    let got = peer
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("alpha/prompts/review").with_arguments(map),
        )
        .await
        .expect("prompts/get");
    let rendered = format!("{got:?}");
    assert!(
        rendered.contains("Review the patch for safety. Mind the patch.")
            && rendered.contains("capsid://alpha/prompts/review.md"),
        "{rendered}"
    );
}

async fn malformed_requests_never_500_and_change_nothing(s: &TestServer) {
    let key = writer(s).await;
    s.namespace("alpha").await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "keep.md", "title": "K", "body": "keep"}),
    )
    .await;
    let url = s.ops_url();
    let mut bodies: Vec<String> = vec![
        String::new(),
        "{".into(),
        "null".into(),
        "[]".into(),
        "42".into(),
        "\"str\"".into(),
        json!({"jsonrpc": "2.0"}).to_string(),
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}).to_string(),
        json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/call"}).to_string(),
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{}\"}}",
            "m".repeat(100_000)
        ),
        "x".repeat(3 * 1024 * 1024),
    ];
    let tools = [
        "write", "read", "delete", "move", "restore", "search", "lint", "jobs", "agents",
        "history", "find", "list",
    ];
    let values = [
        json!(null),
        json!(1),
        json!(-1),
        json!(1e308),
        json!(true),
        json!([]),
        json!({}),
        json!("../x"),
        json!("x".repeat(2_000_000)),
        json!("\u{0}"),
        json!([1, {"a": []}]),
    ];
    let fields = [
        "namespace",
        "path",
        "title",
        "body",
        "mode",
        "query",
        "glob",
        "version_id",
        "links",
        "if_match",
        "action",
        "consumed",
        "confirm",
        "new_path",
    ];
    let mut i = 0usize;
    while bodies.len() < 1_000 {
        let tool = tools[i % tools.len()];
        let mut args = serde_json::Map::new();
        for (k, field) in fields.iter().enumerate() {
            if (i + k).is_multiple_of(3) {
                args.insert(
                    (*field).to_owned(),
                    values[(i * 7 + k) % values.len()].clone(),
                );
            }
        }
        let params = if i.is_multiple_of(11) {
            json!("not an object")
        } else {
            json!({"name": tool, "arguments": args})
        };
        bodies.push(
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
                .to_string(),
        );
        i += 1;
    }
    let mut statuses = std::collections::BTreeMap::new();
    for body in &bodies {
        let (status, text, _) = raw_post(&url, Some(&key), body).await;
        assert!(
            status < 500,
            "status {status} for a malformed request ({} bytes): {}",
            body.len(),
            &text[..text.len().min(300)]
        );
        *statuses.entry(status).or_insert(0) += 1;
    }
    eprintln!("malformed-request statuses: {statuses:?}");
    let list = s.admin("list", json!({"namespace": "alpha"})).await;
    assert_eq!(list["count"], 1, "the store is unchanged: {list}");
    assert_eq!(
        s.admin("read", json!({"namespace": "alpha", "path": "keep.md"}))
            .await["body"],
        "keep"
    );
    assert_eq!(
        s.admin("agents", json!({"action": "list"})).await["agents"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

async fn health_reports_the_store(s: &TestServer) {
    let resp = reqwest::get(format!("{}/health", s.url))
        .await
        .expect("health");
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["status"], "ok");
    assert_eq!(body["store"], json!({"db": "ok", "fts": "ok"}));
    assert_eq!(
        body["schema_version"],
        capsid_tests::harness::newest_migration()
    );
    assert_eq!(body["backup"]["warning"], "no successful backup recorded");
    let mcp = raw_post(&format!("{}/mcp", s.url), None, "{}").await;
    assert_eq!(mcp.0, 503, "the OAuth route says it is not configured");
    assert!(mcp.1.contains("CAPSID_GITHUB_CLIENT_ID"));
}

/// Appends race each other: every append the server acknowledged is in the final body, and
/// one it refused as a conflict left nothing behind. Without the commit-time guard on derived
/// modes, a racing append silently overwrote another's acknowledged line.
async fn racing_appends_lose_no_acknowledged_line(s: &TestServer) {
    let key = writer(s).await;
    s.namespace("alpha").await;
    let first = s.client(&key).await;
    first
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "log.md", "title": "Log", "body": "start"}),
        )
        .await;
    let mut tasks = Vec::new();
    for w in 0..6 {
        let c = s.client(&key).await;
        tasks.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let mut refused = Vec::new();
            for i in 0..12 {
                let line = format!("<line-{w}-{i}>");
                let args =
                    json!({"namespace": "alpha", "path": "log.md", "mode": "append", "body": line});
                match c.call("write", args).await {
                    Ok(_) => acknowledged.push(line),
                    Err(e) => {
                        assert!(
                            e.contains("conflict"),
                            "only a conflict may refuse an append: {e}"
                        );
                        refused.push(line);
                    }
                }
            }
            (acknowledged, refused)
        }));
    }
    let (mut acknowledged, mut refused) = (Vec::new(), Vec::new());
    for t in tasks {
        let (a, r) = t.await.expect("appender");
        acknowledged.extend(a);
        refused.extend(r);
    }
    let body = first
        .ok("read", json!({"namespace": "alpha", "path": "log.md"}))
        .await["body"]
        .as_str()
        .expect("body")
        .to_owned();
    for line in &acknowledged {
        assert!(
            body.contains(line.as_str()),
            "acknowledged {line} was lost: {body}"
        );
    }
    for line in &refused {
        assert!(
            !body.contains(line.as_str()),
            "refused {line} was written anyway"
        );
    }
    assert_eq!(acknowledged.len() + refused.len(), 72);
    assert!(!acknowledged.is_empty(), "some appends go through");
}

e2e_cases!(super::options();
    memory_tools_round_trip,
    agents_is_admin_only,
    read_only_operator_key_cannot_write,
    revoked_agent_gets_401,
    narrowed_agent_must_name_its_namespace,
    read_only_tool_scope_sees_only_read,
    overwrite_without_confirm_changes_nothing,
    if_match_mismatch_returns_the_current_hash,
    hostile_paths_are_refused_and_nothing_changes,
    resources_and_prompts,
    malformed_requests_never_500_and_change_nothing,
    health_reports_the_store,
    racing_appends_lose_no_acknowledged_line,
);
