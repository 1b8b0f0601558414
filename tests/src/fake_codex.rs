//! The real Codex CLI, offline: where the pinned CLI is (installed by `scripts/test.sh` into
//! `.tools/codex`), the environment a run needs, and OpenAI's Responses API played by the same
//! fake and the same scripts as Claude Code's Messages API ([`crate::fake_claude`]), so one
//! scenario drives either CLI.
//!
//! A script's blocks become Codex's items: `Bash` runs `exec_command`, `Write` an `apply_patch`
//! command adding the file (how Codex edits), `mcp__<server>__<tool>` the tool in Codex's
//! `mcp__<server>` namespace, and text an assistant message. The turn is found by counting the
//! items the conversation already holds that the model wrote (each block is one), so a Stop
//! hook's continuation or a `codex exec resume` lands on the right step, as for Claude Code.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::fake_claude::{
    Block, FakeClaude, Request, State, fill, lock, parts_text, pinned_cli, require_pinned,
};

/// The model the tests run Codex with: priced by Capsid's shipped table ($1.25 in and $10 out
/// per million tokens).
pub const CODEX_MODEL: &str = "gpt-5-codex";

/// The upstream key the driver holds in the Codex tests (the agent never sees it).
pub const CODEX_UPSTREAM_KEY: &str = "sk-openai-fake-offline-test";

/// All user text of a Responses request (its `input_text` parts).
pub(crate) fn user_text(body: &Value) -> String {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message" && i["role"] == "user")
        .map(|i| {
            let mut t = parts_text(&i["content"]);
            t.push('\n');
            t
        })
        .collect()
}

/// The outputs that end a Responses conversation (after the model's last calls), as
/// (call id, text, refused by a hook): a command's output without Codex's own lines about it
/// (chunk, wall time, exit code, token count), as Claude Code's tool result holds it alone.
pub(crate) fn tool_results(body: &Value) -> Vec<(String, String, bool)> {
    let mut out: Vec<(String, String, bool)> = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .skip_while(|i| i["type"] == "message" && i["role"] != "assistant")
        .take_while(|i| i["type"] == "function_call_output" || i["type"] == "function_call")
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            let text = match &i["output"] {
                v @ (Value::String(_) | Value::Array(_)) => parts_text(v),
                other => other.to_string(),
            };
            let blocked = text.starts_with("Command blocked by PreToolUse hook");
            let text = match text.split_once("Output:\n") {
                Some((_, out)) => out.to_owned(),
                None => text,
            };
            (
                i["call_id"].as_str().unwrap_or("").to_owned(),
                text,
                blocked,
            )
        })
        .collect();
    out.reverse();
    out
}

/// The working folder Codex's environment note names (`<cwd>...</cwd>`).
pub(crate) fn cwd_of(body: &Value) -> String {
    let text = user_text(body);
    text.split("<cwd>")
        .nth(1)
        .and_then(|rest| rest.split("</cwd>").next())
        .unwrap_or_default()
        .to_owned()
}

/// The items of the conversation the model wrote (its calls and its messages).
fn model_items(body: &Value) -> usize {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| {
            matches!(
                i["type"].as_str(),
                Some("function_call" | "custom_tool_call" | "local_shell_call")
            ) || (i["type"] == "message" && i["role"] == "assistant")
        })
        .count()
}

/// The turn that comes after `written` items of the model's: the first whose blocks start
/// past them.
fn turn_after(turns: &[Vec<Block>], written: usize) -> usize {
    let mut seen = 0;
    for (i, t) in turns.iter().enumerate() {
        if seen >= written {
            return i;
        }
        seen += t.len().max(1);
    }
    turns.len().max(written.saturating_sub(seen) + turns.len())
}

/// `apply_patch` adding `path` with `content` (Codex's way of writing a file).
fn add_file_patch(path: &str, content: &str) -> String {
    let mut patch = format!("apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: {path}\n");
    for line in content.lines() {
        patch.push('+');
        patch.push_str(line);
        patch.push('\n');
    }
    patch.push_str("*** End Patch\nPATCH");
    patch
}

/// One block as a Responses output item.
fn item(block: &Block, id: &str, cwd: &str) -> Value {
    match block {
        Block::Text(t) => json!({
            "type": "message", "role": "assistant", "id": format!("msg_{id}"),
            "content": [{"type": "output_text", "text": t, "annotations": []}],
        }),
        Block::Tool(name, input) => {
            // `{{after:...}}` reads Claude Code's conversation only.
            let input = fill(input, cwd, "");
            let call = |name: &str, namespace: Option<&str>, args: Value| {
                let mut v = json!({
                    "type": "function_call", "id": format!("fc_{id}"), "call_id": format!("toolu_fake_{id}"),
                    "name": name, "arguments": args.to_string(),
                });
                if let Some(ns) = namespace {
                    v["namespace"] = json!(ns);
                }
                v
            };
            match name.as_str() {
                "Bash" => call(
                    "exec_command",
                    None,
                    json!({"cmd": input["command"].as_str().unwrap_or("")}),
                ),
                "Write" => {
                    let path = input["file_path"].as_str().unwrap_or("");
                    let path = path
                        .strip_prefix(cwd)
                        .map(|p| p.trim_start_matches('/'))
                        .unwrap_or(path);
                    call(
                        "exec_command",
                        None,
                        json!({"cmd": add_file_patch(path, input["content"].as_str().unwrap_or(""))}),
                    )
                }
                other => match other.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
                    Some((server, tool)) => call(tool, Some(&format!("mcp__{server}")), input),
                    None => json!({
                        "type": "message", "role": "assistant", "id": format!("msg_{id}"),
                        "content": [{"type": "output_text", "text": format!("(the fake has no Codex form of {other})"), "annotations": []}],
                    }),
                },
            }
        }
    }
}

