//! The owner-login port: OAuth clients, approvals, login states, single-use codes, grants and
//! tokens (hashes only), console sessions and rate counters. Single-use things are spent by a
//! keyed `UPDATE ... WHERE used_at IS NULL RETURNING` or `DELETE ... RETURNING`; a code
//! redemption or a refresh rotation is one `BEGIN IMMEDIATE` transaction on the writer.

use async_trait::async_trait;
use capsid_core::ports::{
    AuditEntry, CodeRow, ConsoleSessionRow, LoginStateRow, NewGrant, NewToken, OAuthClientRow,
    OAuthStore, Redemption, Rotation, StoreError, StoreResult, TokenKind, TokenRow,
};
use capsid_core::time::Timestamp;
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{Error, Row};

use crate::error::{DbResult, conflict_or_backend};
use crate::rows::insert_audit;
use crate::store::{SqliteStore, commit};

macro_rules! client_cols {
    () => {
        "client_id, client_name, redirect_uris, secret_hash, auth_method, created_at, expires_at"
    };
}
macro_rules! state_cols {
    () => {
        "state_hash, purpose, payload, created_at, expires_at"
    };
}
macro_rules! code_cols {
    () => {
        "code_hash, client_id, redirect_uri, code_challenge, resource, scope, login, user_id, created_at, expires_at, used_at"
    };
}
macro_rules! session_cols {
    () => {
        "session_hash, login, user_id, created_at, expires_at, ended_at"
    };
}

fn ts(row: &SqliteRow, col: &str) -> Result<Timestamp, Error> {
    let text: String = row.try_get(col)?;
    Timestamp::parse(&text)
        .ok_or_else(|| Error::Decode(format!("{col}: bad timestamp {text:?}").into()))
}

fn ts_opt(row: &SqliteRow, col: &str) -> Result<Option<Timestamp>, Error> {
    let text: Option<String> = row.try_get(col)?;
    text.map(|t| {
        Timestamp::parse(&t)
            .ok_or_else(|| Error::Decode(format!("{col}: bad timestamp {t:?}").into()))
    })
    .transpose()
}

fn client(row: &SqliteRow) -> Result<OAuthClientRow, Error> {
    let uris: String = row.try_get("redirect_uris")?;
    Ok(OAuthClientRow {
        client_id: row.try_get("client_id")?,
        client_name: row.try_get("client_name")?,
        redirect_uris: serde_json::from_str(&uris)
            .map_err(|e| Error::Decode(format!("redirect_uris: {e}").into()))?,
        secret_hash: row.try_get("secret_hash")?,
        auth_method: row.try_get("auth_method")?,
        created_at: ts(row, "created_at")?,
        expires_at: ts(row, "expires_at")?,
    })
}

fn state(row: &SqliteRow) -> Result<LoginStateRow, Error> {
    Ok(LoginStateRow {
        state_hash: row.try_get("state_hash")?,
        purpose: row.try_get("purpose")?,
        payload: row.try_get("payload")?,
        created_at: ts(row, "created_at")?,
        expires_at: ts(row, "expires_at")?,
    })
}

fn code(row: &SqliteRow) -> Result<CodeRow, Error> {
    Ok(CodeRow {
        code_hash: row.try_get("code_hash")?,
        client_id: row.try_get("client_id")?,
        redirect_uri: row.try_get("redirect_uri")?,
        code_challenge: row.try_get("code_challenge")?,
        resource: row.try_get("resource")?,
        scope: row.try_get("scope")?,
        login: row.try_get("login")?,
        user_id: row.try_get("user_id")?,
        created_at: ts(row, "created_at")?,
        expires_at: ts(row, "expires_at")?,
        used_at: ts_opt(row, "used_at")?,
    })
}

