//! `capsid tick [--task <name>] [--json]`: the scheduler's periodic tasks on demand (the due
//! ones, or one by name whether due or not) through `improve_run` action `tick`, answering
//! the tick report; and the log lines `capsid serve` writes for each tick. Exit codes: 0 every
//! task that ran succeeded, 1 one failed or timed out, 2 refused.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use capsid_core::backup::holdout::HoldoutCounts;
use capsid_core::caller::Caller;
use capsid_core::service::{NoConfirmer, TaskOutcome, TickReport};
use clap::Args;
use serde_json::{Value, json};

use crate::blobs::BlobArgs;
use crate::config::{self, GlobalArgs};

/// `capsid tick`.
#[derive(Debug, Clone, Args)]
pub struct TickArgs {
    /// Only this task (sweep, ci-poll, backup, rehearsal, auto-merge, watcher, improve, intake, scouts), whether due
    /// or not.
    #[arg(long)]
    pub task: Option<String>,
    /// The self-improvement loop's time zone (its opener runs at 03:00 there).
    #[arg(long, env = "CAPSID_IMPROVE_TZ", default_value = capsid_core::improve::night::DEFAULT_LOOP_ZONE)]
    pub improve_tz: String,
    /// Print the tick report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub blobs: BlobArgs,
    /// The model API the loop's `api` mode asks (so a tick run by cron opens and advances
    /// runs as the server's own tick does).
    #[command(flatten)]
    pub model: crate::model::ModelArgs,
}

/// Runs a tick now.
pub async fn run(global: &GlobalArgs, args: TickArgs) -> Result<ExitCode> {
    let store = config::open_existing_store(global).await?;
    let secret = config::required_signing_secret(global)?;
    let mut service = config::service(store, Some(secret), None)
        .with_media(args.blobs.media(global)?)
        .with_holdout_counts(HoldoutCounts::new(args.blobs.holdout(global)?))
        .with_deadline(Arc::new(capsid_http::system::TokioDeadline))
        .with_scratch_stores(Arc::new(crate::scratch::ScratchTargets::new(global)))
        .with_loop_zone(
            capsid_core::improve::night::LoopZone::parse(&args.improve_tz)
                .map_err(|e| anyhow::anyhow!(e))?,
        );
    if let Some(app) = config::github_app()? {
        service = service.with_repo_host(Arc::new(app));
    }
    if let Some(model) = args.model.client()? {
        service = service.with_model(Arc::new(model));
    }
    let mut call = json!({"action": "tick"});
    if let Some(task) = &args.task {
        call["task"] = json!(task);
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "operator".into());
    let answer = match service
        .call_tool(&Caller::cli(user), "improve_run", call, &NoConfirmer)
        .await
    {
        Ok(v) => v,
        Err(capsid_core::error::Error::Internal(m)) => anyhow::bail!("the tick failed: {m}"),
        Err(e) => {
            eprintln!("refused: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let report = &answer["report"];
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print_text(report);
    }
    let failed = report["ran"].as_array().is_some_and(|runs| {
        runs.iter()
            .any(|r| r["outcome"] == "failed" || r["outcome"] == "timed_out")
    });
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print_text(report: &Value) {
    let runs = report["ran"].as_array().cloned().unwrap_or_default();
    if runs.is_empty() {
        println!("nothing was due");
        return;
    }
    for run in runs {
        let task = run["task"].as_str().unwrap_or("?");
        match run["outcome"].as_str().unwrap_or("?") {
            "ran" => println!("{task}: ran {}", run["report"]),
            "ran_elsewhere" => println!("{task}: another tick ran it first"),
            other => println!(
                "{task}: {other}: {}",
                run["error"].as_str().unwrap_or("(no error given)")
            ),
        }
    }
}

/// The log lines of one scheduled tick: a failed task with its error, and what the tasks did.
pub fn log_report(report: &TickReport) {
    for run in &report.ran {
        match run.outcome {
            TaskOutcome::Failed | TaskOutcome::TimedOut => tracing::warn!(
                task = run.task,
                outcome = run.outcome.name(),
                error = run.error.as_deref().unwrap_or(""),
                "periodic task failed"
            ),
            TaskOutcome::Ran => {
                tracing::debug!(task = run.task, report = %run.report, "periodic task ran")
            }
            TaskOutcome::RanElsewhere => {}
        }
    }
    if report.swept > 0 {
        tracing::info!(
            swept = report.swept,
            "lease sweep returned expired jobs to the queue"
        );
    }
    if report.backed_up {
        tracing::info!("the daily backup ran");
    }
}
