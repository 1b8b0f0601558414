//! The real Claude Code CLI, offline: where the pinned CLI is (installed by `scripts/test.sh`
//! into `.tools/claude-code`), the environment a run needs, and a fake Anthropic Messages API
//! on loopback that plays scripted turns to it.
//!
//! A script is a list of turns, each a list of blocks (text, or a tool call with its input).
//! The fake picks the script whose marker appears in the conversation's user text (the job body
//! carries it), and the turn by the number of assistant messages already in the request, so a
//! retry, a Stop-hook continuation or a `--resume` lands on the right step. Past its last turn a
//! script answers "Done." and ends the turn. In a tool input, `{{cwd}}` stands for the primary
//! working directory Claude Code names in its system prompt, and (for values only known at run
//! time: a job's id, a pull request's number or head) `{{after:PREFIX}}` for the word that
//! follows the first `PREFIX` in the conversation's user text and tool results (a word: letters,
//! digits, `_` and `-`); a string that is exactly `{{number-after:PREFIX}}` becomes that word as
//! a JSON number. A placeholder nothing matches stays as written. Every request is recorded, so a
//! test asserts on what Claude Code sent back (a hook's deny reason arrives as a tool result).
//!
//! The server runs on a thread of its own: the tests block on child processes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One block of a scripted assistant turn.
#[derive(Clone, Debug)]
pub enum Block {
    /// Text.
    Text(String),
    /// A tool call: the tool's name and its input.
    Tool(String, Value),
}

/// A text block.
pub fn text(t: &str) -> Block {
    Block::Text(t.to_owned())
}

/// A tool call.
pub fn tool(name: &str, input: Value) -> Block {
    Block::Tool(name.to_owned(), input)
}

/// A `Bash` tool call running `command`.
pub fn bash(command: &str) -> Block {
    tool(
        "Bash",
        json!({"command": command, "description": "run a command"}),
    )
}

/// One request Claude Code sent.
#[derive(Clone, Debug)]
pub struct Request {
    /// The script it was answered from (`None`: no marker matched).
    pub script: Option<String>,
    /// The turn index it was answered with.
    pub turn: usize,
    /// The request body.
    pub body: Value,
    /// The `x-api-key` it came with (the driver's upstream key, through the model door).
    pub api_key: Option<String>,
    /// The session its headers name (Codex's `session-id`).
    pub session: Option<String>,
}

impl Request {
    /// The tool results of the request's last user message, as (tool_use_id, text, is_error).
    pub fn tool_results(&self) -> Vec<(String, String, bool)> {
        if self.body.get("input").is_some() {
            return crate::fake_codex::tool_results(&self.body);
        }
        // The last user turn: 2.1.332 puts a `role: "system"` note after it.
        let Some(last) = self.body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|x| x["role"] == "user"))
        else {
            return Vec::new();
        };
        last["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| {
                let text = parts_text(&b["content"]);
                (
                    b["tool_use_id"].as_str().unwrap_or("").to_owned(),
                    text,
                    b["is_error"].as_bool().unwrap_or(false),
                )
            })
            .collect()
    }

    /// The session Claude Code says the request belongs to (`metadata.user_id`, a JSON text
    /// whose `session_id` a `--resume` keeps and a fresh session renews).
    pub fn session_id(&self) -> Option<String> {
        if self.session.is_some() {
            return self.session.clone();
        }
        let user: Value = serde_json::from_str(self.body["metadata"]["user_id"].as_str()?).ok()?;
        user["session_id"].as_str().map(str::to_owned)
    }

    /// The primary working directory the request's system prompt names (where the session
    /// started: the job's worktree).
    pub fn cwd(&self) -> String {
        if self.body.get("input").is_some() {
            return crate::fake_codex::cwd_of(&self.body);
        }
        cwd_of(&self.body)
    }

    /// All user text of the request (the prompt, a resume's answer, hook feedback).
    pub fn user_text(&self) -> String {
        if self.body.get("input").is_some() {
            return crate::fake_codex::user_text(&self.body);
        }
        user_text(&self.body)
    }

    /// The names of the tools offered in this request.
    pub fn tools(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| {
                // Codex offers an MCP server's tools in a namespace (`mcp__capsid`).
                let ns = t["name"].as_str().unwrap_or("").to_owned();
                match t["tools"].as_array() {
                    Some(inner) => inner
                        .iter()
                        .filter_map(|x| x["name"].as_str().map(|n| format!("{ns}__{n}")))
                        .collect::<Vec<_>>(),
                    None => t["name"].as_str().map(str::to_owned).into_iter().collect(),
                }
            })
            .collect()
    }
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) scripts: Vec<(String, Vec<Vec<Block>>)>,
    pub(crate) requests: Vec<Request>,
    /// What was POSTed to `/webhook` (the server's `CAPSID_WEBHOOK_URL` in the drive tests).
    webhooks: Vec<Value>,
    /// How many times `count_tokens` was asked.
    counted: usize,
}

