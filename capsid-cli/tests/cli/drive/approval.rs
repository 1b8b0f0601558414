//! The standing approval, end to end on both stores: `capsid hook pre-tool-use` is fed Claude
//! Code's exact PreToolUse stdin for a push to a protected branch and for a merge, in a real
//! git repository, with the driver's key and the real server (its GitHub App pointed at the
//! fake GitHub, so a reviewer's `manage_pr` comment records a verdict pinned to the pull
//! request's head, which the test makes the repository's own HEAD). Without an approval, with
//! the caller's own, and with one for an older commit the hook denies and says why; with
//! another agent's approval of the current head it prints nothing and exits 0. A merge is
//! judged against the pull request's head on GitHub: a head moved there (the local HEAD still
//! the approved commit), another pull request or another repository of the namespace at the
//! approved head, and a GraphQL `mergePullRequest` are refused. A server that cannot be
//! reached denies too (fail closed).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use capsid_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};

use super::support::{BIN, Store, World, git_out, said};

const ALPHA: &str = "octo/alpha";
/// A second repository namespace alpha maps.
const BETA: &str = "octo/beta";

/// Claude Code's PreToolUse event for a Bash command, as its documentation shows it.
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

/// `capsid hook pre-tool-use` in `dir` with `key` against `mcp_url`: exit 0 asserted.
fn hook(dir: &Path, mcp_url: &str, key: &str, command: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(["hook", "pre-tool-use"])
        .current_dir(dir)
        .env("CAPSID_TEST_COMMAND", "echo 'test result: ok. 3 passed'")
        .env("CAPSID_BUILD_COMMAND", "echo built")
        .env("CAPSID_DEFAULT_BRANCH", "main")
        .env("CAPSID_MCP_URL", mcp_url)
        .env("CAPSID_KEY", key)
        .env("CAPSID_NAMESPACE", "alpha")
        .env_remove("CAPSID_AGENT")
        .env_remove("CAPSID_JOB_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn capsid hook");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bash_event(dir, command).as_bytes())
        .expect("write the event");
    let out = child.wait_with_output().expect("capsid hook ends");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    out
}

/// The hook's denial: exactly Claude Code's PreToolUse deny object; its reason.
fn denied(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(text.lines().count(), 1, "one JSON line: {}", said(out));
    let got: Value = serde_json::from_str(&text).expect("JSON");
    let reason = got["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_else(|| panic!("no reason in {got}"))
        .to_owned();
    assert_eq!(
        got,
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }}),
        "exactly the deny object"
    );
    reason
}

/// The hook let the command through: no output at all.
fn passed(out: &Output) {
    assert!(out.stdout.is_empty(), "no output: {}", said(out));
}

fn mint(w: &World, name: &str) -> String {
    let minted: Value = serde_json::from_str(&w.cli(&[
        "agents",
        "mint",
        "--name",
        name,
        "--kind",
        "driver",
        "--namespaces",
        "alpha",
        "--grants",
        "read,write",
        "--flag",
        "can_comment_pr",
        "--json",
    ]))
    .expect("JSON");
    minted["key"].as_str().expect("a key").to_owned()
}

/// A local repository on branch `topic`: its folder.
fn local_repo(w: &World) -> std::path::PathBuf {
    let dir = w.dir.path().join("alpha");
    std::fs::create_dir_all(&dir).expect("folder");
    git_out(&dir, &["init", "-q", "-b", "main"]);
    git_out(&dir, &["config", "user.name", "T"]);
    git_out(&dir, &["config", "user.email", "t@capsid.invalid"]);
    std::fs::write(dir.join("README.md"), "alpha\n").expect("write");
    git_out(&dir, &["add", "."]);
    git_out(&dir, &["commit", "-qm", "init"]);
    git_out(&dir, &["checkout", "-q", "-b", "topic"]);
    std::fs::write(dir.join("w.txt"), "work\n").expect("write");
    git_out(&dir, &["add", "."]);
    git_out(&dir, &["commit", "-qm", "work"]);
    dir
}

