//! The blob stores the configuration names (`CAPSID_MEDIA_URL`, `CAPSID_HOLDOUT_URL`;
//! default `<data-dir>/media` and `<data-dir>/holdout`), and the progress a long backup or
//! restore shows: a bar per table on a terminal, plain lines otherwise.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use capsid_blobs::ObjectBlobStore;
use capsid_core::backup::summary::Progress;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::GlobalArgs;

/// Where the blob stores are.
#[derive(Debug, Clone, Args)]
pub struct BlobArgs {
    /// The media store (backups, the markdown mirror, reports): file:///folder, a folder, or
    /// s3://bucket/prefix (AWS_* variables configure S3). Default: <data-dir>/media.
    #[arg(long, env = "CAPSID_MEDIA_URL")]
    pub media_url: Option<String>,
    /// The holdout store (hidden test suites; only their counts are backed up). Default:
    /// <data-dir>/holdout.
    #[arg(long, env = "CAPSID_HOLDOUT_URL")]
    pub holdout_url: Option<String>,
}

impl BlobArgs {
    /// The media store.
    pub fn media(&self, global: &GlobalArgs) -> Result<Arc<ObjectBlobStore>> {
        let url = self
            .media_url
            .clone()
            .unwrap_or_else(|| global.data_dir.join("media").display().to_string());
        let store =
            ObjectBlobStore::open(&url).with_context(|| format!("the media store {url}"))?;
        Ok(Arc::new(store))
    }

    /// The holdout store (handed on only as a counts-only view).
    pub fn holdout(&self, global: &GlobalArgs) -> Result<Arc<ObjectBlobStore>> {
        let url = self
            .holdout_url
            .clone()
            .unwrap_or_else(|| global.data_dir.join("holdout").display().to_string());
        let store =
            ObjectBlobStore::open(&url).with_context(|| format!("the holdout store {url}"))?;
        Ok(Arc::new(store))
    }
}

/// Progress on stderr: bars on a terminal, one line per table otherwise, nothing with `quiet`.
pub struct CliProgress {
    tty: bool,
    quiet: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl CliProgress {
    /// Progress for this process's stderr.
    pub fn new(quiet: bool) -> CliProgress {
        CliProgress {
            tty: std::io::stderr().is_terminal(),
            quiet,
            bar: Mutex::new(None),
        }
    }

    fn with_bar(&self, f: impl FnOnce(&mut Option<ProgressBar>)) {
        let mut bar = self.bar.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut bar);
    }
}

impl Progress for CliProgress {
    fn table_started(&self, table: &str, rows: Option<u64>) {
        if self.quiet || !self.tty {
            return;
        }
        let bar = match rows {
            Some(n) => ProgressBar::new(n).with_style(
                ProgressStyle::with_template("{msg:>20} [{bar:30}] {pos}/{len} rows {per_sec}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{msg:>20} {spinner} {pos} rows {per_sec}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_message(table.to_owned());
        self.with_bar(|slot| *slot = Some(bar));
    }

    fn rows_done(&self, rows: u64) {
        self.with_bar(|slot| {
            if let Some(bar) = slot {
                bar.inc(rows);
            }
        });
    }

    fn table_done(&self, table: &str, rows: u64) {
        if self.quiet {
            return;
        }
        let mut shown = false;
        self.with_bar(|slot| {
            if let Some(bar) = slot.take() {
                bar.finish();
                shown = true;
            }
        });
        if !shown {
            eprintln!("{table}: {rows} rows");
        }
    }

    fn step(&self, what: &str) {
        if !self.quiet {
            eprintln!("{what}");
        }
    }
}