fn token(row: &SqliteRow) -> Result<TokenRow, Error> {
    let kind: String = row.try_get("kind")?;
    Ok(TokenRow {
        token_hash: row.try_get("token_hash")?,
        kind: TokenKind::parse(&kind)
            .ok_or_else(|| Error::Decode(format!("kind: {kind:?}").into()))?,
        grant_id: row.try_get("grant_id")?,
        client_id: row.try_get("client_id")?,
        login: row.try_get("login")?,
        user_id: row.try_get("user_id")?,
        resource: row.try_get("resource")?,
        scope: row.try_get("scope")?,
        expires_at: ts(row, "expires_at")?,
        grant_expires_at: ts(row, "grant_expires_at")?,
        used_at: ts_opt(row, "used_at")?,
        revoked_at: ts_opt(row, "revoked_at")?,
    })
}

fn session(row: &SqliteRow) -> Result<ConsoleSessionRow, Error> {
    Ok(ConsoleSessionRow {
        session_hash: row.try_get("session_hash")?,
        login: row.try_get("login")?,
        user_id: row.try_get("user_id")?,
        created_at: ts(row, "created_at")?,
        expires_at: ts(row, "expires_at")?,
        ended_at: ts_opt(row, "ended_at")?,
    })
}

async fn insert_tokens(
    conn: &mut SqliteConnection,
    grant_id: &str,
    tokens: &[NewToken],
    now: Timestamp,
) -> StoreResult<()> {
    for t in tokens {
        sqlx::query(
            "INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .bind(&t.token_hash)
        .bind(grant_id)
        .bind(t.kind.name())
        .bind(now.to_string())
        .bind(t.expires_at.to_string())
        .execute(&mut *conn)
        .await
        .map_err(|e| conflict_or_backend(e, |m| format!("token collides ({m})")))?;
    }
    Ok(())
}

async fn renew_client(
    conn: &mut SqliteConnection,
    client_id: &str,
    until: Timestamp,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE oauth_clients SET expires_at = ?2 WHERE client_id = ?1 AND expires_at < ?2",
    )
    .bind(client_id)
    .bind(until.to_string())
    .execute(conn)
    .await
    .db()?;
    Ok(())
}

async fn revoke_grants(
    conn: &mut SqliteConnection,
    where_sql: &'static str,
    key: &str,
    now: Timestamp,
) -> StoreResult<()> {
    let grants = format!("SELECT grant_id FROM oauth_grants WHERE {where_sql}");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE oauth_tokens SET revoked_at = ?2 WHERE revoked_at IS NULL AND grant_id IN ({grants})"
    )))
    .bind(key)
    .bind(now.to_string())
    .execute(&mut *conn)
    .await
    .db()?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE oauth_grants SET revoked_at = ?2 WHERE revoked_at IS NULL AND grant_id IN ({grants})"
    )))
    .bind(key)
    .bind(now.to_string())
    .execute(&mut *conn)
    .await
    .db()?;
    Ok(())
}

#[async_trait]
impl OAuthStore for SqliteStore {
    async fn insert_client(&self, c: OAuthClientRow) -> StoreResult<()> {
        let uris = serde_json::to_string(&c.redirect_uris)
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        sqlx::query(concat!(
            "INSERT INTO oauth_clients (",
            client_cols!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        ))
        .bind(&c.client_id)
        .bind(&c.client_name)
        .bind(uris)
        .bind(&c.secret_hash)
        .bind(&c.auth_method)
        .bind(c.created_at.to_string())
        .bind(c.expires_at.to_string())
        .execute(self.writer())
        .await
        .map_err(|e| conflict_or_backend(e, |_| format!("client {} exists", c.client_id)))?;
        Ok(())
    }

