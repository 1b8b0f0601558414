//! The owner-login port: OAuth clients, approvals, login states, single-use codes, grants and
//! tokens (hashes only), console sessions and rate counters. Single-use things are spent by a
//! keyed `UPDATE ... WHERE used_at IS NULL RETURNING` or `DELETE ... RETURNING`, so of two
//! units (or replicas) redeeming the same code exactly one wins; a redemption or a refresh
//! rotation and what it issues are one unit of work.

use capsid_core::ports::{
    AuditEntry, CodeRow, ConsoleSessionRow, LoginStateRow, NewGrant, NewToken, OAuthClientRow,
    Redemption, Rotation, StoreError, StoreResult, TokenKind, TokenRow,
};
use capsid_core::time::Timestamp;

use crate::conflict::conflict_or;
use crate::engine::in_unit;
use crate::engine::{Engine, TxResult, always, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::Stmt;

const CLIENTS: &str = "SELECT client_id, client_name, redirect_uris, secret_hash, auth_method, \
     created_at, expires_at FROM oauth_clients";
const INSERT_CLIENT: &str = "INSERT INTO oauth_clients (client_id, client_name, redirect_uris, \
     secret_hash, auth_method, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)";
macro_rules! state_columns {
    () => {
        "state_hash, purpose, payload, created_at, expires_at"
    };
}
const INSERT_STATE: &str = concat!(
    "INSERT INTO oauth_login_states (",
    state_columns!(),
    ") VALUES ($1, $2, $3, $4, $5)"
);
/// The live login state of a hash and purpose (`$1`, `$2`) at `$3`.
const STATE_KEY: &str = "FROM oauth_login_states WHERE state_hash = $1 AND purpose = $2 \
     AND expires_at > $3";
macro_rules! code_columns {
    () => {
        "code_hash, client_id, redirect_uri, code_challenge, resource, scope, login, user_id, \
         created_at, expires_at, used_at"
    };
}
const INSERT_CODE: &str = concat!(
    "INSERT INTO oauth_codes (",
    code_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
);
const CODE: &str = concat!(
    "SELECT ",
    code_columns!(),
    " FROM oauth_codes WHERE code_hash = $1"
);
const BUMP: &str = "INSERT INTO rate_counters (key, count, expires_at) VALUES ($1, 1, $3) \
     ON CONFLICT (key) DO UPDATE SET \
     count = CASE WHEN rate_counters.expires_at <= $2 THEN 1 ELSE rate_counters.count + 1 END, \
     expires_at = CASE WHEN rate_counters.expires_at <= $2 THEN excluded.expires_at \
     ELSE rate_counters.expires_at END RETURNING count";
const APPROVE: &str = "INSERT INTO oauth_approvals (tag, client_id, approved_at, expires_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (tag) DO UPDATE SET \
     approved_at = excluded.approved_at, expires_at = excluded.expires_at";
const APPROVAL: &str = "SELECT tag FROM oauth_approvals WHERE tag = $1 AND expires_at > $2";
const TOKEN: &str = "SELECT t.token_hash, t.kind, t.grant_id, g.client_id, g.login, g.user_id, \
     g.resource, g.scope, t.expires_at, g.expires_at AS grant_expires_at, t.used_at, \
     COALESCE(t.revoked_at, g.revoked_at) AS revoked_at \
     FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = $1";
const SPEND_CODE: &str = "UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 \
     AND used_at IS NULL RETURNING code_hash";
const INSERT_GRANT: &str = "INSERT INTO oauth_grants (grant_id, client_id, login, user_id, \
     resource, scope, code_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const INSERT_TOKEN: &str = "INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, \
     expires_at) VALUES ($1, $2, $3, $4, $5)";
const RENEW_CLIENT: &str =
    "UPDATE oauth_clients SET expires_at = $2 WHERE client_id = $1 AND expires_at < $2";
/// A live refresh token of a live grant, spent at `$2`.
const SPEND_REFRESH: &str = "UPDATE oauth_tokens SET used_at = $2 WHERE token_hash = $1 \
     AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $2 \
     AND grant_id IN (SELECT grant_id FROM oauth_grants WHERE revoked_at IS NULL AND expires_at > $2) \
     RETURNING grant_id";
