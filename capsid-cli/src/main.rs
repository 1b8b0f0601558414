//! `capsid`: the server and its admin commands. The composition root: the only place that
//! reads configuration, picks a store and wires adapters into the core.

// The doc comments of the command-line arguments are clap's `--help` text, where
// `<data-dir>` and `<path>` are placeholders a reader types, not HTML.
#![allow(rustdoc::invalid_html_tags)]

/// mimalloc's per-thread caches: every MCP call allocates and frees its request, result and
/// response buffers, and glibc's malloc spent ~44 µs a `read` in them (docs/perf/2026-12-01.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod admin;
mod backup;
mod blobs;
mod checkmarks;
mod config;
mod console;
mod cron;
mod doctor;
mod drive;
mod hook;
mod improve;
mod jobs;
mod model;
mod owner;
mod proxies;
mod restore;
mod scratch;
mod serve;
mod service;
mod skills;
mod store_wait;
mod test_clock;
mod tick;
mod workflows;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Version line with build provenance.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CAPSID_GIT_SHA"),
    ", dirty ",
    env!("CAPSID_GIT_DIRTY"),
    ", built ",
    env!("CAPSID_BUILT_AT"),
    ")"
);

/// Capsid: a control plane for AI agents working across a portfolio of repositories.
#[derive(Debug, Parser)]
#[command(name = "capsid", version = LONG_VERSION)]
struct Cli {
    #[command(flatten)]
    global: config::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Migrate the store, then serve MCP over HTTP until SIGINT or SIGTERM.
    Serve(serve::ServeArgs),
    /// Apply the store's migrations and print the schema version.
    Migrate(config::JsonFlag),
    /// Mint, list, revoke and re-scope agent credentials (the CLI holds the database: it is the admin).
    #[command(subcommand)]
    Agents(admin::AgentsCommand),
    /// Register, list and update namespaces and their repositories.
    #[command(subcommand)]
    Namespaces(admin::NamespacesCommand),
    /// The work queue: list one namespace's jobs or the portfolio (`--all`), raise a job's cap.
    #[command(subcommand)]
    Jobs(jobs::JobsCommand),
    /// Answer a paused agent's question (and resume it), as the console does.
    #[command(subcommand)]
    Checkmarks(checkmarks::CheckmarksCommand),
    /// Sign a stored autonomy policy document.
    #[command(subcommand)]
    Policy(admin::PolicyCommand),
    /// Check configuration, the store and what is missing.
    Doctor(config::JsonFlag),
    /// Turn queued jobs into supervised agent runs, each in a box of its own (--unboxed: a git worktree).
    Drive(drive::DriveArgs),
    /// Claude Code's hooks: the test gate at Stop, the push gate at PreToolUse.
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// Back up every table, the settings sidecar and the markdown mirror to the media store.
    Backup(backup::BackupArgs),
    /// Restore a dump into an empty store of either engine (or rehearse it).
    Restore(restore::RestoreArgs),
    /// Run the scheduler's periodic tasks now: the due ones, or one by name.
    Tick(tick::TickArgs),
    /// The self-improvement loop's and autonomy's settings (the roster).
    #[command(subcommand)]
    Improve(improve::ImproveCommand),
    /// The loop's skills: list them, show one with its evidence, or export and import their
    /// repository copy (skills/<id>/SKILL.md).
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// The admin console: `login` prints a one-time sign-in link for the local owner.
    #[command(subcommand)]
    Console(console::ConsoleCommand),
    /// Run `serve` as a systemd service: `install` prints (or with --apply writes) its unit.
    #[command(subcommand)]
    Service(service::ServiceCommand),
    /// Inside a job's box: listen on the box's loopback and pipe each connection to a door's
    /// socket (`--listen 127.0.0.1:7401 --to /run/doors/model.sock ...`), then run the program
    /// after `--` and exit with its status. `capsid drive --box` starts it; not for people.
    /// (`door check-push-paths`: the git gateway's hook asking for the path rule.)
    #[command(hide = true)]
    Door(DoorArgs),
}

/// `capsid door`'s arguments, read by `capsid_box::bridge::parse_inside_args`.
#[derive(Debug, clap::Args)]
struct DoorArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 1..)]
    args: Vec<std::ffi::OsString>,
}

/// `capsid door`: the inside end of the box's bridges.
async fn door(args: DoorArgs) -> anyhow::Result<ExitCode> {
    // The git gateway's path rule, as the mirror's `pre-receive` hook asks it (issue 51).
    if args
        .args
        .first()
        .is_some_and(|a| a == capsid_box::gateway::paths::CHECK_ARG)
    {
        let code = capsid_box::gateway::paths::check_from_hook();
        return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
    }
    let parsed = match capsid_box::bridge::parse_inside_args(args.args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("capsid door: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let code = capsid_box::bridge::serve_inside(parsed).await?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli.global.note_origins(&matches);
    config::init_logging(&cli.global);
    // Every outbound HTTPS client in the process uses ring for TLS (no C toolchain needed).
    capsid_http::install_tls_provider();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("capsid: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(&cli.global, args).await,
            Command::Migrate(json) => admin::migrate(&cli.global, json.json).await,
            Command::Agents(cmd) => admin::agents(&cli.global, cmd).await,
            Command::Namespaces(cmd) => admin::namespaces(&cli.global, cmd).await,
            Command::Policy(cmd) => admin::policy(&cli.global, cmd).await,
            Command::Jobs(cmd) => jobs::run(&cli.global, cmd).await,
            Command::Checkmarks(cmd) => checkmarks::run(&cli.global, cmd).await,
            Command::Doctor(json) => doctor::run(&cli.global, json.json).await,
            Command::Drive(args) => drive::run(args).await,
            Command::Hook(cmd) => hook::run(cmd).await,
            Command::Backup(args) => backup::run(&cli.global, args).await,
            Command::Restore(args) => restore::run(&cli.global, args).await,
            Command::Tick(args) => tick::run(&cli.global, args).await,
            Command::Improve(cmd) => improve::run(&cli.global, cmd).await,
            Command::Skills(cmd) => skills::run(&cli.global, cmd).await,
            Command::Console(cmd) => console::run(&cli.global, cmd).await,
            Command::Service(cmd) => Ok(service::run(&cli.global, cmd)),
            Command::Door(args) => door(args).await,
        }
    });
    match outcome {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<config::NoStore>().is_some() => {
            eprintln!("capsid: {e:#}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("capsid: {e:#}");
            ExitCode::FAILURE
        }
    }
}
