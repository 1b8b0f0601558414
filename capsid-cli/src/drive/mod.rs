//! `capsid drive`: a queued job becomes a supervised agent run. The driver is a client of the
//! server (`/ops/mcp` with its agent key) and keeps no state of its own: it claims a job,
//! runs the agent in the job's own git worktree under Capsid's hooks, runs the test gate and
//! the build check itself once the agent exits, and closes the job with what it measured
//! (`capsid_core::drive::verdict` decides how). Exit codes: 0 done, 3 nothing to claim,
//! 4 gated (failed or blocked), 2 refused, 1 error. `--task` drives subscription mode's signed
//! task document instead of a queued job (`task.rs`).

mod agent;
mod boxed;
mod control;
mod doors;
pub(crate) mod githook;
pub mod mcp;
pub(crate) mod model_door;
mod pr;
pub(crate) mod preflight;
pub mod proc;
mod rehearse;
mod run;
pub(crate) mod runtime;
mod schedule;
mod task;
mod worktree;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use capsid_core::drive::credential::CredentialRef;
use capsid_core::drive::gate::{self, GateCommand};
use capsid_core::drive::runner::RunnerSettings;
use capsid_core::drive::runtime::RuntimeKind;
use capsid_core::drive::verdict::combined_exit_code;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::hook::mise_tasks;
use mcp::{Answer, Mcp};

/// Exit code: the job is done.
pub const EXIT_DONE: u8 = 0;
/// Exit code: an error (unreachable server, git failed).
pub const EXIT_ERROR: u8 = 1;
/// Exit code: refused (no key, an unresolvable credential, no test command, a claim refused).
pub const EXIT_REFUSED: u8 = 2;
/// Exit code: nothing to claim.
pub const EXIT_NOTHING: u8 = 3;
/// Exit code: gated (the job failed or was blocked).
pub const EXIT_GATED: u8 = 4;

/// `capsid drive`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DriveArgs {
    #[command(subcommand)]
    pub command: Option<DriveCommand>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `capsid drive schedule`.
#[derive(Debug, Subcommand)]
pub enum DriveCommand {
    /// Print (and with --apply install, disabled) a nightly timer running `capsid drive --once`.
    Schedule(schedule::ScheduleArgs),
    /// List the namespace's running jobs: which driver holds each, since when.
    Ps(control::ControlArgs),
    /// Stop a running job: it fails with the reason, and its driver ends the agent (a boxed
    /// agent with its whole box) within seconds.
    Stop(control::StopArgs),
}

