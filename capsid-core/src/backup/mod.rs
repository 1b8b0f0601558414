//! Backups and restore as rules (reference 10.4, 10.5, 8.3): which tables a dump carries
//! ([`tables`]), how rows are written and read back as a stream ([`rows`]), where a dump
//! lives and what makes one unrestorable ([`manifest`]), what proves where it came from
//! ([`integrity`]), what a run keeps ([`retention`]),
//! the preflight before pruning ([`preflight`]), the scheduled restore rehearsal ([`rehearsal`]), the off-site puller's rules ([`pull`]), the settings sidecar's allowlist
//! ([`sidecar`]), the holdout counts ([`holdout`]), the backup credential ([`credential`]) and
//! the summary ([`summary`]). The service runs them (`service/backup`); stores and blob stores
//! only carry bytes.

pub mod credential;
pub mod holdout;
pub mod integrity;
pub mod manifest;
pub mod preflight;
pub mod pull;
pub mod rehearsal;
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

/// The daily run's hour (UTC): the scheduled runs of each UTC day are anchored on it.
pub const DAILY_HOUR_UTC: i64 = 9;

/// The longest interval between two scheduled runs, in hours (one a day).
pub const BACKUP_EVERY_HOURS_MAX: u32 = 24;

/// How often the scheduler takes a dump (`--backup-every-hours`, `CAPSID_BACKUP_EVERY_HOURS`):
/// a whole number of hours from 1 to 24. Each UTC day's runs fall at 09:00 UTC and every
/// interval before and after it within the day (every 6 hours: 03:00, 09:00, 15:00, 21:00);
/// 24, the default, is the reference's one run a day at 09:00.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackupEvery {
    hours: u32,
}

impl Default for BackupEvery {
    fn default() -> BackupEvery {
        BackupEvery {
            hours: BACKUP_EVERY_HOURS_MAX,
        }
    }
}

impl BackupEvery {
    /// The interval `text` names, or the refusal naming the setting and its rule.
    pub fn parse(text: &str) -> Result<BackupEvery, String> {
        let hours = text.trim().parse::<u32>().ok();
        match hours {
            Some(hours) if (1..=BACKUP_EVERY_HOURS_MAX).contains(&hours) => {
                Ok(BackupEvery { hours })
            }
            _ => Err(format!(
                "CAPSID_BACKUP_EVERY_HOURS (--backup-every-hours): must be a whole number of hours from 1 to {BACKUP_EVERY_HOURS_MAX} (how often the scheduler takes a dump; 24 is once a day at 09:00 UTC), not {text:?}"
            )),
        }
    }

    /// The interval in hours.
    pub fn hours(self) -> u32 {
        self.hours
    }

    /// The start of the newest scheduled slot at or before `now`, or `None` before the day's
    /// first slot (whose dump the previous day's last slot already covers).
    pub fn slot_at(self, now: crate::time::Timestamp) -> Option<i64> {
        use crate::time::{DAY_MS, HOUR_MS};
        let every = i64::from(self.hours) * HOUR_MS;
        let day_start = now.as_millis().div_euclid(DAY_MS) * DAY_MS;
        let first = (DAILY_HOUR_UTC * HOUR_MS) % every;
        let into_day = now.as_millis() - day_start;
        (into_day >= first).then(|| day_start + first + (into_day - first) / every * every)
    }
}

/// Whether a scheduled run is due at `now`: a slot of `every` has begun today and no run has
/// succeeded since it began (so a server down at the slot catches up at its next tick).
pub fn scheduled_run_due(
    every: BackupEvery,
    now: crate::time::Timestamp,
    last_ok: Option<crate::time::Timestamp>,
) -> bool {
    every
        .slot_at(now)
        .is_some_and(|slot| last_ok.is_none_or(|t| t.as_millis() < slot))
}

