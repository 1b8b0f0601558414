//! `capsid hook permission-prompt`: the tool Claude Code asks, in a driven headless run, when a
//! tool call would need a person at the keyboard (`--permission-prompt-tool
//! mcp__capsid-driver__permission_prompt`). A stdio MCP server (JSON-RPC, one message a line)
//! with that one tool; its answer is always a refusal that says where a person is reached
//! instead. Naming the tool is also what makes Claude Code offer `AskUserQuestion` in `-p`,
//! whose call Capsid's PreToolUse hook defers to a person before any permission prompt.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};

/// The tool's name (Claude Code calls it `mcp__capsid-driver__permission_prompt`).
const TOOL: &str = "permission_prompt";

/// The refusal every permission prompt gets.
const REFUSAL: &str = "No person is at the keyboard of this run: Capsid's driver refuses what would need one. Work inside the worktree; ask a question with AskUserQuestion (Capsid delivers it to a person and resumes you with the answer), or stop and leave the step for a human.";

/// The answer to one JSON-RPC message (`None` for a notification).
fn answer(msg: &Value) -> Option<Value> {
    let id = msg.get("id")?.clone();
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "capsid-driver", "version": env!("CARGO_PKG_VERSION")},
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": [{
            "name": TOOL,
            "description": "Capsid's driver answers Claude Code's permission prompts in a headless run.",
            "inputSchema": {"type": "object", "properties": {
                "tool_name": {"type": "string"},
                "input": {"type": "object"},
                "tool_use_id": {"type": "string"}
            }},
        }]}),
        "tools/call" if msg["params"]["name"] == TOOL => json!({
            "content": [{"type": "text", "text": json!({"behavior": "deny", "message": REFUSAL}).to_string()}],
        }),
        "tools/call" => {
            return Some(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": format!("no tool {} (this server has {TOOL} only)", msg["params"]["name"])}}),
            );
        }
        other => {
            return Some(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method {other} is not served here")}}),
            );
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Serves stdin to stdout until stdin closes.
pub(super) async fn serve() -> Result<ExitCode> {
    use std::io::{BufRead as _, Write as _};
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = line.context("reading a message")?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(msg) => answer(&msg),
            Err(e) => Some(
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("not JSON: {e}")}}),
            ),
        };
        if let Some(r) = reply {
            writeln!(out, "{r}")?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_lists_one_tool_refuses_every_prompt_and_ignores_notifications() {
        let init = answer(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})).expect("reply");
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
        let list =
            answer(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).expect("reply");
        assert_eq!(list["result"]["tools"][0]["name"], TOOL);
        let call = answer(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": TOOL, "arguments": {"tool_name": "Bash"}}})).expect("reply");
        let text: Value =
            serde_json::from_str(call["result"]["content"][0]["text"].as_str().expect("text"))
                .expect("json");
        assert_eq!(text["behavior"], "deny");
        assert_eq!(
            answer(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            None
        );
        assert_eq!(
            answer(&json!({"jsonrpc": "2.0", "id": 4, "method": "x"})).expect("reply")["error"]["code"],
            -32601
        );
    }
}
