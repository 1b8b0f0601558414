//! A new user's first hour, over real HTTP on `/ops/mcp` (each case on SQLite and Postgres,
//! stateless and in session mode): a body that is not JSON, or JSON that is not JSON-RPC, is
//! HTTP 400 with `-32700` / `-32600` (not rmcp's 415); an unknown method's message names it;
//! a known method with bad params says why (`-32602`); a wrong, revoked or missing key gets
//! the 401 that says which (`error="invalid_token"`, RFC 6750); `jobs`'s free-form arguments
//! advertise real types; and the refusals README's "When something is wrong" quotes are what
//! the server says. `/mcp` is covered in `tests/oauth/jsonrpc_on_mcp.rs`.

use capsid_tests::e2e_cases;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

/// A response, read whole.
struct Resp {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The JSON-RPC message of the body: the body itself, or the SSE event carrying an `id`.
    fn message(&self) -> Value {
        if self.header("content-type").starts_with("text/event-stream") {
            return self
                .body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id").is_some())
                .unwrap_or_else(|| panic!("no JSON-RPC answer in the stream: {}", self.body));
        }
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

/// `POST` `body` to `url` as an MCP client would, with `headers` on top.
async fn post(url: &str, body: impl Into<String>, headers: &[(&str, &str)]) -> Resp {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.into());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("POST");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("body");
    Resp {
        status,
        headers,
        body,
    }
}

/// A caller on `/ops/mcp`: its key, and in session mode its initialized session.
struct Caller {
    url: String,
    key: String,
    session: Option<String>,
}

impl Caller {
    /// A read-write agent on every namespace; with `sessions`, one initialized session.
    async fn new(s: &TestServer, name: &str, sessions: bool) -> Caller {
        let key = s
            .mint(
                name,
                "session",
                json!({"namespaces": ["*"], "grants": ["read", "write"]}),
            )
            .await;
        let mut caller = Caller {
            url: s.ops_url(),
            key,
            session: None,
        };
        if sessions {
            let init = caller
                .send(
                    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "first-hour", "version": "1"}}}),
                )
                .await;
            assert_eq!(init.status, 200, "{}", init.body);
            let id = init.header("mcp-session-id").to_owned();
            assert!(!id.is_empty(), "session mode opens a session");
            caller.session = Some(id);
            let done = caller
                .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
            assert_eq!(done.status, 202, "{}", done.body);
        }
        caller
    }

    /// `POST`s raw `body` with this caller's key (and session).
    async fn post(&self, body: impl Into<String>) -> Resp {
        let auth = format!("Bearer {}", self.key);
        let mut headers = vec![("authorization", auth.as_str())];
        if let Some(id) = &self.session {
            headers.push(("mcp-session-id", id.as_str()));
            headers.push(("mcp-protocol-version", "2025-11-25"));
        }
        post(&self.url, body, &headers).await
    }

    async fn send(&self, message: Value) -> Resp {
        self.post(message.to_string()).await
    }
}

/// A 400 carrying the JSON-RPC error `code` whose message contains `says`; the error's id.
fn assert_rejected(r: &Resp, code: i64, says: &str) -> Value {
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.header("content-type"), "application/json", "{}", r.body);
    let m = r.message();
    assert_eq!(m["jsonrpc"], "2.0", "{m}");
    assert_eq!(m["error"]["code"], code, "{m}");
    let message = m["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message}");
    m["id"].clone()
}

async fn non_json_bodies_are_parse_errors(s: &TestServer, sessions: bool) {
    let c = Caller::new(s, "parser", sessions).await;
    for (body, says) in [
        ("not json", "the request body is not JSON"),
        (
            "{\"jsonrpc\": \"2.0\", \"id\": 1,",
            "the request body is not JSON",
        ),
        ("", "the request body is empty"),
    ] {
        let r = c.post(body).await;
        let id = assert_rejected(&r, -32700, says);
        assert_eq!(id, Value::Null, "a parse error has no id to echo");
    }
}