/// Whether the daily run is due at `now`: it is past 09:00 UTC today and no run has
/// succeeded since then (the default interval of [`scheduled_run_due`]).
pub fn daily_run_due(now: crate::time::Timestamp, last_ok: Option<crate::time::Timestamp>) -> bool {
    scheduled_run_due(BackupEvery::default(), now, last_ok)
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

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("instant")
    }

    #[test]
    fn the_interval_is_a_whole_number_of_hours_from_one_to_a_day() {
        assert_eq!(BackupEvery::default().hours(), 24);
        assert_eq!(BackupEvery::parse("24").map(BackupEvery::hours), Ok(24));
        assert_eq!(BackupEvery::parse(" 6 ").map(BackupEvery::hours), Ok(6));
        assert_eq!(BackupEvery::parse("1").map(BackupEvery::hours), Ok(1));
        for bad in ["0", "25", "-1", "6.5", "six", ""] {
            let err = BackupEvery::parse(bad).expect_err(bad);
            assert_eq!(
                err,
                format!(
                    "CAPSID_BACKUP_EVERY_HOURS (--backup-every-hours): must be a whole number of hours from 1 to 24 (how often the scheduler takes a dump; 24 is once a day at 09:00 UTC), not {bad:?}"
                )
            );
        }
    }

    #[test]
    fn the_slots_of_a_day_are_anchored_at_nine_utc() {
        let every = |h: &str| BackupEvery::parse(h).expect("hours");
        let ms = |s: &str| at(s).as_millis();
        // Every 6 hours: 03:00, 09:00, 15:00, 21:00.
        let six = every("6");
        assert_eq!(six.slot_at(at("2026-03-02T02:59:59Z")), None);
        assert_eq!(
            six.slot_at(at("2026-03-02T03:00:00Z")),
            Some(ms("2026-03-02T03:00:00Z"))
        );
        assert_eq!(
            six.slot_at(at("2026-03-02T08:59:59Z")),
            Some(ms("2026-03-02T03:00:00Z"))
        );
        assert_eq!(
            six.slot_at(at("2026-03-02T09:00:00Z")),
            Some(ms("2026-03-02T09:00:00Z"))
        );
        assert_eq!(
            six.slot_at(at("2026-03-02T23:59:59Z")),
            Some(ms("2026-03-02T21:00:00Z"))
        );
        // Every 5 hours: 04:00, 09:00, 14:00, 19:00 (the day restarts the count).
        let five = every("5");
        assert_eq!(five.slot_at(at("2026-03-02T03:59:00Z")), None);
        assert_eq!(
            five.slot_at(at("2026-03-02T04:00:00Z")),
            Some(ms("2026-03-02T04:00:00Z"))
        );
        assert_eq!(
            five.slot_at(at("2026-03-02T13:59:00Z")),
            Some(ms("2026-03-02T09:00:00Z"))
        );
        assert_eq!(
            five.slot_at(at("2026-03-02T23:00:00Z")),
            Some(ms("2026-03-02T19:00:00Z"))
        );
        // Every hour: each hour from midnight.
        let one = every("1");
        assert_eq!(
            one.slot_at(at("2026-03-02T00:00:00Z")),
            Some(ms("2026-03-02T00:00:00Z"))
        );
        assert_eq!(
            one.slot_at(at("2026-03-02T13:30:00Z")),
            Some(ms("2026-03-02T13:00:00Z"))
        );
        // Once a day: 09:00 only.
        let day = BackupEvery::default();
        assert_eq!(day.slot_at(at("2026-03-02T08:59:59Z")), None);
        assert_eq!(
            day.slot_at(at("2026-03-02T23:59:59Z")),
            Some(ms("2026-03-02T09:00:00Z"))
        );
    }

    #[test]
    fn a_run_is_due_once_per_slot() {
        let six = BackupEvery::parse("6").expect("hours");
        assert!(!scheduled_run_due(six, at("2026-03-02T02:00:00Z"), None));
        assert!(scheduled_run_due(six, at("2026-03-02T03:00:00Z"), None));
        let three = at("2026-03-02T03:00:00Z");
        assert!(
            !scheduled_run_due(six, at("2026-03-02T08:59:00Z"), Some(three)),
            "this slot's run is done"
        );
        assert!(
            scheduled_run_due(six, at("2026-03-02T09:00:00Z"), Some(three)),
            "the next slot"
        );
        assert!(
            scheduled_run_due(
                six,
                at("2026-03-02T09:00:00Z"),
                Some(at("2026-03-02T08:59:59Z"))
            ),
            "a run before the slot began does not count for it"
        );
        assert!(
            !scheduled_run_due(
                six,
                at("2026-03-02T09:30:00Z"),
                Some(at("2026-03-02T09:00:00Z"))
            ),
            "a run as the slot began counts for it"
        );
    }
}
