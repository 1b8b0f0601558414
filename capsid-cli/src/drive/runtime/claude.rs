//! Claude Code in headless mode (`claude -p --output-format stream-json`): Capsid's hooks as
//! `--settings`, the MCP servers as `--mcp-config`, the permission-prompt tool, `--resume`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use capsid_core::drive::hooks::shell_quote;
use capsid_core::drive::settings::merge_hooks;
use capsid_core::drive::stream::{SessionReport, read_report};
use serde_json::{Value, json};

use capsid_core::drive::runtime::RuntimeKind;

use super::super::agent::{PERMISSION_PROMPT_TOOL, RunFiles, restrict, write};
use super::{ModelDefaults, Runtime, UpstreamKey};

/// Claude Code in headless mode (`claude -p --output-format stream-json`): Capsid's hooks as
/// `--settings`, the MCP servers as `--mcp-config`, the permission-prompt tool, `--resume`.
#[derive(Debug)]
pub(crate) struct ClaudeCode;

/// The default agent: Claude Code in headless mode, reporting as stream-json, allowed to edit,
/// commit and call Capsid's tools without a person at the keyboard. The permission mode does
/// not loosen the gates: a PreToolUse `deny` holds under it, git's own pre-push hook runs
/// inside every push, and the driver runs the test gate itself. As root Claude Code accepts
/// the mode only with `IS_SANDBOX=1`, which the driver sets then.
pub(crate) const DEFAULT_COMMAND: &str =
    "claude -p --output-format stream-json --verbose --permission-mode bypassPermissions";

/// Claude Code's switch for deferring MCP tools behind `ToolSearch`.
const TOOL_SEARCH: &str = "ENABLE_TOOL_SEARCH";

/// The one Claude Code runtime.
pub(crate) static CLAUDE_CODE: ClaudeCode = ClaudeCode;

impl Runtime for ClaudeCode {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::ClaudeCode
    }

    fn default_command(&self) -> &'static str {
        DEFAULT_COMMAND
    }

    fn model_defaults(&self) -> ModelDefaults {
        ModelDefaults {
            base_url_var: "ANTHROPIC_BASE_URL",
            upstream: "https://api.anthropic.com",
            keys: &[
                ("ANTHROPIC_API_KEY", UpstreamKey::ApiKey),
                ("ANTHROPIC_AUTH_TOKEN", UpstreamKey::Bearer),
            ],
            withheld: &[
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "CLAUDE_CODE_OAUTH_TOKEN",
            ],
            own_login: true,
        }
    }

    fn write_files(&self, dir: PathBuf, mcp_url: &str) -> Result<RunFiles> {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        restrict(&dir)?;
        let program = std::env::current_exe().context("finding the capsid binary's own path")?;
        let program = program.display().to_string();
        let mut settings = merge_hooks(None, &program).map_err(anyhow::Error::msg)?;
        settings["hooks"]["SessionStart"] = json!([{
            "hooks": [{"type": "command", "command": format!("{} hook session-start", shell_quote(&program)), "timeout": 60}]
        }]);
        let mcp = json!({
            "mcpServers": {
                "capsid": {
                    "type": "http",
                    "url": mcp_url,
                    "headers": { "Authorization": "Bearer ${CAPSID_RUN_CREDENTIAL}" },
                },
                "capsid-driver": {
                    "type": "stdio",
                    "command": program,
                    "args": ["hook", "permission-prompt"],
                }
            }
        });
        let files = RunFiles {
            settings: dir.join("settings.json"),
            mcp: dir.join("mcp.json"),
            hooks_report: dir.join("hooks-ran"),
            dir,
        };
        write(&files.settings, &settings)?;
        write(&files.mcp, &mcp)?;
        let _ = std::fs::remove_file(&files.hooks_report);
        Ok(files)
    }

    /// Only the project's settings besides Capsid's own (`--setting-sources project`): a
    /// `settings.local.json` may say `"disableAllHooks": true`, which switches off Capsid's
    /// hooks with the rest, and Claude Code 2.1.332 reads the main checkout's from every git
    /// worktree of it, where the driver cannot strip it as it does from the job's own files.
    /// The user's settings are not loaded either (the driver refuses to start when they
    /// switch hooks off, and a driven session needs nothing of them).
    fn command_line(&self, command: &str, files: &RunFiles, resume: Option<&str>) -> String {
        let mut c = format!(
            "{command} --setting-sources project --mcp-config {} --settings {} --permission-prompt-tool {PERMISSION_PROMPT_TOOL}",
            shell_quote(&files.mcp.display().to_string()),
            shell_quote(&files.settings.display().to_string()),
        );
        if let Some(s) = resume {
            c.push_str(&format!(" --resume {}", shell_quote(s)));
        }
        c
    }

    fn model_args(&self, model: &str) -> String {
        format!("--model {}", shell_quote(model))
    }

    fn without_model(&self, args: &str) -> String {
        super::strip_options(args, &["--model"], &[])
    }

    fn model_env(&self, url: &str, token: Option<&str>) -> Vec<(String, String)> {
        let mut env = vec![("ANTHROPIC_BASE_URL".to_owned(), url.to_owned())];
        if let Some(t) = token {
            env.push(("ANTHROPIC_API_KEY".to_owned(), t.to_owned()));
        }
        env
    }

    fn box_env(&self) -> Vec<(String, String)> {
        std::env::vars()
            .filter(|(k, _)| {
                (k.starts_with("CLAUDE_CODE_") && k != "CLAUDE_CODE_OAUTH_TOKEN")
                    || k.starts_with("DISABLE_")
                    || k == "MCP_TIMEOUT"
                    || k == TOOL_SEARCH
                    || k == "ANTHROPIC_MODEL"
                    || k == "ANTHROPIC_SMALL_FAST_MODEL"
            })
            .collect()
    }

    /// Capsid's tools in the session's tool list from its first request: since 2.1.2xx Claude
    /// Code defers MCP tools behind its `ToolSearch` tool, which costs the agent a turn (and
    /// tokens) to find `checkpoint` before every first use.
    fn session_env(&self) -> Vec<(String, String)> {
        if std::env::var_os(TOOL_SEARCH).is_some() {
            return Vec::new();
        }
        vec![(TOOL_SEARCH.to_owned(), "false".to_owned())]
    }

    fn report(&self, stdout: &str) -> Option<SessionReport> {
        read_report(stdout)
    }

    fn progress(&self, line: &str, started: Instant) -> Option<String> {
        stream_json_progress(line, started)
    }
}

