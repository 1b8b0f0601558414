//! The owner-login port: registered OAuth clients, approvals, GitHub login states, single-use
//! authorization codes, grants with their access and refresh tokens, console sessions, and
//! the rate-limit counters. Codes, tokens, states and sessions are stored only as SHA-256
//! hashes. Every single-use thing is spent by a keyed conditional update (`... WHERE used_at
//! IS NULL RETURNING`, `DELETE ... RETURNING`), so of two racing redemptions exactly one wins.

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::time::Timestamp;

/// A registered client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthClientRow {
    /// The client id (random, public).
    pub client_id: String,
    /// Its name, if it gave one.
    pub client_name: Option<String>,
    /// Its redirect URIs, exactly as registered.
    pub redirect_uris: Vec<String>,
    /// SHA-256 of its secret, for confidential clients.
    pub secret_hash: Option<String>,
    /// `none`, `client_secret_post` or `client_secret_basic`.
    pub auth_method: String,
    /// When it registered.
    pub created_at: Timestamp,
    /// When it expires unless used.
    pub expires_at: Timestamp,
}

/// A GitHub login round trip in flight, keyed by the hash of its `state`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginStateRow {
    /// SHA-256 of the state.
    pub state_hash: String,
    /// `authorize` or `console`.
    pub purpose: String,
    /// What to resume (the pending authorization, or the console's return path), as JSON.
    pub payload: String,
    /// When it started.
    pub created_at: Timestamp,
    /// When it stops being accepted.
    pub expires_at: Timestamp,
}

/// An authorization code, bound to everything the token request must repeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeRow {
    /// SHA-256 of the code.
    pub code_hash: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The redirect URI it was sent to.
    pub redirect_uri: String,
    /// The S256 challenge.
    pub code_challenge: String,
    /// The audience of the tokens it yields.
    pub resource: String,
    /// The granted scope.
    pub scope: String,
    /// The GitHub login that approved it.
    pub login: String,
    /// The GitHub user id.
    pub user_id: i64,
    /// When issued.
    pub created_at: Timestamp,
    /// When it stops being redeemable.
    pub expires_at: Timestamp,
    /// When it was redeemed, if it was.
    pub used_at: Option<Timestamp>,
}

/// A grant: one login's family of tokens for one client and audience.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewGrant {
    /// Random id.
    pub grant_id: String,
    /// The client.
    pub client_id: String,
    /// The GitHub login.
    pub login: String,
    /// The GitHub user id.
    pub user_id: i64,
    /// The audience.
    pub resource: String,
    /// The scope.
    pub scope: String,
    /// The code it was issued from (a replay of that code revokes it).
    pub code_hash: Option<String>,
    /// When issued.
    pub created_at: Timestamp,
    /// Its absolute end: no token of the family outlives it.
    pub expires_at: Timestamp,
}

/// Access or refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// Presented to `/mcp`.
    Access,
    /// Exchanged (once) for a new pair.
    Refresh,
}

impl TokenKind {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }

    /// The kind a stored name names.
    pub fn parse(name: &str) -> Option<TokenKind> {
        match name {
            "access" => Some(TokenKind::Access),
            "refresh" => Some(TokenKind::Refresh),
            _ => None,
        }
    }
}

/// A token to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewToken {
    /// SHA-256 of the token.
    pub token_hash: String,
    /// Access or refresh.
    pub kind: TokenKind,
    /// When it expires.
    pub expires_at: Timestamp,
}

/// A stored token with its grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRow {
    /// SHA-256 of the token.
    pub token_hash: String,
    /// Access or refresh.
    pub kind: TokenKind,
    /// Its grant.
    pub grant_id: String,
    /// The grant's client.
    pub client_id: String,
    /// The grant's login.
    pub login: String,
    /// The grant's user id.
    pub user_id: i64,
    /// The grant's audience.
    pub resource: String,
    /// The grant's scope.
    pub scope: String,
    /// When the token expires.
    pub expires_at: Timestamp,
    /// When the grant ends.
    pub grant_expires_at: Timestamp,
    /// When a refresh token was exchanged.
    pub used_at: Option<Timestamp>,
    /// When the token or its grant was revoked.
    pub revoked_at: Option<Timestamp>,
}

/// A console session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleSessionRow {
    /// SHA-256 of the session token.
    pub session_hash: String,
    /// The GitHub login.
    pub login: String,
    /// The GitHub user id.
    pub user_id: i64,
    /// When it started.
    pub created_at: Timestamp,
    /// When it ends by itself.
    pub expires_at: Timestamp,
    /// When the owner ended it.
    pub ended_at: Option<Timestamp>,
}

