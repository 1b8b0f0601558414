//! Git's own pre-push gate, as `capsid hook install` leaves it in a real repository with a bare
//! origin: however a push to `main` is spelled or launched (a shell, `eval`, `xargs`, an alias,
//! a rewritten refspec, a configured `remote.origin.push` or `push.default`), git hands the hook
//! the refs it will really update, and `main` on the origin never moves without a different
//! agent's approval of the exact commit (here, with no server to ask, never). A feature push
//! with a green suite still goes through; a red suite refuses any push. The spellings that skip
//! git's hooks altogether (`--no-verify` and its prefixes, `core.hooksPath`, `send-pack`) or run
//! git in another checkout (`git -C`, `cd`) are the PreToolUse gate's to refuse: each is handed
//! to `capsid hook pre-tool-use` as Claude Code's event, run for real when the hook lets it
//! through, and `main` on the origin still never moves. A `"disableAllHooks"` in either Claude
//! Code settings file is removed by the install, and one written after it does not reach git.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_capsid");

fn run(dir: &Path, line: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("CAPSID_TEST_COMMAND", "sh test.sh")
        .env("CAPSID_BUILD_COMMAND", "true")
        .env_remove("CAPSID_MCP_URL")
        .env_remove("CAPSID_KEY")
        .env_remove("CAPSID_RUN_CREDENTIAL")
        .env_remove("CAPSID_DEFAULT_BRANCH")
        .env_remove("CAPSID_RUN_DIR")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@capsid.invalid")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@capsid.invalid")
        .output()
        .expect("sh")
}

fn ok(dir: &Path, line: &str) -> String {
    let out = run(dir, line);
    assert!(
        out.status.success(),
        "{line}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A clone with a bare origin, `capsid hook install`ed, on a feature branch with one commit.
fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = tmp.path().join("origin.git");
    let work = tmp.path().join("work");
    ok(
        tmp.path(),
        &format!("git init -q --bare -b main {}", origin.display()),
    );
    std::fs::create_dir_all(&work).expect("work");
    ok(
        &work,
        &format!(
            "git init -q -b main && echo 'grep -q broken state.txt 2>/dev/null && {{ echo assertion failed: widgets are broken; exit 1; }}; echo ok' > test.sh && git add . && git commit -qm init && git remote add origin {} && git push -q origin main && git fetch -q origin && git remote set-head origin main",
            origin.display()
        ),
    );
    let install = Command::new(BIN)
        .args(["hook", "install", "--dir"])
        .arg(&work)
        .output()
        .expect("hook install");
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert!(String::from_utf8_lossy(&install.stdout).contains("pre-push"));
    ok(
        &work,
        "git checkout -q -b feature && echo v2 > v.txt && git add v.txt && git commit -qm v2",
    );
    (tmp, origin, work)
}

fn origin_main(origin: &Path) -> String {
    ok(origin, "git rev-parse refs/heads/main")
}

/// `capsid hook pre-tool-use` handed Claude Code's PreToolUse event for a Bash `command` run
/// in `cwd`, with no server to ask: the denial's reason, or `None` when the hook lets it
/// through (no output, exit 0).
fn early_gate(cwd: &Path, command: &str) -> Option<String> {
    let event = serde_json::json!({
        "session_id": "abc123",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run it", "timeout": 120000, "run_in_background": false},
        "tool_use_id": "toolu_01ABC123"
    });
    let mut child = Command::new(BIN)
        .args(["hook", "pre-tool-use"])
        .current_dir(cwd)
        .env("CAPSID_TEST_COMMAND", "sh test.sh")
        .env("CAPSID_BUILD_COMMAND", "true")
        .env_remove("CAPSID_MCP_URL")
        .env_remove("CAPSID_KEY")
        .env_remove("CAPSID_RUN_CREDENTIAL")
        .env_remove("CAPSID_DEFAULT_BRANCH")
        .env_remove("CAPSID_RUN_DIR")
        .env_remove("CAPSID_WORKTREE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("capsid hook pre-tool-use");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(event.to_string().as_bytes())
        .expect("the event");
    let out = child.wait_with_output().expect("the hook ends");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return None;
    }
    let got: serde_json::Value = serde_json::from_str(&text).expect("the hook's answer is JSON");
    assert_eq!(
        got["hookSpecificOutput"]["permissionDecision"], "deny",
        "{command}: {got}"
    );
    Some(
        got["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .expect("a reason")
            .to_owned(),
    )
}

/// Sets `"disableAllHooks": true` in `.claude/<file>` of `work`, keeping what the file holds.
fn disable_all_hooks(work: &Path, file: &str) {
    let path = work.join(".claude").join(file);
    let mut settings: serde_json::Value = std::fs::read_to_string(&path)
        .ok()
        .map(|t| serde_json::from_str(&t).expect("settings JSON"))
        .unwrap_or_else(|| serde_json::json!({}));
    settings["disableAllHooks"] = serde_json::json!(true);
    std::fs::write(&path, format!("{settings}\n")).expect("settings");
}

/// A direct `git push origin HEAD:main` is still refused by git's pre-push hook, naming the ref.
fn gits_gate_holds(work: &Path, origin: &Path, main: &str, after: &str) {
    let out = run(work, "git push origin HEAD:main");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "after {after}, git's gate is off: {err}"
    );
    assert!(
        err.contains("capsid pre-push: refused") && err.contains("refs/heads/main"),
        "after {after}: {err}"
    );
    assert_eq!(
        origin_main(origin),
        main,
        "after {after}, main moved: {err}"
    );
}

#[test]
fn no_spelling_of_a_push_moves_main_and_a_green_feature_push_goes_through() {
    no_spelling_moves_main("settings.local.json");
}

#[test]
fn no_spelling_moves_main_with_disable_all_hooks_in_the_shared_settings() {
    no_spelling_moves_main("settings.json");
}

fn no_spelling_moves_main(settings_file: &str) {
    let (_tmp, origin, work) = project();
    // A setting that switches Claude Code's hooks off after the install does not reach git's
    // own gate.
    disable_all_hooks(&work, settings_file);
    let main = origin_main(&origin);
    for line in [
        "git push origin HEAD:main",
        "sh -c 'git push origin HEAD:main'",
        "bash -c \"git push origin HEAD:main\"",
        "eval 'git push origin HEAD:main'",
        "timeout 60 git push origin HEAD:main",
        "nice git push origin HEAD:main",
        "echo HEAD:main | xargs git push origin",
        "git -c remote.origin.push=HEAD:refs/heads/main push origin",
        "git -c alias.p=push p origin HEAD:main",
        "git push origin HEAD:heads/main",
        "git push origin HEAD:refs/heads/main",
        "B=main; git push origin HEAD:$B",
        "git push origin HEAD:$(echo main)",
        "git push origin +HEAD:main",
        "git push origin :main",
        "git -c push.default=upstream -c branch.feature.remote=origin -c branch.feature.merge=refs/heads/main push",
        "git config remote.origin.push HEAD:refs/heads/main && git push origin; git config --unset remote.origin.push",
    ] {
        let out = run(&work, line);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(origin_main(&origin), main, "{line} moved main: {err}");
        assert!(
            !out.status.success() || err.contains("refused"),
            "{line}: {err}"
        );
        assert!(
            err.contains("refs/heads/main"),
            "{line}: the refusal does not name the ref: {err}"
        );
    }
    // A feature branch with a green suite goes out.
    ok(&work, "git push -q origin feature");
    assert_eq!(
        ok(&origin, "git rev-parse refs/heads/feature"),
        ok(&work, "git rev-parse HEAD")
    );
    // A red suite refuses any push, naming the failure.
    ok(
        &work,
        "echo broken > state.txt && git add state.txt && git commit -qm broken",
    );
    let out = run(&work, "git push origin feature");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("assertion failed: widgets are broken"),
        "{err}"
    );
    assert_ne!(
        ok(&origin, "git rev-parse refs/heads/feature"),
        ok(&work, "git rev-parse HEAD")
    );
}

