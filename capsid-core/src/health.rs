//! `GET /health` as rules: what the store probes' outcomes and the backup record make of the
//! report. A probe that failed makes the report `degraded` and is named in `failing`; a probe
//! skipped because the database cannot be reached is not a failure of its own; a backup older
//! than [`BACKUP_STALE_HOURS`] (or none recorded) carries a warning, never a degraded status.
//! The HTTP adapter runs the probes (bounded in time) and maps [`HealthReport::ok`] to 200 or
//! 503; it decides nothing here.

use serde::Serialize;

use crate::autonomy::watcher::BACKUP_STALE_MS;
use crate::time::{HOUR_MS, Timestamp};

/// A backup whose age, rounded as the report shows it, is over this many hours carries a
/// warning. The same threshold as the watcher's `backup-stale` finding
/// ([`BACKUP_STALE_MS`]).
pub const BACKUP_STALE_HOURS: f64 = (BACKUP_STALE_MS / HOUR_MS) as f64;

/// The longest a probe's `error: <why>` text may be, in bytes: a server's message may be long
/// and is shown to anyone who can reach `/health`.
pub const PROBE_ERROR_MAX_BYTES: usize = 120;

/// Build provenance, stamped at build time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildInfo {
    /// Git commit, or `unknown`.
    pub sha: String,
    /// Whether the tree had uncommitted changes.
    pub dirty: bool,
    /// When it was built (RFC 3339).
    pub built_at: String,
    /// The crate version.
    pub version: String,
}

/// What the store's probes answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreProbes {
    /// The trivial query failed (the error's text); the probes that need the database were
    /// skipped.
    Unreadable(String),
    /// The trivial query answered, so the others ran.
    Readable {
        /// The full-text probe: ok, or the error's text.
        fts: Result<(), String>,
        /// The newest applied migration, when it could be read.
        schema_version: Option<String>,
        /// The `backup:last-ok` setting's value, when it could be read and is set.
        backup_last_ok: Option<String>,
    },
}

/// `ok` or `degraded`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Every probe passed.
    Ok,
    /// A probe failed; `failing` names it.
    Degraded,
}

/// The store's probes as the report shows them: `ok`, `skipped` or `error: <why>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoreHealth {
    /// The trivial query.
    pub db: String,
    /// The full-text probe.
    pub fts: String,
}

/// The last successful backup and how old it is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackupHealth {
    /// The recorded instant, as stored (even when it does not parse).
    pub last_ok: Option<String>,
    /// Hours since then, to one decimal; none when nothing parseable is recorded.
    pub age_hours: Option<f64>,
    /// Why the backup needs looking at, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// The body of `GET /health`; it serializes to the route's JSON, keys in this order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HealthReport {
    /// `ok` when every probe passed.
    pub status: HealthStatus,
    /// Git commit.
    pub sha: String,
    /// Uncommitted changes at build time.
    pub dirty: bool,
    /// Build time.
    #[serde(rename = "builtAt")]
    pub built_at: String,
    /// Crate version.
    pub version: String,
    /// The newest applied migration.
    pub schema_version: Option<String>,
    /// The store's probes.
    pub store: StoreHealth,
    /// The backup's age.
    pub backup: BackupHealth,
    /// The probes that failed (present only when degraded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<&'static str>,
}

impl HealthReport {
    /// Whether every probe passed (the route answers 200, else 503).
    pub fn ok(&self) -> bool {
        self.status == HealthStatus::Ok
    }
}

