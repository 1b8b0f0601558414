//! The hooks `capsid hook install` and `capsid drive` write into a project's
//! `.claude/settings.json`, merged into what is there: every other key and every other hook
//! stays, and installing twice adds nothing.

use serde_json::{Map, Value, json};

/// The hooks Capsid installs: (event, matcher, `capsid hook` subcommand).
pub const CAPSID_HOOKS: &[(&str, Option<&str>, &str)] = &[
    ("Stop", None, "stop"),
    ("PreToolUse", Some("Bash|AskUserQuestion"), "pre-tool-use"),
    ("SessionEnd", None, "session-end"),
    ("Notification", None, "notification"),
];

/// A hook's timeout, in seconds (a test suite may take minutes).
pub const HOOK_TIMEOUT_SECS: u64 = 1800;

/// `settings` (the file's JSON, `None` when absent) with Capsid's hooks merged in, running
/// `program` (an absolute path: a mistyped path silently disables a gate).
pub fn merge_hooks(settings: Option<&Value>, program: &str) -> Result<Value, String> {
    let mut root = match settings {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(".claude/settings.json is not a JSON object; fix it by hand before installing the hooks".into()),
    };
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(".claude/settings.json: `hooks` is not an object".into());
    };
    for (event, matcher, sub) in CAPSID_HOOKS {
        let command = format!("{} hook {sub}", super::hooks::shell_quote(program));
        let groups = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = groups else {
            return Err(format!(
                ".claude/settings.json: hooks.{event} is not a list"
            ));
        };
        let present = groups.iter().any(|g| {
            g.get("hooks").and_then(Value::as_array).is_some_and(|hs| {
                hs.iter()
                    .any(|h| h.get("command").and_then(Value::as_str) == Some(command.as_str()))
            })
        });
        if present {
            continue;
        }
        let mut group = json!({
            "hooks": [{ "type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS }]
        });
        if let Some(m) = matcher {
            group["matcher"] = json!(m);
        }
        groups.push(group);
    }
    Ok(Value::Object(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_the_projects_own_and_is_idempotent() {
        let own = json!({
            "permissions": {"allow": ["Bash(cargo test)"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
        });
        let merged = merge_hooks(Some(&own), "/opt/capsid").expect("merge");
        assert_eq!(merged["permissions"], own["permissions"]);
        let stop = merged["hooks"]["Stop"].as_array().expect("Stop");
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0], own["hooks"]["Stop"][0]);
        assert_eq!(stop[1]["hooks"][0]["command"], "/opt/capsid hook stop");
        assert_eq!(
            merged["hooks"]["PreToolUse"][0]["matcher"],
            "Bash|AskUserQuestion"
        );
        let twice = merge_hooks(Some(&merged), "/opt/capsid").expect("again");
        assert_eq!(twice, merged);
        assert!(merge_hooks(Some(&json!([1])), "/x").is_err());
        assert!(merge_hooks(Some(&json!({"hooks": {"Stop": {}}})), "/x").is_err());
        let fresh = merge_hooks(None, "/a b/capsid").expect("fresh");
        assert_eq!(
            fresh["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
            "'/a b/capsid' hook session-end"
        );
    }
}
