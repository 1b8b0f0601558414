//! `POST /ops/backup`, a backup run on demand: who may ask for one and how often. A backup
//! dumps every namespace, so it needs the write grant, global authority (the namespaces axis
//! `*`, [`check_global`]) and the `can_backup` flag; and each caller runs at most one per
//! interval (a setting per caller, taken by compare-and-set with an expiry on the `Clock`'s
//! time, so replicas share it and tests drive it without sleeping).

use super::BackupWiring;
use crate::backup::summary::{BackupSummary, Progress};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::scope::{Flag, Grant, ScopeRefusal, check_global};
use crate::service::Service;
use crate::time::{MINUTE_MS, SECOND_MS, Timestamp};

/// How long a caller waits between two backups on demand, unless configured otherwise.
pub const DEFAULT_ON_DEMAND_INTERVAL_MS: i64 = 10 * MINUTE_MS;

/// The settings key holding until when `actor` may not ask for another backup.
pub fn on_demand_key(actor: &str) -> String {
    format!("backup:on-demand:{actor}")
}

/// What a backup asked for on demand came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnDemandBackup {
    /// It was allowed: the run's summary (`ran: false` when another run held the lease).
    Ran(BackupSummary),
    /// The caller asked again within its interval: nothing ran.
    TooSoon {
        /// Whole seconds until the caller may ask again (at least 1).
        retry_after_secs: u64,
        /// Why, for the answer's body.
        message: String,
    },
}

/// Whole seconds from `now` to `until`, at least 1.
fn seconds_until(now: Timestamp, until: Option<Timestamp>) -> u64 {
    let ms = until.map_or(SECOND_MS, |u| u.as_millis() - now.as_millis());
    u64::try_from((ms + SECOND_MS - 1) / SECOND_MS)
        .unwrap_or(1)
        .max(1)
}

impl BackupWiring {
    fn on_demand_interval_ms(&self) -> i64 {
        self.on_demand_interval_ms
            .unwrap_or(DEFAULT_ON_DEMAND_INTERVAL_MS)
    }
}

impl Service {
    /// Sets how long each caller waits between two backups on demand (default 10 minutes;
    /// at least one second).
    pub fn with_backup_interval(mut self, interval: std::time::Duration) -> Service {
        let ms = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
        self.backups.on_demand_interval_ms = Some(ms.max(SECOND_MS));
        self
    }

    /// `POST /ops/backup`: a run on demand. Refused before anything is touched for a caller
    /// without the write grant, without global authority or without `can_backup`; answered
    /// `TooSoon` when the caller ran one within the interval.
    pub async fn backup_as(
        &self,
        caller: &Caller,
        progress: &dyn Progress,
    ) -> Result<OnDemandBackup> {
        if !caller.scopes.has_grant(Grant::Write) {
            return Err(Error::Forbidden(format!(
                "{} holds no write grant: a backup run prunes history, so it needs a key with the write grant",
                caller.actor()
            )));
        }
        check_global(
            &caller.scopes,
            "POST /ops/backup",
            "a backup dumps every namespace",
        )?;
        if !caller.scopes.flags.contains(&Flag::CanBackup) {
            return Err(ScopeRefusal::Flag {
                flag: Flag::CanBackup,
            }
            .into());
        }
        self.media()?;
        let now = self.now();
        let key = on_demand_key(&caller.actor());
        let until = now.plus_millis(self.backups.on_demand_interval_ms());
        let taken = self
            .store
            .compare_and_set_setting(&key, None, Some(&until.to_string()), Some(until), now)
            .await?;
        if !taken {
            let held = self.store.setting(&key, now).await?;
            let retry_after_secs = seconds_until(now, held.as_deref().and_then(Timestamp::parse));
            return Ok(OnDemandBackup::TooSoon {
                retry_after_secs,
                message: format!(
                    "{} ran a backup on demand less than {} minutes ago; one run per interval per caller (the daily backup still runs); retry in {retry_after_secs} s",
                    caller.actor(),
                    self.backups.on_demand_interval_ms() / MINUTE_MS
                ),
            });
        }
        let outcome = self.run_backup(progress).await;
        // Only a run that went through uses up the interval: one refused because another run
        // holds the lease (409), cancelled (nothing kept) or failed hands the slot back, so
        // the caller's retry is not answered 429.
        // A store that cannot take the slot back leaves the caller to wait out the interval,
        // as before; the run's own answer is what the caller needs to hear.
        if !matches!(&outcome, Ok(summary) if summary.ran) {
            let until = until.to_string();
            let _ = self
                .store
                .compare_and_set_setting(&key, Some(&until), None, None, self.now())
                .await;
        }
        outcome.map(OnDemandBackup::Ran)
    }
}

impl crate::service::maintenance::BackupRunner for Service {
    fn backup<'a>(
        &'a self,
        caller: &'a Caller,
        progress: &'a dyn Progress,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<OnDemandBackup>> + Send + 'a>>
    {
        Box::pin(self.backup_as(caller, progress))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_and_is_never_zero() {
        let now = Timestamp::from_millis(1_800_000_000_000);
        assert_eq!(seconds_until(now, Some(now.plus_millis(600_000))), 600);
        assert_eq!(seconds_until(now, Some(now.plus_millis(1_001))), 2);
        assert_eq!(seconds_until(now, Some(now.plus_millis(1))), 1);
        assert_eq!(seconds_until(now, Some(now)), 1);
        assert_eq!(seconds_until(now, Some(now.plus_millis(-5_000))), 1);
        assert_eq!(seconds_until(now, None), 1);
    }
}