/// `error: <why>`, at most [`PROBE_ERROR_MAX_BYTES`] bytes, cut on a character boundary (a
/// server's message may be in any language).
pub fn probe_error(why: &str) -> String {
    let mut s = format!("error: {why}");
    let mut end = s.len().min(PROBE_ERROR_MAX_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// Hours from `last_ok` to `now`, rounded to one decimal; none when `last_ok` is not an
/// instant.
pub fn backup_age_hours(last_ok: &str, now: Timestamp) -> Option<f64> {
    let t = Timestamp::parse(last_ok)?;
    Some((now.millis_since(t) as f64 / HOUR_MS as f64 * 10.0).round() / 10.0)
}

/// The report `probes` make at `now` for the build `build`.
pub fn health_report(build: &BuildInfo, probes: StoreProbes, now: Timestamp) -> HealthReport {
    let (store, schema_version, last_ok, failing, readable) = match probes {
        StoreProbes::Unreadable(why) => (
            StoreHealth {
                db: probe_error(&why),
                fts: "skipped".to_owned(),
            },
            None,
            None,
            // The skipped probes are not failures of their own.
            vec!["db"],
            false,
        ),
        StoreProbes::Readable {
            fts,
            schema_version,
            backup_last_ok,
        } => {
            let (fts, failing) = match fts {
                Ok(()) => ("ok".to_owned(), Vec::new()),
                Err(why) => (probe_error(&why), vec!["fts"]),
            };
            let store = StoreHealth {
                db: "ok".to_owned(),
                fts,
            };
            (store, schema_version, backup_last_ok, failing, true)
        }
    };
    let age_hours = last_ok.as_deref().and_then(|t| backup_age_hours(t, now));
    let warning = match age_hours {
        None if !readable => Some("unknown: the store cannot be read".to_owned()),
        None => Some("no successful backup recorded".to_owned()),
        Some(h) if h > BACKUP_STALE_HOURS => {
            Some(format!("the last successful backup is {h} hours old"))
        }
        Some(_) => None,
    };
    HealthReport {
        status: if failing.is_empty() {
            HealthStatus::Ok
        } else {
            HealthStatus::Degraded
        },
        sha: build.sha.clone(),
        dirty: build.dirty,
        built_at: build.built_at.clone(),
        version: build.version.clone(),
        schema_version,
        store,
        backup: BackupHealth {
            last_ok,
            age_hours,
            warning,
        },
        failing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse("2026-03-02T12:00:00Z").expect("instant")
    }

    fn build() -> BuildInfo {
        BuildInfo {
            sha: "abc1234".into(),
            dirty: false,
            built_at: "2026-03-01T00:00:00Z".into(),
            version: "0.1.0".into(),
        }
    }

    /// Every probe ok, with the backup record `last_ok`.
    fn readable(last_ok: Option<String>) -> StoreProbes {
        StoreProbes::Readable {
            fts: Ok(()),
            schema_version: Some("0007_outage".into()),
            backup_last_ok: last_ok,
        }
    }

    fn backed_up_ago(ms: i64) -> HealthReport {
        let at = Timestamp::from_millis(now().as_millis() - ms).to_string();
        health_report(&build(), readable(Some(at)), now())
    }

    fn json(report: &HealthReport) -> String {
        serde_json::to_string(report).expect("json")
    }

    #[test]
    fn the_threshold_is_the_watchers() {
        assert_eq!(BACKUP_STALE_HOURS, 26.0);
    }

    #[test]
    fn a_healthy_store_with_a_fresh_backup_is_ok_with_no_warning() {
        let report = backed_up_ago(HOUR_MS);
        assert!(report.ok());
        assert_eq!(
            json(&report),
            r#"{"status":"ok","sha":"abc1234","dirty":false,"builtAt":"2026-03-01T00:00:00Z","version":"0.1.0","schema_version":"0007_outage","store":{"db":"ok","fts":"ok"},"backup":{"last_ok":"2026-03-02T11:00:00.000Z","age_hours":1.0}}"#
        );
    }

    #[test]
    fn a_backup_exactly_26_hours_old_carries_no_warning() {
        let report = backed_up_ago(26 * HOUR_MS);
        assert_eq!(report.backup.age_hours, Some(26.0));
        assert_eq!(report.backup.warning, None);
        assert!(report.ok());
    }

    #[test]
    fn a_backup_that_rounds_to_26_hours_carries_no_warning() {
        // 26 h 2 min shows as 26.0 hours: the warning agrees with the age shown.
        let report = backed_up_ago(26 * HOUR_MS + 2 * crate::time::MINUTE_MS);
        assert_eq!(report.backup.age_hours, Some(26.0));
        assert_eq!(report.backup.warning, None);
    }

    #[test]
    fn a_backup_26_point_1_hours_old_warns_but_stays_ok() {
        let report = backed_up_ago(26 * HOUR_MS + 6 * crate::time::MINUTE_MS);
        assert_eq!(report.backup.age_hours, Some(26.1));
        assert_eq!(
            report.backup.warning.as_deref(),
            Some("the last successful backup is 26.1 hours old")
        );
        assert!(report.ok(), "a stale backup never degrades the status");
        assert!(json(&report).ends_with(
            r#""backup":{"last_ok":"2026-03-01T09:54:00.000Z","age_hours":26.1,"warning":"the last successful backup is 26.1 hours old"}}"#
        ));
    }

    #[test]
    fn a_whole_number_of_hours_reads_without_a_decimal_in_the_warning() {
        let report = backed_up_ago(48 * HOUR_MS);
        assert_eq!(
            report.backup.warning.as_deref(),
            Some("the last successful backup is 48 hours old")
        );
        assert!(json(&report).contains(r#""age_hours":48.0,"#));
    }

    #[test]
    fn no_backup_recorded_warns() {
        let report = health_report(&build(), readable(None), now());
        assert!(report.ok());
        assert_eq!(
            json(&report),
            r#"{"status":"ok","sha":"abc1234","dirty":false,"builtAt":"2026-03-01T00:00:00Z","version":"0.1.0","schema_version":"0007_outage","store":{"db":"ok","fts":"ok"},"backup":{"last_ok":null,"age_hours":null,"warning":"no successful backup recorded"}}"#
        );
    }

    #[test]
    fn an_unparseable_record_is_shown_and_counts_as_none() {
        let report = health_report(&build(), readable(Some("last tuesday".into())), now());
        assert_eq!(report.backup.last_ok.as_deref(), Some("last tuesday"));
        assert_eq!(report.backup.age_hours, None);
        assert_eq!(
            report.backup.warning.as_deref(),
            Some("no successful backup recorded")
        );
    }

    #[test]
    fn an_unreadable_store_fails_db_and_skips_the_rest() {
        let report = health_report(
            &build(),
            StoreProbes::Unreadable("connection refused at 127.0.0.1:5432".into()),
            now(),
        );
        assert!(!report.ok());
        assert_eq!(report.status, HealthStatus::Degraded);
        assert_eq!(
            report.failing,
            vec!["db"],
            "a skipped probe is not a failure"
        );
        assert_eq!(
            json(&report),
            r#"{"status":"degraded","sha":"abc1234","dirty":false,"builtAt":"2026-03-01T00:00:00Z","version":"0.1.0","schema_version":null,"store":{"db":"error: connection refused at 127.0.0.1:5432","fts":"skipped"},"backup":{"last_ok":null,"age_hours":null,"warning":"unknown: the store cannot be read"},"failing":["db"]}"#
        );
    }

    #[test]
    fn a_failed_full_text_probe_fails_fts_only() {
        let report = health_report(
            &build(),
            StoreProbes::Readable {
                fts: Err("no such table: documents_fts".into()),
                schema_version: Some("0007_outage".into()),
                backup_last_ok: None,
            },
            now(),
        );
        assert!(!report.ok());
        assert_eq!(report.failing, vec!["fts"]);
        assert_eq!(report.store.db, "ok");
        assert_eq!(report.store.fts, "error: no such table: documents_fts");
        assert_eq!(
            report.backup.warning.as_deref(),
            Some("no successful backup recorded"),
            "the database answered, so the record is known to be absent"
        );
        assert!(json(&report).ends_with(r#""failing":["fts"]}"#));
    }

    #[test]
    fn probe_errors_are_cut_on_a_character_boundary() {
        let long = "é".repeat(100);
        let cut = probe_error(&long);
        assert!(
            cut.len() <= PROBE_ERROR_MAX_BYTES && cut.starts_with("error: é"),
            "{cut}"
        );
        assert_eq!(cut.len(), 119, "the next 'é' would straddle byte 120");
        assert_eq!(
            probe_error("connection refused at 127.0.0.1:5432"),
            "error: connection refused at 127.0.0.1:5432"
        );
    }
}
