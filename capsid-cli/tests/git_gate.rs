//! Git's own pre-push gate, as `capsid hook install` leaves it in a real repository with a bare
//! origin: however a push to `main` is spelled or launched (a shell, `eval`, `xargs`, an alias,
//! a rewritten refspec, a configured `remote.origin.push` or `push.default`), git hands the hook
//! the refs it will really update, and `main` on the origin never moves without a different
//! agent's approval of the exact commit (here, with no server to ask, never). A feature push
//! with a green suite still goes through; a red suite refuses any push. The spellings that skip
//! git's hooks altogether (`--no-verify`, `core.hooksPath`, `send-pack`) are the PreToolUse
//! gate's to refuse (`capsid_core::drive::hooks` tests them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

#[test]
fn no_spelling_of_a_push_moves_main_and_a_green_feature_push_goes_through() {
    let (_tmp, origin, work) = project();
    // A setting that switches Claude Code's hooks off after the install does not reach git's
    // own gate.
    std::fs::write(
        work.join(".claude/settings.local.json"),
        "{\"disableAllHooks\": true}\n",
    )
    .expect("settings");
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

#[test]
fn install_keeps_the_projects_own_pre_push_and_removes_disable_all_hooks() {
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
        work.join(".claude/settings.local.json"),
        "{\"disableAllHooks\": true}\n",
    )
    .expect("local");
    let out = Command::new(BIN)
        .args(["hook", "install", "--dir"])
        .arg(work)
        .output()
        .expect("install");
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("disableAllHooks"), "{err}");
    let local = std::fs::read_to_string(work.join(".claude/settings.local.json")).expect("r");
    assert!(!local.contains("disableAllHooks"), "{local}");
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
