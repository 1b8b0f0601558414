//! The token endpoint and the resource server's check: authorization codes (single-use,
//! ten minutes, exact redirect, PKCE S256, audience; a replay revokes what the code issued),
//! refresh tokens (rotated; a reused one revokes its whole grant), and every `/mcp` request's
//! access token (live, issued for this audience, held by the owner).

use serde_json::{Value, json};

use super::OwnerService;
use crate::caller::Caller;
use crate::crypto::{ct_eq, sha256_hex};
use crate::ids::new_token;
use crate::oauth::request::grant_scope;
use crate::oauth::{
    ACCESS_TOKEN_TTL_MS, CLIENT_TTL_MS, GRANT_TTL_MS, OAuthError, OwnerSettings, expiry, pkce,
};
use crate::ports::{NewGrant, NewToken, OAuthClientRow, Redemption, Rotation, TokenKind, TokenRow};
use crate::time::Timestamp;

/// A token request, as the adapter read it from the form (and Basic authentication).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct TokenRequest {
    /// `authorization_code` or `refresh_token`.
    pub grant_type: Option<String>,
    /// The code (authorization_code).
    pub code: Option<String>,
    /// The redirect URI the code was sent to (authorization_code).
    pub redirect_uri: Option<String>,
    /// The PKCE verifier (authorization_code).
    pub code_verifier: Option<String>,
    /// The refresh token (refresh_token).
    pub refresh_token: Option<String>,
    /// The client.
    pub client_id: Option<String>,
    /// A confidential client's secret.
    pub client_secret: Option<String>,
    /// RFC 8707 audience.
    pub resource: Option<String>,
    /// A narrower scope (refresh_token).
    pub scope: Option<String>,
}

impl std::fmt::Display for TokenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the code, verifier, secret or refresh token.
        write!(
            f,
            "grant_type={:?} client_id={:?}",
            self.grant_type, self.client_id
        )
    }
}

/// Why an access token was not accepted on `/mcp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessRefusal {
    /// 401: unknown, expired, revoked, or issued for another audience.
    Invalid(String),
    /// 403: a valid token whose holder is no longer the owner.
    NotOwner(String),
    /// 503: the store could not be read.
    Unavailable(String),
}

impl OwnerService {
    /// Whom a `POST /token` request is counted against by the rate limiter (SPEC 8): a
    /// refresh with a live refresh token is counted per client (`client:<id>`), so junk from
    /// anyone sharing the owner's address cannot starve the owner's refreshes; everything
    /// else (codes, junk, unknown tokens) is counted per address, `addr`. A store that cannot
    /// be read counts against the address.
    pub async fn token_rate_key(&self, req: &TokenRequest, addr: &str) -> String {
        if req.grant_type.as_deref() != Some("refresh_token") {
            return addr.to_owned();
        }
        let Some(token) = req
            .refresh_token
            .as_deref()
            .filter(|t| !t.is_empty() && t.len() <= 256)
        else {
            return addr.to_owned();
        };
        match self.oauth.token(&sha256_hex(token)).await {
            Ok(Some(row))
                if row.kind == TokenKind::Refresh
                    && row.revoked_at.is_none()
                    && req.client_id.as_deref().is_none_or(|c| c == row.client_id) =>
            {
                format!("client:{}", row.client_id)
            }
            _ => addr.to_owned(),
        }
    }

    /// `POST /token`.
    pub async fn oauth_token(
        &self,
        settings: &OwnerSettings,
        req: &TokenRequest,
    ) -> Result<Value, OAuthError> {
        match req.grant_type.as_deref() {
            Some("authorization_code") => self.code_grant(settings, req).await,
            Some("refresh_token") => self.refresh_grant(settings, req).await,
            Some(other) => Err(OAuthError::unsupported_grant_type(format!(
                "grant_type {other:?} is not supported: only authorization_code and refresh_token"
            ))),
            None => Err(OAuthError::invalid_request("grant_type is required")),
        }
    }

