//! The other surfaces: resources and prompts, malformed and slow requests (never a 500,
//! nothing changed), and `/health`.

use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use crate::e2e_memory::{raw_post, writer};

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
    // SPEC 8's hostile cases: a prompt bomb (100 kB of placeholders, a 5 kB argument), an
    // append past the body bound, and glob bombs. Each is refused by name, small, and
    // changes nothing.
    s.admin("write", json!({"namespace": "alpha", "path": "prompts/bomb.md", "title": "Bomb", "type": "prompt", "body": "{{a}}".repeat(20_000)}))
        .await;
    let bomb = json!({"jsonrpc": "2.0", "id": "bomb", "method": "prompts/get",
                      "params": {"name": "alpha/prompts/bomb", "arguments": {"a": "x".repeat(5_000)}}});
    let append = json!({"jsonrpc": "2.0", "id": "grow", "method": "tools/call",
                        "params": {"name": "write", "arguments": {"namespace": "alpha", "path": "keep.md", "mode": "append", "body": "g".repeat(999_999)}}});
    let mut refused_by_name = vec![
        (bomb.to_string(), "1000000"),
        (append.to_string(), "1000000"),
    ];
    for glob in [
        "*a".repeat(256),
        "?*".repeat(256),
        format!("*[{}]", "z".repeat(500)),
    ] {
        let find = json!({"jsonrpc": "2.0", "id": "glob", "method": "tools/call",
                          "params": {"name": "find", "arguments": {"namespace": "alpha", "glob": glob}}});
        refused_by_name.push((find.to_string(), "limit"));
    }
    for (body, named) in &refused_by_name {
        let (status, text, _) = raw_post(&url, Some(&key), body).await;
        assert!(
            status < 500,
            "status {status}: {}",
            &text[..text.len().min(300)]
        );
        assert!(
            text.contains(named) && text.len() < 10_000,
            "refused by name, and small ({} bytes): {}",
            text.len(),
            &text[..text.len().min(300)]
        );
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
    crate::e2e_memory::slow_clients::slow_clients_are_cut_off(
        s,
        crate::e2e_memory::options(),
        &key,
    )
    .await;
    let list = s.admin("list", json!({"namespace": "alpha"})).await;
    assert_eq!(list["count"], 2, "the store is unchanged: {list}");
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

e2e_cases!(crate::e2e_memory::options();
    resources_and_prompts,
    malformed_requests_never_500_and_change_nothing,
    health_reports_the_store,
);
