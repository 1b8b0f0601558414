//! What `capsid drive` checks before it claims anything, so that nothing it could have known
//! strands a claim: the agent's program is on the `PATH`, and the Claude Code settings the run
//! will load parse and do not switch Capsid's hooks off. Each refusal names the path and the
//! setting it came from.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The program an agent command starts (its first word after `VAR=value` assignments).
fn program(command: &str) -> Option<String> {
    capsid_core::drive::command::simple_commands(command)
        .into_iter()
        .next()?
        .into_iter()
        .find(|w| {
            !w.split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
}

/// Whether the agent command's program can be started: a path that exists, or a name on `PATH`.
pub fn agent_on_path(command: &str) -> Result<(), String> {
    let Some(prog) = program(command) else {
        return Err("the agent command is empty (--agent-command, CAPSID_AGENT_COMMAND or the namespace's agent_command)".into());
    };
    if prog.contains('/') {
        return if Path::new(&prog).exists() {
            Ok(())
        } else {
            Err(format!(
                "the agent command's program {prog} does not exist (from --agent-command, CAPSID_AGENT_COMMAND or the namespace's agent_command)"
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|d| is_executable(&d.join(&prog))) {
        return Ok(());
    }
    Err(format!(
        "the agent command's program `{prog}` is not on the PATH ({}). Install Claude Code (npm install -g @anthropic-ai/claude-code), or name the program with --agent-command",
        std::env::var("PATH").unwrap_or_default()
    ))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// A settings file's JSON object, `None` when the file is absent, or why it cannot be used.
pub fn read_settings(path: &Path) -> Result<Option<serde_json::Map<String, Value>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(format!(
            "{} is not a JSON object, so Claude Code's settings cannot be merged with Capsid's hooks; fix it by hand",
            path.display()
        )),
        Err(e) => Err(format!(
            "{} is not valid JSON ({e}), so Claude Code's settings cannot be merged with Capsid's hooks; fix it by hand",
            path.display()
        )),
    }
}

/// The project's and the user's settings files a run loads.
pub fn settings_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        root.join(".claude").join("settings.json"),
        root.join(".claude").join("settings.local.json"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        files.push(PathBuf::from(home).join(".claude").join("settings.json"));
    }
    files
}

/// The settings a run will load parse, and the user's own settings do not switch every hook
/// off (the project's `disableAllHooks` is removed from each worktree before a run).
pub fn settings(root: &Path) -> Result<(), String> {
    let user =
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude").join("settings.json"));
    for file in settings_files(root) {
        let Some(map) = read_settings(&file)? else {
            continue;
        };
        if Some(&file) == user.as_ref() && map.get("disableAllHooks") == Some(&Value::Bool(true)) {
            return Err(format!(
                "{} sets \"disableAllHooks\": true, which would switch off Capsid's gates in every run; remove it (or run the driver as a user without it)",
                file.display()
            ));
        }
    }
    Ok(())
}

/// Removes `"disableAllHooks"` from the project's settings files under `dir`: the paths it was
/// removed from.
pub fn strip_disable_all_hooks(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut changed = Vec::new();
    for file in [
        dir.join(".claude").join("settings.json"),
        dir.join(".claude").join("settings.local.json"),
    ] {
        let Some(mut map) = read_settings(&file)? else {
            continue;
        };
        if map.remove("disableAllHooks").is_some() {
            let text = serde_json::to_string_pretty(&Value::Object(map))
                .map_err(|e| format!("rendering {}: {e}", file.display()))?;
            std::fs::write(&file, format!("{text}\n"))
                .map_err(|e| format!("writing {}: {e}", file.display()))?;
            changed.push(file);
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_the_first_word_after_assignments() {
        assert_eq!(program("claude -p").as_deref(), Some("claude"));
        assert_eq!(
            program("FOO=1 /opt/c/claude -p").as_deref(),
            Some("/opt/c/claude")
        );
        assert_eq!(program("  "), None);
        assert!(agent_on_path("sh -c true").is_ok());
        let missing = agent_on_path("no-such-agent-program-xyz -p").expect_err("missing");
        assert!(missing.contains("no-such-agent-program-xyz"), "{missing}");
    }

    #[test]
    fn disable_all_hooks_is_removed_and_a_broken_file_is_named() {
        let dir = tempfile::tempdir().expect("tmp");
        let claude = dir.path().join(".claude");
        std::fs::create_dir_all(&claude).expect("mkdir");
        std::fs::write(
            claude.join("settings.local.json"),
            r#"{"disableAllHooks": true, "model": "x"}"#,
        )
        .expect("w");
        let changed = strip_disable_all_hooks(dir.path()).expect("strip");
        assert_eq!(changed, vec![claude.join("settings.local.json")]);
        let left = std::fs::read_to_string(claude.join("settings.local.json")).expect("r");
        assert!(
            !left.contains("disableAllHooks") && left.contains("model"),
            "{left}"
        );
        std::fs::write(claude.join("settings.json"), "{not json").expect("w");
        let why = settings(dir.path()).expect_err("broken");
        assert!(why.contains("settings.json is not valid JSON"), "{why}");
    }
}