    async fn token_client(&self, req: &TokenRequest) -> Result<OAuthClientRow, OAuthError> {
        let Some(id) = req
            .client_id
            .as_deref()
            .filter(|i| !i.is_empty() && i.len() <= 128)
        else {
            return Err(OAuthError::invalid_client("client_id is required"));
        };
        let client = self.oauth.client(id, self.now()).await?.ok_or_else(|| {
            OAuthError::invalid_client("unknown client (or its registration expired)")
        })?;
        if let Some(hash) = &client.secret_hash {
            let presented = req.client_secret.as_deref().unwrap_or("");
            if !ct_eq(sha256_hex(presented), hash) {
                return Err(OAuthError::invalid_client("client authentication failed"));
            }
        }
        Ok(client)
    }

    fn new_tokens(&self, now: Timestamp, grant_end: Timestamp) -> (String, String, Vec<NewToken>) {
        let access = format!("capsid_at_{}", new_token(&*self.entropy));
        let refresh = format!("capsid_rt_{}", new_token(&*self.entropy));
        let access_end = expiry(now, ACCESS_TOKEN_TTL_MS).min(grant_end);
        let rows = vec![
            NewToken {
                token_hash: sha256_hex(&access),
                kind: TokenKind::Access,
                expires_at: access_end,
            },
            NewToken {
                token_hash: sha256_hex(&refresh),
                kind: TokenKind::Refresh,
                expires_at: grant_end,
            },
        ];
        (access, refresh, rows)
    }