/// What a run needs.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The server.
    #[arg(long, env = "CAPSID_URL", default_value = "http://127.0.0.1:8787")]
    pub url: String,
    /// The driver's key file (default ~/.capsid/agent-<namespace>-driver.key; CAPSID_KEY wins).
    /// Give it once per slot with --max-parallel: the queue lets one key hold one job.
    #[arg(long)]
    pub key_file: Vec<PathBuf>,
    /// The namespace whose queue this driver works.
    #[arg(long, env = "CAPSID_NAMESPACE")]
    pub namespace: Option<String>,
    /// The project's git repository on this host (default: the current folder).
    #[arg(long, env = "CAPSID_ROOT_DIR")]
    pub root_dir: Option<PathBuf>,
    /// The test command (default: the project's `mise run test`; none at all refuses the run).
    #[arg(long, env = "CAPSID_TEST_COMMAND")]
    pub test_command: Option<String>,
    /// The build check (default: `mise run build-image` when defined, else skipped).
    #[arg(long, env = "CAPSID_BUILD_COMMAND")]
    pub build_command: Option<String>,
    /// The agent CLI: `claude-code` (the default) or `codex` (default: the namespace's runner
    /// setting `runtime`). Each runs under the same box, doors, gates and verdict.
    #[arg(long, env = "CAPSID_RUNTIME", value_name = "claude-code|codex")]
    pub runtime: Option<String>,
    /// The agent command (default for claude-code: `claude -p --output-format stream-json
    /// --verbose --permission-mode bypassPermissions`; for codex: `codex exec --json
    /// --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
    /// --dangerously-bypass-hook-trust`). The job body arrives on its standard input; the
    /// driver appends what loads Capsid's hooks and MCP server (Claude Code: `--mcp-config`,
    /// `--settings`, `--permission-prompt-tool`; Codex: its `CODEX_HOME`) and, on a resume,
    /// the session to resume.
    #[arg(long, env = "CAPSID_AGENT_COMMAND")]
    pub agent_command: Option<String>,
    /// Extra arguments appended to the agent command (e.g. `--model claude-sonnet-4-5
    /// --max-turns 40`); the driver's own arguments are never lost.
    #[arg(long, env = "CAPSID_AGENT_ARGS", allow_hyphen_values = true)]
    pub agent_args: Option<String>,
    /// No progress line per tool call while the agent works (the verdict is still printed).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Where the project's credential is: env:NAME, file:/path or cmd:command.
    #[arg(long, env = "CAPSID_CREDENTIAL_REF")]
    pub credential_ref: Option<String>,
    /// Claim and run one job, then exit (the default).
    #[arg(long, conflicts_with = "watch")]
    pub once: bool,
    /// Keep claiming jobs, polling when the queue is empty.
    #[arg(long)]
    pub watch: bool,
    /// Run up to this many jobs at once, one per driver key (with --once: claim up to this
    /// many, run them side by side, then exit).
    #[arg(long, default_value_t = 1)]
    pub max_parallel: usize,
    /// Seconds between polls of an empty queue (--watch).
    #[arg(long, default_value_t = 30)]
    pub poll_secs: u64,
    /// Run the agent inside a tmux session named <namespace>__<agent>, to attach to.
    #[arg(long)]
    pub tmux: bool,
    /// Seconds between heartbeats while the agent runs (the lease is four hours).
    #[arg(long, default_value_t = 600)]
    pub heartbeat_secs: u64,
    /// Try the whole loop without a model account: post a rehearsal job in the namespace, claim
    /// it and run the real agent against a scripted model in the driver (it writes one file,
    /// runs the test command, commits and pushes the job's branch `capsid/<job>`), with every
    /// gate as for a real job. Nothing but that branch is touched; no pull request is opened;
    /// it costs nothing.
    #[arg(long, conflicts_with_all = ["watch", "task"])]
    pub rehearse: bool,
    /// Drive the improve loop's signed task document `<ns>/improve/run-<date>.md` (or
    /// `improve/run-<date>.md` with --namespace) under the namespace's driver lease, instead
    /// of a queued job.
    #[arg(long, conflicts_with = "watch")]
    pub task: Option<String>,
    /// The model API the agent's calls are forwarded to through Capsid's metered model door
    /// (default: ANTHROPIC_BASE_URL, else `https://api.anthropic.com`). The agent itself is
    /// pointed at the door, never at the upstream.
    #[arg(long, env = "CAPSID_MODEL_UPSTREAM")]
    pub model_upstream: Option<String>,
    /// Where the upstream model key is: env:NAME, file:/path or cmd:command (default:
    /// ANTHROPIC_API_KEY, else ANTHROPIC_AUTH_TOKEN, else the agent's own login passes
    /// through). The agent never sees it: it gets a token that works only at the door.
    #[arg(long, env = "CAPSID_MODEL_KEY")]
    pub model_key: Option<String>,
    /// A JSON price table over the shipped one: {"<model>": {"input": 3.0, "output": 15.0,
    /// "cache_write": 3.75, "cache_read": 0.3}}, USD per million tokens.
    #[arg(long, env = "CAPSID_PRICES")]
    pub prices: Option<PathBuf>,
    /// The most one job's model calls may cost, in US dollars: a call that could pass it is
    /// refused before it reaches the model, and the job blocks until a person raises it.
    #[arg(long, env = "CAPSID_MAX_COST_USD")]
    pub max_cost_usd: Option<f64>,
    /// Run the agent in a box, which is the default (bubblewrap: its own user, PID and network
    /// namespaces): its own clone of a Capsid-owned mirror, no network but the driver's doors
    /// (the metered model, Capsid's MCP endpoint, the git gateway that is the push gate, and
    /// the package registries through a CONNECT door), and none of the host's secrets. When
    /// bubblewrap cannot start a box here the driver refuses before any claim, unless
    /// --unboxed is given.
    #[arg(long = "box", conflicts_with = "unboxed")]
    pub boxed: bool,
    /// Run the agent as the driver's own user, with the host's filesystem, git config and
    /// network: no box. Every job's record says it ran unboxed. Needed where bubblewrap cannot
    /// run.
    #[arg(long)]
    pub unboxed: bool,
    /// Where boxed jobs' folders and the namespaces' mirrors live (default
    /// ~/.cache/capsid/boxes).
    #[arg(long, env = "CAPSID_BOX_DIR")]
    pub box_dir: Option<PathBuf>,
}