const GRANT_CLIENT: &str = "SELECT client_id FROM oauth_grants WHERE grant_id = $1";
macro_rules! session_columns {
    () => {
        "session_hash, login, user_id, created_at, expires_at, ended_at"
    };
}
const INSERT_SESSION: &str = concat!(
    "INSERT INTO console_sessions (",
    session_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6)"
);
const SESSION: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM console_sessions WHERE session_hash = $1 AND ended_at IS NULL AND expires_at > $2"
);
const END_SESSION: &str = "UPDATE console_sessions SET ended_at = $2 WHERE session_hash = $1 \
     AND ended_at IS NULL AND expires_at > $2 RETURNING session_hash";
const END_SESSIONS: &str = "UPDATE console_sessions SET ended_at = $1 WHERE ended_at IS NULL \
     AND expires_at > $1 RETURNING session_hash";
/// Every token and grant revoked at `$1`; the grants still live then counted.
const REVOKE_ALL: [&str; 2] = [
    "UPDATE oauth_tokens SET revoked_at = $1 WHERE revoked_at IS NULL",
    "UPDATE oauth_grants SET revoked_at = $1 WHERE revoked_at IS NULL AND expires_at > $1 \
     RETURNING grant_id",
];
const REVOKE_REST: [&str; 2] = [
    "UPDATE oauth_grants SET revoked_at = $1 WHERE revoked_at IS NULL",
    "DELETE FROM oauth_approvals",
];
const PURGE: [&str; 7] = [
    "DELETE FROM oauth_login_states WHERE expires_at <= $1",
    "DELETE FROM rate_counters WHERE expires_at <= $1",
    "DELETE FROM oauth_approvals WHERE expires_at <= $1",
    "DELETE FROM oauth_clients WHERE expires_at <= $1",
    "DELETE FROM console_sessions WHERE expires_at <= $1 OR ended_at IS NOT NULL",
    "DELETE FROM oauth_grants WHERE expires_at <= $1",
    // A spent code is kept while a grant it issued lives, so its replay still revokes.
    "DELETE FROM oauth_codes WHERE expires_at <= $1 AND code_hash NOT IN \
     (SELECT code_hash FROM oauth_grants WHERE code_hash IS NOT NULL)",
];

/// Which grants a revocation reaches (`$1` is its key).
const OF_CODE: &str = "code_hash = $1";
const OF_TOKEN: &str = "grant_id IN (SELECT grant_id FROM oauth_tokens WHERE token_hash = $1)";
const ONE: &str = "grant_id = $1";

fn client(row: &Row) -> Result<OAuthClientRow, sqlx::Error> {
    let uris = row.text("redirect_uris")?;
    Ok(OAuthClientRow {
        client_id: row.text("client_id")?,
        client_name: row.opt_text("client_name")?,
        redirect_uris: serde_json::from_str(&uris)
            .map_err(|e| sqlx::Error::Decode(format!("redirect_uris: {e}").into()))?,
        secret_hash: row.opt_text("secret_hash")?,
        auth_method: row.text("auth_method")?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
    })
}

fn state(row: &Row) -> Result<LoginStateRow, sqlx::Error> {
    Ok(LoginStateRow {
        state_hash: row.text("state_hash")?,
        purpose: row.text("purpose")?,
        payload: row.text("payload")?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
    })
}

fn code(row: &Row) -> Result<CodeRow, sqlx::Error> {
    Ok(CodeRow {
        code_hash: row.text("code_hash")?,
        client_id: row.text("client_id")?,
        redirect_uri: row.text("redirect_uri")?,
        code_challenge: row.text("code_challenge")?,
        resource: row.text("resource")?,
        scope: row.text("scope")?,
        login: row.text("login")?,
        user_id: row.int("user_id")?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
        used_at: row.opt_time("used_at")?,
    })
}

fn token(row: &Row) -> Result<TokenRow, sqlx::Error> {
    Ok(TokenRow {
        token_hash: row.text("token_hash")?,
        kind: row.word("kind", TokenKind::parse)?,
        grant_id: row.text("grant_id")?,
        client_id: row.text("client_id")?,
        login: row.text("login")?,
        user_id: row.int("user_id")?,
        resource: row.text("resource")?,
        scope: row.text("scope")?,
        expires_at: row.time("expires_at")?,
        grant_expires_at: row.time("grant_expires_at")?,
        used_at: row.opt_time("used_at")?,
        revoked_at: row.opt_time("revoked_at")?,
    })
}

fn session(row: &Row) -> Result<ConsoleSessionRow, sqlx::Error> {
    Ok(ConsoleSessionRow {
        session_hash: row.text("session_hash")?,
        login: row.text("login")?,
        user_id: row.int("user_id")?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
        ended_at: row.opt_time("ended_at")?,
    })
}