/// Answers one `POST /v1/responses` from the scripts.
pub(crate) fn answer(
    state: &Mutex<State>,
    body: &Bytes,
    session: Option<String>,
    api_key: Option<String>,
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let text = user_text(&body);
    let cwd = cwd_of(&body);
    let written = model_items(&body);
    let (turn, blocks) = {
        let mut s = lock(state);
        let found = s
            .scripts
            .iter()
            .find(|(marker, _)| text.contains(marker.as_str()))
            .cloned();
        let (name, turn, blocks) = match found {
            Some((marker, turns)) => {
                let turn = turn_after(&turns, written);
                let blocks = turns
                    .get(turn)
                    .cloned()
                    .unwrap_or_else(|| vec![Block::Text("Done.".into())]);
                (Some(marker), turn, blocks)
            }
            None => (None, written, vec![Block::Text("Done.".into())]),
        };
        s.requests.push(Request {
            script: name,
            turn,
            body: body.clone(),
            api_key,
            session,
        });
        (turn, blocks)
    };
    let mut events = String::new();
    let mut event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        events.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    let id = format!("resp_fake_{turn}_{written}");
    event("response.created", json!({"response": {"id": id}}));
    for (i, b) in blocks.iter().enumerate() {
        event(
            "response.output_item.done",
            // The call ids are Claude's fake's (`toolu_fake_<turn>_<block>`): one scenario reads
            // either CLI's results by them.
            json!({"output_index": i, "item": item(b, &format!("{turn}_{i}"), &cwd)}),
        );
    }
    event(
        "response.completed",
        json!({"response": {"id": id, "usage": {
            "input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 120,
        }}}),
    );
    (
        StatusCode::OK,
        [("content-type", "text/event-stream")],
        events,
    )
        .into_response()
}

/// The pinned Codex CLI: `CAPSID_CODEX_BIN`, else the one `scripts/test.sh` installs under
/// `.tools/codex`. `None` when neither is there.
pub fn codex_bin() -> Option<PathBuf> {
    pinned_cli("CAPSID_CODEX_BIN", "codex", "codex")
}

/// The pinned CLI, or `None` after saying the case did not run; panics in CI, where it must.
pub fn require_codex(case: &str) -> Option<PathBuf> {
    require_pinned(codex_bin(), case, "Codex", "codex", "CAPSID_CODEX_BIN")
}

/// The environment the real Codex runs in against `fake`: a fresh `HOME` and `TMPDIR` under
/// `dir`, the fake as the upstream of the driver's model door (the driver holds the key; the
/// agent gets a door token), the CLI's folder first on `PATH`, and the model the tests price.
pub fn codex_env(fake: &FakeClaude, bin: &Path, dir: &Path) -> Vec<(String, String)> {
    let home = dir.join("codex-home");
    let tmp = dir.join("codex-tmp");
    std::fs::create_dir_all(&home).expect("a HOME for Codex");
    std::fs::create_dir_all(&tmp).expect("a TMPDIR for Codex");
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
        ("OPENAI_BASE_URL", format!("{}/v1", fake.url)),
        ("OPENAI_API_KEY", CODEX_UPSTREAM_KEY.to_owned()),
        ("CAPSID_AGENT_ARGS", format!("-m {CODEX_MODEL}")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_claude::{bash, text};

    #[test]
    fn the_turn_follows_the_items_the_model_wrote() {
        let turns = vec![
            vec![bash("a")],
            vec![text("x"), bash("b")],
            vec![text("end")],
        ];
        assert_eq!(turn_after(&turns, 0), 0);
        assert_eq!(turn_after(&turns, 1), 1);
        assert_eq!(turn_after(&turns, 3), 2);
        assert!(turn_after(&turns, 4) >= 3);
    }

    #[test]
    fn blocks_become_codex_items() {
        let b = item(&bash("git status"), "1", "/w");
        assert_eq!(b["name"], "exec_command");
        assert_eq!(b["arguments"], json!({"cmd": "git status"}).to_string());
        let m = item(
            &Block::Tool(
                "mcp__capsid__checkpoint".into(),
                json!({"status": "working"}),
            ),
            "2",
            "/w",
        );
        assert_eq!(
            (m["name"].as_str(), m["namespace"].as_str()),
            (Some("checkpoint"), Some("mcp__capsid"))
        );
        let w = item(
            &Block::Tool(
                "Write".into(),
                json!({"file_path": "{{cwd}}/a.txt", "content": "x\ny\n"}),
            ),
            "3",
            "/w",
        );
        let args: Value = serde_json::from_str(w["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            args["cmd"],
            "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: a.txt\n+x\n+y\n*** End Patch\nPATCH"
        );
    }
}
