//! OpenAI's Codex CLI (`codex exec --json`), run as Claude Code is: the job's text on standard
//! input, its model behind the run's metered door (OpenAI's Responses API), Capsid's MCP
//! server and hooks in a `config.toml` of the run's own (`CODEX_HOME`), rewritten before every
//! session so an edit made in one does not outlive it.
//!
//! What differs from Claude Code, measured with 0.171.0 offline: the hooks take Claude Code's
//! field names (a shell command is `tool_name: "Bash"`, an edit an `apply_patch` command), a
//! `deny` answer holds, and **without hook trust every hook is skipped silently**, so the
//! default command trusts them for the invocation (`--dangerously-bypass-hook-trust`) and the
//! driver takes no verdict from a session none of its hooks reported from. Codex's own sandbox
//! is off: the box is the sandbox. A custom provider's address is not read from the
//! environment, so the door's comes on the command line (`-c`), expanded by the shell from a
//! variable; the door's token is the provider's `env_key`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use capsid_core::drive::hooks::shell_quote;
use capsid_core::drive::runtime::{RuntimeKind, read_codex_report};
use capsid_core::drive::settings::HOOK_TIMEOUT_SECS;
use capsid_core::drive::stream::SessionReport;
use serde_json::Value;

use super::super::agent::{RunFiles, restrict};
use super::{ModelDefaults, Runtime, UpstreamKey};

/// Codex in `exec` mode, as the driver runs it.
#[derive(Debug)]
pub(crate) struct Codex;

/// The one Codex runtime.
pub(crate) static CODEX: Codex = Codex;

/// The default command: JSONL events, no sandbox or approval of Codex's own (the box is the
/// sandbox; the hooks and the gateway are the gates), and the run's hooks trusted for this
/// invocation. A command without that last flag runs with every hook skipped, and its
/// sessions are never `done`.
pub(crate) const DEFAULT_COMMAND: &str = "codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --dangerously-bypass-hook-trust";

/// The flag that makes `codex exec` run the run's hooks without a trust saved for them.
const HOOK_TRUST: &str = "--dangerously-bypass-hook-trust";

/// The model provider the run's `config.toml` defines: the door.
const PROVIDER: &str = "capsid";
/// The variable holding the door's address (`<door>/v1`), expanded into `-c` by the shell.
const URL_VAR: &str = "CAPSID_MODEL_URL";
/// The variable holding the job's door token (the provider's `env_key`).
const TOKEN_VAR: &str = "CAPSID_MODEL_TOKEN";

