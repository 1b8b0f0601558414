//! Backups and restore as rules (reference 10.4, 10.5, 8.3): which tables a dump carries
//! ([`tables`]), how rows are written and read back as a stream ([`rows`]), where a dump
//! lives and what makes one unrestorable ([`manifest`]), what proves where it came from
//! ([`integrity`]), what a run keeps ([`retention`]),
//! the preflight before pruning ([`preflight`]), the settings sidecar's allowlist
//! ([`sidecar`]), the holdout counts ([`holdout`]), the backup credential ([`credential`]) and
//! the summary ([`summary`]). The service runs them (`service/backup`); stores and blob stores
//! only carry bytes.

pub mod credential;
pub mod holdout;
pub mod integrity;
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
/// Mirror files handed to the blob store at a time (it writes a bounded number at once:
/// 20 for `capsid-blobs`, as the reference does).
pub const MIRROR_BATCH: usize = 200;

/// The daily run's hour (UTC).
pub const DAILY_HOUR_UTC: i64 = 9;

/// Whether the daily run is due at `now`: it is past 09:00 UTC today and no run has
/// succeeded since then (so a server down at nine catches up at its next tick that day).
pub fn daily_run_due(now: crate::time::Timestamp, last_ok: Option<crate::time::Timestamp>) -> bool {
    use crate::time::{DAY_MS, HOUR_MS};
    let today_nine = now.as_millis().div_euclid(DAY_MS) * DAY_MS + DAILY_HOUR_UTC * HOUR_MS;
    now.as_millis() >= today_nine && last_ok.is_none_or(|t| t.as_millis() < today_nine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{HOUR_MS, Timestamp};

    #[test]
    fn the_daily_run_is_due_once_after_nine_utc() {
        let at = |s: &str| Timestamp::parse(s).expect("instant");
        let morning = at("2026-03-02T08:59:00Z");
        assert!(!daily_run_due(morning, None), "not before nine");
        let nine = at("2026-03-02T09:00:00Z");
        assert!(daily_run_due(nine, None));
        assert!(
            daily_run_due(nine, Some(at("2026-03-01T09:01:00Z"))),
            "yesterday's run"
        );
        assert!(
            !daily_run_due(nine.plus_millis(HOUR_MS), Some(nine)),
            "already ran today"
        );
        assert!(
            daily_run_due(at("2026-03-02T17:00:00Z"), Some(at("2026-03-02T08:00:00Z"))),
            "a run before nine does not count for today"
        );
    }
}