    async fn client(&self, client_id: &str, now: Timestamp) -> StoreResult<Option<OAuthClientRow>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            client_cols!(),
            " FROM oauth_clients WHERE client_id = ?1 AND expires_at > ?2"
        ))
        .bind(client_id)
        .bind(now.to_string())
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(client).transpose().db()
    }

    async fn bump_counter(
        &self,
        key: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> StoreResult<u64> {
        let count: i64 = sqlx::query_scalar(
            "INSERT INTO rate_counters (key, count, expires_at) VALUES (?1, 1, ?3) \
             ON CONFLICT (key) DO UPDATE SET \
             count = CASE WHEN rate_counters.expires_at <= ?2 THEN 1 ELSE rate_counters.count + 1 END, \
             expires_at = CASE WHEN rate_counters.expires_at <= ?2 THEN excluded.expires_at ELSE rate_counters.expires_at END \
             RETURNING count",
        )
        .bind(key)
        .bind(now.to_string())
        .bind(expires_at.to_string())
        .fetch_one(self.writer())
        .await
        .db()?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn put_login_state(&self, s: LoginStateRow) -> StoreResult<()> {
        sqlx::query(concat!(
            "INSERT INTO oauth_login_states (",
            state_cols!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5)"
        ))
        .bind(&s.state_hash)
        .bind(&s.purpose)
        .bind(&s.payload)
        .bind(s.created_at.to_string())
        .bind(s.expires_at.to_string())
        .execute(self.writer())
        .await
        .map_err(|e| conflict_or_backend(e, |_| "login state exists".into()))?;
        Ok(())
    }

    async fn login_state(
        &self,
        state_hash: &str,
        purpose: &str,
        now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            state_cols!(),
            " FROM oauth_login_states WHERE state_hash = ?1 AND purpose = ?2 AND expires_at > ?3"
        ))
        .bind(state_hash)
        .bind(purpose)
        .bind(now.to_string())
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(state).transpose().db()
    }

    async fn take_login_state(
        &self,
        state_hash: &str,
        purpose: &str,
        now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>> {
        let row = sqlx::query(concat!("DELETE FROM oauth_login_states WHERE state_hash = ?1 AND purpose = ?2 AND expires_at > ?3 RETURNING ", state_cols!()))
        .bind(state_hash)
        .bind(purpose)
        .bind(now.to_string())
        .fetch_optional(self.writer())
        .await
        .db()?;
        row.as_ref().map(state).transpose().db()
    }

    async fn approve_client(
        &self,
        tag: &str,
        client_id: &str,
        at: Timestamp,
        expires_at: Timestamp,
    ) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO oauth_approvals (tag, client_id, approved_at, expires_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (tag) DO UPDATE SET approved_at = excluded.approved_at, expires_at = excluded.expires_at",
        )
        .bind(tag)
        .bind(client_id)
        .bind(at.to_string())
        .bind(expires_at.to_string())
        .execute(self.writer())
        .await
        .db()?;
        Ok(())
    }

    async fn approval(&self, tag: &str, now: Timestamp) -> StoreResult<bool> {
        let found: Option<String> = sqlx::query_scalar(
            "SELECT tag FROM oauth_approvals WHERE tag = ?1 AND expires_at > ?2",
        )
        .bind(tag)
        .bind(now.to_string())
        .fetch_optional(self.reader())
        .await
        .db()?;
        Ok(found.is_some())
    }

    async fn insert_code(&self, c: CodeRow) -> StoreResult<()> {
        sqlx::query(concat!(
            "INSERT INTO oauth_codes (",
            code_cols!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        ))
        .bind(&c.code_hash)
        .bind(&c.client_id)
        .bind(&c.redirect_uri)
        .bind(&c.code_challenge)
        .bind(&c.resource)
        .bind(&c.scope)
        .bind(&c.login)
        .bind(c.user_id)
        .bind(c.created_at.to_string())
        .bind(c.expires_at.to_string())
        .bind(c.used_at.map(|t| t.to_string()))
        .execute(self.writer())
        .await
        .map_err(|e| conflict_or_backend(e, |_| "code exists".into()))?;
        Ok(())
    }

    async fn code(&self, code_hash: &str) -> StoreResult<Option<CodeRow>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            code_cols!(),
            " FROM oauth_codes WHERE code_hash = ?1"
        ))
        .bind(code_hash)
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(code).transpose().db()
    }

    async fn redeem_code(
        &self,
        code_hash: &str,
        now: Timestamp,
        grant: NewGrant,
        tokens: Vec<NewToken>,
        client_expires_at: Timestamp,
    ) -> StoreResult<Redemption> {
        let mut tx = self.begin_write().await?;
        let spent: Option<String> = sqlx::query_scalar(
            "UPDATE oauth_codes SET used_at = ?2 WHERE code_hash = ?1 AND used_at IS NULL RETURNING code_hash",
        )
        .bind(code_hash)
        .bind(now.to_string())
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        if spent.is_none() {
            revoke_grants(&mut tx, "code_hash = ?1", code_hash, now).await?;
            commit(tx).await?;
            return Ok(Redemption::Replayed);
        }
        sqlx::query(
            "INSERT INTO oauth_grants (grant_id, client_id, login, user_id, resource, scope, code_hash, created_at, expires_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .bind(&grant.grant_id)
        .bind(&grant.client_id)
        .bind(&grant.login)
        .bind(grant.user_id)
        .bind(&grant.resource)
        .bind(&grant.scope)
        .bind(&grant.code_hash)
        .bind(grant.created_at.to_string())
        .bind(grant.expires_at.to_string())
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict_or_backend(e, |_| "grant exists".into()))?;
        insert_tokens(&mut tx, &grant.grant_id, &tokens, now).await?;
        renew_client(&mut tx, &grant.client_id, client_expires_at).await?;
        commit(tx).await?;
        Ok(Redemption::Issued)
    }

    async fn token(&self, token_hash: &str) -> StoreResult<Option<TokenRow>> {
        let row = sqlx::query(
            "SELECT t.token_hash, t.kind, t.grant_id, g.client_id, g.login, g.user_id, g.resource, g.scope, \
             t.expires_at, g.expires_at AS grant_expires_at, t.used_at, COALESCE(t.revoked_at, g.revoked_at) AS revoked_at \
             FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ?1",
        )
        .bind(token_hash)
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(token).transpose().db()
    }

    async fn rotate_refresh(
        &self,
        token_hash: &str,
        now: Timestamp,
        tokens: Vec<NewToken>,
        client_expires_at: Timestamp,
    ) -> StoreResult<Rotation> {
        let mut tx = self.begin_write().await?;
        let spent: Option<String> = sqlx::query_scalar(
            "UPDATE oauth_tokens SET used_at = ?2 WHERE token_hash = ?1 AND kind = 'refresh' \
             AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?2 \
             AND grant_id IN (SELECT grant_id FROM oauth_grants WHERE revoked_at IS NULL AND expires_at > ?2) \
             RETURNING grant_id",
        )
        .bind(token_hash)
        .bind(now.to_string())
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        let Some(grant_id) = spent else {
            revoke_grants(
                &mut tx,
                "grant_id IN (SELECT grant_id FROM oauth_tokens WHERE token_hash = ?1)",
                token_hash,
                now,
            )
            .await?;
            commit(tx).await?;
            return Ok(Rotation::Reused);
        };
        insert_tokens(&mut tx, &grant_id, &tokens, now).await?;
        let client_id: String =
            sqlx::query_scalar("SELECT client_id FROM oauth_grants WHERE grant_id = ?1")
                .bind(&grant_id)
                .fetch_one(&mut *tx)
                .await
                .db()?;
        renew_client(&mut tx, &client_id, client_expires_at).await?;
        commit(tx).await?;
        Ok(Rotation::Rotated)
    }

    async fn revoke_grant(&self, grant_id: &str, now: Timestamp) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        revoke_grants(&mut tx, "grant_id = ?1", grant_id, now).await?;
        commit(tx).await
    }

    async fn insert_console_session(&self, s: ConsoleSessionRow) -> StoreResult<()> {
        sqlx::query(concat!(
            "INSERT INTO console_sessions (",
            session_cols!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        ))
        .bind(&s.session_hash)
        .bind(&s.login)
        .bind(s.user_id)
        .bind(s.created_at.to_string())
        .bind(s.expires_at.to_string())
        .bind(s.ended_at.map(|t| t.to_string()))
        .execute(self.writer())
        .await
        .map_err(|e| conflict_or_backend(e, |_| "session exists".into()))?;
        Ok(())
    }

    async fn console_session(
        &self,
        session_hash: &str,
        now: Timestamp,
    ) -> StoreResult<Option<ConsoleSessionRow>> {
        let row = sqlx::query(concat!("SELECT ", session_cols!(), " FROM console_sessions WHERE session_hash = ?1 AND ended_at IS NULL AND expires_at > ?2"))
        .bind(session_hash)
        .bind(now.to_string())
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(session).transpose().db()
    }

    async fn end_console_session(&self, session_hash: &str, now: Timestamp) -> StoreResult<bool> {
        let ended: Option<String> = sqlx::query_scalar(
            "UPDATE console_sessions SET ended_at = ?2 WHERE session_hash = ?1 AND ended_at IS NULL AND expires_at > ?2 RETURNING session_hash",
        )
        .bind(session_hash)
        .bind(now.to_string())
        .fetch_optional(self.writer())
        .await
        .db()?;
        Ok(ended.is_some())
    }

    async fn end_console_sessions(&self, now: Timestamp) -> StoreResult<u64> {
        let ended: Vec<String> = sqlx::query_scalar(
            "UPDATE console_sessions SET ended_at = ?1 WHERE ended_at IS NULL AND expires_at > ?1 RETURNING session_hash",
        )
        .bind(now.to_string())
        .fetch_all(self.writer())
        .await
        .db()?;
        Ok(ended.len() as u64)
    }

    async fn revoke_all_grants(
        &self,
        now: Timestamp,
        audit: &(dyn Fn(u64) -> AuditEntry + Send + Sync),
    ) -> StoreResult<u64> {
        let now = now.to_string();
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE oauth_tokens SET revoked_at = ?1 WHERE revoked_at IS NULL")
            .bind(&now)
            .execute(&mut *tx)
            .await
            .db()?;
        let revoked: Vec<String> = sqlx::query_scalar(
            "UPDATE oauth_grants SET revoked_at = ?1 WHERE revoked_at IS NULL AND expires_at > ?1 RETURNING grant_id",
        )
        .bind(&now)
        .fetch_all(&mut *tx)
        .await
        .db()?;
        sqlx::query("UPDATE oauth_grants SET revoked_at = ?1 WHERE revoked_at IS NULL")
            .bind(&now)
            .execute(&mut *tx)
            .await
            .db()?;
        sqlx::query("DELETE FROM oauth_approvals")
            .execute(&mut *tx)
            .await
            .db()?;
        let count = revoked.len() as u64;
        insert_audit(&mut tx, &audit(count)).await.db()?;
        commit(tx).await?;
        Ok(count)
    }

    async fn purge_expired_oauth(&self, now: Timestamp) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let mut total = 0u64;
        for sql in [
            "DELETE FROM oauth_login_states WHERE expires_at <= ?1",
            "DELETE FROM rate_counters WHERE expires_at <= ?1",
            "DELETE FROM oauth_approvals WHERE expires_at <= ?1",
            "DELETE FROM oauth_clients WHERE expires_at <= ?1",
            "DELETE FROM console_sessions WHERE expires_at <= ?1 OR ended_at IS NOT NULL",
            "DELETE FROM oauth_grants WHERE expires_at <= ?1",
            // A spent code is kept while a grant it issued lives, so its replay still revokes.
            "DELETE FROM oauth_codes WHERE expires_at <= ?1 AND code_hash NOT IN \
             (SELECT code_hash FROM oauth_grants WHERE code_hash IS NOT NULL)",
        ] {
            total += sqlx::query(sql)
                .bind(now.to_string())
                .execute(&mut *tx)
                .await
                .db()?
                .rows_affected();
        }
        commit(tx).await?;
        Ok(total)
    }
}
