//! The scheduled restore rehearsal as rules (reference 10.5, `restore-rehearsal.yml`): how
//! often it runs (`--rehearse-every-days`, a week by default), when one is due, and the
//! durable record of the last one (the `backup:rehearsal:last` setting: when, which dump, ok
//! or not, the counts and why), which `capsid doctor`, the console and `/metrics` show.

use serde::{Deserialize, Serialize};

use crate::time::{DAY_MS, Timestamp};

/// The setting holding the last rehearsal's record (JSON, [`RehearsalRecord`]).
pub const REHEARSAL_KEY: &str = "backup:rehearsal:last";

/// The longest interval between two rehearsals, in days.
pub const REHEARSE_EVERY_DAYS_MAX: u32 = 90;

/// How often the scheduler rehearses a restore of the newest dump (`--rehearse-every-days`,
/// `CAPSID_REHEARSE_EVERY_DAYS`): a whole number of days from 1 to 90; 7, the default, is the
/// reference's weekly rehearsal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RehearseEvery {
    days: u32,
}

impl Default for RehearseEvery {
    fn default() -> RehearseEvery {
        RehearseEvery { days: 7 }
    }
}

impl RehearseEvery {
    /// The interval `text` names, or the refusal naming the setting and its rule.
    pub fn parse(text: &str) -> Result<RehearseEvery, String> {
        match text.trim().parse::<u32>().ok() {
            Some(days) if (1..=REHEARSE_EVERY_DAYS_MAX).contains(&days) => {
                Ok(RehearseEvery { days })
            }
            _ => Err(format!(
                "CAPSID_REHEARSE_EVERY_DAYS (--rehearse-every-days): must be a whole number of days from 1 to {REHEARSE_EVERY_DAYS_MAX} (how often the scheduler restores the newest dump into a throwaway store; 7 is weekly), not {text:?}"
            )),
        }
    }

    /// The interval in days.
    pub fn days(self) -> u32 {
        self.days
    }

    /// The interval in milliseconds.
    pub fn millis(self) -> i64 {
        i64::from(self.days) * DAY_MS
    }
}

/// Whether a rehearsal is due at `now`: none is recorded (or the record does not read), or
/// the last one began at least an interval ago. A clock stepped back before the last one
/// waits for it to come round again.
pub fn rehearsal_due(every: RehearseEvery, now: Timestamp, last: Option<&RehearsalRecord>) -> bool {
    match last.and_then(|r| Timestamp::parse(&r.at)) {
        None => true,
        Some(at) => now.millis_since(at) >= every.millis(),
    }
}

/// How a rehearsal ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RehearsalOutcome {
    /// Restored, every count matched the manifest and search found a restored document.
    Verified,
    /// Restored, but a count or the search disagreed.
    Mismatch,
    /// The dump was refused before anything was written (altered, foreign secret, torn...).
    Refused,
    /// The store, the blob store or the throwaway target failed.
    Failed,
}

/// One table's rows: in the manifest, and in the throwaway store after the restore.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RehearsedTable {
    /// The table.
    pub table: String,
    /// Rows the manifest lists.
    pub expected: u64,
    /// Rows restored.
    pub restored: u64,
}

/// The durable record of one rehearsal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RehearsalRecord {
    /// When it ran (RFC 3339, the scheduler's clock).
    pub at: String,
    /// The dump's run id (`None` when no dump could be read at all).
    pub run: Option<String>,
    /// The dump's manifest key in the media store.
    pub key: Option<String>,
    /// Whether the dump restored and verified.
    pub ok: bool,
    /// How it ended.
    pub outcome: RehearsalOutcome,
    /// Per table, the manifest's rows and the restored rows (empty when it never restored).
    pub tables: Vec<RehearsedTable>,
    /// The full-text probe on the restored store, when it restored.
    pub fts: Option<String>,
    /// Why it is not ok (`None` when it is).
    pub reason: Option<String>,
}

impl RehearsalRecord {
    /// The record as stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// The stored record, or `None` when it does not read.
    pub fn parse(text: &str) -> Option<RehearsalRecord> {
        serde_json::from_str(text).ok()
    }

    /// One line for people: `ok` or `FAILED`, when, which dump, and why.
    pub fn summary(&self) -> String {
        let rows: u64 = self.tables.iter().map(|t| t.restored).sum();
        match &self.reason {
            None => format!(
                "ok at {}: dump {} restored and verified ({} tables, {rows} rows)",
                self.at,
                self.run.as_deref().unwrap_or("?"),
                self.tables.len()
            ),
            Some(why) => format!(
                "FAILED at {}: dump {}: {why}",
                self.at,
                self.run.as_deref().unwrap_or("(none read)")
            ),
        }
    }

    /// The seconds since the Unix epoch of `at`, for the metrics (`None` when unreadable).
    pub fn at_seconds(&self) -> Option<f64> {
        Timestamp::parse(&self.at).map(|t| t.as_millis() as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("instant")
    }

    fn record(when: &str) -> RehearsalRecord {
        RehearsalRecord {
            at: when.to_owned(),
            run: Some("r1".into()),
            key: Some("backups/json/r1/manifest.json".into()),
            ok: true,
            outcome: RehearsalOutcome::Verified,
            tables: vec![],
            fts: Some("ok".into()),
            reason: None,
        }
    }

    #[test]
    fn the_interval_is_whole_days_from_one_to_ninety_and_a_refusal_names_the_setting() {
        assert_eq!(RehearseEvery::default().days(), 7);
        assert_eq!(RehearseEvery::parse(" 1 ").map(RehearseEvery::days), Ok(1));
        assert_eq!(RehearseEvery::parse("90").map(RehearseEvery::days), Ok(90));
        for bad in ["0", "91", "-1", "weekly", "1.5", ""] {
            let err = RehearseEvery::parse(bad).expect_err(bad);
            assert!(
                err.contains("CAPSID_REHEARSE_EVERY_DAYS")
                    && err.contains("--rehearse-every-days")
                    && err.contains("1 to 90"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_rehearsal_is_due_with_no_record_and_again_an_interval_after_the_last() {
        let week = RehearseEvery::default();
        let now = at("2026-03-09T10:00:00Z");
        assert!(rehearsal_due(week, now, None));
        let last = record("2026-03-02T10:00:01Z");
        assert!(!rehearsal_due(week, now, Some(&last)), "a second short");
        assert!(rehearsal_due(week, now.plus_millis(1000), Some(&last)));
        let unreadable = record("last week");
        assert!(rehearsal_due(week, now, Some(&unreadable)));
        let daily = RehearseEvery::parse("1").expect("a day");
        assert!(rehearsal_due(
            daily,
            at("2026-03-03T10:00:01Z"),
            Some(&last)
        ));
        assert!(
            !rehearsal_due(daily, at("2026-03-01T10:00:00Z"), Some(&last)),
            "clock stepped back"
        );
    }

    #[test]
    fn the_record_round_trips_and_says_why() {
        let mut r = record("2026-03-02T10:00:00.000Z");
        assert_eq!(RehearsalRecord::parse(&r.to_json()), Some(r.clone()));
        assert!(
            r.summary().starts_with("ok at 2026-03-02"),
            "{}",
            r.summary()
        );
        r.ok = false;
        r.reason = Some("backups/json/r1/documents.json: digest differs".into());
        assert!(r.summary().contains("FAILED") && r.summary().contains("digest differs"));
        assert_eq!(r.at_seconds(), Some(1_772_445_600.0));
        assert_eq!(RehearsalRecord::parse("{"), None);
    }
}