/// One line of progress for a stream-json line, if it says something worth a line: each tool
/// call (its name and a short input), and the session's result.
fn stream_json_progress(line: &str, started: Instant) -> Option<String> {
    let v: Value = serde_json::from_str(line.trim()).ok()?;
    let at = super::elapsed(started);
    match v["type"].as_str()? {
        "assistant" => {
            let calls: Vec<String> = v["message"]["content"]
                .as_array()?
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    let input = &b["input"];
                    let short = [
                        "command",
                        "file_path",
                        "path",
                        "pattern",
                        "url",
                        "description",
                    ]
                    .iter()
                    .find_map(|k| input[*k].as_str())
                    .map(str::to_owned)
                    .unwrap_or_else(|| input.to_string());
                    format!(
                        "{} {}",
                        b["name"].as_str().unwrap_or("tool"),
                        super::short(&short)
                    )
                })
                .collect();
            (!calls.is_empty()).then(|| format!("{at} {}", calls.join(" | ")))
        }
        "result" => Some(format!(
            "{at} the agent finished: {} after {} turn(s), ${:.4}",
            v["subtype"].as_str().unwrap_or("?"),
            v["num_turns"].as_u64().unwrap_or(0),
            v["total_cost_usd"].as_f64().unwrap_or(0.0)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_loads_the_runs_files_and_resumes_by_session() {
        let files = RunFiles {
            dir: PathBuf::from("/r"),
            settings: PathBuf::from("/r/settings.json"),
            mcp: PathBuf::from("/r/mcp file.json"),
            hooks_report: PathBuf::from("/r/hooks-ran"),
        };
        assert_eq!(
            CLAUDE_CODE.command_line("claude -p", &files, None),
            format!(
                "claude -p --setting-sources project --mcp-config '/r/mcp file.json' --settings /r/settings.json --permission-prompt-tool {PERMISSION_PROMPT_TOOL}"
            )
        );
        assert!(
            CLAUDE_CODE
                .command_line("claude -p", &files, Some("abc"))
                .ends_with(" --resume abc")
        );
        assert_eq!(
            CLAUDE_CODE.model_env("http://127.0.0.1:7401", Some("tok")),
            vec![
                (
                    "ANTHROPIC_BASE_URL".to_owned(),
                    "http://127.0.0.1:7401".to_owned()
                ),
                ("ANTHROPIC_API_KEY".to_owned(), "tok".to_owned()),
            ]
        );
        assert_eq!(CLAUDE_CODE.model_env("u", None).len(), 1);
        assert_eq!(CLAUDE_CODE.name(), "claude-code");
    }

    #[test]
    fn claude_codes_progress_names_each_tool_call_and_the_result() {
        let started = Instant::now();
        let call = json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": "cargo test\n--quiet"}},
            {"type": "tool_use", "name": "Write", "input": {"file_path": "/w/a.rs"}},
        ]}});
        assert_eq!(
            CLAUDE_CODE.progress(&call.to_string(), started).as_deref(),
            Some("[00:00] Bash cargo test --quiet | Write /w/a.rs")
        );
        let result =
            json!({"type": "result", "subtype": "success", "num_turns": 3, "total_cost_usd": 0.5});
        assert_eq!(
            CLAUDE_CODE
                .progress(&result.to_string(), started)
                .as_deref(),
            Some("[00:00] the agent finished: success after 3 turn(s), $0.5000")
        );
        assert_eq!(CLAUDE_CODE.progress("{\"type\":\"system\"}", started), None);
        assert_eq!(CLAUDE_CODE.progress("not json", started), None);
    }
}