/// Everything a run resolved before claiming anything.
#[derive(Clone)]
pub(crate) struct Ready {
    pub mcp: Mcp,
    pub key: String,
    pub url: String,
    pub namespace: String,
    pub root: PathBuf,
    pub tests: GateCommand,
    pub build: Option<GateCommand>,
    pub agent_command: String,
    pub agent_args: Option<String>,
    pub credential_ref: Option<String>,
    pub credential: Option<String>,
    pub tmux: bool,
    pub quiet: bool,
    pub heartbeat: Duration,
    /// The metered model door's settings.
    pub model: model_door::ModelSettings,
    /// The box, when the run is boxed (`--box`).
    pub boxed: Option<boxed::BoxSettings>,
    /// The agent CLI the driver runs (what differs between CLIs).
    pub runtime: &'static dyn runtime::Runtime,
    /// The other runtimes this host can run, for jobs that ask for one: each installed, with
    /// its default command and its model door's settings.
    pub others: Vec<OtherRuntime>,
    /// This driver's agent name, once learned (`agent:<name>` holds its jobs).
    pub me: std::sync::Arc<tokio::sync::OnceCell<String>>,
    /// A rehearsal (`--rehearse`): the scripted model, and no pull request opened.
    pub rehearsal: bool,
}

/// A runtime beside the driver's own, ready for a job that asks for it.
#[derive(Clone)]
pub(crate) struct OtherRuntime {
    pub runtime: &'static dyn runtime::Runtime,
    pub model: model_door::ModelSettings,
}

impl Ready {
    /// Every runtime this driver can run, its own first (what a claim says).
    pub fn runtime_names(&self) -> Vec<&'static str> {
        std::iter::once(self.runtime.name())
            .chain(self.others.iter().map(|o| o.runtime.name()))
            .collect()
    }

    /// This driver's settings for a job asking for `kind`: its own when it runs that one, else
    /// that runtime's default command and model door (the driver's cap and prices kept);
    /// `Err` says why it cannot.
    pub fn for_runtime(&self, kind: RuntimeKind) -> std::result::Result<Ready, String> {
        if kind == self.runtime.kind() {
            return Ok(self.clone());
        }
        let other = self
            .others
            .iter()
            .find(|o| o.runtime.kind() == kind)
            .ok_or_else(|| {
                format!(
                    "the job asks for the {kind} runtime, which this driver cannot run (`{}` is not installed here, or its model key is not set)",
                    runtime::of(kind).default_command().split_whitespace().next().unwrap_or("?")
                )
            })?;
        let mut r = self.clone();
        r.runtime = other.runtime;
        r.agent_command = other.runtime.default_command().to_owned();
        r.agent_args = None;
        r.model = other.model.clone();
        Ok(r)
    }
}

/// The runtimes beside `own` this host can run: installed (the default command's program on
/// the `PATH`) and with a model key for the door. Each one left out is said once.
fn other_runtimes(own: RuntimeKind, model: &model_door::ModelSettings) -> Vec<OtherRuntime> {
    capsid_core::drive::runtime::RUNTIMES
        .into_iter()
        .filter(|k| *k != own)
        .filter_map(|kind| {
            let rt = runtime::of(kind);
            if preflight::agent_on_path(rt.default_command()).is_err() {
                return None;
            }
            match model_door::ModelSettings::resolve(rt, None, None, None, None) {
                Ok(mut m) => {
                    m.prices = model.prices.clone();
                    m.cap = model.cap;
                    Some(OtherRuntime { runtime: rt, model: m })
                }
                Err(why) => {
                    eprintln!(
                        "capsid drive: jobs asking for the {kind} runtime stay queued for another driver: {why}"
                    );
                    None
                }
            }
        })
        .collect()
}

/// A refusal that stops the run (exit 2) before anything is claimed.
fn refused(why: impl std::fmt::Display) -> ExitCode {
    eprintln!("capsid drive: refused: {why}");
    ExitCode::from(EXIT_REFUSED)
}

