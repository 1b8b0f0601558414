//! The agent process of a run: `mise install` in the worktree, the run's own files (Capsid's
//! hooks as `--settings`, the MCP configuration, the hooks' report), the agent's environment
//! (the job, the server, the run credential, the gate commands and the credential with a
//! helper scoped to the project's remote host; never the driver's key nor any other `CAPSID_`
//! setting of the driver), the heartbeat while it runs, and the run itself with a line of
//! progress per tool call, directly or inside a tmux session of the driver's own tmux server.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use capsid_core::drive::credential::remote_host;
use capsid_core::drive::hooks::shell_quote;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::Ready;
use super::proc::{OUTPUT_KEEP, git, shell};

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

/// Keeps the hooks the driver wrote out of the agent's commits (`capsid hook install` in a
/// project the driver works in; the task mode).
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

/// The files of one run, under `<root>/.capsid/runs/<id>` (outside the worktree, mode 0700).
pub(crate) struct RunFiles {
    /// The folder.
    pub dir: PathBuf,
    /// Capsid's hooks, passed with `--settings`.
    pub settings: PathBuf,
    /// The MCP servers, passed with `--mcp-config`.
    pub mcp: PathBuf,
    /// What the hooks report they ran (the driver refuses a verdict when it stays empty).
    pub hooks_report: PathBuf,
}

/// The tool Claude Code asks for permission prompts in a headless run: a stdio MCP server the
/// driver's own binary serves (`capsid hook permission-prompt`). Naming one is also what makes
/// Claude Code offer `AskUserQuestion` in `-p`, whose call the PreToolUse hook defers to a person.
pub const PERMISSION_PROMPT_TOOL: &str = "mcp__capsid-driver__permission_prompt";

/// Writes the run's files: the hooks (`capsid hook stop|pre-tool-use|session-start|
/// session-end|notification`, by absolute path) and the MCP servers (Capsid over HTTP with the
/// run credential from the agent's environment, never written here; the permission-prompt
/// server).
pub(super) fn run_files(r: &Ready, id: &str) -> Result<RunFiles> {
    let dir = r.root.join(".capsid").join("runs").join(id);
    r.runtime.write_files(dir, &super::mcp::mcp_url(&r.url))
}

pub(super) fn write(path: &Path, v: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(v).context("rendering JSON")?;
    std::fs::write(path, format!("{text}\n")).with_context(|| format!("writing {}", path.display()))
}

#[cfg(unix)]
pub(super) fn restrict(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", dir.display()))
}

#[cfg(not(unix))]
pub(super) fn restrict(_: &Path) -> Result<()> {
    Ok(())
}

/// The command line that starts (or resumes) the agent: the configured command and the extra
/// arguments, the role's `model` (in place of one those arguments choose), then what the
/// run's runtime adds (its files, the session to resume).
pub(super) fn agent_command_line(
    r: &Ready,
    files: &RunFiles,
    resume: Option<&str>,
    model: Option<&str>,
) -> String {
    let mut c = r.agent_command.clone();
    let extra = r.agent_args.as_deref().map(str::trim).unwrap_or_default();
    let extra = match model {
        Some(_) => r.runtime.without_model(extra),
        None => extra.to_owned(),
    };
    if !extra.is_empty() {
        c.push(' ');
        c.push_str(&extra);
    }
    if let Some(m) = model {
        c.push(' ');
        c.push_str(&r.runtime.model_args(m));
    }
    r.runtime.command_line(&c, files, resume)
}

