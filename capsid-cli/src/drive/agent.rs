//! The agent process of a run: `mise install` in the worktree, the hooks kept out of the
//! agent's commits, its environment (the job, the server, the driver's key, the gate commands
//! and the credential with a helper scoped to the project's remote host), the heartbeat while
//! it runs, and the run itself, directly or inside a tmux session a person can attach to.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result, bail};
use capsid_core::drive::credential::remote_host;
use capsid_core::drive::hooks::shell_quote;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::Ready;
use super::proc::{git, keep_tail, shell};

/// What the agent process did.
pub(super) struct AgentRun {
    pub(super) exit: Option<i32>,
    pub(super) stdout: String,
}

/// `mise install` in the worktree when the project pins a toolchain and mise is here.
pub(super) async fn mise_install(wt: &Path) {
    let pinned = wt.join("mise.toml").exists() || wt.join(".mise.toml").exists();
    if !pinned {
        return;
    }
    let have = shell("command -v mise", wt, &[]).await;
    if !have.passed() {
        eprintln!(
            "capsid drive: the project pins tools in mise.toml but mise is not on the PATH; using the host's"
        );
        return;
    }
    let run = shell("mise trust --yes . >/dev/null 2>&1; mise install", wt, &[]).await;
    if !run.passed() {
        eprintln!("capsid drive: mise install failed:\n{}", run.output);
    }
}

/// Keeps the hooks the driver wrote out of the agent's commits.
pub(super) async fn hide_settings(wt: &Path) {
    let tracked = git(
        wt,
        &["ls-files", "--error-unmatch", ".claude/settings.json"],
    )
    .await
    .is_ok();
    if tracked {
        let _ = git(
            wt,
            &["update-index", "--skip-worktree", ".claude/settings.json"],
        )
        .await;
    } else if let Ok(common) = git(wt, &["rev-parse", "--git-common-dir"]).await {
        let exclude = Path::new(&common).join("info").join("exclude");
        let exclude = if exclude.is_absolute() {
            exclude
        } else {
            wt.join(exclude)
        };
        let text = std::fs::read_to_string(&exclude).unwrap_or_default();
        if !text.lines().any(|l| l.trim() == ".claude/settings.json") {
            let _ = std::fs::write(&exclude, format!("{text}.claude/settings.json\n"));
        }
    }
}

/// The agent's environment: the job, the server, the driver's key (for its hooks and its own
/// checkpoints), the gate commands, and the credential with a git helper that answers only
/// for the project's remote host.
pub(super) async fn agent_env(
    r: &Ready,
    id: &str,
    agent: &str,
    wt: &Path,
) -> Vec<(String, String)> {
    let mut envs = vec![
        ("CAPSID_JOB_ID".to_owned(), id.to_owned()),
        ("CAPSID_NAMESPACE".to_owned(), r.namespace.clone()),
        ("CAPSID_WORKTREE".to_owned(), wt.display().to_string()),
        ("CAPSID_MCP_URL".to_owned(), super::mcp::mcp_url(&r.url)),
        ("CAPSID_KEY".to_owned(), r.key.clone()),
        ("CAPSID_AGENT".to_owned(), agent.to_owned()),
        ("CAPSID_TEST_COMMAND".to_owned(), r.tests.command.clone()),
    ];
    if let Some(b) = &r.build {
        envs.push(("CAPSID_BUILD_COMMAND".to_owned(), b.command.clone()));
    }
    if let Some(secret) = &r.credential {
        envs.push(("CAPSID_CREDENTIAL".to_owned(), secret.clone()));
        let host = git(wt, &["remote", "get-url", "origin"])
            .await
            .ok()
            .and_then(|u| remote_host(&u));
        if let Some(host) = host {
            envs.extend([
                ("GIT_CONFIG_COUNT".to_owned(), "1".to_owned()),
                ("GIT_CONFIG_KEY_0".to_owned(), format!("credential.https://{host}.helper")),
                (
                    "GIT_CONFIG_VALUE_0".to_owned(),
                    "!f() { test \"$1\" = get && echo username=x-access-token && echo \"password=$CAPSID_CREDENTIAL\"; }; f".to_owned(),
                ),
            ]);
        }
    }
    envs
}

/// Renews the lease every `r.heartbeat` while `work` runs.
pub(super) async fn with_heartbeat<T>(
    r: &Ready,
    id: &str,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(r.heartbeat);
    tick.tick().await;
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = tick.tick() => {
                if let Err(e) = r.mcp.ok("jobs", json!({"action": "heartbeat", "id": id, "namespace": r.namespace})).await {
                    eprintln!("capsid drive: heartbeat for {id} failed: {e:#}");
                }
            }
        }
    }
}

/// Runs the agent command in the worktree with `input` on its standard input.
pub(super) async fn run_agent(
    r: &Ready,
    agent: &str,
    id: &str,
    wt: &Path,
    command: &str,
    input: &str,
    envs: &[(String, String)],
) -> Result<AgentRun> {
    if r.tmux {
        return run_in_tmux(r, agent, id, wt, command, input, envs).await;
    }
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(wt)
        .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting the agent: {command}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // An agent that does not read its input is not an error.
        let _ = stdin.write_all(input.as_bytes()).await;
        drop(stdin);
    }
    let out = child
        .wait_with_output()
        .await
        .context("waiting for the agent")?;
    Ok(AgentRun {
        exit: out.status.code(),
        stdout: keep_tail(&out.stdout),
    })
}

/// Runs the agent inside a detached tmux session `<namespace>__<agent>` a person can attach
/// to, waiting on a tmux channel for it to end; its output and exit code go through files.
async fn run_in_tmux(
    r: &Ready,
    agent: &str,
    id: &str,
    wt: &Path,
    command: &str,
    input: &str,
    envs: &[(String, String)],
) -> Result<AgentRun> {
    let run_dir = r.root.join(".capsid").join("runs").join(id);
    std::fs::create_dir_all(&run_dir).context("creating the run folder")?;
    let (inp, out, rc) = (
        run_dir.join("stdin"),
        run_dir.join("stdout"),
        run_dir.join("rc"),
    );
    std::fs::write(&inp, input).context("writing the agent's input")?;
    let _ = std::fs::remove_file(&rc);
    let session = format!("{}__{agent}", r.namespace).replace(['.', ':'], "_");
    let channel = format!("capsid-{id}");
    let script = format!(
        "{{ sh -c {} < {}; echo $? > {}; }} | tee {}; tmux wait-for -S {channel}",
        shell_quote(command),
        shell_quote(&inp.display().to_string()),
        shell_quote(&rc.display().to_string()),
        shell_quote(&out.display().to_string()),
    );
    let mut tmux = Command::new("tmux");
    tmux.args([
        "new-session",
        "-d",
        "-s",
        &session,
        "-c",
        &wt.display().to_string(),
    ]);
    for (k, v) in envs {
        tmux.arg("-e").arg(format!("{k}={v}"));
    }
    let started = tmux
        .arg(script)
        .status()
        .await
        .context("starting tmux (is it installed?)")?;
    if !started.success() {
        bail!("tmux could not start session {session} (is one of that name already running?)");
    }
    eprintln!("capsid drive: the agent runs in tmux session {session} (tmux attach -t {session})");
    let waited = Command::new("tmux")
        .args(["wait-for", &channel])
        .status()
        .await?;
    if !waited.success() {
        bail!("waiting on tmux channel {channel} failed");
    }
    let stdout = std::fs::read(&out)
        .map(|b| keep_tail(&b))
        .unwrap_or_default();
    let exit = std::fs::read_to_string(&rc)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    Ok(AgentRun { exit, stdout })
}
