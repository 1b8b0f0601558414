//! Settings with expiry and compare-and-set, the replay cache (`claim_nonce`), and the leader
//! lease. Expiry is judged against the `now` the caller passes: a value whose `expires_at` is
//! at or before `now` is absent, and a lease whose `expires_at` is at or before `now` is free.

use async_trait::async_trait;
use capsid_core::ports::{
    AuditEntry, Expect, LeaderLease, SettingChange, SettingsStore, StoreResult,
};
use capsid_core::time::Timestamp;
use sqlx::sqlite::SqliteConnection;

use crate::error::DbResult;
use crate::rows::insert_audit;
use crate::store::{SqliteStore, commit};

const LIVE_SETTING_SQL: &str =
    "SELECT value FROM settings WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)";

const PUT_SETTING_SQL: &str = "INSERT INTO settings (key, value, expires_at) VALUES (?, ?, ?) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at";

async fn live_setting(
    conn: &mut SqliteConnection,
    key: &str,
    now: Timestamp,
) -> StoreResult<Option<String>> {
    sqlx::query_scalar(LIVE_SETTING_SQL)
        .bind(key)
        .bind(now.to_string())
        .fetch_optional(conn)
        .await
        .db()
}

async fn put_on(
    conn: &mut SqliteConnection,
    key: &str,
    value: &str,
    expires_at: Option<Timestamp>,
) -> StoreResult<()> {
    sqlx::query(PUT_SETTING_SQL)
        .bind(key)
        .bind(value)
        .bind(expires_at.map(|t| t.to_string()))
        .execute(conn)
        .await
        .db()?;
    Ok(())
}

async fn delete_on(conn: &mut SqliteConnection, key: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM settings WHERE key = ?")
        .bind(key)
        .execute(conn)
        .await
        .db()?;
    Ok(())
}

#[async_trait]
impl SettingsStore for SqliteStore {
    async fn setting(&self, key: &str, now: Timestamp) -> StoreResult<Option<String>> {
        let mut conn = self.reader().acquire().await.db()?;
        live_setting(&mut conn, key, now).await
    }

    async fn put_setting(
        &self,
        key: &str,
        value: &str,
        expires_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        let mut conn = self.writer().acquire().await.db()?;
        put_on(&mut conn, key, value, expires_at).await
    }

    async fn delete_setting(&self, key: &str) -> StoreResult<()> {
        let mut conn = self.writer().acquire().await.db()?;
        delete_on(&mut conn, key).await
    }

    async fn compare_and_set_setting(
        &self,
        key: &str,
        expected: Option<&str>,
        new: Option<&str>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let live = live_setting(&mut tx, key, now).await?;
        if live.as_deref() != expected {
            return Ok(false);
        }
        match new {
            Some(value) => put_on(&mut tx, key, value, expires_at).await?,
            None => delete_on(&mut tx, key).await?,
        }
        commit(tx).await?;
        Ok(true)
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
        let mut tx = self.begin_write().await?;
        for change in changes {
            if let Expect::Value(expected) = &change.expected
                && live_setting(&mut tx, &change.key, now).await? != *expected
            {
                return Ok(false);
            }
            match &change.value {
                Some(value) => put_on(&mut tx, &change.key, value, change.expires_at).await?,
                None => delete_on(&mut tx, &change.key).await?,
            }
        }
        for audit in audits {
            insert_audit(&mut tx, audit).await.db()?;
        }
        commit(tx).await?;
        Ok(true)
    }

    async fn claim_nonce(&self, scope: &str, jti: &str, at: Timestamp) -> StoreResult<bool> {
        let claimed: Option<String> = sqlx::query_scalar(
            "INSERT INTO improve_jti (scope, jti, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING jti",
        )
        .bind(scope)
        .bind(jti)
        .bind(at.to_string())
        .fetch_optional(self.writer())
        .await
        .db()?;
        Ok(claimed.is_some())
    }
}

#[async_trait]
impl LeaderLease for SqliteStore {
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        // One statement: insert when absent; otherwise take over only if ours or expired.
        let held: Option<String> = sqlx::query_scalar(
            "INSERT INTO leader_leases (name, holder, expires_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
             WHERE leader_leases.holder = excluded.holder OR leader_leases.expires_at <= ?4 \
             RETURNING holder",
        )
        .bind(name)
        .bind(holder)
        .bind(until.to_string())
        .bind(now.to_string())
        .fetch_optional(self.writer())
        .await
        .db()?;
        Ok(held.is_some())
    }

    async fn release_lease(&self, name: &str, holder: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM leader_leases WHERE name = ? AND holder = ?")
            .bind(name)
            .bind(holder)
            .execute(self.writer())
            .await
            .db()?;
        Ok(())
    }
}