/// The driver's keys: `CAPSID_KEY`, else each `--key-file`, else the default key file.
pub(crate) fn load_keys(
    key_files: &[PathBuf],
    namespace: &str,
) -> std::result::Result<Vec<String>, String> {
    if let Ok(k) = std::env::var("CAPSID_KEY")
        && !k.trim().is_empty()
    {
        return Ok(vec![k.trim().to_owned()]);
    }
    if key_files.is_empty() {
        return Ok(vec![load_key(None, namespace)?]);
    }
    key_files
        .iter()
        .map(|p| load_key(Some(p), namespace))
        .collect()
}

fn load_key(file: Option<&PathBuf>, namespace: &str) -> std::result::Result<String, String> {
    let path = match file {
        Some(p) => p.clone(),
        None => {
            let home =
                std::env::var_os("HOME").ok_or("HOME is not set and no --key-file was given")?;
            PathBuf::from(home)
                .join(".capsid")
                .join(format!("agent-{namespace}-driver.key"))
        }
    };
    let key = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "no driver key: set CAPSID_KEY or write the key into {} ({e})",
            path.display()
        )
    })?;
    Ok(key.trim().to_owned())
}

/// `capsid drive`.
pub async fn run(args: DriveArgs) -> Result<ExitCode> {
    match args.command {
        Some(DriveCommand::Schedule(s)) => return schedule::run(s),
        Some(DriveCommand::Ps(on)) => return control::ps(on).await,
        Some(DriveCommand::Stop(s)) => return control::stop(s).await,
        None => {}
    }
    let args = args.run;
    if let Some(path) = args.task.clone() {
        // The improve loop's task runs without a box for now: the owner says so explicitly.
        if !args.unboxed {
            return Ok(refused(
                "capsid drive --task does not run the agent in a box yet; pass --unboxed to run it as your own user, with your files and network",
            ));
        }
        return task::run(&args, &path).await;
    }
    let Some(namespace) = args.namespace.clone().filter(|n| !n.trim().is_empty()) else {
        return Ok(refused(
            "name the namespace to drive: --namespace <ns> (or CAPSID_NAMESPACE)",
        ));
    };
    let keys = match load_keys(&args.key_file, &namespace) {
        Ok(k) => k,
        Err(why) => return Ok(refused(why)),
    };
    let slots = args.max_parallel.max(1);
    if slots > keys.len() {
        return Ok(refused(format!(
            "--max-parallel {slots} needs {slots} driver keys (the queue lets one key hold one job); {} given: pass --key-file once per slot",
            keys.len()
        )));
    }
    let key = keys[0].clone();
    let ready = match prepare(&args, namespace, key).await? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    if args.rehearse {
        if args.max_parallel > 1 {
            return Ok(refused(
                "--rehearse runs one rehearsal job: drop --max-parallel",
            ));
        }
        return Ok(ExitCode::from(rehearse::run(ready).await?));
    }
    if !ready.quiet {
        let cap = ready.model.cap.map_or("no cap per job".to_owned(), |c| {
            format!("a cap of {c} per job")
        });
        eprintln!(
            "capsid drive: the agent's model calls go through Capsid's metered door to {} ({}; {cap})",
            ready.model.upstream, ready.model.auth_from
        );
    }
    let mut slot_ready = Vec::with_capacity(slots);
    for k in keys.into_iter().take(slots) {
        let mut r = ready.clone();
        r.mcp = Mcp::new(&args.url, &k)?;
        r.key = k;
        r.me = Default::default();
        slot_ready.push(r);
    }
    let poll = Duration::from_secs(args.poll_secs.max(1));
    let watch = args.watch;
    let handles: Vec<_> = slot_ready
        .into_iter()
        .map(|r| {
            tokio::spawn(async move {
                loop {
                    let code = once(&r).await;
                    if !watch {
                        return code;
                    }
                    if code == EXIT_NOTHING || code == EXIT_ERROR {
                        tokio::time::sleep(poll).await;
                    }
                }
            })
        })
        .collect();
    let mut codes = Vec::with_capacity(handles.len());
    for h in handles {
        codes.push(h.await.unwrap_or(EXIT_ERROR));
    }
    Ok(ExitCode::from(combined_exit_code(&codes)))
}