fn approvals_follow_the_head(store: Store, case: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let gh = runtime.block_on(FakeGitHub::start());
    gh.add_repo(ALPHA, &[("README.md", "alpha\n")]);
    gh.add_repo(BETA, &[("README.md", "beta\n")]);
    let env = super::support::github_app_env(&gh);
    let Some(w) = World::start_with(store, case, env) else {
        return;
    };
    w.cli(&[
        "namespaces",
        "register",
        "alpha",
        "--repos",
        &json!([{"repo": ALPHA, "label": "primary"}, {"repo": BETA, "label": "beta"}]).to_string(),
    ]);
    let driver = mint(&w, "alpha-driver");
    let reviewer = mint(&w, "alpha-reviewer");
    let dir = local_repo(&w);
    let head = git_out(&dir, &["rev-parse", "HEAD"]);
    gh.commit(ALPHA, "topic", &[("w.txt", Some("work\n"))], "work");
    let pr = gh.open_pull(ALPHA, "topic", "main", "Work", "");
    gh.set_pull_head(ALPHA, pr, &head);
    let mcp = format!("{}/ops/mcp", w.url);
    let push = "git push origin HEAD:main";
    let merge = format!("gh pr merge {pr} --squash");
    let review = |key: &str, body: &str| {
        let out = w.tool(
            key,
            "manage_pr",
            json!({"namespace": "alpha", "number": pr, "action": "comment", "body": body}),
        );
        assert_eq!(out["review"]["head_sha"], json!(head), "{out}");
    };

    // No approval at all: both denied, naming the head.
    for command in [push, merge.as_str()] {
        let why = denied(&hook(&dir, &mcp, &driver, command));
        assert!(
            why.contains(&format!(
                "no review verdict is recorded for head {} in namespace alpha",
                &head[..12]
            )),
            "{command}: {why}"
        );
        assert!(why.contains("protected branch"), "{command}: {why}");
    }

    // The caller's own approval never counts.
    review(&driver, "REVIEW: mine. APPROVE");
    for command in [push, merge.as_str()] {
        let why = denied(&hook(&dir, &mcp, &driver, command));
        assert!(
            why.contains("are agent:alpha-driver's own"),
            "{command}: {why}"
        );
    }

    // Another agent's approval of the current head: the push (its gates green) and the
    // merge pass silently.
    review(&reviewer, "REVIEW: looks right. APPROVE");
    for command in [push, merge.as_str()] {
        passed(&hook(&dir, &mcp, &driver, command));
    }
    // ... and so does the same merge through `gh api`.
    passed(&hook(
        &dir,
        &mcp,
        &driver,
        &format!("gh api -X PUT repos/{ALPHA}/pulls/{pr}/merge"),
    ));
    // ... while a push of every branch is still refused, approval or not, and so is a merge
    // through GraphQL's `mergePullRequest`, which names no pull request to check.
    let why = denied(&hook(&dir, &mcp, &driver, "git push --all origin"));
    assert!(why.contains("No approval lets this through"), "{why}");
    let why = denied(&hook(
        &dir,
        &mcp,
        &driver,
        "gh api graphql -f query='mutation { mergePullRequest(input: {pullRequestId: \"PR_kw\"}) { clientMutationId } }'",
    ));
    assert!(why.contains("names no pull request number"), "{why}");

    // The pull request's head moved on GitHub while the local HEAD is still the approved
    // commit: the push of that commit passes, the merge is refused naming GitHub's head.
    let moved = gh.commit(
        ALPHA,
        "topic",
        &[("w.txt", Some("pushed from elsewhere\n"))],
        "elsewhere",
    );
    gh.set_pull_head(ALPHA, pr, &moved);
    passed(&hook(&dir, &mcp, &driver, push));
    for command in [
        merge.clone(),
        format!("gh api -X PUT repos/{ALPHA}/pulls/{pr}/merge"),
    ] {
        let why = denied(&hook(&dir, &mcp, &driver, &command));
        assert!(
            why.contains(&format!("{ALPHA}#{pr}'s current head is {moved}"))
                && why.contains(&format!(
                    "no review verdict is recorded for head {}",
                    &moved[..12]
                )),
            "{command}: {why}"
        );
    }
    gh.set_pull_head(ALPHA, pr, &head);
    passed(&hook(&dir, &mcp, &driver, &merge));

    // The approval is of that pull request of that repository: another pull request (its
    // value flags not taken for its number), another repository, or the other pull request
    // through `gh api` is refused.
    gh.commit(ALPHA, "other", &[("o.txt", Some("other\n"))], "other");
    let other = gh.open_pull(ALPHA, "other", "main", "Other", "");
    // Another pull request of the same repository at the very head the approval was of.
    gh.set_pull_head(ALPHA, other, &head);
    for command in [
        format!("gh pr merge {other}"),
        format!("gh pr merge -t {pr} {other}"),
        format!("gh api -X PUT repos/{ALPHA}/pulls/{other}/merge"),
    ] {
        let why = denied(&hook(&dir, &mcp, &driver, &command));
        assert!(
            why.contains(&format!(
                "{ALPHA}#{other}'s current head is {head}; the verdict on that commit is on {ALPHA}#{pr}, not on this pull request"
            )),
            "{command}: {why}"
        );
    }
    // Another repository the namespace maps, with a pull request of the same number at the
    // same head.
    gh.commit(BETA, "topic", &[("w.txt", Some("work\n"))], "work");
    gh.open_pull_numbered(BETA, pr, "topic", "main", "Beta work", "");
    gh.set_pull_head(BETA, pr, &head);
    for command in [
        format!("gh pr merge -R {BETA} {pr}"),
        format!("gh pr merge https://github.com/{BETA}/pull/{pr}"),
        format!("gh api -X PUT repos/{BETA}/pulls/{pr}/merge"),
    ] {
        let why = denied(&hook(&dir, &mcp, &driver, &command));
        assert!(
            why.contains(&format!(
                "{BETA}#{pr}'s current head is {head}; the verdict on that commit is on {ALPHA}#{pr}, not on this pull request"
            )),
            "{command}: {why}"
        );
    }
    for command in [
        format!("gh pr merge -t {pr} {other}"),
        format!("gh pr merge --subject ship-it {other} --squash"),
        format!("gh api -X PUT repos/{ALPHA}/pulls/{other}/merge"),
        format!("gh pr merge -R octo/secret {pr}"),
        "gh pr merge".to_owned(),
    ] {
        let why = denied(&hook(&dir, &mcp, &driver, &command));
        assert!(
            why.contains("protected branch") || why.contains("names no pull request"),
            "{command}: {why}"
        );
    }
    let why = denied(&hook(
        &dir,
        &mcp,
        &driver,
        &format!("gh pr merge -R octo/secret {pr}"),
    ));
    assert!(why.contains("not one namespace alpha maps"), "{why}");

    // A new commit: the approval was of an older head and no longer stands, here and on
    // GitHub, where the pull request's head moved on.
    std::fs::write(dir.join("w.txt"), "more work\n").expect("write");
    git_out(&dir, &["commit", "-qam", "more"]);
    let newer = git_out(&dir, &["rev-parse", "HEAD"]);
    gh.set_pull_head(ALPHA, pr, &newer);
    for command in [push, merge.as_str()] {
        let why = denied(&hook(&dir, &mcp, &driver, command));
        assert!(
            why.contains(&format!(
                "no review verdict is recorded for head {}",
                &newer[..12]
            )),
            "{command}: {why}"
        );
    }

    // A server that cannot be reached: denied, failing closed, saying so.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let gone = format!("http://{}/ops/mcp", closed.local_addr().expect("addr"));
    drop(closed);
    git_out(&dir, &["reset", "-q", "--hard", &head]);
    let why = denied(&hook(&dir, &gone, &driver, push));
    assert!(why.contains("could not be asked"), "{why}");
    assert!(why.contains("fails closed"), "{why}");
    // ... while the same head with the server up passes again, and so does the merge once
    // the pull request's head is the approved one again.
    passed(&hook(&dir, &mcp, &driver, push));
    gh.set_pull_head(ALPHA, pr, &head);
    passed(&hook(&dir, &mcp, &driver, &merge));
    w.finish();
}

#[test]
fn sqlite_protected_pushes_and_merges_need_another_agents_approval_of_the_head() {
    approvals_follow_the_head(Store::Sqlite, "approval_sqlite");
}

#[test]
fn postgres_protected_pushes_and_merges_need_another_agents_approval_of_the_head() {
    approvals_follow_the_head(Store::Postgres, "approval_postgres");
}