async fn json_that_is_not_json_rpc_is_an_invalid_request(s: &TestServer, sessions: bool) {
    let c = Caller::new(s, "shapes", sessions).await;
    for (body, says) in [
        (json!({"a": 1}), "no \"jsonrpc\": \"2.0\""),
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]),
            "a JSON-RPC batch",
        ),
        (json!("tools/list"), "a string, not a JSON object"),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": 7}),
            "\"method\" must be a string",
        ),
    ] {
        let r = c.send(body.clone()).await;
        assert_rejected(&r, -32600, says);
    }
    let r = c
        .send(json!({"jsonrpc": "1.0", "id": "q-7", "method": "tools/list"}))
        .await;
    let id = assert_rejected(&r, -32600, "\"jsonrpc\" must be \"2.0\"");
    assert_eq!(id, "q-7", "a readable id is echoed");
    // A wrong media type is still rmcp's 415: only JSON bodies are read here.
    let auth = format!("Bearer {}", c.key);
    let r = reqwest::Client::new()
        .post(&c.url)
        .header("authorization", auth)
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .body("{}")
        .send()
        .await
        .expect("POST");
    assert_eq!(r.status().as_u16(), 415);
    // The bound is the transport's: one byte more is 413, with a JSON-RPC error.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(capsid_http::MAX_MCP_BODY)
    );
    let r = c.post(big).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.message()["error"]["code"], -32600, "{}", r.body);
}

async fn unknown_methods_are_named(s: &TestServer, sessions: bool) {
    let c = Caller::new(s, "typo", sessions).await;
    let r = c
        .send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/cal", "params": {}}))
        .await;
    let m = r.message();
    assert_eq!(m["id"], 5, "{m}");
    assert_eq!(m["error"]["code"], -32601, "{m}");
    assert_eq!(m["error"]["message"], "method not found: tools/cal", "{m}");
    // A method MCP defines, with params it cannot read: invalid params, saying which.
    let r = c
        .send(
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"arguments": {}}}),
        )
        .await;
    let m = r.message();
    assert_eq!(m["error"]["code"], -32602, "{m}");
    let message = m["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("invalid params for tools/call: ") && message.contains("`name`"),
        "{message}"
    );
    // And the layer in front lets every good request through.
    let r = c
        .send(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "namespaces", "arguments": {}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.message()["result"]["isError"], false, "{}", r.body);
}

async fn stateless_non_json_bodies_are_parse_errors(s: &TestServer) {
    non_json_bodies_are_parse_errors(s, false).await;
}
async fn stateless_invalid_requests(s: &TestServer) {
    json_that_is_not_json_rpc_is_an_invalid_request(s, false).await;
}
async fn stateless_unknown_methods(s: &TestServer) {
    unknown_methods_are_named(s, false).await;
}
async fn session_non_json_bodies_are_parse_errors(s: &TestServer) {
    non_json_bodies_are_parse_errors(s, true).await;
}
async fn session_invalid_requests(s: &TestServer) {
    json_that_is_not_json_rpc_is_an_invalid_request(s, true).await;
}
async fn session_unknown_methods(s: &TestServer) {
    unknown_methods_are_named(s, true).await;
}

async fn a_refused_key_gets_the_401_that_says_why(s: &TestServer) {
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let url = s.ops_url();

    let missing = post(&url, ping.clone(), &[]).await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate"),
        "Bearer realm=\"capsid-operator\""
    );
    let body: Value = serde_json::from_str(&missing.body).expect("json");
    assert_eq!(body["error"], "unauthorized", "{body}");

    let wrong = post(
        &url,
        ping.clone(),
        &[("authorization", "Bearer capsid_agent_not-a-key")],
    )
    .await;
    assert_eq!(wrong.status, 401);
    let challenge = wrong.header("www-authenticate");
    assert!(
        challenge.starts_with("Bearer realm=\"capsid-operator\", error=\"invalid_token\""),
        "{challenge}"
    );
    let body: Value = serde_json::from_str(&wrong.body).expect("json");
    assert_eq!(body["error"], "invalid_token", "{body}");
    let why = body["error_description"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("the bearer key was not recognised") && why.contains("revoked"),
        "{why}"
    );

    // A key that worked and was revoked reads the same.
    let key = s
        .mint("short-lived", "session", json!({"namespaces": ["*"]}))
        .await;
    let auth = format!("Bearer {key}");
    let live = post(&url, ping.clone(), &[("authorization", &auth)]).await;
    assert_eq!(live.status, 200, "{}", live.body);
    let out = s
        .admin("agents", json!({"action": "revoke", "name": "short-lived"}))
        .await;
    assert_eq!(out["ok"], true, "{out}");
    let revoked = post(&url, ping, &[("authorization", &auth)]).await;
    assert_eq!(revoked.status, 401);
    assert!(
        revoked
            .header("www-authenticate")
            .contains("error=\"invalid_token\""),
        "{}",
        revoked.header("www-authenticate")
    );
    assert!(
        !revoked.body.contains(&key),
        "the key is never echoed: {}",
        revoked.body
    );
}

