//! The `SettingsStore` port (values with expiry, compare-and-set, the nonce replay cache)
//! and the `LeaderLease` port. A value whose `expires_at` is at or before `now` is absent.
//! Every change is one statement whose `WHERE` is the condition, so it is atomic.

use async_trait::async_trait;
use capsid_core::ports::{
    AuditEntry, Expect, LeaderLease, SettingChange, SettingsStore, StoreResult,
};
use capsid_core::time::Timestamp;
use sqlx::PgConnection;

use crate::PgStore;
use crate::audit;
use crate::error::{finish, translate, with_retry};

const SETTING: &str =
    "SELECT value FROM settings WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)";
const PUT: &str = "INSERT INTO settings (key, value, expires_at) VALUES ($1, $2, $3) \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at";
const DELETE: &str = "DELETE FROM settings WHERE key = $1";

/// Absent-or-expired to a value: insert, or overwrite an expired row.
const CAS_CREATE: &str = "INSERT INTO settings (key, value, expires_at) VALUES ($1, $2, $3) \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at \
     WHERE settings.expires_at IS NOT NULL AND settings.expires_at <= $4 RETURNING 1";
/// Live value to another value.
const CAS_REPLACE: &str = "UPDATE settings SET value = $3, expires_at = $4 \
     WHERE key = $1 AND value = $2 AND (expires_at IS NULL OR expires_at > $5) RETURNING 1";
/// Live value to absent.
const CAS_DELETE: &str = "DELETE FROM settings \
     WHERE key = $1 AND value = $2 AND (expires_at IS NULL OR expires_at > $3) RETURNING 1";
/// Absent to absent: clears an expired row; applies when no live value is left.
const CAS_ABSENT: &str = "WITH expired AS (DELETE FROM settings \
     WHERE key = $1 AND expires_at IS NOT NULL AND expires_at <= $2) \
     SELECT NOT EXISTS (SELECT 1 FROM settings WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2))";

const CLAIM_NONCE: &str = "INSERT INTO improve_jti (scope, jti, seen_at) VALUES ($1, $2, $3) \
     ON CONFLICT (scope, jti) DO NOTHING RETURNING 1";

/// Takes the lease when free, expired at `now`, or already held by the same holder.
const ACQUIRE_LEASE: &str = "INSERT INTO leader_leases (name, holder, expires_at) VALUES ($1, $2, $4) \
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at \
     WHERE leader_leases.holder = EXCLUDED.holder OR leader_leases.expires_at <= $3 RETURNING 1";
const RELEASE_LEASE: &str = "DELETE FROM leader_leases WHERE name = $1 AND holder = $2";

async fn put_on(
    conn: &mut PgConnection,
    key: &str,
    value: &str,
    expires_at: Option<Timestamp>,
) -> Result<(), sqlx::Error> {
    sqlx::query(PUT)
        .bind(key)
        .bind(value)
        .bind(expires_at.map(|t| t.to_string()))
        .execute(conn)
        .await?;
    Ok(())
}

async fn delete_on(conn: &mut PgConnection, key: &str) -> Result<(), sqlx::Error> {
    sqlx::query(DELETE).bind(key).execute(conn).await?;
    Ok(())
}

/// Compare-and-set as one statement whose `WHERE` is the condition.
async fn compare_and_set_on(
    conn: &mut PgConnection,
    key: &str,
    expected: Option<&str>,
    new: Option<&str>,
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<bool, sqlx::Error> {
    let now = now.to_string();
    let expires_at = expires_at.map(|t| t.to_string());
    let applied: Option<i32> = match (expected, new) {
        (None, Some(new)) => {
            sqlx::query_scalar(CAS_CREATE)
                .bind(key)
                .bind(new)
                .bind(expires_at)
                .bind(now)
                .fetch_optional(conn)
                .await?
        }
        (Some(expected), Some(new)) => {
            sqlx::query_scalar(CAS_REPLACE)
                .bind(key)
                .bind(expected)
                .bind(new)
                .bind(expires_at)
                .bind(now)
                .fetch_optional(conn)
                .await?
        }
        (Some(expected), None) => {
            sqlx::query_scalar(CAS_DELETE)
                .bind(key)
                .bind(expected)
                .bind(now)
                .fetch_optional(conn)
                .await?
        }
        (None, None) => {
            let absent: bool = sqlx::query_scalar(CAS_ABSENT)
                .bind(key)
                .bind(now)
                .fetch_one(conn)
                .await?;
            return Ok(absent);
        }
    };
    Ok(applied.is_some())
}

#[async_trait]
impl SettingsStore for PgStore {
    async fn setting(&self, key: &str, now: Timestamp) -> StoreResult<Option<String>> {
        sqlx::query_scalar(SETTING)
            .bind(key)
            .bind(now.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)
    }

    async fn put_setting(
        &self,
        key: &str,
        value: &str,
        expires_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        put_on(&mut conn, key, value, expires_at)
            .await
            .map_err(translate)
    }

    async fn delete_setting(&self, key: &str) -> StoreResult<()> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        delete_on(&mut conn, key).await.map_err(translate)
    }

    async fn compare_and_set_setting(
        &self,
        key: &str,
        expected: Option<&str>,
        new: Option<&str>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        compare_and_set_on(&mut conn, key, expected, new, expires_at, now)
            .await
            .map_err(translate)
    }

    async fn change_settings(
        &self,
        changes: &[SettingChange],
        audit: AuditEntry,
        now: Timestamp,
    ) -> StoreResult<bool> {
        self.change_settings_audited(changes, std::slice::from_ref(&audit), now)
            .await
    }

    async fn change_settings_audited(
        &self,
        changes: &[SettingChange],
        audits: &[AuditEntry],
        now: Timestamp,
    ) -> StoreResult<bool> {
        let pool = &self.pool;
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    for c in changes {
                        let applied = match &c.expected {
                            Expect::Anything => {
                                match &c.value {
                                    Some(v) => put_on(&mut tx, &c.key, v, c.expires_at).await?,
                                    None => delete_on(&mut tx, &c.key).await?,
                                }
                                true
                            }
                            Expect::Value(expected) => {
                                compare_and_set_on(
                                    &mut tx,
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
                        audit::insert(&mut tx, audit).await?;
                    }
                    Ok(true)
                }
                .await;
                finish(tx, result, |applied| *applied).await
            })
        })
        .await
    }

    async fn claim_nonce(&self, scope: &str, jti: &str, at: Timestamp) -> StoreResult<bool> {
        let first: Option<i32> = sqlx::query_scalar(CLAIM_NONCE)
            .bind(scope)
            .bind(jti)
            .bind(at.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        Ok(first.is_some())
    }
}

#[async_trait]
impl LeaderLease for PgStore {
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        let taken: Option<i32> = sqlx::query_scalar(ACQUIRE_LEASE)
            .bind(name)
            .bind(holder)
            .bind(now.to_string())
            .bind(until.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        Ok(taken.is_some())
    }

    async fn release_lease(&self, name: &str, holder: &str) -> StoreResult<()> {
        sqlx::query(RELEASE_LEASE)
            .bind(name)
            .bind(holder)
            .execute(&self.pool)
            .await
            .map_err(translate)?;
        Ok(())
    }
}
