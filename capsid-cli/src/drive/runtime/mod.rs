//! What differs between agent CLIs, behind one trait: the files a CLI reads (Capsid's hooks
//! and MCP server), the command line that starts or resumes a session, the variables that
//! point it at the run's model door, where its model API is by default and which of the
//! driver's variables hold that API's key, its own switches a box passes through, and how its
//! output reads (the session's report, a line of progress per tool call). Everything else
//! about a run (the box, the doors, the gateway, the ledger, the verdict, questions and
//! progress checkpoints) is the driver's, written once.
//!
//! Two runtimes: Claude Code ([`claude::ClaudeCode`]) and OpenAI's Codex CLI
//! ([`codex::Codex`]). Which one runs a job: the job's `runtime`, else `capsid drive
//! --runtime`, else the namespace's runner setting, else Claude Code.

mod claude;
mod codex;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use capsid_core::drive::runtime::RuntimeKind;
use capsid_core::drive::stream::SessionReport;

use super::agent::RunFiles;

pub(crate) use claude::CLAUDE_CODE;
pub(crate) use codex::CODEX;

/// An agent CLI, as the driver runs it.
pub(crate) trait Runtime: Send + Sync + std::fmt::Debug {
    /// Which one it is.
    fn kind(&self) -> RuntimeKind;

    /// Its name on a job's record (`claude-code`, `codex`).
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The command that runs it when neither `--agent-command` nor the namespace names one.
    fn default_command(&self) -> &'static str;

    /// Where its model API is and which of the driver's variables hold that API's key.
    fn model_defaults(&self) -> ModelDefaults;

    /// Writes the run's files into `dir` (private to the driver, or the box's `HOME`): Capsid's
    /// hooks and the MCP servers, Capsid's at `mcp_url` (the server, or the box's MCP door)
    /// with the run credential taken from the agent's environment, never written.
    fn write_files(&self, dir: PathBuf, mcp_url: &str) -> Result<RunFiles>;

    /// The variables that point the CLI at the files [`Runtime::write_files`] wrote.
    fn files_env(&self, _files: &RunFiles) -> Vec<(String, String)> {
        Vec::new()
    }

    /// `command` (the configured agent command and its extra arguments) with what this CLI
    /// needs to load the run's files, and to resume `resume` when given. The job's text
    /// arrives on standard input.
    fn command_line(&self, command: &str, files: &RunFiles, resume: Option<&str>) -> String;

    /// The arguments that ask the CLI for `model` (a role's model).
    fn model_args(&self, model: &str) -> String;

    /// `args` (the operator's extra arguments) without the ones that choose a model: a job's
    /// role names its own, which is more specific than the driver's default.
    fn without_model(&self, args: &str) -> String;

    /// The variables that make the CLI call the run's model door at `url` with the job's
    /// `token` (none: the agent's own login passes through the door).
    fn model_env(&self, url: &str, token: Option<&str>) -> Vec<(String, String)>;

    /// The driver's own variables a boxed CLI still needs (its offline and behaviour
    /// switches); never a credential.
    fn box_env(&self) -> Vec<(String, String)>;

    /// The CLI's behaviour switches the driver sets for every session, boxed or not, unless
    /// the operator's environment already sets them.
    fn session_env(&self) -> Vec<(String, String)>;

    /// Why this CLI may have skipped the hooks with `command`, when the command shows it.
    fn hooks_hint(&self, _command: &str) -> Option<String> {
        None
    }

    /// What the session's output says it did (display and hint, never evidence).
    fn report(&self, stdout: &str) -> Option<SessionReport>;

    /// A line of progress for one line of the CLI's output, when it says something worth one.
    fn progress(&self, line: &str, started: Instant) -> Option<String>;
}

/// How the upstream takes a key found in one of the driver's variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UpstreamKey {
    /// Sent as `x-api-key` (Anthropic's API keys).
    ApiKey,
    /// Sent as `authorization: Bearer` (OpenAI's keys, Anthropic's auth tokens).
    Bearer,
}

/// A runtime's model API, as the driver finds it when no flag names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModelDefaults {
    /// The variable that may name the upstream instead (`ANTHROPIC_BASE_URL`).
    pub base_url_var: &'static str,
    /// The public API.
    pub upstream: &'static str,
    /// The variables that may hold the upstream key, in order, and how each is sent.
    pub keys: &'static [(&'static str, UpstreamKey)],
    /// The variables the agent must never see (the keys, and the CLI's own login token).
    pub withheld: &'static [&'static str],
    /// Whether the agent's own login may pass through the door when no key is configured.
    pub own_login: bool,
}

/// The runtime of `kind`.
pub(crate) fn of(kind: RuntimeKind) -> &'static dyn Runtime {
    match kind {
        RuntimeKind::ClaudeCode => &CLAUDE_CODE,
        RuntimeKind::Codex => &CODEX,
    }
}

/// `[00:07]`: the time since `started`, as a progress line begins.
fn elapsed(started: Instant) -> String {
    let s = started.elapsed().as_secs();
    format!("[{:02}:{:02}]", s / 60, s % 60)
}

/// A command or input shortened to one line of at most 100 characters.
fn short(text: &str) -> String {
    text.replace('\n', " ").chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_runtime() {
        for kind in capsid_core::drive::runtime::RUNTIMES {
            assert_eq!(of(kind).kind(), kind);
            assert_eq!(of(kind).name(), kind.name());
        }
        assert_eq!(short("a\nb"), "a b");
        assert_eq!(short(&"x".repeat(300)).len(), 100);
    }
}

/// `args` (whitespace-separated) without each of `options` and its value (`--model X`,
/// `--model=X`), and without each `-c`/`--config` whose value starts with one of `configs`
/// (`-c model=X`).
pub(crate) fn strip_options(args: &str, options: &[&str], configs: &[&str]) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut kept = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let config = (w == "-c" || w == "--config")
            && words
                .get(i + 1)
                .is_some_and(|v| configs.iter().any(|c| v.starts_with(c)));
        if options.contains(&w) || config {
            i += 2;
            continue;
        }
        if options.iter().any(|o| w.starts_with(&format!("{o}="))) {
            i += 1;
            continue;
        }
        kept.push(w);
        i += 1;
    }
    kept.join(" ")
}

#[cfg(test)]
mod model_tests {
    use super::strip_options;

    #[test]
    fn a_roles_model_replaces_the_operators() {
        let claude = |a| strip_options(a, &["--model"], &[]);
        assert_eq!(claude("--model opus --verbose"), "--verbose");
        assert_eq!(claude("--verbose --model=opus"), "--verbose");
        assert_eq!(claude("--verbose"), "--verbose");
        let codex = |a| strip_options(a, &["--model", "-m"], &["model="]);
        assert_eq!(codex("-m gpt-5-codex --json"), "--json");
        assert_eq!(codex("-c model=gpt-5 -c x=1"), "-c x=1");
        assert_eq!(codex("--config model=o3 --model=o4 -s ro"), "-s ro");
    }
}
