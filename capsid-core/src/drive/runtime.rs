//! Which agent CLI runs a job: a runtime's name as a job, a namespace's runner settings and
//! `capsid drive --runtime` spell it, and what each CLI's event stream says about a session
//! (Claude Code's `stream-json` is read by [`super::stream::read_report`]; Codex's `exec --json`
//! JSONL by [`read_codex_report`]). What a CLI *says* is display and a hint (the session to
//! resume), never evidence: the driver's own gates and the model door decide.

use serde_json::Value;

use super::stream::SessionReport;

/// An agent CLI Capsid can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeKind {
    /// Anthropic's Claude Code (`claude -p --output-format stream-json`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`codex exec --json`).
    Codex,
}

/// Every runtime, in the order `--help` and refusals name them.
pub const RUNTIMES: [RuntimeKind; 2] = [RuntimeKind::ClaudeCode, RuntimeKind::Codex];

impl RuntimeKind {
    /// Its name on a job's record and in settings: `claude-code`, `codex`.
    pub fn name(self) -> &'static str {
        match self {
            RuntimeKind::ClaudeCode => "claude-code",
            RuntimeKind::Codex => "codex",
        }
    }

    /// Where in a project this CLI loads skills from (`<dir>/<name>/SKILL.md`): Claude Code's
    /// `.claude/skills`, and the shared `.agents/skills` Codex reads.
    pub fn skills_dir(self) -> &'static str {
        match self {
            RuntimeKind::ClaudeCode => ".claude/skills",
            RuntimeKind::Codex => ".agents/skills",
        }
    }

    /// The runtime `text` names (surrounding spaces ignored, case kept: the names are
    /// lowercase), or the refusal naming the field and what it may be.
    pub fn parse(field: &str, text: &str) -> Result<RuntimeKind, String> {
        let t = text.trim();
        RUNTIMES.into_iter().find(|r| r.name() == t).ok_or_else(|| {
            format!(
                "{field}: {t:?} is not a runtime Capsid drives; use one of {}",
                RUNTIMES.map(RuntimeKind::name).join(", ")
            )
        })
    }
}

/// Why a driver that runs `runs` cannot take a job asking for `asked` (`None`: it can, or the
/// job asks for no runtime).
pub fn cannot_run(asked: Option<&str>, runs: &[RuntimeKind]) -> Option<String> {
    let asked = asked?;
    if runs.iter().any(|r| r.name() == asked) {
        return None;
    }
    let names: Vec<&str> = runs.iter().map(|r| r.name()).collect();
    Some(format!(
        "the job asks for the {asked} runtime, and this driver runs {}",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    ))
}

impl std::fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a `codex exec --json` session printed, read as Claude Code's report is: the thread
/// (what `codex exec resume` takes) from `thread.started`, the last `agent_message` as the
/// final text, one turn per `turn.completed`, an error when a turn failed or none completed.
/// Codex prints no cost (the model door counts it). `None` when no line is Codex's.
pub fn read_codex_report(stdout: &str) -> Option<SessionReport> {
    let mut report: Option<SessionReport> = None;
    let mut completed = 0u32;
    let mut failed = false;
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        let r = || SessionReport::default();
        match v.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                let r = report.get_or_insert_with(r);
                if r.session_id.is_none() {
                    r.session_id = v["thread_id"].as_str().map(str::to_owned);
                }
            }
            Some("turn.completed") => {
                report.get_or_insert_with(r);
                completed += 1;
            }
            Some("turn.failed") => {
                report.get_or_insert_with(r);
                failed = true;
            }
            Some("item.completed") if v["item"]["type"] == "agent_message" => {
                report.get_or_insert_with(r).result = v["item"]["text"].as_str().map(str::to_owned);
            }
            _ => {}
        }
    }
    let mut report = report?;
    report.turns = Some(completed);
    report.is_error = failed || completed == 0;
    report.subtype = Some(if report.is_error { "error" } else { "success" }.to_owned());
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_is_named_exactly() {
        assert_eq!(
            RuntimeKind::parse("runtime", " codex "),
            Ok(RuntimeKind::Codex)
        );
        assert_eq!(
            RuntimeKind::parse("runtime", "claude-code"),
            Ok(RuntimeKind::ClaudeCode)
        );
        let why = RuntimeKind::parse("--runtime", "Codex").unwrap_err();
        assert_eq!(
            why,
            "--runtime: \"Codex\" is not a runtime Capsid drives; use one of claude-code, codex"
        );
        assert!(RuntimeKind::parse("runtime", "").is_err());
        assert_eq!(RuntimeKind::Codex.to_string(), "codex");
        assert_eq!(RuntimeKind::ClaudeCode.to_string(), "claude-code");
    }

    #[test]
    fn a_driver_takes_jobs_asking_for_a_runtime_it_runs_or_for_none() {
        let both = [RuntimeKind::ClaudeCode, RuntimeKind::Codex];
        assert_eq!(cannot_run(None, &[]), None);
        assert_eq!(cannot_run(Some("codex"), &both), None);
        assert_eq!(
            cannot_run(Some("claude-code"), &[RuntimeKind::ClaudeCode]),
            None
        );
        assert_eq!(
            cannot_run(Some("codex"), &[RuntimeKind::ClaudeCode]).as_deref(),
            Some("the job asks for the codex runtime, and this driver runs claude-code")
        );
        assert_eq!(
            cannot_run(Some("codex"), &[]).as_deref(),
            Some("the job asks for the codex runtime, and this driver runs none")
        );
        assert_eq!(
            cannot_run(Some("aider"), &both).as_deref(),
            Some("the job asks for the aider runtime, and this driver runs claude-code, codex")
        );
    }

    #[test]
    fn codex_events_give_the_thread_the_last_message_and_the_turns() {
        let out = concat!(
            "WARNING: not json\n",
            "{\"type\":\"thread.started\",\"thread_id\":\"t-1\"}\n",
            "{\"type\":\"turn.started\"}\n",
            "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"first\"}}\n",
            "{\"type\":\"item.completed\",\"item\":{\"type\":\"command_execution\",\"exit_code\":0}}\n",
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":3}}\n",
            "{\"type\":\"thread.started\",\"thread_id\":\"t-2\"}\n",
            "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"All done.\"}}\n",
            "{\"type\":\"turn.completed\",\"usage\":{}}\n",
        );
        let r = read_codex_report(out).expect("a report");
        assert_eq!(r.session_id.as_deref(), Some("t-1"));
        assert_eq!(r.result.as_deref(), Some("All done."));
        assert_eq!(r.turns, Some(2));
        assert!(!r.is_error);
        assert_eq!(r.subtype.as_deref(), Some("success"));
        assert_eq!(r.cost_usd, None);
    }

    #[test]
    fn a_failed_or_unfinished_turn_is_an_error_and_plain_output_no_report() {
        let failed = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.completed\"}\n{\"type\":\"turn.failed\",\"error\":{}}";
        let r = read_codex_report(failed).expect("a report");
        assert!(r.is_error);
        assert_eq!(r.subtype.as_deref(), Some("error"));
        assert_eq!(r.turns, Some(1));
        let died = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}";
        let r = read_codex_report(died).expect("a report");
        assert!(r.is_error);
        assert_eq!(r.turns, Some(0));
        assert_eq!(read_codex_report("hello\n{\"type\":\"other\"}\n"), None);
    }
}
