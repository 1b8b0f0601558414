//! `capsid restore --from <media URL or folder>[/backups/json/<run>]`: a dump into an empty
//! store of either engine (the `--database-url`), migrated first, verified after. With
//! `--rehearse` the target is a throwaway store instead (a temporary SQLite file, or a
//! scratch database on the Postgres server `--database-url` names), dropped afterwards.
//! Exit codes: 0 restored and verified, 2 refused (nothing written), 1 failed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use capsid_blobs::{BlobUrl, ObjectBlobStore, parse_blob_url};
use capsid_core::backup::manifest::JSON_PREFIX;
use capsid_core::ports::Store;
use capsid_core::service::{RestoreError, RestoreReport};
use clap::Args;

use crate::blobs::CliProgress;
use crate::config::{self, GlobalArgs};

/// `capsid restore`.
#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// The media store (URL or folder), optionally down to one run:
    /// <media>/backups/json/<run>. Without a run, the newest.
    #[arg(long)]
    pub from: String,
    /// Restore into a throwaway store and report the comparison; touches nothing else.
    #[arg(long)]
    pub rehearse: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `(store root, run)` from `--from`: a trailing `/backups/json/<run>` names the run.
pub fn split_from(from: &str) -> (String, Option<String>) {
    let trimmed = from.trim_end_matches('/');
    let marker = format!("/{}", JSON_PREFIX.trim_end_matches('/'));
    match trimmed.rfind(&marker) {
        Some(at) => {
            let root = trimmed[..at].to_owned();
            let rest = trimmed[at + marker.len()..].trim_start_matches('/');
            let run = (!rest.is_empty()).then(|| rest.to_owned());
            (
                if root.is_empty() {
                    "/".to_owned()
                } else {
                    root
                },
                run,
            )
        }
        None => (trimmed.to_owned(), None),
    }
}

fn open_source(root: &str) -> Result<ObjectBlobStore> {
    if let BlobUrl::Folder(folder) = parse_blob_url(root).map_err(anyhow::Error::msg)? {
        if !folder.is_dir() {
            bail!("no folder at {}: nothing to restore from", folder.display());
        }
        return ObjectBlobStore::folder(folder).map_err(anyhow::Error::msg);
    }
    ObjectBlobStore::open(root).map_err(anyhow::Error::msg)
}

/// A throwaway target and how to remove it.
enum Scratch {
    Folder(PathBuf),
    Database { admin_url: String, name: String },
}

async fn scratch_target(global: &GlobalArgs) -> Result<(GlobalArgs, Scratch)> {
    let tag = format!(
        "capsid_rehearsal_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    let mut target = global.clone();
    if global.is_postgres() {
        let admin_url = global.database_url();
        let url = capsid_store_postgres::create_scratch_database(&admin_url, &tag)
            .await
            .context("creating the rehearsal's scratch database")?;
        target.database_url = Some(url);
        Ok((
            target,
            Scratch::Database {
                admin_url,
                name: tag,
            },
        ))
    } else {
        let folder = std::env::temp_dir().join(&tag);
        std::fs::create_dir_all(&folder)?;
        target.database_url = Some(format!("sqlite://{}", folder.join("capsid.db").display()));
        target.data_dir = folder.clone();
        Ok((target, Scratch::Folder(folder)))
    }
}

async fn remove_scratch(scratch: Scratch) {
    match scratch {
        Scratch::Folder(folder) => {
            let _ = std::fs::remove_dir_all(folder);
        }
        Scratch::Database { admin_url, name } => {
            if let Err(e) = capsid_store_postgres::drop_scratch_database(&admin_url, &name).await {
                eprintln!("note: could not drop the scratch database {name}: {e}");
            }
        }
    }
}

fn print_report(report: &RestoreReport, rehearsal: bool, target: &str) {
    let verb = if rehearsal { "rehearsed" } else { "restored" };
    println!(
        "{verb} run {} ({} -> {}) into {target}",
        report.run, report.from_engine, report.to_engine
    );
    for t in &report.tables {
        let mark = if t.expected == t.restored {
            "ok"
        } else {
            "MISMATCH"
        };
        println!(
            "  {:<20} {:>9} rows (manifest {:>9}) {mark}",
            t.table, t.restored, t.expected
        );
    }
    println!("  full-text probe: {}", report.fts);
    println!(
        "{}",
        if report.verified {
            "verified: every count matches the manifest and search finds a restored document"
        } else {
            "NOT verified: see the lines above"
        }
    );
}

/// Runs a restore (or a rehearsal).
pub async fn run(global: &GlobalArgs, args: RestoreArgs) -> Result<ExitCode> {
    let (root, run) = split_from(&args.from);
    let source = open_source(&root)?;
    let (target_args, scratch) = if args.rehearse {
        let (target, scratch) = scratch_target(global).await?;
        (target, Some(scratch))
    } else {
        (global.clone(), None)
    };
    let outcome = restore_into(&target_args, &source, run.as_deref(), args.json).await;
    if let Some(scratch) = scratch {
        remove_scratch(scratch).await;
    }
    let target = if args.rehearse {
        "a throwaway store".to_owned()
    } else {
        target_args.database_display()
    };
    match outcome {
        Ok(report) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "ok": report.verified, "rehearsal": args.rehearse, "report": report,
                    }))?
                );
            } else {
                print_report(&report, args.rehearse, &target);
            }
            Ok(if report.verified {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Err(e) => {
            let (code, kind) = match &e {
                RestoreError::Refused(_) => (ExitCode::from(2), "refused"),
                RestoreError::Failed(_) => (ExitCode::FAILURE, "failed"),
            };
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "ok": false, "outcome": kind, "error": e.to_string(),
                    }))?
                );
            } else {
                eprintln!("capsid restore {kind}: {e}");
            }
            Ok(code)
        }
    }
}

async fn restore_into(
    target: &GlobalArgs,
    source: &ObjectBlobStore,
    run: Option<&str>,
    quiet: bool,
) -> Result<RestoreReport, RestoreError> {
    let (store, _): (Arc<dyn Store>, _) = config::open_store(target, true)
        .await
        .map_err(|e| RestoreError::Failed(format!("{e:#}")))?;
    let service = config::service(store, None, None);
    let progress = CliProgress::new(quiet);
    service.restore_dump(source, run, &progress).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_names_a_store_and_maybe_a_run() {
        assert_eq!(split_from("/srv/media"), ("/srv/media".into(), None));
        assert_eq!(
            split_from("/srv/media/backups/json/2026-03-01T09-00-00-000Z/"),
            ("/srv/media".into(), Some("2026-03-01T09-00-00-000Z".into()))
        );
        assert_eq!(
            split_from("s3://b/p/backups/json"),
            ("s3://b/p".into(), None)
        );
        assert_eq!(
            split_from("s3://b/backups/json/r1"),
            ("s3://b".into(), Some("r1".into()))
        );
    }
}
