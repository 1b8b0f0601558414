//! Two runtimes under one driver (issue 50): a job asking for Codex and one asking for Claude
//! Code, queued in one namespace, driven side by side by one `capsid drive --watch
//! --max-parallel 2`
//! on a host with both real CLIs; both finish, each record names its runtime, and each cost is
//! the model door's count of its own calls.

use capsid_tests::fake_claude::{bash, text};
use serde_json::json;

use super::claude::write_file;
use super::support::{World, said};

pub fn one_driver_runs_a_codex_job_and_a_claude_code_job_side_by_side(w: &World) {
    let first = w.namespace_with_driver("demo");
    let second = w.mint_driver("demo-driver-2", "demo");
    let root = w.project("demo");
    let post = |title: &str, body: &str, runtime: &str| {
        let posted = w.tool(
            &w.human,
            "jobs",
            json!({"action": "post", "namespace": "demo", "title": title, "body": body, "runtime": runtime}),
        );
        assert_eq!(posted["ok"], json!(true), "{posted}");
        posted["job"]["id"].as_str().expect("an id").to_owned()
    };
    let on_codex = post("On Codex", "Widgets. SCRIPT=rt-codex", "codex");
    let on_claude = post("On Claude Code", "Gadgets. SCRIPT=rt-claude", "claude-code");
    for (marker, file) in [
        ("SCRIPT=rt-codex", "codex.txt"),
        ("SCRIPT=rt-claude", "claude.txt"),
    ] {
        w.fake().script(
            marker,
            vec![
                vec![write_file(file, "made\n")],
                vec![bash(&format!(
                    "git add {file} && git commit -qm '{file}' && git push -q origin HEAD"
                ))],
                vec![text("Shipped.")],
            ],
        );
    }
    let keys = w.dir.path().join("keys");
    std::fs::create_dir_all(&keys).expect("keys folder");
    std::fs::write(keys.join("1.key"), &first).expect("key 1");
    std::fs::write(keys.join("2.key"), &second).expect("key 2");
    let k1 = keys.join("1.key").display().to_string();
    let k2 = keys.join("2.key").display().to_string();
    // One watching driver (its `--once` dropped for `--watch`), two slots: it runs until both
    // jobs are closed, then is stopped.
    let cmd = w.drive_claude(
        "demo",
        &first,
        &root,
        &["--max-parallel", "2", "--key-file", &k1, "--key-file", &k2],
    );
    let args: Vec<std::ffi::OsString> = cmd
        .get_args()
        .map(|a| {
            if a == "--once" {
                "--watch".into()
            } else {
                a.to_owned()
            }
        })
        .collect();
    let mut watch = std::process::Command::new(cmd.get_program());
    watch.args(&args);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => watch.env(k, v),
            None => watch.env_remove(k),
        };
    }
    // The two key files, not the one key in CAPSID_KEY.
    watch.env_remove("CAPSID_KEY");
    let mut child = watch
        .args(["--poll-secs", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start capsid drive --watch");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let closed = |id: &str| {
        let s = w.job("demo", id)["status"].clone();
        s == json!("done") || s == json!("failed") || s == json!("blocked")
    };
    while !(closed(&on_codex) && closed(&on_claude))
        && std::time::Instant::now() < deadline
        && child.try_wait().ok().flatten().is_none()
    {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("capsid drive --watch ends");
    // Each job went to its own CLI: Codex's calls are Responses calls, Claude Code's Messages.
    let codex_calls = w.fake().requests("SCRIPT=rt-codex");
    let claude_calls = w.fake().requests("SCRIPT=rt-claude");
    assert!(
        !codex_calls.is_empty() && codex_calls.iter().all(|r| r.body.get("input").is_some()),
        "the Codex job did not run on Codex: {}",
        said(&out)
    );
    assert!(
        !claude_calls.is_empty()
            && claude_calls
                .iter()
                .all(|r| r.body.get("messages").is_some()),
        "the Claude Code job did not run on Claude Code"
    );
    for (id, runtime, calls) in [
        (&on_codex, "codex", codex_calls.len()),
        (&on_claude, "claude-code", claude_calls.len()),
    ] {
        let record = w.job_record("demo", id);
        let job = &record["job"];
        assert_eq!(job["status"], json!("done"), "{record}\n{}", said(&out));
        assert_eq!(job["runtime"], json!(runtime), "{record}");
        let summary = job["result_summary"].as_str().unwrap_or("");
        assert!(
            summary.contains(&format!("turn(s) of {runtime}")),
            "{summary}"
        );
        // The cost is the door's, call by call, on the job's own ledger.
        assert_eq!(record["spend"]["calls"], json!(calls), "{record}");
        let cost = record["spend"]["cost_usd"].as_f64().unwrap_or(0.0);
        assert!(cost > 0.0, "{record}");
        assert_eq!(
            record["outcome"]["cost_usd"].as_f64(),
            Some(cost),
            "{record}"
        );
    }
}

/// Codex with its hooks untrusted (an agent command without `--dangerously-bypass-hook-trust`)
/// runs none of them, silently: the session is never `done`, and the refusal says why. A
/// `config.toml` the agent emptied in one session is written again before the next, whose
/// hooks run.
pub fn a_codex_session_whose_hooks_did_not_run_is_never_done(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post("demo", "Untrusted", "SCRIPT=untrusted");
    w.fake().script(
        "SCRIPT=untrusted",
        vec![
            vec![bash(
                "echo u > u.txt && git add u.txt && git commit -qm u && git push -q origin HEAD",
            )],
            vec![text("Shipped.")],
        ],
    );
    let out = w.drive_claude_once(
        "demo",
        &key,
        &root,
        &[
            "--agent-command",
            "codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    let job = w.job("demo", &id);
    assert_ne!(job["status"], json!("done"), "{job}");
    let summary = job["result_summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("none of Capsid's hooks reported")
            && summary.contains("--dangerously-bypass-hook-trust"),
        "{summary}"
    );

    // The agent empties its config.toml (no hooks, no door) and asks; the resumed session
    // runs on the driver's file again, with its hooks.
    let asked = w.post("demo", "Emptied", "SCRIPT=emptied");
    w.fake().script(
        "SCRIPT=emptied",
        vec![
            vec![bash(": > \"$CODEX_HOME/config.toml\" && echo EMPTIED")],
            vec![super::claude::checkpoint_question("Ship it?")],
            vec![text("Waiting for an answer.")],
            vec![bash(
                "echo e > e.txt && git add e.txt && git commit -qm e && git push -q origin HEAD",
            )],
            vec![text("Shipped after the answer.")],
        ],
    );
    let out = w.drive_claude_once("demo", &key, &root, &[]);
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    assert_eq!(w.job("demo", &asked)["status"], json!("blocked"));
    let config = root.join(".capsid/runs").join(&asked).join("config.toml");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap_or_default(),
        "",
        "the agent's edit"
    );
    let (status, body) = w.api(
        "POST",
        "/api/projects/demo/agents/demo-driver/answer",
        Some(json!({"answer": "Yes, ship it", "resume": true})),
    );
    assert_eq!(status, 200, "{body}");
    let out = w.drive_claude_once("demo", &key, &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(w.job("demo", &asked)["status"], json!("done"));
    let written = std::fs::read_to_string(&config).unwrap_or_default();
    assert!(written.contains("[[hooks.Stop.hooks]]"), "{written}");
    let ran = std::fs::read_to_string(root.join(".capsid/runs").join(&asked).join("hooks-ran"))
        .unwrap_or_default();
    assert!(ran.contains("session-start"), "{ran}");
}
