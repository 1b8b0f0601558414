//! The summary a backup run answers with (reference 10.4), and the progress a long run or
//! restore reports as it goes.

use schemars::JsonSchema;
use serde::Serialize;

use super::preflight::Preflight;

/// What one backup run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BackupSummary {
    /// Whether the run happened (`false` when another held the lease).
    pub ran: bool,
    /// `lease-held` when it did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The run id (its folder under `backups/json/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The keys of the objects written under the run (each table's file, the sidecars, the
    /// manifest), in the order they were written: what an off-site copy takes.
    pub json_keys: Vec<String>,
    /// How many there are.
    pub json_key_count: u64,
    /// Rows exported, per table, documents first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<(String, u64)>,
    /// Markdown mirror files written.
    pub markdown_written: u64,
    /// Mirror files deleted because their document is gone.
    pub markdown_pruned: u64,
    /// Whole JSON runs deleted by retention.
    pub json_backups_pruned: u64,
    /// Report objects deleted after 30 days.
    pub reports_pruned: u64,
    /// Version snapshots pruned after 90 days.
    pub versions_pruned: u64,
    /// Audit rows pruned after 180 days.
    pub audit_pruned: u64,
    /// Why pruning and mirroring were refused, if they were.
    pub prune_refused: Option<String>,
    /// The preflight's findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Preflight>,
}

impl BackupSummary {
    /// The answer when another run holds the lease.
    pub fn lease_held() -> BackupSummary {
        BackupSummary {
            ran: false,
            skipped: Some("lease-held".to_owned()),
            ..BackupSummary::default()
        }
    }
}

/// Where a long backup or restore reports how far it got (a progress bar, plain lines, or
/// nothing).
pub trait Progress: Send + Sync {
    /// A table's transfer begins; `rows` is its size when known.
    fn table_started(&self, table: &str, rows: Option<u64>);
    /// `rows` more rows of the current table are done.
    fn rows_done(&self, rows: u64);
    /// The current table is done, with `rows` in all.
    fn table_done(&self, table: &str, rows: u64);
    /// A step other than a table (mirror, retention, pruning, verification).
    fn step(&self, what: &str);
    /// Whether whoever asked for the run gave up on it (an MCP client's
    /// `notifications/cancelled`): the run stops before its next table or page, and before
    /// its manifest, and removes what it wrote. The default never is.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Progress nobody watches.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn table_started(&self, _: &str, _: Option<u64>) {}
    fn rows_done(&self, _: u64) {}
    fn table_done(&self, _: &str, _: u64) {}
    fn step(&self, _: &str) {}
}
