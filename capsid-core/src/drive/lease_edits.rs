//! The PreToolUse hook's path rule (issue 51): an edit outside the job's lease is refused
//! before it happens, telling the agent what it holds. It is the early warning; the git
//! gateway, which sees every path a push changes, is the rule. The hook sees what a tool call
//! names: Claude Code's `Edit`, `Write`, `MultiEdit` and `NotebookEdit`, Codex's `apply_patch`,
//! and the shell's redirections and `tee` it can read.

use serde_json::Value;

use super::command::resolve_path;
use super::hooks::HookInput;
use crate::jobs::paths::Lease;

/// The variable the driver sets in the agent's environment: the job's lease, a JSON array of
/// patterns (unset: the whole repository).
pub const LEASE_ENV: &str = "CAPSID_LEASE";

/// The paths a tool call writes, as named (relative to the call's `cwd`, or absolute).
pub fn written_paths(input: &HookInput) -> Vec<String> {
    let tool_input = input.tool_input.as_ref();
    let field = |name: &str| {
        tool_input
            .and_then(|i| i.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match input.tool_name.as_deref() {
        Some("Edit" | "Write" | "MultiEdit") => field("file_path").into_iter().collect(),
        Some("NotebookEdit") => field("notebook_path").into_iter().collect(),
        Some("Bash") => {
            let Some(line) = field("command") else {
                return Vec::new();
            };
            match super::patch::apply_patch_paths(&line) {
                Some(paths) => paths,
                None => shell_writes(&line),
            }
        }
        _ => Vec::new(),
    }
}

/// The files a shell line writes that can be read off it: redirection targets (`>`, `>>`,
/// `>|`, `&>`, `2>`; not `>&2`) and `tee`'s file arguments.
pub fn shell_writes(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let words = words(line);
    let mut i = 0;
    while i < words.len() {
        let (word, quoted) = &words[i];
        if !quoted && is_redirect(word) {
            let inline = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
            let inline = inline.trim_start_matches(['>', '|']);
            if !inline.is_empty() {
                if !inline.starts_with('&') {
                    out.push(inline.to_owned());
                }
            } else if let Some((target, _)) = words.get(i + 1) {
                if !target.starts_with('&') {
                    out.push(target.clone());
                }
                i += 1;
            }
        } else if !quoted && word == "tee" {
            let mut j = i + 1;
            while let Some((arg, q)) = words.get(j) {
                if !q && matches!(arg.as_str(), "|" | ";" | "&&" | "||" | "&") {
                    break;
                }
                if *q || !arg.starts_with('-') {
                    out.push(arg.clone());
                }
                j += 1;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

fn is_redirect(word: &str) -> bool {
    let rest = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    rest.starts_with('>')
}

/// The line's words (quotes removed, whether any part was quoted), with `|`, `;`, `&&`, `||`
/// and redirections split off as words of their own.
fn words(line: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    let flush = |word: &mut String, quoted: &mut bool, out: &mut Vec<(String, bool)>| {
        if !word.is_empty() || *quoted {
            out.push((std::mem::take(word), *quoted));
        }
        *quoted = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                quoted = true;
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                    word.push(d);
                }
            }
            '\\' => {
                if let Some(d) = chars.next() {
                    word.push(d);
                }
            }
            c if c.is_whitespace() => flush(&mut word, &mut quoted, &mut out),
            '|' | ';' => {
                flush(&mut word, &mut quoted, &mut out);
                let mut op = c.to_string();
                if chars.peek() == Some(&c) {
                    op.push(c);
                    chars.next();
                }
                out.push((op, false));
            }
            '>' => {
                // `2>`, `&>` keep their prefix; the operator ends the word before it.
                let keep = !word.is_empty() && word.chars().all(|w| w.is_ascii_digit() || w == '&');
                if !keep {
                    flush(&mut word, &mut quoted, &mut out);
                }
                word.push('>');
                while let Some(&n) = chars.peek() {
                    if n == '>' || n == '|' {
                        word.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if chars.peek() == Some(&'&') {
                    word.push('&');
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        if n.is_ascii_digit() || n == '-' {
                            word.push(n);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                }
                flush(&mut word, &mut quoted, &mut out);
            }
            c => word.push(c),
        }
    }
    flush(&mut word, &mut quoted, &mut out);
    out
}

/// `path` relative to the repository `root` (resolved as text, [`super::command::resolve_path`];
/// a relative `path` is read from `cwd`, else from `root`); `None` when it is outside `root` or
/// is `root` itself.
pub fn repo_relative(path: &str, cwd: Option<&str>, root: &str) -> Option<String> {
    let root = resolve_path("/", root);
    let full = resolve_path(cwd.unwrap_or(&root), path);
    let rest = full.strip_prefix(&root)?.strip_prefix('/')?;
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// The hook's refusal of `input` when it writes a path of the repository at `root` outside
/// `lease`: names the paths and what the job holds. `None`: every path it names is inside (or
/// outside the repository, which the lease does not speak for).
pub fn edit_outside_lease(input: &HookInput, root: &str, lease: &[String]) -> Option<String> {
    let held = Lease::Paths(lease);
    let outside: Vec<String> = written_paths(input)
        .iter()
        .filter_map(|p| repo_relative(p, input.cwd.as_deref(), root))
        .filter(|rel| !held.covers(rel))
        .collect();
    if outside.is_empty() {
        return None;
    }
    let named: Vec<String> = outside.iter().map(|p| format!("`{p}`")).collect();
    Some(format!(
        "This job holds {} (its lease: where it works, so other jobs can work beside it), and this writes {} outside it. Change only paths inside the lease; the git gateway refuses a push that changes any other. If the work needs more, finish what is inside and say what else is needed in your summary.",
        held.describe(),
        named.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str, input: Value) -> HookInput {
        HookInput::parse(
            &json!({"hook_event_name": "PreToolUse", "cwd": "/w/repo/src", "tool_name": tool,
                    "tool_input": input})
            .to_string(),
        )
        .expect("an input")
    }

    fn lease() -> Vec<String> {
        vec!["src/api/**".to_owned(), "docs/api.md".to_owned()]
    }

    #[test]
    fn claude_codes_edits_outside_the_lease_are_refused_naming_both() {
        let inside = call("Edit", json!({"file_path": "/w/repo/src/api/v1.rs"}));
        assert_eq!(edit_outside_lease(&inside, "/w/repo", &lease()), None);
        let relative = call("Write", json!({"file_path": "api/v2.rs"}));
        assert_eq!(
            edit_outside_lease(&relative, "/w/repo", &lease()),
            None,
            "read from cwd"
        );
        for (tool, input) in [
            ("Write", json!({"file_path": "/w/repo/Cargo.toml"})),
            ("MultiEdit", json!({"file_path": "../Cargo.toml"})),
            (
                "NotebookEdit",
                json!({"notebook_path": "/w/repo/Cargo.toml"}),
            ),
            (
                "Edit",
                json!({"file_path": "/w/repo/src/api/../../Cargo.toml"}),
            ),
        ] {
            let why = edit_outside_lease(&call(tool, input.clone()), "/w/repo", &lease())
                .unwrap_or_else(|| panic!("{tool} {input} passed"));
            assert!(
                why.starts_with("This job holds `src/api/**`, `docs/api.md`")
                    && why.contains("writes `Cargo.toml` outside it"),
                "{why}"
            );
        }
        let elsewhere = call("Write", json!({"file_path": "/tmp/scratch.txt"}));
        assert_eq!(
            edit_outside_lease(&elsewhere, "/w/repo", &lease()),
            None,
            "outside the repository the lease does not speak"
        );
        let read = call("Read", json!({"file_path": "/w/repo/Cargo.toml"}));
        assert_eq!(edit_outside_lease(&read, "/w/repo", &lease()), None);
    }

    #[test]
    fn codex_patches_and_shell_writes_are_read() {
        let patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: api/new.rs\n+x\n*** Update File: ../README.md\n@@\n-a\n+b\n*** End Patch\nEOF";
        let why = edit_outside_lease(
            &call("Bash", json!({"command": patch})),
            "/w/repo",
            &lease(),
        )
        .expect("the README is outside");
        assert!(
            why.contains("`README.md`") && !why.contains("api/new.rs"),
            "{why}"
        );
        for (line, want) in [
            ("echo x > ../Cargo.toml", vec!["../Cargo.toml"]),
            (
                "echo x >>api/log.txt 2>/dev/null",
                vec!["api/log.txt", "/dev/null"],
            ),
            (
                "make 2>&1 | tee -a build.log out.txt",
                vec!["build.log", "out.txt"],
            ),
            ("cat a &> 'my file'", vec!["my file"]),
            ("echo 'a > b' >&2", vec![]),
            ("ls >| x", vec!["x"]),
        ] {
            assert_eq!(shell_writes(line), want, "{line}");
        }
        let shell = call("Bash", json!({"command": "echo x > /w/repo/Cargo.toml"}));
        assert!(edit_outside_lease(&shell, "/w/repo", &lease()).is_some());
        let fine = call(
            "Bash",
            json!({"command": "cargo test 2>&1 | tee /tmp/t.log"}),
        );
        assert_eq!(edit_outside_lease(&fine, "/w/repo", &lease()), None);
    }

    #[test]
    fn paths_are_made_relative_to_the_repository_lexically() {
        assert_eq!(
            repo_relative("a/b.rs", Some("/r/x"), "/r").as_deref(),
            Some("x/a/b.rs")
        );
        assert_eq!(
            repo_relative("/r/./a//b", None, "/r/").as_deref(),
            Some("a/b")
        );
        assert_eq!(repo_relative("../../etc/passwd", Some("/r/x"), "/r"), None);
        assert_eq!(
            repo_relative("/rx/a", None, "/r"),
            None,
            "a sibling is not inside"
        );
        assert_eq!(repo_relative("/r", None, "/r"), None);
    }
}
