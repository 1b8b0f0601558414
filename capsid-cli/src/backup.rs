//! `capsid backup`: one backup run now, as the reference's daily run does it (the lease, the
//! dump, the sidecars, the preflight, the mirror, retention and pruning), with its summary.
//! Exit codes: 0 ran, 2 refused (another run holds the lease), 1 failed. Its subcommands:
//! `pull` (the off-site puller, [`pull`]), `pull-key` (the key the puller signs with) and
//! `schedule` (a daily pull as a timer, [`schedule`]).

pub mod pull;
pub mod schedule;

use anyhow::Result;
use capsid_core::backup::holdout::HoldoutCounts;
use clap::{Args, Subcommand};
use std::process::ExitCode;

use crate::blobs::{BlobArgs, CliProgress};
use crate::config::{self, GlobalArgs};

/// `capsid backup`.
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// Without a subcommand: one backup run now.
    #[command(subcommand)]
    pub command: Option<BackupCommand>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub blobs: BlobArgs,
}

/// `capsid backup`'s subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum BackupCommand {
    /// Copy the newest dump off-site (a folder or s3://bucket/prefix) with the scoped backup
    /// credential: incremental, every file's SHA-256 checked against the manifest.
    Pull(pull::PullArgs),
    /// Print the key `capsid backup pull` signs its credential requests with (run it on the
    /// server's host; give the puller this, never the signing secret).
    PullKey,
    /// Print (or with --apply install, disabled) a daily `capsid backup pull` as a systemd
    /// user timer or a crontab line.
    Schedule(schedule::ScheduleArgs),
}

/// Runs a backup, or one of the subcommands.
pub async fn run(global: &GlobalArgs, args: BackupArgs) -> Result<ExitCode> {
    match args.command {
        Some(BackupCommand::Pull(pull)) => return pull::run(global, pull).await,
        Some(BackupCommand::PullKey) => return pull::print_key(global),
        Some(BackupCommand::Schedule(schedule)) => return schedule::run(schedule),
        None => {}
    }
    let store = config::open_existing_store(global).await?;
    let secret = config::required_signing_secret(global)?;
    let media = args.blobs.media(global)?;
    let holdout = args.blobs.holdout(global)?;
    let service = config::service(store, Some(secret), None)
        .with_media(media.clone())
        .with_holdout_counts(HoldoutCounts::new(holdout));
    let progress = CliProgress::new(args.json);
    match service.run_backup(&progress).await {
        Ok(summary) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else if summary.ran {
                println!(
                    "backup {} to {}: {} objects, {} markdown files ({} pruned), {} old runs and {} reports deleted, {} versions and {} audit rows pruned",
                    summary.run.as_deref().unwrap_or("?"),
                    media.describe(),
                    summary.json_key_count,
                    summary.markdown_written,
                    summary.markdown_pruned,
                    summary.json_backups_pruned,
                    summary.reports_pruned,
                    summary.versions_pruned,
                    summary.audit_pruned,
                );
                if let Some(why) = &summary.prune_refused {
                    println!(
                        "pruning and the mirror were refused: {why} (the dump itself was written)"
                    );
                }
            } else {
                println!("backup skipped: another run holds the lease (backup:lease)");
            }
            Ok(if summary.ran {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            })
        }
        Err(e) => {
            eprintln!("capsid backup: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}
