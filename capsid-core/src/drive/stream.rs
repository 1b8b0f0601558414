//! What an agent's output says when it is Claude Code's `--output-format stream-json` (or
//! `json`): one JSON object per line, the last of `type: "result"` carrying the session id,
//! the cost, the turn count and, for a headless session stopped by a deferred tool call,
//! `deferred_tool_use`. Any other output is simply not a session report.

use serde_json::Value;

use super::hooks::question_text;

/// The final report of a session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionReport {
    /// The session id (what `claude --resume` takes).
    pub session_id: Option<String>,
    /// `success`, `error_max_turns`, ...
    pub subtype: Option<String>,
    /// Whether the session ended in error.
    pub is_error: bool,
    /// The final text.
    pub result: Option<String>,
    /// What the session cost, in US dollars.
    pub cost_usd: Option<f64>,
    /// How many turns it took.
    pub turns: Option<u32>,
    /// The question of a deferred `AskUserQuestion`, if the session stopped on one.
    pub deferred_question: Option<String>,
    /// The Bash commands the session was refused (`permission_denials`), in order.
    pub denied_commands: Vec<String>,
    /// Every tool call the session was refused, as `Tool: short input`, in order.
    pub denials: Vec<String>,
    /// How long the session took, in milliseconds.
    pub duration_ms: Option<u64>,
}

/// A refused tool call as one short line: `Bash: git commit -m x`, `Write: src/a.rs`.
fn denial_line(d: &Value) -> String {
    let tool = d
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or("a tool");
    let input = &d["tool_input"];
    let what = ["command", "file_path", "path", "url", "pattern"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| input.to_string());
    let what: String = what.chars().take(160).collect();
    format!("{tool}: {what}")
}

/// Reads the session report from an agent's standard output, if it has one. The session id
/// is also taken from the first line that names it (the `system`/`init` line), in case the
/// session died before its result line.
pub fn read_report(stdout: &str) -> Option<SessionReport> {
    let mut report: Option<SessionReport> = None;
    for line in stdout.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let session = v
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if v.get("type").and_then(Value::as_str) == Some("result") {
            let deferred = v.get("deferred_tool_use").filter(|d| !d.is_null());
            let deferred_question = deferred
                .filter(|d| d.get("name").and_then(Value::as_str) == Some("AskUserQuestion"))
                .map(|d| question_text(d.get("input")));
            let previous = report.take().unwrap_or_default();
            report = Some(SessionReport {
                session_id: session.or(previous.session_id),
                subtype: v.get("subtype").and_then(Value::as_str).map(str::to_owned),
                is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                result: v.get("result").and_then(Value::as_str).map(str::to_owned),
                cost_usd: v
                    .get("total_cost_usd")
                    .and_then(Value::as_f64)
                    .filter(|c| c.is_finite() && *c >= 0.0),
                turns: v
                    .get("num_turns")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok()),
                deferred_question,
                denied_commands: v
                    .get("permission_denials")
                    .and_then(Value::as_array)
                    .map(|ds| {
                        ds.iter()
                            .filter(|d| d.get("tool_name").and_then(Value::as_str) == Some("Bash"))
                            .filter_map(|d| d["tool_input"]["command"].as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                denials: v
                    .get("permission_denials")
                    .and_then(Value::as_array)
                    .map(|ds| ds.iter().map(denial_line).collect())
                    .unwrap_or_default(),
                duration_ms: v.get("duration_ms").and_then(Value::as_u64),
            });
        } else if let Some(s) = session {
            let r = report.get_or_insert_with(SessionReport::default);
            if r.session_id.is_none() {
                r.session_id = Some(s);
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_line_gives_session_cost_and_turns() {
        let out = concat!(
            "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"abc\"}\n",
            "{\"type\":\"assistant\",\"message\":{}}\n",
            "noise\n",
            "{\"type\":\"result\",\"subtype\":\"success\",\"session_id\":\"abc\",\"is_error\":false,",
            "\"result\":\"Done.\",\"total_cost_usd\":0.25,\"num_turns\":3}\n"
        );
        let r = read_report(out).expect("a report");
        assert_eq!(r.session_id.as_deref(), Some("abc"));
        assert_eq!(r.cost_usd, Some(0.25));
        assert_eq!(r.turns, Some(3));
        assert_eq!(r.result.as_deref(), Some("Done."));
        assert!(!r.is_error);
        assert_eq!(r.deferred_question, None);
    }

    #[test]
    fn a_deferred_question_is_read_and_plain_output_is_no_report() {
        let out = "{\"type\":\"result\",\"subtype\":\"success\",\"session_id\":\"s\",\"deferred_tool_use\":{\"name\":\"AskUserQuestion\",\"input\":{\"questions\":[{\"question\":\"Which?\"}]}}}";
        assert_eq!(
            read_report(out)
                .and_then(|r| r.deferred_question)
                .as_deref(),
            Some("Which?")
        );
        assert_eq!(read_report("hello\nworld\n"), None);
        let denied = "{\"type\":\"result\",\"permission_denials\":[{\"tool_name\":\"Bash\",\"tool_use_id\":\"t\",\"tool_input\":{\"command\":\"git push origin main\"}},{\"tool_name\":\"Write\",\"tool_input\":{}}]}";
        assert_eq!(
            read_report(denied).map(|r| r.denied_commands),
            Some(vec!["git push origin main".to_owned()])
        );
        let died = "{\"type\":\"system\",\"session_id\":\"x\"}";
        assert_eq!(
            read_report(died).and_then(|r| r.session_id).as_deref(),
            Some("x")
        );
    }
}
