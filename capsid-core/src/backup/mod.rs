//! Backups and restore as rules (reference 10.4, 10.5, 8.3): which tables a dump carries
//! ([`tables`]), how rows are written and read back as a stream ([`rows`]), where a dump
//! lives and what makes one unrestorable ([`manifest`]), what a run keeps ([`retention`]),
//! the preflight before pruning ([`preflight`]), the settings sidecar's allowlist
//! ([`sidecar`]), the holdout counts ([`holdout`]), the backup credential ([`credential`]) and
//! the summary ([`summary`]). The service runs them (`service/backup`); stores and blob stores
//! only carry bytes.

pub mod credential;
pub mod holdout;
pub mod manifest;
pub mod preflight;
pub mod retention;
pub mod rows;
pub mod sidecar;
pub mod summary;
pub mod tables;

/// The setting that keeps two backup runs from overlapping.
pub const BACKUP_LEASE_KEY: &str = "backup:lease";
/// How long a run may hold it (reference: 900 s).
pub const BACKUP_LEASE_MS: i64 = 900 * crate::time::SECOND_MS;
/// Rows per page between a store and a dump.
pub const PAGE_ROWS: usize = 500;
/// Mirror files written at a time.
pub const MIRROR_BATCH: usize = 20;