    fn token_response(
        access: &str,
        refresh: &str,
        now: Timestamp,
        access_end: Timestamp,
        scope: &str,
    ) -> Value {
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": access_end.millis_since(now).div_euclid(1000),
            "refresh_token": refresh,
            "scope": scope,
        })
    }

    async fn code_grant(
        &self,
        settings: &OwnerSettings,
        req: &TokenRequest,
    ) -> Result<Value, OAuthError> {
        let client = self.token_client(req).await?;
        let Some(code) = req
            .code
            .as_deref()
            .filter(|c| !c.is_empty() && c.len() <= 256)
        else {
            return Err(OAuthError::invalid_request("code is required"));
        };
        let code_hash = sha256_hex(code);
        let row = self
            .oauth
            .code(&code_hash)
            .await?
            .ok_or_else(|| OAuthError::invalid_grant("unknown authorization code"))?;
        let now = self.now();
        let grant_end = expiry(now, GRANT_TTL_MS);
        let (access, refresh, tokens) = self.new_tokens(now, grant_end);
        let grant = NewGrant {
            grant_id: format!("grant_{}", &new_token(&*self.entropy)[..24]),
            client_id: row.client_id.clone(),
            login: row.login.clone(),
            user_id: row.user_id,
            resource: row.resource.clone(),
            scope: row.scope.clone(),
            code_hash: Some(code_hash.clone()),
            created_at: now,
            expires_at: grant_end,
        };
        let client_end = expiry(now, CLIENT_TTL_MS);
        if row.used_at.is_some() {
            // A replay: whoever presents a spent code, the tokens it issued are revoked.
            self.oauth
                .redeem_code(&code_hash, now, grant, Vec::new(), client_end)
                .await?;
            return Err(OAuthError::invalid_grant(
                "this authorization code was already used; the tokens issued from it are revoked",
            ));
        }
        if row.client_id != client.client_id {
            return Err(OAuthError::invalid_grant(
                "this code was issued to another client",
            ));
        }
        if row.expires_at <= now {
            return Err(OAuthError::invalid_grant("this authorization code expired"));
        }
        if req.redirect_uri.as_deref() != Some(row.redirect_uri.as_str()) {
            return Err(OAuthError::invalid_grant(
                "redirect_uri must be exactly the one the code was sent to",
            ));
        }
        pkce::verify(req.code_verifier.as_deref(), &row.code_challenge)
            .map_err(OAuthError::invalid_grant)?;
        if let Some(r) = req.resource.as_deref()
            && r != row.resource
        {
            return Err(OAuthError::invalid_target(format!(
                "resource {r:?} is not the one this code was issued for ({})",
                row.resource
            )));
        }
        if !settings.is_owner(&row.login, row.user_id) {
            return Err(OAuthError::invalid_grant(format!(
                "{} is no longer this server's owner",
                row.login
            )));
        }
        let access_end = tokens[0].expires_at;
        match self
            .oauth
            .redeem_code(&code_hash, now, grant, tokens, client_end)
            .await?
        {
            Redemption::Issued => Ok(Self::token_response(
                &access, &refresh, now, access_end, &row.scope,
            )),
            Redemption::Replayed => Err(OAuthError::invalid_grant(
                "this authorization code was already used; the tokens issued from it are revoked",
            )),
        }
    }

    async fn refresh_grant(
        &self,
        settings: &OwnerSettings,
        req: &TokenRequest,
    ) -> Result<Value, OAuthError> {
        let client = self.token_client(req).await?;
        let Some(token) = req
            .refresh_token
            .as_deref()
            .filter(|t| !t.is_empty() && t.len() <= 256)
        else {
            return Err(OAuthError::invalid_request("refresh_token is required"));
        };
        let hash = sha256_hex(token);
        let row = match self.oauth.token(&hash).await? {
            Some(r) if r.kind == TokenKind::Refresh => r,
            _ => return Err(OAuthError::invalid_grant("unknown refresh token")),
        };
        if row.client_id != client.client_id {
            return Err(OAuthError::invalid_grant(
                "this refresh token was issued to another client",
            ));
        }
        let now = self.now();
        let client_end = expiry(now, CLIENT_TTL_MS);
        if row.used_at.is_some() {
            self.oauth
                .rotate_refresh(&hash, now, Vec::new(), client_end)
                .await?;
            return Err(OAuthError::invalid_grant(
                "refresh token reuse detected: it was already exchanged, so the whole grant is revoked; sign in again",
            ));
        }
        if row.revoked_at.is_some() {
            return Err(OAuthError::invalid_grant("this refresh token was revoked"));
        }
        if row.expires_at <= now || row.grant_expires_at <= now {
            return Err(OAuthError::invalid_grant("this grant ended; sign in again"));
        }
        if let Some(r) = req.resource.as_deref()
            && r != row.resource
        {
            return Err(OAuthError::invalid_target(format!(
                "resource {r:?} is not the one this grant is for ({})",
                row.resource
            )));
        }
        if req.scope.is_some() {
            grant_scope(req.scope.as_deref()).map_err(OAuthError::invalid_scope)?;
        }
        if !settings.is_owner(&row.login, row.user_id) {
            return Err(OAuthError::invalid_grant(format!(
                "{} is no longer this server's owner",
                row.login
            )));
        }
        let (access, refresh, tokens) = self.new_tokens(now, row.grant_expires_at);
        let access_end = tokens[0].expires_at;
        match self
            .oauth
            .rotate_refresh(&hash, now, tokens, client_end)
            .await?
        {
            Rotation::Rotated => Ok(Self::token_response(
                &access, &refresh, now, access_end, &row.scope,
            )),
            Rotation::Reused => Err(OAuthError::invalid_grant(
                "refresh token reuse detected: the whole grant is revoked; sign in again",
            )),
        }
    }

    /// Every `/mcp` request: the bearer token must be a live access token issued for this
    /// server's MCP route, held by the owner (re-checked each time). The caller is the owner.
    pub async fn oauth_access(
        &self,
        settings: &OwnerSettings,
        token: &str,
    ) -> Result<Caller, AccessRefusal> {
        let row: TokenRow = match self.oauth.token(&sha256_hex(token)).await {
            Ok(Some(row)) => row,
            Ok(None) => return Err(AccessRefusal::Invalid("unknown access token".into())),
            Err(e) => return Err(AccessRefusal::Unavailable(e.to_string())),
        };
        let now = self.now();
        if row.kind != TokenKind::Access {
            return Err(AccessRefusal::Invalid(
                "a refresh token is not an access token".into(),
            ));
        }
        if row.revoked_at.is_some() {
            return Err(AccessRefusal::Invalid(
                "the access token was revoked".into(),
            ));
        }
        if row.expires_at <= now || row.grant_expires_at <= now {
            return Err(AccessRefusal::Invalid("the access token expired".into()));
        }
        let resource = settings.resource();
        if row.resource != resource {
            return Err(AccessRefusal::Invalid(format!(
                "the access token was issued for {}, not for {resource}",
                row.resource
            )));
        }
        if !settings.is_owner(&row.login, row.user_id) {
            return Err(AccessRefusal::NotOwner(format!(
                "{} is not this server's owner",
                row.login
            )));
        }
        Ok(Caller::admin(row.login))
    }
}