/// The fake Messages API.
pub struct FakeClaude {
    /// `http://127.0.0.1:<port>`: `ANTHROPIC_BASE_URL`.
    pub url: String,
    state: Arc<Mutex<State>>,
    /// Signalled at each webhook delivery.
    delivered: Arc<std::sync::Condvar>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeClaude {
    /// Starts the fake on a free loopback port, on a thread of its own.
    pub fn start() -> FakeClaude {
        let state = Arc::new(Mutex::new(State::default()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake API");
        listener.set_nonblocking(true).expect("non-blocking");
        let url = format!(
            "http://127.0.0.1:{}",
            listener.local_addr().expect("address").port()
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = state.clone();
        let delivered = Arc::new(std::sync::Condvar::new());
        let signal = delivered.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                let app = axum::Router::new().fallback(
                    move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: Bytes| {
                        let shared = shared.clone();
                        let signal = signal.clone();
                        async move {
                            let key = headers
                                .get("x-api-key")
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_owned);
                            if uri.path() == "/v1/messages/count_tokens" {
                                // The metered door asks this near a job's cap: the same count
                                // every answer reports.
                                lock(&shared).counted += 1;
                                return axum::Json(json!({"input_tokens": 100})).into_response();
                            }
                            if uri.path() == "/webhook" {
                                let got = serde_json::from_slice(&body)
                                    .unwrap_or_else(|_| json!(String::from_utf8_lossy(&body)));
                                lock(&shared).webhooks.push(got);
                                signal.notify_all();
                                return "ok".into_response();
                            }
                            if uri.path() == "/v1/responses" {
                                let session = headers
                                    .get("session-id")
                                    .and_then(|v| v.to_str().ok())
                                    .map(str::to_owned);
                                let bearer = headers
                                    .get("authorization")
                                    .and_then(|v| v.to_str().ok())
                                    .and_then(|v| v.strip_prefix("Bearer "))
                                    .map(str::to_owned);
                                return crate::fake_codex::answer(&shared, &body, session, bearer);
                            }
                            answer(&shared, uri.path(), &body, key)
                        }
                    },
                );
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        FakeClaude {
            url,
            state,
            delivered,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Plays `turns` to any conversation whose user text contains `marker`.
    pub fn script(&self, marker: &str, turns: Vec<Vec<Block>>) {
        lock(&self.state).scripts.push((marker.to_owned(), turns));
    }

    /// Every request answered from the script `marker`, oldest first.
    pub fn requests(&self, marker: &str) -> Vec<Request> {
        lock(&self.state)
            .requests
            .iter()
            .filter(|r| r.script.as_deref() == Some(marker))
            .cloned()
            .collect()
    }

    /// `<url>/webhook`: a webhook receiver that records every JSON body POSTed to it.
    pub fn webhook_url(&self) -> String {
        format!("{}/webhook", self.url)
    }

    /// The first webhook body `matches` accepts, waiting for its delivery (the server posts
    /// webhooks in the background) for at most `limit`; `None` when none came.
    pub fn webhook(
        &self,
        matches: impl Fn(&Value) -> bool,
        limit: std::time::Duration,
    ) -> Option<Value> {
        let deadline = std::time::Instant::now() + limit;
        let mut s = lock(&self.state);
        loop {
            if let Some(v) = s.webhooks.iter().find(|v| matches(v)) {
                return Some(v.clone());
            }
            let left = deadline.checked_duration_since(std::time::Instant::now())?;
            s = self
                .delivered
                .wait_timeout(s, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// How many times the model door asked `count_tokens`.
    pub fn counted(&self) -> usize {
        lock(&self.state).counted
    }

    /// Every request, oldest first.
    pub fn all_requests(&self) -> Vec<Request> {
        lock(&self.state).requests.clone()
    }
}

impl Drop for FakeClaude {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub(crate) fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// A content's text: a string, or the `text` of each part of a list, one per line (anything
/// else: none).
pub(crate) fn parts_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// All user text of a request (strings and text blocks), to find a script's marker in.
fn user_text(body: &Value) -> String {
    let mut out = String::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        match &m["content"] {
            Value::String(s) => out.push_str(s),
            Value::Array(parts) => {
                for p in parts {
                    if let Some(t) = p["text"].as_str() {
                        out.push_str(t);
                        out.push('\n');
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The primary working directory Claude Code's environment note names: in the system prompt
/// (2.1.197), or in a `role: "system"` message of the conversation (2.1.332).
fn cwd_of(body: &Value) -> String {
    [&body["system"], &body["messages"]]
        .iter()
        .find_map(|part| {
            let text = part.to_string();
            let rest = text.split("Primary working directory: ").nth(1)?;
            rest.split("\\n").next().map(str::to_owned)
        })
        .unwrap_or_default()
}

/// What a request's `{{after:...}}` placeholders read: its user text and the text of every
/// tool result in the conversation (what a command the script ran printed).
fn said_in(body: &Value) -> String {
    let mut out = user_text(body);
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        for p in m["content"].as_array().into_iter().flatten() {
            if p["type"] == "tool_result" {
                out.push_str(&parts_text(&p["content"]));
                out.push('\n');
            }
        }
    }
    out
}

/// The word after the first `prefix` in `said` that has one (letters, digits, `_`, `-`).
fn word_after<'a>(said: &'a str, prefix: &str) -> Option<&'a str> {
    if prefix.is_empty() {
        return None;
    }
    said.match_indices(prefix).find_map(|(at, _)| {
        let rest = &said[at + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// `text` with `{{cwd}}` and each `{{after:PREFIX}}` that matches in `said` filled in.
fn fill_text(text: &str, cwd: &str, said: &str) -> String {
    let mut out = String::new();
    let mut rest = text.replace("{{cwd}}", cwd);
    while let Some(start) = rest.find("{{after:") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let prefix = &rest[start + "{{after:".len()..start + len];
        out.push_str(&rest[..start]);
        match word_after(said, prefix) {
            Some(word) => out.push_str(word),
            None => out.push_str(&rest[start..start + len + 2]),
        }
        rest = rest[start + len + 2..].to_owned();
    }
    out.push_str(&rest);
    out
}

/// A tool input with its placeholders filled from the request (`cwd`, and `said`, the text
/// `{{after:...}}` reads; see the module's documentation).
pub(crate) fn fill(v: &Value, cwd: &str, said: &str) -> Value {
    match v {
        Value::String(s) => {
            let number = s
                .strip_prefix("{{number-after:")
                .and_then(|r| r.strip_suffix("}}"))
                .and_then(|prefix| word_after(said, prefix))
                .and_then(|w| w.parse::<u64>().ok());
            match number {
                Some(n) => json!(n),
                None => Value::String(fill_text(s, cwd, said)),
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| fill(x, cwd, said)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), fill(x, cwd, said)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn answer(state: &Mutex<State>, path: &str, body: &Bytes, api_key: Option<String>) -> Response {
    if path != "/v1/messages" {
        return (StatusCode::NOT_FOUND, "the fake serves /v1/messages only").into_response();
    }
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let turn = body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|x| x["role"] == "assistant").count());
    let text = user_text(&body);
    let said = said_in(&body);
    let cwd = cwd_of(&body);
    let (script, blocks) = {
        let mut s = lock(state);
        let found = s
            .scripts
            .iter()
            .find(|(marker, _)| text.contains(marker.as_str()))
            .cloned();
        let (name, blocks) = match found {
            Some((marker, turns)) => {
                let blocks = turns
                    .get(turn)
                    .cloned()
                    .unwrap_or_else(|| vec![Block::Text("Done.".into())]);
                (Some(marker), blocks)
            }
            None => (None, vec![Block::Text("Done.".into())]),
        };
        s.requests.push(Request {
            script: name.clone(),
            turn,
            body: body.clone(),
            api_key,
            session: None,
        });
        (name, blocks)
    };
    let _ = script;
    let mut events = String::new();
    let mut event = |kind: &str, data: Value| {
        events.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    let model = body["model"].as_str().unwrap_or("claude-fake").to_owned();
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_fake_{turn}"), "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    let mut stop = "end_turn";
    for (i, b) in blocks.iter().enumerate() {
        match b {
            Block::Text(t) => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
                );
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": t}}),
                );
            }
            Block::Tool(name, input) => {
                stop = "tool_use";
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("toolu_fake_{turn}_{i}"), "name": name, "input": {}}}),
                );
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": fill(input, &cwd, &said).to_string()}}),
                );
            }
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 20}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    (
        StatusCode::OK,
        [("content-type", "text/event-stream")],
        events,
    )
        .into_response()
}

/// A pinned agent CLI: the path in the variable `var` when it names a file, else `bin` under
/// the folder `scripts/test.sh` installs it into (`.tools/<folder>/node_modules/.bin/<bin>`).
/// `None` when neither is there.
pub(crate) fn pinned_cli(var: &str, folder: &str, bin: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).map(PathBuf::from)
        && p.is_file()
    {
        return Some(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let p = root.join(format!(".tools/{folder}/node_modules/.bin/{bin}"));
    p.exists().then_some(p)
}

/// `found`, or `None` after saying case `case` did not run for want of the CLI `name`
/// (`.tools/<folder>`, or the variable `var`); panics in CI, where `scripts/test.sh` installs
/// it and the case must run.
pub(crate) fn require_pinned(
    found: Option<PathBuf>,
    case: &str,
    name: &str,
    folder: &str,
    var: &str,
) -> Option<PathBuf> {
    match found {
        Some(p) => Some(p),
        None if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "{case}: the real {name} CLI is not installed (.tools/{folder}); scripts/test.sh installs it and CI requires these cases to run"
        ),
        None => {
            eprintln!(
                "NOT RUN {case}: the real {name} CLI is not installed (run scripts/test.sh, or set {var})"
            );
            None
        }
    }
}

/// The pinned Claude Code CLI: `CAPSID_CLAUDE_BIN`, else the one `scripts/test.sh` installs
/// under `.tools/claude-code`. `None` when neither is there (outside CI a test then says it did
/// not run; in CI, where `scripts/test.sh` installs it, that is a failure).
pub fn claude_bin() -> Option<PathBuf> {
    pinned_cli("CAPSID_CLAUDE_BIN", "claude-code", "claude")
}

/// The pinned CLI, or `None` after saying the case did not run; panics in CI, where it must.
pub fn require_claude(case: &str) -> Option<PathBuf> {
    require_pinned(
        claude_bin(),
        case,
        "Claude Code",
        "claude-code",
        "CAPSID_CLAUDE_BIN",
    )
}

/// The environment the real CLI runs in against `fake`: a fresh `HOME` and `TMPDIR` under
/// `dir`, the fake as its API, no other host tried, the CLI's folder first on `PATH` (so the
/// driver's default `claude` is this one). `IS_SANDBOX` is not set here: as root the driver
/// sets it for its agent (Claude Code's bypass mode needs it), and the tests exercise that.
pub fn claude_env(fake: &FakeClaude, bin: &Path, dir: &Path) -> Vec<(String, String)> {
    let home = dir.join("claude-home");
    let tmp = dir.join("claude-tmp");
    std::fs::create_dir_all(&home).expect("a HOME for Claude Code");
    std::fs::create_dir_all(&tmp).expect("a TMPDIR for Claude Code");
    let bin_dir = bin.parent().expect("the CLI's folder");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    [
        ("HOME", home.display().to_string()),
        ("TMPDIR", tmp.display().to_string()),
        ("PATH", path),
        ("ANTHROPIC_BASE_URL", fake.url.clone()),
        ("ANTHROPIC_API_KEY", "sk-ant-fake-offline-test".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("DISABLE_ERROR_REPORTING", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        // The model the tests price against: each Claude Code release has its own default
        // (claude-opus-4-8 in 2.1.197, claude-opus-5-5 in 2.1.332, which no price list names).
        ("ANTHROPIC_MODEL", "claude-opus-4-8".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_the_word_after_their_prefix_in_what_was_said() {
        let said = "Review pull request https://x/pull/12 at head 0a1b2c, the work of job job_ff01.\nJOB=\nJOB=job_9c\n";
        let input = json!({
            "parent": "{{after:JOB=}}",
            "pull_request": "{{number-after:/pull/}}",
            "body": "at {{after:at head }} in {{cwd}}; {{after:nowhere}} {{after:unclosed",
            "list": ["{{after:the work of job }}"],
            "n": 3,
        });
        let filled = fill(&input, "/w", said);
        assert_eq!(
            filled,
            json!({
                "parent": "job_9c",
                "pull_request": 12,
                "body": "at 0a1b2c in /w; {{after:nowhere}} {{after:unclosed",
                "list": ["job_ff01"],
                "n": 3,
            })
        );
        // Not a number: the text stays text.
        assert_eq!(
            fill(&json!("{{number-after:JOB=}}"), "", said),
            json!("{{number-after:JOB=}}")
        );
    }

    #[test]
    fn what_was_said_includes_tool_results() {
        let body = json!({"messages": [
            {"role": "user", "content": "Do it. SCRIPT=x"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "echo JOB=$CAPSID_JOB_ID"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "JOB=job_abc"}]}]},
        ]});
        let said = said_in(&body);
        assert!(
            said.contains("SCRIPT=x") && said.contains("JOB=job_abc"),
            "{said}"
        );
        assert_eq!(word_after(&said, "JOB="), Some("job_abc"));
    }
}
