//! `capsid hook` speaks Claude Code's hook protocol: the exact stdin JSON of Claude Code's
//! Stop and PreToolUse events goes in (samples shaped as its documentation shows them), the
//! exact output JSON, or nothing, comes out, with exit code 0. Run as the real binary in a
//! real git repository, with no server to record to (the gate holds all the same).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_capsid");

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git")
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// A repository on branch `branch` whose tests pass unless `tests_fail`, and whose build
/// check fails when `build_fails`.
fn repo(branch: &str, tests_fail: bool, build_fails: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary folder");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["config", "user.name", "T"]);
    git(dir.path(), &["config", "user.email", "t@capsid.invalid"]);
    let test = if tests_fail {
        "echo 'test widgets ... FAILED'; echo 'assertion failed: left == right'; exit 1"
    } else {
        "echo 'test result: ok. 3 passed'"
    };
    let build = if build_fails {
        "echo 'COPY failed: stat app/: file does not exist'; exit 1"
    } else {
        "echo built"
    };
    std::fs::write(dir.path().join("test.sh"), test).expect("test.sh");
    std::fs::write(dir.path().join("build.sh"), build).expect("build.sh");
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "init"]);
    if branch != "main" {
        git(dir.path(), &["checkout", "-q", "-b", branch]);
    }
    dir
}

/// `capsid hook <event>` with `stdin`, in `dir`, with the driver's gate commands.
fn hook(event: &str, dir: &Path, stdin: &str) -> Output {
    hook_with(event, dir, stdin, &[])
}

/// [`hook`] with more variables in its environment.
fn hook_with(event: &str, dir: &Path, stdin: &str, envs: &[(&str, &str)]) -> Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(["hook", event])
        .envs(envs.iter().copied())
        .current_dir(dir)
        .env("CAPSID_TEST_COMMAND", "sh test.sh")
        .env("CAPSID_BUILD_COMMAND", "sh build.sh")
        .env("CAPSID_DEFAULT_BRANCH", "main")
        .env_remove("CAPSID_MCP_URL")
        .env_remove("CAPSID_KEY")
        .env_remove("CAPSID_NAMESPACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn capsid hook");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write the event");
    let out = child.wait_with_output().expect("capsid hook ends");
    assert_eq!(
        out.status.code(),
        Some(0),
        "a hook answers with exit 0: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

fn stop_event(cwd: &Path) -> String {
    json!({
        "session_id": "abc123",
        "transcript_path": "/home/user/.claude/projects/p/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "I've finished the widgets."
    })
    .to_string()
}

fn bash_event(cwd: &Path, command: &str) -> String {
    json!({
        "session_id": "abc123",
        "transcript_path": "/home/user/.claude/projects/p/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run it", "timeout": 120000, "run_in_background": false},
        "tool_use_id": "toolu_01ABC123"
    })
    .to_string()
}

fn decision(out: &Output) -> Value {
    let text = stdout(out);
    assert_eq!(text.lines().count(), 1, "one JSON line: {text:?}");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn stop_passes_silently_and_blocks_a_failing_suite_with_its_tail() {
    let green = repo("topic", false, false);
    let out = hook("stop", green.path(), &stop_event(green.path()));
    assert_eq!(stdout(&out), "", "a passing suite prints nothing");

    let red = repo("topic", true, false);
    let got = decision(&hook("stop", red.path(), &stop_event(red.path())));
    let reason = got["reason"].as_str().expect("a reason").to_owned();
    assert_eq!(
        got,
        json!({"decision": "block", "reason": reason}),
        "exactly decision and reason"
    );
    assert!(
        reason.starts_with("The test gate failed: `sh test.sh` ended with exit code 1."),
        "{reason}"
    );
    assert!(
        reason.contains("assertion failed: left == right"),
        "the tail: {reason}"
    );
}

/// With no test command the Stop hook has nothing to gate on: it says so once per session
/// (shown to the person) and never blocks the turn, instead of blocking every turn end.
#[test]
fn a_stop_with_no_test_command_says_so_once_and_does_not_block() {
    let dir = repo("topic", false, false);
    let session = format!("no-tests-{}", std::process::id());
    let event = {
        let mut e: Value = serde_json::from_str(&stop_event(dir.path())).expect("event");
        e["session_id"] = json!(session);
        e.to_string()
    };
    let run = || {
        let mut child = Command::new(BIN)
            .args(["hook", "stop"])
            .current_dir(dir.path())
            .env_remove("CAPSID_TEST_COMMAND")
            .env_remove("CAPSID_MCP_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(event.as_bytes())
            .expect("write");
        child.wait_with_output().expect("ends")
    };
    let first = run();
    assert_eq!(first.status.code(), Some(0));
    let said: Value = serde_json::from_str(stdout(&first).trim()).expect("a JSON answer");
    assert!(said.get("decision").is_none(), "it blocked: {said}");
    assert!(
        said["systemMessage"]
            .as_str()
            .unwrap_or("")
            .contains("no test command"),
        "{said}"
    );
    let second = run();
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(stdout(&second).trim(), "", "said twice in one session");
}

/// `hook install` warns when it finds no test command, and refuses a folder that does not
/// exist instead of creating it.
#[test]
fn install_warns_without_a_test_command_and_refuses_a_missing_folder() {
    let dir = repo("topic", false, false);
    let out = Command::new(BIN)
        .args(["hook", "install", "--dir"])
        .arg(dir.path())
        .env_remove("CAPSID_TEST_COMMAND")
        .output()
        .expect("install");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no test command found") && err.contains("--test-command"),
        "{err}"
    );
    let typo = dir.path().join("typo-folder");
    let out = Command::new(BIN)
        .args(["hook", "install", "--dir"])
        .arg(&typo)
        .output()
        .expect("install");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a folder that exists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!typo.exists(), "the typo's folder was created");
}