/// The spellings that would skip git's hook or run git in another checkout, each handed to the
/// PreToolUse hook first and run for real when it lets it through: the hook refuses each
/// naming the bypass (or the ref), a push it lets through is refused by git's own gate naming
/// the ref, `main` on the origin never moves, and git's gate still holds after each.
#[test]
fn pushes_that_skip_gits_hook_or_leave_the_checkout_are_refused_before_they_run() {
    let (tmp, origin, work) = project();
    let main = origin_main(&origin);
    // Another checkout of the same origin, with none of Capsid's hooks.
    let other = tmp.path().join("other");
    ok(
        tmp.path(),
        &format!(
            "git clone -q {} {} && cd {} && echo x > x.txt && git add x.txt && git commit -qm x",
            origin.display(),
            other.display(),
            other.display()
        ),
    );
    let other = other.display().to_string();
    let origin_path = origin.display().to_string();
    // (command, what the hook's refusal names; `None`: the hook lets it through and git's own
    // pre-push hook must refuse it).
    let cases: Vec<(String, Option<&str>)> = vec![
        (
            format!("git send-pack {origin_path} HEAD:refs/heads/main"),
            Some("send-pack"),
        ),
        (
            "git push --no-verify origin HEAD:main".into(),
            Some("--no-verify"),
        ),
        (
            "git push --no-verify origin feature".into(),
            Some("--no-verify"),
        ),
        (
            "git -c core.hooksPath=/dev/null push origin HEAD:main".into(),
            Some("core.hooksPath"),
        ),
        (
            "git config core.hooksPath /dev/null".into(),
            Some("core.hooksPath"),
        ),
        (
            "git config core.hooks''Path /dev/null".into(),
            Some("core.hooksPath"),
        ),
        (
            format!("git -C {other} push origin HEAD:main"),
            Some("outside the worktree"),
        ),
        (
            format!("cd {other} && git push origin HEAD:main"),
            Some("outside the worktree"),
        ),
        (
            "git config push.default upstream".into(),
            Some("push.default"),
        ),
    ];
    for (line, names) in &cases {
        check_spelling(&work, &origin, &main, line, *names);
    }
    // A `push.default upstream` with `main` as the feature branch's upstream, set before the
    // session (by hand, or in the user's global configuration): a plain `git push` reads as a
    // push of the feature branch, so the hook lets it through, and git's own gate refuses it;
    // the same push without git's hook (any prefix git takes for `--no-verify`) never runs.
    ok(
        &work,
        "git config push.default upstream && git branch -q -u origin/main",
    );
    for (line, names) in [
        ("git push", None),
        ("git push origin", None),
        ("git push --no-verify", Some("--no-verify")),
        ("git push --no-veri", Some("--no-verify")),
        ("sh -c 'git push --no-verif origin'", Some("--no-verify")),
    ] {
        check_spelling(&work, &origin, &main, line, names);
    }
}

