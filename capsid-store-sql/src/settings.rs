//! Settings with expiry and compare-and-set, the replay cache (`claim_nonce`), and the leader
//! lease. Expiry is judged against the `now` the caller passes: a value whose `expires_at` is
//! at or before `now` is absent, and a lease whose `expires_at` is at or before `now` is free.
//! Every conditional change is one statement whose `WHERE` is its condition, so it holds under
//! concurrent units on either engine.

use capsid_core::ports::{AuditEntry, Expect, SettingChange, StoreResult};
use capsid_core::time::Timestamp;

use crate::engine::in_unit;
use crate::engine::{Engine, always, read_all};
use crate::exec::Exec;
use crate::stmt::Stmt;

const SETTING: &str =
    "SELECT value FROM settings WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)";
const PUT: &str = "INSERT INTO settings (key, value, expires_at) VALUES ($1, $2, $3) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at";
const DELETE: &str = "DELETE FROM settings WHERE key = $1";
/// Absent-or-expired to a value: insert, or overwrite an expired row.
const CAS_CREATE: &str = "INSERT INTO settings (key, value, expires_at) VALUES ($1, $2, $3) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at \
     WHERE settings.expires_at IS NOT NULL AND settings.expires_at <= $4 RETURNING key";
/// Live value to another value.
const CAS_REPLACE: &str = "UPDATE settings SET value = $3, expires_at = $4 \
     WHERE key = $1 AND value = $2 AND (expires_at IS NULL OR expires_at > $5) RETURNING key";
/// Live value to absent.
const CAS_DELETE: &str = "DELETE FROM settings \
     WHERE key = $1 AND value = $2 AND (expires_at IS NULL OR expires_at > $3) RETURNING key";
/// Absent to absent: an expired row is cleared, then no live value may be left.
const CLEAR_EXPIRED: &str =
    "DELETE FROM settings WHERE key = $1 AND expires_at IS NOT NULL AND expires_at <= $2";
const LIVE_COUNT: &str = "SELECT COUNT(*) AS n FROM settings \
     WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)";
const CLAIM_NONCE: &str = "INSERT INTO improve_jti (scope, jti, seen_at) VALUES ($1, $2, $3) \
     ON CONFLICT (scope, jti) DO NOTHING RETURNING jti";
/// Takes the lease when free, expired at `now`, or already held by the same holder.
const ACQUIRE_LEASE: &str = "INSERT INTO leader_leases (name, holder, expires_at) VALUES ($1, $2, $4) \
     ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
     WHERE leader_leases.holder = excluded.holder OR leader_leases.expires_at <= $3 RETURNING holder";
const RELEASE_LEASE: &str = "DELETE FROM leader_leases WHERE name = $1 AND holder = $2";

async fn put_on(
    x: &mut dyn Exec,
    key: &str,
    value: &str,
    expires_at: Option<Timestamp>,
) -> Result<(), sqlx::Error> {
    x.execute(Stmt::new(PUT).bind(key).bind(value).bind(expires_at))
        .await?;
    Ok(())
}

async fn delete_on(x: &mut dyn Exec, key: &str) -> Result<(), sqlx::Error> {
    x.execute(Stmt::new(DELETE).bind(key)).await?;
    Ok(())
}