/// Runs `stmt` alone in a unit of its own, its rows through `map`; a unique violation is a
/// `Conflict` saying `taken`.
async fn write<T: Send>(
    engine: &impl Engine,
    stmt: Stmt,
    taken: &str,
    map: fn(&Row) -> Result<T, sqlx::Error>,
) -> StoreResult<Vec<T>> {
    let stmt = &stmt;
    in_unit!(engine, always, |tx| async {
        let rows = tx
            .fetch_all(stmt.clone())
            .await
            .map_err(|e| conflict_or(e, |_| taken.to_owned()))?;
        Ok(crate::row::all(&rows, map)?)
    }
    .await)
}

/// Reads with `engine`; the first row, mapped.
async fn read_one<T>(
    engine: &impl Engine,
    stmt: Stmt,
    map: fn(&Row) -> Result<T, sqlx::Error>,
) -> StoreResult<Option<T>> {
    Ok(read_all(engine, stmt, map).await?.into_iter().next())
}

fn nothing(_: &Row) -> Result<(), sqlx::Error> {
    Ok(())
}

/// Revokes the grants `which` names (keyed on `key`) and their tokens, at `now`.
async fn revoke(tx: &mut dyn Exec, which: &str, key: &str, now: Timestamp) -> TxResult<()> {
    let grants = format!("SELECT grant_id FROM oauth_grants WHERE {which}");
    for table in ["oauth_tokens", "oauth_grants"] {
        let sql = format!(
            "UPDATE {table} SET revoked_at = $2 WHERE revoked_at IS NULL AND grant_id IN ({grants})"
        );
        tx.execute(Stmt::new(sql).bind(key).bind(now)).await?;
    }
    Ok(())
}

/// Issues `tokens` under a grant and keeps its client registered until `client_until`.
async fn issue(
    tx: &mut dyn Exec,
    grant_id: &str,
    client_id: &str,
    tokens: &[NewToken],
    now: Timestamp,
    client_until: Timestamp,
) -> TxResult<()> {
    for t in tokens {
        let stmt = Stmt::new(INSERT_TOKEN)
            .bind(&t.token_hash)
            .bind(grant_id)
            .bind(t.kind.name())
            .bind(now)
            .bind(t.expires_at);
        tx.execute(stmt)
            .await
            .map_err(|e| conflict_or(e, |m| format!("token collides ({m})")))?;
    }
    let renew = Stmt::new(RENEW_CLIENT).bind(client_id).bind(client_until);
    tx.execute(renew).await?;
    Ok(())
}

/// `OAuthStore::insert_client`.
pub async fn insert_client(engine: &impl Engine, c: OAuthClientRow) -> StoreResult<()> {
    let uris =
        serde_json::to_string(&c.redirect_uris).map_err(|e| StoreError::Backend(e.to_string()))?;
    let stmt = Stmt::new(INSERT_CLIENT)
        .bind(&c.client_id)
        .bind(c.client_name.as_ref())
        .bind(uris)
        .bind(c.secret_hash.as_ref())
        .bind(&c.auth_method)
        .bind(c.created_at)
        .bind(c.expires_at);
    let taken = format!("client {} exists", c.client_id);
    write(engine, stmt, &taken, nothing).await.map(drop)
}

/// `OAuthStore::client`: a registered client not expired at `now`.
pub async fn client_of(
    engine: &impl Engine,
    client_id: &str,
    now: Timestamp,
) -> StoreResult<Option<OAuthClientRow>> {
    let sql = format!("{CLIENTS} WHERE client_id = $1 AND expires_at > $2");
    read_one(engine, Stmt::new(sql).bind(client_id).bind(now), client).await
}

/// `OAuthStore::bump_counter`: the count in the window after this call.
pub async fn bump_counter(
    engine: &impl Engine,
    key: &str,
    now: Timestamp,
    expires_at: Timestamp,
) -> StoreResult<u64> {
    let stmt = Stmt::new(BUMP).bind(key).bind(now).bind(expires_at);
    let counts = write(engine, stmt, "rate counter exists", |r| r.count("count")).await?;
    Ok(counts.first().copied().unwrap_or(0))
}

/// `OAuthStore::put_login_state`.
pub async fn put_login_state(engine: &impl Engine, s: LoginStateRow) -> StoreResult<()> {
    let stmt = Stmt::new(INSERT_STATE)
        .bind(&s.state_hash)
        .bind(&s.purpose)
        .bind(&s.payload)
        .bind(s.created_at)
        .bind(s.expires_at);
    write(engine, stmt, "login state exists", nothing)
        .await
        .map(drop)
}