/// One spelling through both gates; see
/// [`pushes_that_skip_gits_hook_or_leave_the_checkout_are_refused_before_they_run`].
fn check_spelling(work: &Path, origin: &Path, main: &str, line: &str, names: Option<&str>) {
    let early = early_gate(work, line);
    if early.is_none() {
        // Let through: it runs for real, and git's own gate must refuse it.
        let out = run(work, line);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(origin_main(origin), main, "{line} moved main: {err}");
        assert!(
            !out.status.success() && err.contains("refs/heads/main"),
            "{line} was not refused naming the ref: {err}"
        );
    }
    match (names, &early) {
        (Some(what), Some(reason)) => assert!(
            reason.contains(what) && reason.contains("Capsid's gates must see every push"),
            "{line}: the refusal does not explain the bypass ({what}): {reason}"
        ),
        (Some(what), None) => panic!("{line} passed the PreToolUse hook (expected {what})"),
        (None, Some(reason)) => {
            panic!("{line} was refused by the hook instead of git's gate: {reason}")
        }
        (None, None) => {}
    }
    assert_eq!(origin_main(origin), main, "{line} moved main");
    gits_gate_holds(work, origin, main, line);
}

#[test]
fn install_removes_disable_all_hooks_from_the_shared_settings() {
    install_keeps_own_pre_push_and_removes_disable_all_hooks("settings.json");
}

#[test]
fn install_keeps_the_projects_own_pre_push_and_removes_disable_all_hooks() {
    install_keeps_own_pre_push_and_removes_disable_all_hooks("settings.local.json");
}

fn install_keeps_own_pre_push_and_removes_disable_all_hooks(settings_file: &str) {
    let tmp = tempfile::tempdir().expect("tmp");
    let work = tmp.path();
    ok(
        work,
        "git init -q -b main && git commit -q --allow-empty -m init",
    );
    let hooks = work.join(".git/hooks");
    std::fs::write(
        hooks.join("pre-push"),
        "#!/bin/sh\necho project-hook-ran >&2\n",
    )
    .expect("hook");
    ok(work, "chmod +x .git/hooks/pre-push");
    std::fs::create_dir_all(work.join(".claude")).expect(".claude");
    std::fs::write(
        work.join(".claude").join(settings_file),
        "{\"disableAllHooks\": true, \"model\": \"kept\"}\n",
    )
    .expect("settings");
    let out = Command::new(BIN)
        .args(["hook", "install", "--dir"])
        .arg(work)
        .output()
        .expect("install");
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning") && err.contains("disableAllHooks") && err.contains(settings_file),
        "{err}"
    );
    let left = std::fs::read_to_string(work.join(".claude").join(settings_file)).expect("r");
    assert!(!left.contains("disableAllHooks"), "{left}");
    assert!(
        left.contains("\"kept\""),
        "the file's other settings stay: {left}"
    );
    // Claude Code's hooks are in the shared file either way.
    let shared = std::fs::read_to_string(work.join(".claude/settings.json")).expect("shared");
    assert!(shared.contains("hook pre-tool-use"), "{shared}");
    assert!(hooks.join("pre-push.capsid-chained").exists());
    let ours = std::fs::read_to_string(hooks.join("pre-push")).expect("ours");
    assert!(
        ours.contains("hook pre-push") && ours.contains("pre-push.capsid-chained"),
        "{ours}"
    );
    // Installing again keeps one chain.
    let again = Command::new(BIN)
        .args(["hook", "install", "--dir"])
        .arg(work)
        .output()
        .expect("install");
    assert!(again.status.success());
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-push")).expect("ours"),
        ours
    );
}