async fn jobs_arguments_have_real_types(s: &TestServer) {
    s.namespace("alpha").await;
    let c = Caller::new(s, "lister", false).await;
    let r = c
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    let m = r.message();
    let tools = m["result"]["tools"].as_array().expect("tools");
    let jobs = tools
        .iter()
        .find(|t| t["name"] == "jobs")
        .expect("a read-write agent sees jobs");
    let props = &jobs["inputSchema"]["properties"];
    assert_eq!(props["required_flags"]["type"], "array", "{props}");
    assert_eq!(props["required_flags"]["items"]["type"], "string");
    assert_eq!(props["min_record"]["type"], "object");
    assert_eq!(
        props["min_record"]["properties"]["prs_merged"]["type"],
        "integer"
    );
    assert_eq!(props["evidence"]["type"], "object");
    assert_eq!(jobs["inputSchema"]["required"], json!(["action"]));
    // The parsers behind them still speak for a wrong value.
    let out = c
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "jobs", "arguments": {"action": "post", "namespace": "alpha",
            "title": "t", "body": "b", "required_flags": ["can_fly"]}}}),
        )
        .await
        .message();
    let text = out["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("\"can_fly\", which is not a flag"), "{out}");
}

/// README's "When something is wrong" section.
fn troubleshooting() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let start = readme
        .find("## When something is wrong")
        .expect("the section");
    let rest = &readme[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

async fn readme_quotes_what_the_server_says(s: &TestServer) {
    s.namespace("demo").await;
    s.namespace("alpha").await;
    s.admin(
        "write",
        json!({"namespace": "demo", "path": "core.md", "title": "Core", "body": "b"}),
    )
    .await;
    let me = Caller::new(s, "me", false).await;
    let ro = s
        .mint(
            "ro",
            "session",
            json!({"namespaces": ["*"], "grants": ["read"]}),
        )
        .await;
    let narrow = s
        .mint(
            "narrow",
            "session",
            json!({"namespaces": ["alpha"], "tools": ["read", "search"], "grants": ["read", "write"]}),
        )
        .await;
    let as_key = |key: &str| Caller {
        url: s.ops_url(),
        key: key.to_owned(),
        session: None,
    };
    let doc = |ns: &str| json!({"namespace": ns, "path": "x.md", "title": "X", "body": "b"});
    let cases = [
        (
            &me,
            "write",
            json!({"path": "x.md", "title": "X", "body": "b"}),
        ),
        (&me, "write", doc("nosuch")),
        (&as_key(&ro), "write", doc("demo")),
        (
            &as_key(&narrow),
            "read",
            json!({"namespace": "demo", "path": "core.md"}),
        ),
        (&as_key(&narrow), "write", doc("demo")),
        (
            &me,
            "write",
            json!({"namespace": "demo", "path": "core.md", "title": "Core", "body": "new"}),
        ),
    ];
    let section = troubleshooting();
    for (caller, tool, args) in cases {
        let out = caller
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}))
            .await
            .message();
        assert_eq!(out["result"]["isError"], true, "{out}");
        let text = out["result"]["content"][0]["text"].as_str().unwrap_or("");
        // The README quotes each refusal up to its first full stop.
        let quoted = text.find(". ").map_or(text, |end| &text[..=end]);
        assert!(
            section.contains(quoted),
            "README's \"When something is wrong\" should quote {quoted:?}"
        );
    }
    let typo = me
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/cal"}))
        .await
        .message();
    let said = typo["error"]["message"].as_str().unwrap_or_default();
    assert!(section.contains(said), "README should quote {said:?}");
}

e2e_cases!(capsid_tests::server::ServerOptions::default();
    stateless_non_json_bodies_are_parse_errors,
    stateless_invalid_requests,
    stateless_unknown_methods,
    a_refused_key_gets_the_401_that_says_why,
    jobs_arguments_have_real_types,
    readme_quotes_what_the_server_says,
);

mod sessions {
    use super::*;

    pub(crate) fn options() -> ServerOptions {
        ServerOptions {
            sessions: true,
            ..ServerOptions::default()
        }
    }

    e2e_cases!(super::super::sessions::options();
        session_non_json_bodies_are_parse_errors,
        session_invalid_requests,
        session_unknown_methods,
    );
}