fn state_stmt(sql: String, state_hash: &str, purpose: &str, now: Timestamp) -> Stmt {
    Stmt::new(sql).bind(state_hash).bind(purpose).bind(now)
}

/// `OAuthStore::login_state`: a live state, left in place.
pub async fn login_state(
    engine: &impl Engine,
    state_hash: &str,
    purpose: &str,
    now: Timestamp,
) -> StoreResult<Option<LoginStateRow>> {
    let sql = format!("SELECT {} {STATE_KEY}", state_columns!());
    read_one(engine, state_stmt(sql, state_hash, purpose, now), state).await
}

/// `OAuthStore::take_login_state`: a live state, deleted as it is read (once).
pub async fn take_login_state(
    engine: &impl Engine,
    state_hash: &str,
    purpose: &str,
    now: Timestamp,
) -> StoreResult<Option<LoginStateRow>> {
    let sql = format!("DELETE {STATE_KEY} RETURNING {}", state_columns!());
    let stmt = state_stmt(sql, state_hash, purpose, now);
    Ok(write(engine, stmt, "login state exists", state)
        .await?
        .pop())
}

/// `OAuthStore::approve_client`.
pub async fn approve_client(
    engine: &impl Engine,
    tag: &str,
    client_id: &str,
    at: Timestamp,
    expires_at: Timestamp,
) -> StoreResult<()> {
    let stmt = Stmt::new(APPROVE)
        .bind(tag)
        .bind(client_id)
        .bind(at)
        .bind(expires_at);
    write(engine, stmt, "approval exists", nothing)
        .await
        .map(drop)
}

/// `OAuthStore::approval`: whether `tag` is approved and not expired at `now`.
pub async fn approval(engine: &impl Engine, tag: &str, now: Timestamp) -> StoreResult<bool> {
    let stmt = Stmt::new(APPROVAL).bind(tag).bind(now);
    Ok(read_one(engine, stmt, nothing).await?.is_some())
}

/// `OAuthStore::insert_code`.
pub async fn insert_code(engine: &impl Engine, c: CodeRow) -> StoreResult<()> {
    let stmt = Stmt::new(INSERT_CODE)
        .bind(&c.code_hash)
        .bind(&c.client_id)
        .bind(&c.redirect_uri)
        .bind(&c.code_challenge)
        .bind(&c.resource)
        .bind(&c.scope)
        .bind(&c.login)
        .bind(c.user_id)
        .bind(c.created_at)
        .bind(c.expires_at)
        .bind(c.used_at);
    write(engine, stmt, "code exists", nothing).await.map(drop)
}

/// `OAuthStore::code`.
pub async fn code_of(engine: &impl Engine, code_hash: &str) -> StoreResult<Option<CodeRow>> {
    read_one(engine, Stmt::new(CODE).bind(code_hash), code).await
}

/// `OAuthStore::redeem_code`: the code spent, its grant and tokens issued; a code spent
/// already revokes what it issued (`Replayed`).
pub async fn redeem_code(
    engine: &impl Engine,
    code_hash: &str,
    now: Timestamp,
    grant: NewGrant,
    tokens: Vec<NewToken>,
    client_expires_at: Timestamp,
) -> StoreResult<Redemption> {
    let (g, tokens) = (&grant, &tokens);
    in_unit!(engine, always, |tx| async {
        let spend = Stmt::new(SPEND_CODE).bind(code_hash).bind(now);
        if tx.fetch_optional(spend).await?.is_none() {
            revoke(&mut *tx, OF_CODE, code_hash, now).await?;
            return Ok(Redemption::Replayed);
        }
        let stmt = Stmt::new(INSERT_GRANT)
            .bind(&g.grant_id)
            .bind(&g.client_id)
            .bind(&g.login)
            .bind(g.user_id)
            .bind(&g.resource)
            .bind(&g.scope)
            .bind(g.code_hash.as_ref())
            .bind(g.created_at)
            .bind(g.expires_at);
        tx.execute(stmt)
            .await
            .map_err(|e| conflict_or(e, |_| "grant exists".to_owned()))?;
        let (grant_id, client_id) = (&g.grant_id, &g.client_id);
        issue(
            &mut *tx,
            grant_id,
            client_id,
            tokens,
            now,
            client_expires_at,
        )
        .await?;
        Ok(Redemption::Issued)
    }
    .await)
}

/// `OAuthStore::token`: a token with its grant's fields.
pub async fn token_of(engine: &impl Engine, token_hash: &str) -> StoreResult<Option<TokenRow>> {
    read_one(engine, Stmt::new(TOKEN).bind(token_hash), token).await
}