/// Resolves what a run with `key` needs before anything is claimed: the runner settings,
/// the credential, the project root, the test gate, the build check and the agent command
/// (`Err` is the refusal's exit code, already printed).
pub(crate) async fn prepare(
    args: &RunArgs,
    namespace: String,
    key: String,
) -> Result<std::result::Result<Ready, ExitCode>> {
    let mcp = Mcp::new(&args.url, &key)?;
    // The flag (or its variable) first, then the namespace's runner setting, then the default.
    let stored = namespace_runner(&mcp, &namespace).await?;
    let pick = |flag: &Option<String>, setting: &Option<String>| {
        flag.clone()
            .filter(|v| !v.trim().is_empty())
            .or_else(|| setting.clone())
    };
    let credential_ref = pick(&args.credential_ref, &stored.credential_ref);
    // The credential first: a failure stops the driver before anything is claimed.
    let credential = match &credential_ref {
        None => None,
        Some(r) => {
            if let Err(why) = CredentialRef::parse(r) {
                return Ok(Err(refused(why)));
            }
            match crate::config::resolve_credential(r) {
                Ok(secret) => Some(secret),
                Err(e) => {
                    return Ok(Err(refused(format!(
                        "the credential reference {r} did not resolve: {e:#}"
                    ))));
                }
            }
        }
    };
    let (root, from) = match (&args.root_dir, &stored.root_dir) {
        (Some(r), _) => (r.clone(), "--root-dir (or CAPSID_ROOT_DIR)"),
        (None, Some(r)) => (
            PathBuf::from(r),
            "the namespace's runner setting root_dir (capsid namespaces update <ns> --root-dir ...)",
        ),
        (None, None) => (
            std::env::current_dir().context("the current folder")?,
            "the current folder (no --root-dir given)",
        ),
    };
    if !root.is_dir() {
        return Ok(Err(refused(format!(
            "the project root {} does not exist or is not a folder (it came from {from})",
            root.display()
        ))));
    }
    let root = match proc::git(&root, &["rev-parse", "--show-toplevel"]).await {
        Ok(top) => PathBuf::from(top),
        Err(e) => {
            return Ok(Err(refused(format!(
                "the project root {} is not a git repository (it came from {from}): {e:#}",
                root.display()
            ))));
        }
    };
    // The runtime: the flag, else the namespace's, else Claude Code. The namespace's agent
    // command belongs to the namespace's runtime: a driver told to run another one uses that
    // one's default unless it names a command too.
    let stored_kind = stored.runtime().unwrap_or(RuntimeKind::ClaudeCode);
    let kind = match args.runtime.as_deref().filter(|r| !r.trim().is_empty()) {
        Some(r) => match RuntimeKind::parse("--runtime (or CAPSID_RUNTIME)", r) {
            Ok(k) => k,
            Err(why) => return Ok(Err(refused(why))),
        },
        None => stored_kind,
    };
    if kind != RuntimeKind::ClaudeCode && (args.task.is_some() || args.rehearse) {
        return Ok(Err(refused(format!(
            "--task and --rehearse run Claude Code only for now (the task's hooks and the rehearsal's scripted model speak its protocol), and this driver's runtime is {kind}; drop --runtime {kind} for them"
        ))));
    }
    let runtime = runtime::of(kind);
    let namespace_command = stored.agent_command.clone().filter(|_| kind == stored_kind);
    let agent_command = pick(&args.agent_command, &namespace_command)
        .unwrap_or_else(|| runtime.default_command().to_owned());
    if let Err(why) = preflight::agent_on_path(&agent_command) {
        return Ok(Err(refused(why)));
    }
    if let Err(why) = preflight::settings(&root) {
        return Ok(Err(refused(why)));
    }
    let model = match model_door::ModelSettings::resolve(
        runtime,
        args.model_upstream.as_deref(),
        args.model_key.as_deref(),
        args.prices.as_ref(),
        args.max_cost_usd,
    ) {
        Ok(m) => m,
        Err(why) => return Ok(Err(refused(why))),
    };
    let boxed = if !args.unboxed {
        // The clone's only remote is the gateway, which forwards to the project's `origin`.
        if let Err(e) = proc::git(&root, &["remote", "get-url", "origin"]).await {
            return Ok(Err(refused(format!(
                "the project at {} has no `origin` remote for the box's git gateway to forward the job's pushes to ({e:#}); add one with `git remote add origin <url>`, or pass --unboxed",
                root.display()
            ))));
        }
        // The box reaches the server through its MCP door: a URL it cannot forward is
        // refused before anything is claimed.
        if let Err(why) = boxed::mcp_door_target(&args.url) {
            return Ok(Err(refused(why)));
        }
        match boxed::BoxSettings::resolve(args.box_dir.as_deref()).await {
            Ok(b) => Some(b),
            Err(why) => return Ok(Err(refused(why))),
        }
    } else {
        None
    };
    let mise = mise_tasks(&root);
    let tests = match gate::test_command(
        args.test_command.as_deref(),
        stored.test_command.as_deref(),
        mise,
    ) {
        Ok(t) => t,
        Err(why) => return Ok(Err(refused(why))),
    };
    let build = gate::build_command(
        args.build_command.as_deref(),
        stored.build_command.as_deref(),
        mise,
    );
    // A driver told exactly what to run (a command of its own, a task, a rehearsal) runs that.
    let others = if args.agent_command.is_some() || args.task.is_some() || args.rehearse {
        Vec::new()
    } else {
        other_runtimes(kind, &model)
    };
    Ok(Ok(Ready {
        mcp,
        key,
        url: args.url.clone(),
        namespace,
        root,
        tests,
        build,
        agent_command,
        agent_args: args.agent_args.clone(),
        credential_ref,
        credential,
        tmux: args.tmux,
        quiet: args.quiet,
        heartbeat: Duration::from_secs(args.heartbeat_secs.max(1)),
        model,
        boxed,
        runtime,
        others,
        me: Default::default(),
        rehearsal: false,
    }))
}