/// Compare-and-set, each case one statement whose `WHERE` is the condition.
async fn compare_and_set_on(
    x: &mut dyn Exec,
    key: &str,
    expected: Option<&str>,
    new: Option<&str>,
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<bool, sqlx::Error> {
    let stmt = match (expected, new) {
        (None, Some(new)) => Stmt::new(CAS_CREATE)
            .bind(key)
            .bind(new)
            .bind(expires_at)
            .bind(now),
        (Some(expected), Some(new)) => Stmt::new(CAS_REPLACE)
            .bind(key)
            .bind(expected)
            .bind(new)
            .bind(expires_at)
            .bind(now),
        (Some(expected), None) => Stmt::new(CAS_DELETE).bind(key).bind(expected).bind(now),
        (None, None) => {
            x.execute(Stmt::new(CLEAR_EXPIRED).bind(key).bind(now))
                .await?;
            let live = x
                .fetch_optional(Stmt::new(LIVE_COUNT).bind(key).bind(now))
                .await?;
            return Ok(match live {
                Some(row) => row.count("n")? == 0,
                None => true,
            });
        }
    };
    Ok(x.fetch_optional(stmt).await?.is_some())
}

/// Runs `stmt` alone in a unit of its own; whether it returned a row.
async fn one_returning(engine: &impl Engine, stmt: Stmt) -> StoreResult<bool> {
    let stmt = &stmt;
    in_unit!(engine, always, |tx| async {
        Ok(tx.fetch_optional(stmt.clone()).await?.is_some())
    }
    .await)
}

/// `SettingsStore::setting`: the live value.
pub async fn setting(
    engine: &impl Engine,
    key: &str,
    now: Timestamp,
) -> StoreResult<Option<String>> {
    let found = read_all(engine, Stmt::new(SETTING).bind(key).bind(now), |r| {
        r.text("value")
    })
    .await?;
    Ok(found.into_iter().next())
}

/// `SettingsStore::put_setting`.
pub async fn put_setting(
    engine: &impl Engine,
    key: &str,
    value: &str,
    expires_at: Option<Timestamp>,
) -> StoreResult<()> {
    let stmt = Stmt::new(PUT).bind(key).bind(value).bind(expires_at);
    one_returning(engine, stmt).await.map(|_| ())
}

/// `SettingsStore::delete_setting`.
pub async fn delete_setting(engine: &impl Engine, key: &str) -> StoreResult<()> {
    one_returning(engine, Stmt::new(DELETE).bind(key))
        .await
        .map(|_| ())
}

/// `SettingsStore::compare_and_set_setting`.
pub async fn compare_and_set_setting(
    engine: &impl Engine,
    key: &str,
    expected: Option<&str>,
    new: Option<&str>,
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> StoreResult<bool> {
    in_unit!(engine, |applied| *applied, |tx| compare_and_set_on(
        &mut *tx, key, expected, new, expires_at, now
    )
    .await
    .map_err(Into::into))
}

/// `SettingsStore::change_settings_audited`: every change applies, with every audit row, or
/// nothing does (`false`: an expectation did not hold).
pub async fn change_settings_audited(
    engine: &impl Engine,
    changes: &[SettingChange],
    audits: &[AuditEntry],
    now: Timestamp,
) -> StoreResult<bool> {
    in_unit!(engine, |applied| *applied, |tx| async {
        for c in changes {
            let applied = match &c.expected {
                Expect::Anything => {
                    match &c.value {
                        Some(v) => put_on(&mut *tx, &c.key, v, c.expires_at).await?,
                        None => delete_on(&mut *tx, &c.key).await?,
                    }
                    true
                }
                Expect::Value(expected) => {
                    compare_and_set_on(
                        &mut *tx,
                        &c.key,
                        expected.as_deref(),
                        c.value.as_deref(),
                        c.expires_at,
                        now,
                    )
                    .await?
                }
            };
            if !applied {
                return Ok(false);
            }
        }
        for audit in audits {
            crate::audit::insert(&mut *tx, audit).await?;
        }
        Ok(true)
    }
    .await)
}

/// `SettingsStore::claim_nonce`: `true` the first time `jti` is seen in `scope`.
pub async fn claim_nonce(
    engine: &impl Engine,
    scope: &str,
    jti: &str,
    at: Timestamp,
) -> StoreResult<bool> {
    one_returning(
        engine,
        Stmt::new(CLAIM_NONCE).bind(scope).bind(jti).bind(at),
    )
    .await
}

/// `LeaderLease::acquire_lease`.
pub async fn acquire_lease(
    engine: &impl Engine,
    name: &str,
    holder: &str,
    now: Timestamp,
    until: Timestamp,
) -> StoreResult<bool> {
    let stmt = Stmt::new(ACQUIRE_LEASE)
        .bind(name)
        .bind(holder)
        .bind(now)
        .bind(until);
    one_returning(engine, stmt).await
}

/// `LeaderLease::release_lease`.
pub async fn release_lease(engine: &impl Engine, name: &str, holder: &str) -> StoreResult<()> {
    one_returning(engine, Stmt::new(RELEASE_LEASE).bind(name).bind(holder))
        .await
        .map(|_| ())
}