/// Whether this process runs as root (Claude Code's bypass mode then needs `IS_SANDBOX=1`).
fn is_root() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// The agent's environment: the job, the server, the run credential (for its hooks and its
/// own MCP calls), the gate commands, and the credential with a git helper that answers only
/// for the project's remote host. `credential` is what the agent authenticates with.
pub(super) async fn agent_env(
    r: &Ready,
    id: &str,
    agent: &str,
    wt: &Path,
    credential: &str,
) -> Vec<(String, String)> {
    let mut envs = vec![
        ("CAPSID_JOB_ID".to_owned(), id.to_owned()),
        ("CAPSID_NAMESPACE".to_owned(), r.namespace.clone()),
        ("CAPSID_WORKTREE".to_owned(), wt.display().to_string()),
        ("CAPSID_MCP_URL".to_owned(), super::mcp::mcp_url(&r.url)),
        ("CAPSID_RUN_CREDENTIAL".to_owned(), credential.to_owned()),
        ("CAPSID_AGENT".to_owned(), agent.to_owned()),
        ("CAPSID_TEST_COMMAND".to_owned(), r.tests.command.clone()),
    ];
    envs.extend(r.runtime.session_env());
    if is_root() {
        envs.push(("IS_SANDBOX".to_owned(), "1".to_owned()));
    }
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

/// The driver's own settings kept from the agent: every `CAPSID_` variable (the driver's key
/// among them), the variable an `env:` credential reference names (the agent gets the
/// credential as `CAPSID_CREDENTIAL`, for the project's host only), the upstream model
/// credential (the agent gets a token for the model door instead), and tmux's own.
pub(super) fn withheld(r: &Ready) -> Vec<String> {
    let mut out: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("CAPSID_") || k == "TMUX" || k == "TMUX_PANE")
        .collect();
    // The upstream model credential stays with the driver's model door.
    out.extend(r.model.withheld.iter().cloned());
    if let Some(name) = r
        .credential_ref
        .as_deref()
        .and_then(|c| c.strip_prefix("env:"))
    {
        out.push(name.to_owned());
    }
    out
}

/// How often the driver asks whether a person stopped the job while its agent works.
const STOP_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// Renews the lease every `r.heartbeat` while `work` runs, and stops `work` (dropping it ends
/// the agent: a boxed agent's whole box) as soon as the job is no longer claimed: a person
/// failed, released or cancelled it from the console, `/api` or `capsid drive stop`.
pub(super) async fn with_heartbeat<T>(
    r: &Ready,
    id: &str,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(r.heartbeat);
    tick.tick().await;
    let mut watch = tokio::time::interval(STOP_POLL);
    watch.tick().await;
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = tick.tick() => {
                if let Err(e) = r.mcp.ok("jobs", json!({"action": "heartbeat", "id": id, "namespace": r.namespace})).await {
                    eprintln!("capsid drive: heartbeat for {id} failed: {e:#}");
                }
            }
            _ = watch.tick() => {
                if let Ok(v) = r.mcp.ok("jobs", json!({"action": "get", "id": id, "namespace": r.namespace})).await
                    && let Some(status) = v["job"]["status"].as_str()
                    && status != "claimed"
                {
                    bail!("the job is {status} now: a person stopped it while the agent worked, and the agent was stopped with it");
                }
            }
        }
    }
}

/// A bounded keeper of the agent's output: the tail, and every `result` line whole.
#[derive(Default)]
struct Output {
    tail: Vec<u8>,
    results: String,
}

impl Output {
    fn push(&mut self, line: &str) {
        if line.starts_with("{\"type\":\"result\"") {
            self.results.push_str(line);
            self.results.push('\n');
        }
        self.tail.extend_from_slice(line.as_bytes());
        self.tail.push(b'\n');
        if self.tail.len() > 2 * OUTPUT_KEEP {
            let cut = self.tail.len() - OUTPUT_KEEP;
            self.tail.drain(..cut);
        }
    }

    fn text(self) -> String {
        let tail = String::from_utf8_lossy(&self.tail).into_owned();
        if self.results.is_empty() || tail.contains(self.results.trim_end()) {
            tail
        } else {
            format!("{tail}{}", self.results)
        }
    }
}