/// The namespace's runner settings, as the server stores them (none when unset).
pub(crate) async fn namespace_runner(mcp: &Mcp, namespace: &str) -> Result<RunnerSettings> {
    let rows = mcp.ok("namespaces", json!({})).await?;
    let row = rows.as_array().and_then(|rs| {
        rs.iter()
            .find(|r| r["namespace"].as_str() == Some(namespace))
    });
    Ok(RunnerSettings::stored(
        row.and_then(|r| r["runner"].as_str()),
    ))
}

/// One job, start to end: the process exit code. A failure after the claim fails the job
/// (with the error as its reason) rather than leaving it claimed for the lease's four hours.
async fn once(r: &Ready) -> u8 {
    if let Some(b) = &r.boxed {
        boxed::prune_stale(r, b);
    }
    worktree::prune_stale(&r.root).await;
    match next_job(r).await {
        Ok(Next::Nothing(why)) => {
            eprintln!("capsid drive: nothing to claim: {why}");
            EXIT_NOTHING
        }
        Ok(Next::Waiting(what)) => {
            eprintln!("capsid drive: not claiming another job: {what}");
            EXIT_NOTHING
        }
        Ok(Next::Refused(why)) => {
            eprintln!("capsid drive: refused: {why}");
            EXIT_REFUSED
        }
        Ok(Next::Job(claimed)) => run_claimed(r, *claimed).await,
        Err(e) => {
            eprintln!("capsid drive: {e:#}");
            EXIT_ERROR
        }
    }
}

/// Runs a claimed job to its verdict; a driver error after the claim fails the job with it
/// (the claim is not left to run out).
pub(crate) async fn run_claimed(r: &Ready, claimed: Claimed) -> u8 {
    let id = claimed.job.id.clone();
    // The job's own runtime, when it names one this driver can run.
    let asked = claimed
        .job
        .runtime
        .as_deref()
        .map(|n| RuntimeKind::parse("the job's runtime", n).and_then(|k| r.for_runtime(k)));
    let own;
    let r = match asked {
        None => r,
        Some(Ok(rt)) => {
            own = rt;
            &own
        }
        Some(Err(why)) => {
            return fail_claimed(r, &id, &format!("the driver cannot run this job: {why}")).await;
        }
    };
    match run::run_job(r, claimed).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("capsid drive: {e:#}");
            fail_claimed(
                r,
                &id,
                &format!("the driver failed after claiming the job: {e:#}"),
            )
            .await
        }
    }
}

