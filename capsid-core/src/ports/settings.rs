//! Settings (the Worker's KV, with real compare-and-set and expiry) and the leader lease that
//! elects one replica to run each periodic task.

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::time::Timestamp;

/// What a setting must hold for a change to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Anything (an unconditional change).
    Anything,
    /// Exactly this live value (`None`: absent or expired).
    Value(Option<String>),
}

/// One setting's change inside [`SettingsStore::change_settings`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingChange {
    /// The key.
    pub key: String,
    /// What it must hold first.
    pub expected: Expect,
    /// The new value (`None` deletes it).
    pub value: Option<String>,
    /// When the new value expires.
    pub expires_at: Option<Timestamp>,
}

impl SettingChange {
    /// Sets `key` to `value` whatever it held.
    pub fn put(key: impl Into<String>, value: impl Into<String>) -> SettingChange {
        SettingChange {
            key: key.into(),
            expected: Expect::Anything,
            value: Some(value.into()),
            expires_at: None,
        }
    }

    /// Removes `key` whatever it held.
    pub fn delete(key: impl Into<String>) -> SettingChange {
        SettingChange {
            key: key.into(),
            expected: Expect::Anything,
            value: None,
            expires_at: None,
        }
    }
}

/// Key/value settings with optional expiry. An expired value reads as absent.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait SettingsStore: Send + Sync {
    /// The live value of `key` at `now`.
    async fn setting(&self, key: &str, now: Timestamp) -> StoreResult<Option<String>>;
    /// Sets `key` unconditionally (with an optional expiry): the server's own bookkeeping;
    /// a change someone asked for goes through [`SettingsStore::change_settings`] with its
    /// audit row.
    async fn put_setting(
        &self,
        key: &str,
        value: &str,
        expires_at: Option<Timestamp>,
    ) -> StoreResult<()>;
    /// Removes `key`.
    async fn delete_setting(&self, key: &str) -> StoreResult<()>;
    /// Compare-and-set at `now`: succeeds only if the live value equals `expected` (`None` =
    /// absent or expired); then stores `new` (`None` deletes). Returns whether it applied.
    async fn compare_and_set_setting(
        &self,
        key: &str,
        expected: Option<&str>,
        new: Option<&str>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<bool>;
    /// One unit of work for a change someone asked for (a mode, a pause, a budget, a lease):
    /// every change's expectation holds at `now`, then every change applies and `audit` is
    /// appended, in one transaction; otherwise nothing is written. Returns whether it applied.
    async fn change_settings(
        &self,
        changes: &[SettingChange],
        audit: AuditEntry,
        now: Timestamp,
    ) -> StoreResult<bool>;
    /// [`SettingsStore::change_settings`] with any number of audit rows (the server's own
    /// decisions, such as a tick's auto-merge rows with the `improve:awaiting-seat` list they
    /// explain): every expectation holds, every change applies and every row is appended in
    /// one transaction, or nothing is written.
    async fn change_settings_audited(
        &self,
        changes: &[SettingChange],
        audits: &[AuditEntry],
        now: Timestamp,
    ) -> StoreResult<bool>;
    /// Claims `(scope, jti)` in the replay cache: `true` the first time, `false` on a replay
    /// (`INSERT ... ON CONFLICT DO NOTHING RETURNING`).
    async fn claim_nonce(&self, scope: &str, jti: &str, at: Timestamp) -> StoreResult<bool>;
}

/// One leader per periodic task across replicas.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait LeaderLease: Send + Sync {
    /// Takes or renews the lease `name` for `holder` until `until`: succeeds if it is free,
    /// expired at `now`, or already held by `holder`.
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;
    /// Gives the lease back if `holder` holds it.
    async fn release_lease(&self, name: &str, holder: &str) -> StoreResult<()>;
}
