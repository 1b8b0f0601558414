//! What a backup run keeps and deletes (reference 10.4): JSON dumps by run (the 14 newest
//! always kept, older than 90 days deleted whole), report objects after 30 days, and in the
//! store, after the export only, versions after 90 days, audit rows after 180 and replay-cache
//! rows after a day.

use super::manifest::run_date;
use crate::time::{DAY_MS, Timestamp};

/// Runs always kept, however old.
pub const KEEP_NEWEST_RUNS: usize = 14;
/// Older runs are deleted past this age.
pub const RUN_MAX_AGE_MS: i64 = 90 * DAY_MS;
/// Report objects are deleted past this age.
pub const REPORT_MAX_AGE_MS: i64 = 30 * DAY_MS;
/// Version snapshots are pruned past this age.
pub const VERSION_MAX_AGE_MS: i64 = 90 * DAY_MS;
/// Audit rows are pruned past this age.
pub const AUDIT_MAX_AGE_MS: i64 = 180 * DAY_MS;
/// Replay-cache rows are pruned past this age (a signature is good for ±30 minutes).
pub const NONCE_MAX_AGE_MS: i64 = DAY_MS;

/// The runs to delete whole: every run but the [`KEEP_NEWEST_RUNS`] newest whose date is
/// older than [`RUN_MAX_AGE_MS`]. A run id without a date is never deleted.
pub fn runs_to_delete(runs: &[String], now: Timestamp) -> Vec<String> {
    let mut sorted: Vec<&String> = runs.iter().collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    let cutoff = now.plus_millis(-RUN_MAX_AGE_MS);
    sorted
        .into_iter()
        .skip(KEEP_NEWEST_RUNS)
        .filter(|run| run_date(run).is_some_and(|date| date < cutoff))
        .cloned()
        .collect()
}

/// Whether a report object last written at `modified` is past its age.
pub fn report_expired(modified: Timestamp, now: Timestamp) -> bool {
    now.millis_since(modified) > REPORT_MAX_AGE_MS
}

/// The instants before which the store prunes, once the export is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PruneCutoffs {
    /// Versions snapshotted before this go.
    pub versions_before: Timestamp,
    /// Audit rows written before this go.
    pub audit_before: Timestamp,
    /// Replay-cache rows seen before this go.
    pub nonces_before: Timestamp,
}

impl PruneCutoffs {
    /// The cutoffs of a run at `now`.
    pub fn at(now: Timestamp) -> PruneCutoffs {
        PruneCutoffs {
            versions_before: now.plus_millis(-VERSION_MAX_AGE_MS),
            audit_before: now.plus_millis(-AUDIT_MAX_AGE_MS),
            nonces_before: now.plus_millis(-NONCE_MAX_AGE_MS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::manifest::run_id;

    fn day(n: i64) -> Timestamp {
        Timestamp::parse("2026-01-01T09:00:00Z")
            .expect("instant")
            .plus_millis(n * DAY_MS)
    }

    #[test]
    fn the_fourteen_newest_runs_survive_whatever_their_age() {
        // Twenty runs, one a week: the oldest are far past 90 days.
        let runs: Vec<String> = (0..20).map(|w| run_id(day(w * 7))).collect();
        let now = day(400);
        let gone = runs_to_delete(&runs, now);
        assert_eq!(
            gone.len(),
            6,
            "all but the 14 newest are older than 90 days"
        );
        for run in &runs[6..] {
            assert!(!gone.contains(run), "{run} is among the 14 newest");
        }
    }

    #[test]
    fn runs_younger_than_ninety_days_stay() {
        let runs: Vec<String> = (0..30).map(|d| run_id(day(d))).collect();
        assert!(runs_to_delete(&runs, day(60)).is_empty());
        let gone = runs_to_delete(&runs, day(100));
        // At day 100 (09:00) the cutoff is day 10 at 09:00: runs dated days 0..=10 (their
        // date is midnight) are older; none of them is among the 14 newest.
        assert_eq!(gone.len(), 11, "{gone:?}");
        assert!(gone.iter().all(|r| run_date(r).expect("date") < day(11)));
    }

    #[test]
    fn undated_runs_are_never_deleted() {
        let mut runs: Vec<String> = (0..20).map(|d| run_id(day(d))).collect();
        runs.push("zzz-not-a-run".into());
        runs.push("aaa".into());
        let gone = runs_to_delete(&runs, day(500));
        assert!(!gone.iter().any(|r| r == "aaa" || r == "zzz-not-a-run"));
    }

    #[test]
    fn reports_and_rows_have_their_ages() {
        assert!(!report_expired(day(0), day(30)));
        assert!(report_expired(day(0), day(31)));
        let cut = PruneCutoffs::at(day(200));
        assert_eq!(cut.versions_before, day(110));
        assert_eq!(cut.audit_before, day(20));
        assert_eq!(cut.nonces_before, day(199));
    }
}