/// Fails the claimed job `id` with `reason` (rather than leaving it claimed for the lease's
/// four hours): an error exit.
async fn fail_claimed(r: &Ready, id: &str, reason: &str) -> u8 {
    let reason: String = reason.chars().take(1000).collect();
    match r
        .mcp
        .call(
            "jobs",
            json!({"action": "fail", "id": id, "namespace": r.namespace, "reason": reason}),
        )
        .await
    {
        Ok(Answer::Ok(_)) => eprintln!("capsid drive: {id} failed: {reason}"),
        Ok(Answer::Refused(why)) => eprintln!("capsid drive: could not fail {id}: {why}"),
        Err(e) => eprintln!("capsid drive: could not fail {id}: {e:#}"),
    }
    EXIT_ERROR
}

/// A claim or resume answer: the job, its resume when it was resumed, the run credential, and
/// what the run may spend.
#[derive(Debug)]
pub(crate) struct Claimed {
    pub job: capsid_core::jobs::Job,
    pub resume: Option<Resume>,
    pub credential: Option<String>,
    /// The job's cap as the server answered it (its own, else the server's default).
    pub max_cost_usd: Option<capsid_core::drive::ledger::Usd>,
    /// What the job's ledger held already (earlier sessions), which counts against the cap.
    pub spent_usd: capsid_core::drive::ledger::Usd,
    /// The job's role as the server defines it for the namespace now (`None`: the job names
    /// none, or names one nothing defines).
    pub role: Option<capsid_core::jobs::role::Role>,
}

impl Claimed {
    /// The terms from a `claim` or `resume` answer; a cap that is not dollars is an error
    /// (the run does not start without knowing what it may spend).
    fn from_answer(v: &Value, resume: Option<Resume>) -> Result<Claimed> {
        let dollars = |field: &str| -> Result<Option<capsid_core::drive::ledger::Usd>> {
            match v.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(sum) => Ok(Some(
                    serde_json::from_value(sum.clone())
                        .with_context(|| format!("the server answered a {field} of {sum}"))?,
                )),
            }
        };
        Ok(Claimed {
            job: serde_json::from_value(v["job"].clone())
                .context("the server's claim answered a job this driver cannot read")?,
            resume,
            credential: v["run_credential"].as_str().map(str::to_owned),
            max_cost_usd: dollars("max_cost_usd")?,
            spent_usd: dollars("spent_usd")?.unwrap_or_default(),
            role: match v.get("role_definition") {
                None | Some(Value::Null) => None,
                Some(r) => Some(serde_json::from_value(r.clone()).context(
                    "the server's claim answered a role_definition this driver cannot read",
                )?),
            },
        })
    }
}

/// A resumed session: the agent's session id and the human's answer.
#[derive(Clone, Debug)]
pub(crate) struct Resume {
    pub session_id: Option<String>,
    pub answer: String,
}

enum Next {
    Nothing(String),
    Waiting(String),
    Refused(String),
    /// The job the server handed this driver, with its terms.
    Job(Box<Claimed>),
}

/// This driver's agent name: `jobs approval` (a read in the namespace) says who asks.
async fn whoami(r: &Ready) -> Result<String> {
    let me = r
        .me
        .get_or_try_init(|| async {
            let v = r
                .mcp
                .ok(
                    "jobs",
                    json!({"action": "approval", "namespace": r.namespace, "head_sha": "0".repeat(40)}),
                )
                .await?;
            let actor = v["caller"].as_str().unwrap_or("");
            let name = actor
                .strip_prefix("agent:")
                .map(str::to_owned)
                .with_context(|| format!("the driver's key is not a minted agent's ({actor}); drive with an agent key"))?;
            // Which key drives (CAPSID_KEY wins over the key files): said once, so a key left
            // in the environment by another step is seen at once.
            let source = if std::env::var("CAPSID_KEY").is_ok_and(|k| !k.trim().is_empty()) {
                "the key in CAPSID_KEY"
            } else {
                "the key file"
            };
            // Only a driver's key drives: a session or seat key (the tour's CAPSID_KEY, say)
            // would claim jobs as someone who is not a driver.
            if let Some(kind) = v["caller_kind"].as_str()
                && kind != "driver"
            {
                anyhow::bail!(
                    "{source} is agent:{name}'s, a {kind} key; capsid drive needs a driver's key (capsid agents mint --kind driver ...){}",
                    if source == "the key in CAPSID_KEY" {
                        ": unset CAPSID_KEY to drive with the key file"
                    } else {
                        ""
                    }
                );
            }
            eprintln!(
                "capsid drive: driving as agent:{name} in {} ({source})",
                r.namespace,
            );
            anyhow::Ok(name)
        })
        .await?;
    Ok(me.clone())
}

