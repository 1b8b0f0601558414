//! `capsid backup`: one backup run now, as the reference's daily run does it (the lease, the
//! dump, the sidecars, the preflight, the mirror, retention and pruning), with its summary.
//! Exit codes: 0 ran, 2 refused (another run holds the lease), 1 failed.

use anyhow::Result;
use capsid_core::backup::holdout::HoldoutCounts;
use clap::Args;
use std::process::ExitCode;

use crate::blobs::{BlobArgs, CliProgress};
use crate::config::{self, GlobalArgs};

/// `capsid backup`.
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub blobs: BlobArgs,
}

/// Runs a backup.
pub async fn run(global: &GlobalArgs, args: BackupArgs) -> Result<ExitCode> {
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