/// Runs the agent command in the worktree with `input` on its standard input.
#[allow(clippy::too_many_arguments)]
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
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(wt);
    for k in withheld(r) {
        cmd.env_remove(k);
    }
    let mut child = cmd
        .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting the agent: {command}"))?;
    let stdout = feed_and_take(child.stdin.take(), child.stdout.take(), input).await?;
    let out = follow_output(r, id, stdout).await?;
    let status = child.wait().await.context("waiting for the agent")?;
    Ok(AgentRun {
        exit: status.code(),
        stdout: out,
    })
}

/// Writes the agent's input and closes it; the agent's output to follow.
pub(super) async fn feed_and_take<O>(
    stdin: Option<impl tokio::io::AsyncWrite + Unpin>,
    stdout: Option<O>,
    input: &str,
) -> Result<O> {
    if let Some(mut stdin) = stdin {
        // An agent that does not read its input is not an error.
        let _ = stdin.write_all(input.as_bytes()).await;
        drop(stdin);
    }
    stdout.context("the agent's output")
}

/// Reads the agent's output to its end, printing a progress line per tool call; what is kept
/// of it (its tail and its `result` lines).
pub(super) async fn follow_output(
    r: &Ready,
    id: &str,
    stdout: impl tokio::io::AsyncRead + Unpin,
) -> Result<String> {
    let mut lines = BufReader::new(stdout).lines();
    let started = Instant::now();
    let mut out = Output::default();
    while let Some(line) = lines
        .next_line()
        .await
        .context("reading the agent's output")?
    {
        if !r.quiet
            && let Some(p) = r.runtime.progress(&line, started)
        {
            eprintln!("capsid drive: {id} {p}");
        }
        out.push(&line);
    }
    Ok(out.text())
}

/// The driver's private tmux server (`tmux -L <socket>`): it starts from the driver's own
/// environment, so the agent gets the whole of it, and no value travels on a command line.
/// The name is short and fixed-length (`capsid-` and 12 hex digits of the namespace and the
/// agent), so the socket's path fits a Unix socket's 108 bytes under any `TMUX_TMPDIR`.
pub(super) fn tmux_socket(r: &Ready, agent: &str) -> String {
    let digest = capsid_core::crypto::sha256_hex(format!("{}\n{agent}", r.namespace));
    format!("capsid-{}", &digest[..12])
}

/// The environment the driver's private tmux server starts with (its sessions inherit it).
pub(super) enum TmuxEnv<'a> {
    /// The driver's own, less what it withholds, with these added (an unboxed agent).
    Driver(&'a [(String, String)]),
    /// Exactly these, and `TMUX_TMPDIR` when the driver has one (a boxed agent: the box's
    /// variables, which bubblewrap passes on into the box).
    Exactly(Vec<(String, String)>),
}

/// The driver's private tmux server while a run uses it: ended when the run ends, however it
/// ends (a person failing the job drops the run, and the agent's processes go with the server).
struct TmuxServer(String);

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Runs the agent inside a detached tmux session `<namespace>__<agent>` of the driver's own
/// tmux server, a person can attach to; its output and exit code go through files, and the
/// driver follows the output for its progress lines.
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
    let line = format!("sh -c {}", shell_quote(command));
    run_line_in_tmux(
        r,
        agent,
        id,
        &run_dir,
        wt,
        &line,
        input,
        TmuxEnv::Driver(envs),
    )
    .await
}