/// This driver's blocked job whose question was answered and whose resume was asked, resumed
/// into its lease; else, when one of its jobs still waits on a person, that (no claim: its one
/// checkmark holds that question); else the best queued job, claimed.
async fn next_job(r: &Ready) -> Result<Next> {
    let ns = &r.namespace;
    let me = whoami(r).await?;
    let holder = format!("agent:{me}");
    let blocked = r
        .mcp
        .ok(
            "jobs",
            json!({"action": "list", "namespace": ns, "status": "blocked"}),
        )
        .await?;
    let mine: Vec<&Value> = blocked["jobs"]
        .as_array()
        .map(|js| {
            js.iter()
                .filter(|j| j["claimed_by"].as_str() == Some(holder.as_str()))
                .collect()
        })
        .unwrap_or_default();
    if !mine.is_empty() {
        let got = r
            .mcp
            .ok(
                "checkmarks",
                json!({"action": "get", "namespace": ns, "agent": me}),
            )
            .await
            .ok();
        let c = got.as_ref().map(|g| g.get("checkmark").unwrap_or(g));
        let answered = c.and_then(|c| {
            let job_id = c["job_id"].as_str()?;
            let answer = c["resume"]["answer"].as_str()?;
            mine.iter()
                .any(|j| j["id"].as_str() == Some(job_id))
                .then(|| (job_id.to_owned(), answer.to_owned(), c.clone()))
        });
        if let Some((job_id, answer, c)) = answered {
            let reason = format!(
                "resumed with the answer of {}: {}",
                c["answered_by"].as_str().unwrap_or("a human"),
                answer.chars().take(300).collect::<String>()
            );
            match r
                .mcp
                .call(
                    "jobs",
                    json!({"action": "resume", "id": job_id, "namespace": ns, "reason": reason}),
                )
                .await?
            {
                Answer::Ok(v) => {
                    let resume = Resume {
                        session_id: c["resume"]["session_id"].as_str().map(str::to_owned),
                        answer,
                    };
                    return Ok(Next::Job(Box::new(Claimed::from_answer(&v, Some(resume))?)));
                }
                Answer::Refused(why) => {
                    eprintln!("capsid drive: could not resume {job_id}: {why}");
                }
            }
        }
        let waiting: Vec<String> = mine
            .iter()
            .map(|j| {
                let asks = c
                    .filter(|c| c["job_id"] == j["id"])
                    .and_then(|c| c["open_question"].as_str())
                    .map(|q| format!(" asks: {}", q.chars().take(300).collect::<String>()))
                    .unwrap_or_default();
                format!(
                    "{} '{}' is blocked, waiting on a person{asks}",
                    j["id"].as_str().unwrap_or("?"),
                    j["title"].as_str().unwrap_or("")
                )
            })
            .collect();
        return Ok(Next::Waiting(format!(
            "{}. Answer it (console, `capsid checkmarks answer`, or {}/api/projects/{ns}/agents/{me}/answer with resume: true) and run the driver again; one driver key holds one job waiting on a person per namespace.",
            waiting.join("; "),
            mcp::base_url(&r.url)
        )));
    }
    match r
        .mcp
        .call(
            "jobs",
            json!({"action": "claim", "namespace": ns, "runtimes": r.runtime_names()}),
        )
        .await?
    {
        Answer::Ok(v) => Ok(Next::Job(Box::new(Claimed::from_answer(&v, None)?))),
        Answer::Refused(why) if why.starts_with("no queued jobs") => Ok(Next::Nothing(why)),
        Answer::Refused(why) => Ok(Next::Refused(why)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_agent_can_work_headless() {
        use super::runtime::Runtime as _;
        assert_eq!(
            super::runtime::CLAUDE_CODE.default_command(),
            "claude -p --output-format stream-json --verbose --permission-mode bypassPermissions"
        );
    }
}