/// A TOML basic string: JSON's escaping is TOML's.
fn toml_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// The run's `config.toml`: the door as the model provider, Capsid's MCP server with the run
/// credential from the environment, and Capsid's hooks running `program`.
fn config_toml(program: &str, mcp_url: &str) -> String {
    let mut out = format!(
        "# Written by `capsid drive` for one job's Codex sessions (CODEX_HOME), again before each\n\
         # session. The model door's address comes on the command line, its token and the run\n\
         # credential from the environment: no secret is written here.\n\
         model_provider = \"{PROVIDER}\"\n\
         approval_policy = \"never\"\n\
         sandbox_mode = \"danger-full-access\"\n\
         check_for_update_on_startup = false\n\n\
         [model_providers.{PROVIDER}]\n\
         name = \"Capsid's model door\"\n\
         base_url = \"http://127.0.0.1:9/v1\"\n\
         env_key = \"{TOKEN_VAR}\"\n\
         wire_api = \"responses\"\n\n\
         [mcp_servers.capsid]\n\
         url = {}\n\
         bearer_token_env_var = \"CAPSID_RUN_CREDENTIAL\"\n",
        toml_str(mcp_url)
    );
    for (event, sub) in [
        ("SessionStart", "session-start"),
        ("PreToolUse", "pre-tool-use"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
    ] {
        let command = format!("{} hook {sub}", shell_quote(program));
        out.push_str(&format!(
            "\n[[hooks.{event}]]\n[[hooks.{event}.hooks]]\ntype = \"command\"\ncommand = {}\ntimeout = {HOOK_TIMEOUT_SECS}\n",
            toml_str(&command)
        ));
    }
    out
}

impl Runtime for Codex {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Codex
    }

    fn default_command(&self) -> &'static str {
        DEFAULT_COMMAND
    }

    fn model_defaults(&self) -> ModelDefaults {
        ModelDefaults {
            base_url_var: "OPENAI_BASE_URL",
            upstream: "https://api.openai.com",
            keys: &[
                ("OPENAI_API_KEY", UpstreamKey::Bearer),
                ("CODEX_API_KEY", UpstreamKey::Bearer),
            ],
            withheld: &["OPENAI_API_KEY", "CODEX_API_KEY"],
            // Codex's own login lives in the user's CODEX_HOME, which a run does not read.
            own_login: false,
        }
    }

    fn write_files(&self, dir: PathBuf, mcp_url: &str) -> Result<RunFiles> {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        restrict(&dir)?;
        let program = std::env::current_exe().context("finding the capsid binary's own path")?;
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            config_toml(&program.display().to_string(), mcp_url),
        )
        .with_context(|| format!("writing {}", config.display()))?;
        let files = RunFiles {
            settings: config.clone(),
            mcp: config,
            hooks_report: dir.join("hooks-ran"),
            dir,
        };
        let _ = std::fs::remove_file(&files.hooks_report);
        Ok(files)
    }

    fn files_env(&self, files: &RunFiles) -> Vec<(String, String)> {
        vec![("CODEX_HOME".to_owned(), files.dir.display().to_string())]
    }

    fn command_line(&self, command: &str, _files: &RunFiles, resume: Option<&str>) -> String {
        let mut c =
            format!("{command} -c \"model_providers.{PROVIDER}.base_url=\\\"${URL_VAR}\\\"\"");
        if let Some(s) = resume {
            c.push_str(&format!(" resume {}", shell_quote(s)));
        }
        c.push_str(" -");
        c
    }

    fn model_args(&self, model: &str) -> String {
        format!("--model {}", shell_quote(model))
    }

    fn without_model(&self, args: &str) -> String {
        super::strip_options(args, &["--model", "-m"], &["model="])
    }

    fn model_env(&self, url: &str, token: Option<&str>) -> Vec<(String, String)> {
        let mut env = vec![(
            URL_VAR.to_owned(),
            format!("{}/v1", url.trim_end_matches('/')),
        )];
        if let Some(t) = token {
            env.push((TOKEN_VAR.to_owned(), t.to_owned()));
        }
        env
    }

    fn box_env(&self) -> Vec<(String, String)> {
        std::env::vars()
            .filter(|(k, _)| k == "RUST_LOG" || k == "NO_COLOR")
            .collect()
    }

    fn session_env(&self) -> Vec<(String, String)> {
        vec![("CAPSID_RUNTIME".to_owned(), self.name().to_owned())]
    }

    fn hooks_hint(&self, command: &str) -> Option<String> {
        (!command.contains(HOOK_TRUST)).then(|| {
            format!(
                "Codex skips every hook it does not trust, silently: the agent command needs {HOOK_TRUST} (the default command has it)"
            )
        })
    }

    fn report(&self, stdout: &str) -> Option<SessionReport> {
        read_codex_report(stdout)
    }

    fn progress(&self, line: &str, started: Instant) -> Option<String> {
        let v: Value = serde_json::from_str(line.trim()).ok()?;
        let at = super::elapsed(started);
        let item = &v["item"];
        match (v["type"].as_str()?, item["type"].as_str()) {
            ("item.started", Some("command_execution")) => {
                let cmd = item["command"].as_str().unwrap_or("");
                // Codex runs each command as `/bin/bash -lc '<command>'`.
                // (in single quotes, or double ones when the command holds a single quote).
                let cmd = cmd
                    .strip_prefix("/bin/bash -lc ")
                    .map(|c| {
                        c.strip_prefix('\'')
                            .and_then(|c| c.strip_suffix('\''))
                            .or_else(|| c.strip_prefix('"').and_then(|c| c.strip_suffix('"')))
                            .unwrap_or(c)
                    })
                    .unwrap_or(cmd);
                Some(format!("{at} Bash {}", super::short(cmd)))
            }
            ("item.started", Some("file_change")) => {
                let paths: Vec<&str> = item["changes"]
                    .as_array()?
                    .iter()
                    .filter_map(|c| c["path"].as_str())
                    .collect();
                Some(format!("{at} Edit {}", super::short(&paths.join(", "))))
            }
            ("item.started", Some("mcp_tool_call")) => Some(format!(
                "{at} mcp__{}__{}",
                item["server"].as_str().unwrap_or("?"),
                item["tool"].as_str().unwrap_or("?")
            )),
            ("turn.completed", _) => Some(format!(
                "{at} the agent finished a turn: {} tokens in, {} out",
                v["usage"]["input_tokens"].as_u64().unwrap_or(0),
                v["usage"]["output_tokens"].as_u64().unwrap_or(0)
            )),
            ("turn.failed", _) => Some(format!(
                "{at} the agent's turn failed: {}",
                super::short(
                    &v["error"]["message"]
                        .as_str()
                        .map_or_else(|| v["error"].to_string(), str::to_owned)
                )
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> RunFiles {
        RunFiles {
            dir: PathBuf::from("/r"),
            settings: PathBuf::from("/r/config.toml"),
            mcp: PathBuf::from("/r/config.toml"),
            hooks_report: PathBuf::from("/r/hooks-ran"),
        }
    }

    #[test]
    fn codex_reads_the_door_from_a_variable_and_resumes_a_thread() {
        assert_eq!(
            CODEX.command_line("codex exec --json", &files(), None),
            "codex exec --json -c \"model_providers.capsid.base_url=\\\"$CAPSID_MODEL_URL\\\"\" -"
        );
        assert_eq!(
            CODEX.command_line("codex exec", &files(), Some("t 1")),
            "codex exec -c \"model_providers.capsid.base_url=\\\"$CAPSID_MODEL_URL\\\"\" resume 't 1' -"
        );
        assert_eq!(
            CODEX.model_env("http://127.0.0.1:7401/", Some("tok")),
            vec![
                (URL_VAR.to_owned(), "http://127.0.0.1:7401/v1".to_owned()),
                (TOKEN_VAR.to_owned(), "tok".to_owned()),
            ]
        );
        assert_eq!(CODEX.model_env("u", None).len(), 1);
        assert_eq!(
            CODEX.files_env(&files()),
            vec![("CODEX_HOME".to_owned(), "/r".to_owned())]
        );
        assert!(CODEX.default_command().contains(HOOK_TRUST));
        assert_eq!(CODEX.hooks_hint(DEFAULT_COMMAND), None);
        assert!(
            CODEX
                .hooks_hint("codex exec --json")
                .is_some_and(|h| h.contains(HOOK_TRUST))
        );
        assert!(!CODEX.model_defaults().own_login);
    }

    #[test]
    fn the_config_names_the_door_the_mcp_server_and_every_hook_and_no_secret() {
        let text = config_toml("/opt/my capsid", "http://127.0.0.1:7/ops/mcp");
        assert!(text.contains("model_provider = \"capsid\""), "{text}");
        assert!(text.contains("env_key = \"CAPSID_MODEL_TOKEN\""), "{text}");
        assert!(
            text.contains("url = \"http://127.0.0.1:7/ops/mcp\""),
            "{text}"
        );
        assert!(
            text.contains("bearer_token_env_var = \"CAPSID_RUN_CREDENTIAL\""),
            "{text}"
        );
        for (event, sub) in [
            ("SessionStart", "session-start"),
            ("PreToolUse", "pre-tool-use"),
            ("Stop", "stop"),
            ("SessionEnd", "session-end"),
        ] {
            assert!(text.contains(&format!("[[hooks.{event}.hooks]]")), "{text}");
            assert!(
                text.contains(&format!("command = \"'/opt/my capsid' hook {sub}\"")),
                "{text}"
            );
        }
    }

    #[test]
    fn codex_progress_names_commands_edits_tools_and_turns() {
        let at = Instant::now();
        let line = |v: serde_json::Value| CODEX.progress(&v.to_string(), at);
        assert_eq!(
            line(serde_json::json!({"type": "item.started", "item": {"type": "command_execution", "command": "/bin/bash -lc 'git push origin HEAD'"}})).as_deref(),
            Some("[00:00] Bash git push origin HEAD")
        );
        assert_eq!(
            line(serde_json::json!({"type": "item.started", "item": {"type": "command_execution", "command": "/bin/bash -lc \"git commit -m 'x'\""}})).as_deref(),
            Some("[00:00] Bash git commit -m 'x'")
        );
        assert_eq!(
            line(serde_json::json!({"type": "item.started", "item": {"type": "file_change", "changes": [{"path": "/w/a.txt"}, {"path": "/w/b.txt"}]}})).as_deref(),
            Some("[00:00] Edit /w/a.txt, /w/b.txt")
        );
        assert_eq!(
            line(serde_json::json!({"type": "item.started", "item": {"type": "mcp_tool_call", "server": "capsid", "tool": "checkpoint"}})).as_deref(),
            Some("[00:00] mcp__capsid__checkpoint")
        );
        assert_eq!(
            line(serde_json::json!({"type": "turn.completed", "usage": {"input_tokens": 300, "output_tokens": 60}})).as_deref(),
            Some("[00:00] the agent finished a turn: 300 tokens in, 60 out")
        );
        assert_eq!(
            line(
                serde_json::json!({"type": "item.completed", "item": {"type": "command_execution"}})
            ),
            None
        );
        assert_eq!(CODEX.progress("not json", at), None);
    }
}