/// Runs the shell command `line` (its standard input `input`) in a detached tmux session of
/// the driver's private server, in `cwd`, with `env`; its output, copied into `run_dir/stdout`
/// as it comes, and its exit code, written into `run_dir/rc` by the pane's shell, are what the
/// driver reads. `run_dir` must be out of the agent's reach.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_line_in_tmux(
    r: &Ready,
    agent: &str,
    id: &str,
    run_dir: &Path,
    cwd: &Path,
    line: &str,
    input: &str,
    env: TmuxEnv<'_>,
) -> Result<AgentRun> {
    std::fs::create_dir_all(run_dir).context("creating the run folder")?;
    let (inp, out, rc) = (
        run_dir.join("stdin"),
        run_dir.join("stdout"),
        run_dir.join("rc"),
    );
    std::fs::write(&inp, input).context("writing the agent's input")?;
    let _ = std::fs::remove_file(&rc);
    let _ = std::fs::write(&out, b"");
    let socket = tmux_socket(r, agent);
    let session = format!("{}__{agent}", r.namespace).replace(['.', ':'], "_");
    let channel = format!("capsid-{id}");
    let script = format!(
        "{{ {line} < {}; echo $? > {}; }} | tee {}; tmux -L {} wait-for -S {channel}",
        shell_quote(&inp.display().to_string()),
        shell_quote(&rc.display().to_string()),
        shell_quote(&out.display().to_string()),
        shell_quote(&socket),
    );
    // A server left from an earlier run would hand the session its old environment.
    kill_tmux_server(&socket).await;
    let mut tmux = Command::new("tmux");
    match env {
        TmuxEnv::Driver(envs) => {
            for k in withheld(r) {
                tmux.env_remove(k);
            }
            tmux.envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        }
        TmuxEnv::Exactly(envs) => {
            let tmpdir = std::env::var_os("TMUX_TMPDIR");
            tmux.env_clear()
                .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            if let Some(t) = tmpdir {
                tmux.env("TMUX_TMPDIR", t);
            }
        }
    }
    tmux.args([
        "-L",
        &socket,
        "new-session",
        "-d",
        "-s",
        &session,
        "-c",
        &cwd.display().to_string(),
    ])
    .arg(script);
    let started = tmux
        .stdin(Stdio::null())
        .output()
        .await
        .context("starting tmux (is it installed?)")?;
    if !started.status.success() {
        let said = String::from_utf8_lossy(&started.stderr);
        bail!(
            "tmux could not start session {session} on its server {socket}: {}",
            match said.trim() {
                "" => format!("tmux exited with {} and said nothing", started.status),
                why => format!("tmux said: {why}"),
            }
        );
    }
    let server = TmuxServer(socket.clone());
    eprintln!(
        "capsid drive: the agent runs in tmux session {session} (tmux -L {socket} attach -t {session})"
    );
    let mut waiter = Command::new("tmux");
    waiter
        .args(["-L", &socket, "wait-for", &channel])
        .kill_on_drop(true);
    let wait = waiter.status();
    tokio::pin!(wait);
    let started_at = Instant::now();
    let mut seen = 0usize;
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
    let waited = loop {
        tokio::select! {
            w = &mut wait => break w?,
            _ = tick.tick() => {
                if !r.quiet {
                    follow(r.runtime, &out, &mut seen, started_at, id);
                }
            }
        }
    };
    if !r.quiet {
        follow(r.runtime, &out, &mut seen, started_at, id);
    }
    drop(server);
    if !waited.success() {
        bail!("waiting on tmux channel {channel} failed");
    }
    let mut keep = Output::default();
    for line in String::from_utf8_lossy(&std::fs::read(&out).unwrap_or_default()).lines() {
        keep.push(line);
    }
    let exit = std::fs::read_to_string(&rc)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    Ok(AgentRun {
        exit,
        stdout: keep.text(),
    })
}

/// Ends the driver's private tmux server `socket`, if it runs.
async fn kill_tmux_server(socket: &str) {
    let _ = Command::new("tmux")
        .args(["-L", socket, "kill-server"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

/// Prints the progress lines of the complete lines `out` gained since `seen` bytes.
fn follow(
    runtime: &dyn super::runtime::Runtime,
    out: &Path,
    seen: &mut usize,
    started: Instant,
    id: &str,
) {
    let Ok(bytes) = std::fs::read(out) else {
        return;
    };
    if bytes.len() <= *seen {
        return;
    }
    let fresh = &bytes[*seen..];
    let Some(end) = fresh.iter().rposition(|b| *b == b'\n') else {
        return;
    };
    for line in String::from_utf8_lossy(&fresh[..end]).lines() {
        if let Some(p) = runtime.progress(line, started) {
            eprintln!("capsid drive: {id} {p}");
        }
    }
    *seen += end + 1;
}