#[test]
fn commands_that_do_not_push_pass_untouched() {
    let dir = repo("topic", true, true);
    for command in [
        "npm test",
        "git status",
        "echo 'git push origin main'",
        "git commit -m 'push later'",
        "git stash push",
    ] {
        let out = hook("pre-tool-use", dir.path(), &bash_event(dir.path(), command));
        assert_eq!(
            stdout(&out),
            "",
            "{command} passes with no output, even on a red tree"
        );
    }
    let read = json!({
        "session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": dir.path(),
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"}, "tool_use_id": "toolu_2"
    });
    assert_eq!(
        stdout(&hook("pre-tool-use", dir.path(), &read.to_string())),
        ""
    );
}

#[test]
fn pushes_in_every_spelling_run_tests_then_the_build_check() {
    let spellings = [
        "git push",
        "git push origin topic",
        "git push -u origin HEAD:topic",
        "git -C . push --force-with-lease origin topic",
        "cargo fmt && git push origin topic",
        "GIT_TRACE=0 git push origin topic",
    ];
    let green = repo("topic", false, false);
    for command in spellings {
        let out = hook(
            "pre-tool-use",
            green.path(),
            &bash_event(green.path(), command),
        );
        assert_eq!(
            stdout(&out),
            "",
            "{command}: green tests and build, the push goes"
        );
    }
    let red = repo("topic", true, false);
    let broken_build = repo("topic", false, true);
    for command in spellings {
        let got = decision(&hook(
            "pre-tool-use",
            red.path(),
            &bash_event(red.path(), command),
        ));
        let why = got["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert_eq!(
            got,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": why}}),
            "{command}"
        );
        assert!(
            why.starts_with("The test gate failed"),
            "tests first: {why}"
        );
        let got = decision(&hook(
            "pre-tool-use",
            broken_build.path(),
            &bash_event(broken_build.path(), command),
        ));
        let why = got["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or("");
        assert_eq!(
            got["hookSpecificOutput"]["permissionDecision"],
            json!("deny"),
            "{command}"
        );
        assert!(
            why.starts_with("The build check failed: `sh build.sh`"),
            "{why}"
        );
        assert!(why.contains("COPY failed"), "{why}");
    }
}

#[test]
fn protected_branch_pushes_and_merges_are_denied_without_a_standing_approval() {
    let green = repo("topic", false, false);
    for command in [
        "git push origin main",
        "git push origin HEAD:refs/heads/master",
        "git push --all origin",
        "gh pr merge 12 --squash",
    ] {
        let got = decision(&hook(
            "pre-tool-use",
            green.path(),
            &bash_event(green.path(), command),
        ));
        assert_eq!(
            got["hookSpecificOutput"]["permissionDecision"],
            json!("deny"),
            "{command}"
        );
        let why = got["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or("");
        assert!(why.contains("approval"), "{command}: {why}");
    }
    let on_main = repo("main", false, false);
    for command in ["git push", "git merge topic"] {
        let got = decision(&hook(
            "pre-tool-use",
            on_main.path(),
            &bash_event(on_main.path(), command),
        ));
        assert_eq!(
            got["hookSpecificOutput"]["permissionDecision"],
            json!("deny"),
            "{command} on main"
        );
    }
}

#[test]
fn ask_user_question_is_deferred() {
    let dir = repo("topic", false, false);
    let event = json!({
        "session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": dir.path(),
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "AskUserQuestion",
        "tool_input": {"questions": [{"question": "Which store?", "header": "Store",
            "options": [{"label": "Postgres", "description": "shared"}, {"label": "SQLite", "description": "local"}],
            "multiSelect": false}]},
        "tool_use_id": "toolu_3"
    });
    let got = decision(&hook("pre-tool-use", dir.path(), &event.to_string()));
    assert_eq!(
        got["hookSpecificOutput"]["hookEventName"],
        json!("PreToolUse")
    );
    assert_eq!(
        got["hookSpecificOutput"]["permissionDecision"],
        json!("defer")
    );
}

/// Issue 51: with the job's lease in `CAPSID_LEASE` (the driver sets it), an edit outside it is
/// denied before it happens, naming the path and what the job holds; one inside passes.
#[test]
fn an_edit_outside_the_jobs_lease_is_denied_naming_what_it_holds() {
    let dir = repo("topic", false, false);
    let lease = [("CAPSID_LEASE", r#"["docs/**"]"#)];
    let event = |tool: &str, input: Value| {
        json!({
            "session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": dir.path(),
            "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_9"
        })
        .to_string()
    };
    let inside = hook_with(
        "pre-tool-use",
        dir.path(),
        &event(
            "Write",
            json!({"file_path": dir.path().join("docs/a.md"), "content": "x"}),
        ),
        &lease,
    );
    assert!(
        inside.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&inside.stdout)
    );
    for (tool, input) in [
        (
            "Write",
            json!({"file_path": dir.path().join("src/x.rs"), "content": "x"}),
        ),
        (
            "Edit",
            json!({"file_path": "src/x.rs", "old_string": "a", "new_string": "b"}),
        ),
        ("Bash", json!({"command": "echo x > src/x.rs"})),
        (
            "Bash",
            json!({"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: src/x.rs\n+x\n*** End Patch\nEOF"}),
        ),
    ] {
        let got = decision(&hook_with(
            "pre-tool-use",
            dir.path(),
            &event(tool, input.clone()),
            &lease,
        ));
        assert_eq!(
            got["hookSpecificOutput"]["permissionDecision"],
            json!("deny"),
            "{tool} {input}: {got}"
        );
        let why = got["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or("");
        assert!(
            why.contains("This job holds `docs/**`") && why.contains("`src/x.rs` outside it"),
            "{tool}: {why}"
        );
    }
    // Without a lease (a job of the whole repository) the same edit passes.
    let whole = hook(
        "pre-tool-use",
        dir.path(),
        &event(
            "Write",
            json!({"file_path": dir.path().join("src/x.rs"), "content": "x"}),
        ),
    );
    assert!(
        whole.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&whole.stdout)
    );
}

#[test]
fn install_merges_into_the_projects_settings() {
    let dir = repo("topic", false, false);
    std::fs::create_dir_all(dir.path().join(".claude")).expect("folder");
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(npm test)"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}"#,
    )
    .expect("settings");
    for _ in 0..2 {
        let out = Command::new(BIN)
            .args(["hook", "install", "--dir"])
            .arg(dir.path())
            .output()
            .expect("install");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(dir.path().join(".claude/settings.json")).expect("read");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["permissions"]["allow"], json!(["Bash(npm test)"]));
    let stop = v["hooks"]["Stop"].as_array().expect("Stop");
    assert_eq!(
        stop.len(),
        2,
        "the project's own hook stays, Capsid's is added once: {v}"
    );
    assert_eq!(
        stop[1]["hooks"][0]["command"],
        json!(format!("{BIN} hook stop"))
    );
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["matcher"],
        json!("Bash|AskUserQuestion")
    );
    assert!(v["hooks"]["SessionEnd"].is_array() && v["hooks"]["Notification"].is_array());
}

#[test]
fn a_notification_is_forwarded_to_the_webhook() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("a POST");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut length = 0;
        let mut first = String::new();
        reader.read_line(&mut first).expect("request line");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            if line.trim().is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().expect("length");
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("body");
        let mut stream = stream;
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .expect("answer");
        (first, String::from_utf8(body).expect("utf-8"))
    });
    let dir = repo("topic", false, false);
    let event = json!({
        "session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": dir.path(),
        "permission_mode": "default", "hook_event_name": "Notification",
        "message": "Claude needs your permission to use Bash", "title": "Permission needed",
        "notification_type": "permission_prompt"
    });
    let mut child = Command::new(BIN)
        .args(["hook", "notification"])
        .current_dir(dir.path())
        .env("CAPSID_WEBHOOK_URL", &url)
        .env("CAPSID_NAMESPACE", "demo")
        .env("CAPSID_JOB_ID", "job_0123456789ab")
        .env_remove("CAPSID_MCP_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(event.to_string().as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("ends");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "", "a notification has no decision");
    let (request, body) = server.join().expect("the webhook was called");
    assert!(request.starts_with("POST /hook "), "{request}");
    let posted: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(posted["event"], json!("agent-notification"));
    assert_eq!(posted["namespace"], json!("demo"));
    assert_eq!(posted["job_id"], json!("job_0123456789ab"));
    assert_eq!(
        posted["message"],
        json!("Claude needs your permission to use Bash")
    );
    assert_eq!(posted["notification_type"], json!("permission_prompt"));
}