/// What redeeming a code did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redemption {
    /// The code was unused: it is spent, and the grant and tokens exist.
    Issued,
    /// The code had been redeemed before: nothing was issued, and every grant issued from it
    /// is now revoked.
    Replayed,
}

/// What exchanging a refresh token did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// The token was live and unused: it is spent, and the new tokens exist in its grant.
    Rotated,
    /// The token had been exchanged before (or its grant revoked): the whole grant is revoked.
    Reused,
}

/// Owner-login state.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait OAuthStore: Send + Sync {
    /// Registers a client; `Conflict` if the id exists.
    async fn insert_client(&self, client: OAuthClientRow) -> StoreResult<()>;
    /// The client `client_id` if it has not expired at `now`.
    async fn client(&self, client_id: &str, now: Timestamp) -> StoreResult<Option<OAuthClientRow>>;
    /// Adds one to the counter `key` and returns the new count. A counter whose window ended
    /// at or before `now` starts again at one, with `expires_at` as its new end.
    async fn bump_counter(
        &self,
        key: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> StoreResult<u64>;
    /// Records a login round trip in flight.
    async fn put_login_state(&self, state: LoginStateRow) -> StoreResult<()>;
    /// The live login state `state_hash` of `purpose`, without spending it.
    async fn login_state(
        &self,
        state_hash: &str,
        purpose: &str,
        now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>>;
    /// Spends the live login state (`DELETE ... RETURNING`); `None` if it is gone.
    async fn take_login_state(
        &self,
        state_hash: &str,
        purpose: &str,
        now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>>;
    /// Records (or renews) the owner's approval `tag` of `client_id`.
    async fn approve_client(
        &self,
        tag: &str,
        client_id: &str,
        at: Timestamp,
        expires_at: Timestamp,
    ) -> StoreResult<()>;
    /// Whether the approval `tag` is live at `now`.
    async fn approval(&self, tag: &str, now: Timestamp) -> StoreResult<bool>;
    /// Stores a new authorization code.
    async fn insert_code(&self, code: CodeRow) -> StoreResult<()>;
    /// The code `code_hash`, spent or not.
    async fn code(&self, code_hash: &str) -> StoreResult<Option<CodeRow>>;
    /// One transaction: spends the code if unused (keyed update), then stores the grant and
    /// its tokens and renews the client until `client_expires_at`. If the code had been spent,
    /// revokes every grant issued from it instead and stores nothing.
    async fn redeem_code(
        &self,
        code_hash: &str,
        now: Timestamp,
        grant: NewGrant,
        tokens: Vec<NewToken>,
        client_expires_at: Timestamp,
    ) -> StoreResult<Redemption>;
    /// The token `token_hash` with its grant.
    async fn token(&self, token_hash: &str) -> StoreResult<Option<TokenRow>>;
    /// One transaction: spends the refresh token if it is unused, unrevoked and its grant is
    /// live at `now` (keyed update), then stores `tokens` in the same grant and renews the
    /// client. Otherwise revokes the whole grant and stores nothing.
    async fn rotate_refresh(
        &self,
        token_hash: &str,
        now: Timestamp,
        tokens: Vec<NewToken>,
        client_expires_at: Timestamp,
    ) -> StoreResult<Rotation>;
    /// Revokes a grant and every token in it.
    async fn revoke_grant(&self, grant_id: &str, now: Timestamp) -> StoreResult<()>;
    /// Revokes every live grant and token, and forgets every remembered approval (each
    /// client must ask for consent again), with the audit row `audit` builds from how many
    /// live grants ended, in one transaction; returns that count.
    async fn revoke_all_grants(
        &self,
        now: Timestamp,
        audit: &(dyn Fn(u64) -> AuditEntry + Send + Sync),
    ) -> StoreResult<u64>;
    /// Stores a console session.
    async fn insert_console_session(&self, session: ConsoleSessionRow) -> StoreResult<()>;
    /// The console session `session_hash` if it is live at `now` (not expired, not ended).
    async fn console_session(
        &self,
        session_hash: &str,
        now: Timestamp,
    ) -> StoreResult<Option<ConsoleSessionRow>>;
    /// Ends one live session; whether it was live.
    async fn end_console_session(&self, session_hash: &str, now: Timestamp) -> StoreResult<bool>;
    /// Ends every live session; how many.
    async fn end_console_sessions(&self, now: Timestamp) -> StoreResult<u64>;
    /// Deletes what expired before `now` (states, codes, counters, clients, approvals,
    /// sessions, ended grants); how many rows.
    async fn purge_expired_oauth(&self, now: Timestamp) -> StoreResult<u64>;
}