/// `OAuthStore::rotate_refresh`: a live refresh token spent and `tokens` issued under its
/// grant; a token spent, revoked or expired already revokes its grant (`Reused`).
pub async fn rotate_refresh(
    engine: &impl Engine,
    token_hash: &str,
    now: Timestamp,
    tokens: Vec<NewToken>,
    client_expires_at: Timestamp,
) -> StoreResult<Rotation> {
    let tokens = &tokens;
    in_unit!(engine, always, |tx| async {
        let spend = Stmt::new(SPEND_REFRESH).bind(token_hash).bind(now);
        let Some(spent) = tx.fetch_optional(spend).await? else {
            revoke(&mut *tx, OF_TOKEN, token_hash, now).await?;
            return Ok(Rotation::Reused);
        };
        let grant_id = spent.text("grant_id")?;
        let client = tx
            .fetch_optional(Stmt::new(GRANT_CLIENT).bind(&grant_id))
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        let client_id = client.text("client_id")?;
        issue(
            &mut *tx,
            &grant_id,
            &client_id,
            tokens,
            now,
            client_expires_at,
        )
        .await?;
        Ok(Rotation::Rotated)
    }
    .await)
}

/// `OAuthStore::revoke_grant`: the grant and its tokens.
pub async fn revoke_grant(engine: &impl Engine, grant_id: &str, now: Timestamp) -> StoreResult<()> {
    in_unit!(engine, always, |tx| revoke(&mut *tx, ONE, grant_id, now)
        .await)
}

/// `OAuthStore::insert_console_session`.
pub async fn insert_console_session(engine: &impl Engine, s: ConsoleSessionRow) -> StoreResult<()> {
    let stmt = Stmt::new(INSERT_SESSION)
        .bind(&s.session_hash)
        .bind(&s.login)
        .bind(s.user_id)
        .bind(s.created_at)
        .bind(s.expires_at)
        .bind(s.ended_at);
    write(engine, stmt, "session exists", nothing)
        .await
        .map(drop)
}

/// `OAuthStore::console_session`: a session neither ended nor expired at `now`.
pub async fn console_session(
    engine: &impl Engine,
    session_hash: &str,
    now: Timestamp,
) -> StoreResult<Option<ConsoleSessionRow>> {
    read_one(
        engine,
        Stmt::new(SESSION).bind(session_hash).bind(now),
        session,
    )
    .await
}

/// `OAuthStore::end_console_session`: whether a live session ended.
pub async fn end_console_session(
    engine: &impl Engine,
    session_hash: &str,
    now: Timestamp,
) -> StoreResult<bool> {
    let stmt = Stmt::new(END_SESSION).bind(session_hash).bind(now);
    Ok(!write(engine, stmt, "session exists", nothing)
        .await?
        .is_empty())
}

/// `OAuthStore::end_console_sessions`: how many live sessions ended.
pub async fn end_console_sessions(engine: &impl Engine, now: Timestamp) -> StoreResult<u64> {
    let ended = write(
        engine,
        Stmt::new(END_SESSIONS).bind(now),
        "session exists",
        nothing,
    )
    .await?;
    Ok(ended.len() as u64)
}

/// `OAuthStore::revoke_all_grants`: every grant and token revoked, every approval forgotten,
/// audited (with the count of grants that were live) in the same unit.
pub async fn revoke_all_grants(
    engine: &impl Engine,
    now: Timestamp,
    audit_of: &(dyn Fn(u64) -> AuditEntry + Send + Sync),
) -> StoreResult<u64> {
    in_unit!(engine, always, |tx| async {
        let [tokens, live] = REVOKE_ALL;
        tx.execute(Stmt::new(tokens).bind(now)).await?;
        let count = tx.fetch_all(Stmt::new(live).bind(now)).await?.len() as u64;
        let [grants, approvals] = REVOKE_REST;
        tx.execute(Stmt::new(grants).bind(now)).await?;
        tx.execute(Stmt::new(approvals)).await?;
        crate::audit::insert(&mut *tx, &audit_of(count)).await?;
        Ok(count)
    }
    .await)
}

/// `OAuthStore::purge_expired_oauth`: how many rows went.
pub async fn purge_expired_oauth(engine: &impl Engine, now: Timestamp) -> StoreResult<u64> {
    in_unit!(engine, always, |tx| async {
        let mut total = 0;
        for sql in PURGE {
            total += tx.execute(Stmt::new(sql).bind(now)).await?;
        }
        Ok(total)
    }
    .await)
}
