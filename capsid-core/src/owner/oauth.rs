//! The owner's login over the store: dynamic registration with its per-address limits, the
//! authorization request (client, exact redirect, PKCE, audience, the remembered approval),
//! the GitHub round trip's server-side state, and what a successful login issues: a
//! single-use code for an MCP client, or a console session.

use serde_json::{Value, json};

use super::OwnerService;
use crate::crypto::sha256_hex;
use crate::ids::new_token;
use crate::oauth::registration::parse_registration;
use crate::oauth::request::{
    AuthorizeParams, AuthorizeRefusal, PendingAuthorization, check_authorize, client_id_of,
    with_query,
};
use crate::oauth::{
    APPROVAL_TTL_MS, CLIENT_TTL_MS, CODE_TTL_MS, CONSOLE_SESSION_TTL_MS, LoginPurpose, OAuthError,
    OwnerSettings, STATE_TTL_MS, approval_tag, expiry, rate_windows,
};
use crate::ports::{CodeRow, ConsoleSessionRow, LoginStateRow, OAuthClientRow};

/// A rate limit that was passed: how far, and when the window ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateExceeded {
    /// Requests counted in the window, this one included.
    pub count: u64,
    /// The window's limit.
    pub limit: u64,
    /// `hour` or `day`.
    pub window: &'static str,
    /// Seconds until the window ends.
    pub retry_after_secs: i64,
}

impl RateExceeded {
    /// The description a 429 carries.
    pub fn describe(&self, what: &str) -> String {
        format!(
            "too many {what} from this address: {} this {} (limit {}); try again in {} seconds",
            self.count, self.window, self.limit, self.retry_after_secs
        )
    }
}

/// An authorization request that passed every check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizeCheck {
    /// What the code will be bound to.
    pub pending: PendingAuthorization,
    /// The client's registered name.
    pub client_name: Option<String>,
    /// Whether the owner already approved this client for this redirect set.
    pub approved: bool,
}

/// A started console session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleLogin {
    /// The session token for the cookie (only its hash is stored).
    pub token: String,
    /// Where to go back to (under `/console`).
    pub return_path: String,
    /// Who signed in.
    pub login: String,
}

impl OwnerService {
    /// Counts one request of `what` (`dcr`, `csp`) from `client` against its hourly and daily
    /// windows; `Some` when a limit is passed.
    pub async fn rate_limit(
        &self,
        what: &str,
        client: &str,
    ) -> Result<Option<RateExceeded>, OAuthError> {
        let now = self.now();
        for (i, (key, end, limit)) in rate_windows(what, client, now).into_iter().enumerate() {
            let count = self.oauth.bump_counter(&key, now, end).await?;
            if count > limit {
                return Ok(Some(RateExceeded {
                    count,
                    limit,
                    window: if i == 0 { "hour" } else { "day" },
                    retry_after_secs: end.millis_since(now).div_euclid(1000).max(1),
                }));
            }
        }
        Ok(None)
    }

    /// `POST /register` (RFC 7591) from the address `client`: limits first, then the
    /// metadata, then the new client. The answer is the registration response.
    pub async fn oauth_register(&self, client: &str, body: &Value) -> Result<Value, OAuthError> {
        if let Some(over) = self.rate_limit("dcr", client).await? {
            return Err(OAuthError::rate_limited(over.describe("registrations")));
        }
        let reg = parse_registration(body)?;
        let now = self.now();
        let client_id = format!("capsid_client_{}", &new_token(&*self.entropy)[..32]);
        let secret = reg
            .is_confidential()
            .then(|| format!("capsid_cs_{}", new_token(&*self.entropy)));
        self.oauth
            .insert_client(OAuthClientRow {
                client_id: client_id.clone(),
                client_name: reg.client_name.clone(),
                redirect_uris: reg.redirect_uris.clone(),
                secret_hash: secret.as_deref().map(sha256_hex),
                auth_method: reg.auth_method.clone(),
                created_at: now,
                expires_at: expiry(now, CLIENT_TTL_MS),
            })
            .await?;
        let mut out = json!({
            "client_id": client_id,
            "client_id_issued_at": now.as_millis().div_euclid(1000),
            "redirect_uris": reg.redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": reg.auth_method,
        });
        if let Some(name) = reg.client_name {
            out["client_name"] = json!(name);
        }
        if let Some(s) = secret {
            out["client_secret"] = json!(s);
            out["client_secret_expires_at"] = json!(0);
        }
        Ok(out)
    }

    /// `GET /authorize`: the client must exist, the redirect URI must be one it registered,
    /// then PKCE S256, the audience and the scope. Says whether the owner already approved it.
    pub async fn oauth_authorize(
        &self,
        settings: &OwnerSettings,
        params: &AuthorizeParams,
    ) -> Result<AuthorizeCheck, AuthorizeRefusal> {
        let client_id = client_id_of(params).map_err(AuthorizeRefusal::Show)?;
        let now = self.now();
        let client = self
            .oauth
            .client(client_id, now)
            .await
            .map_err(|e| AuthorizeRefusal::Show(e.into()))?
            .ok_or_else(|| {
                AuthorizeRefusal::Show(OAuthError::invalid_request(
                    "unknown client_id (or its registration expired): register again",
                ))
            })?;
        let pending = check_authorize(settings, params, &client.redirect_uris)?;
        let tag = approval_tag(&client.client_id, &client.redirect_uris);
        let approved = self
            .oauth
            .approval(&tag, now)
            .await
            .map_err(|e| AuthorizeRefusal::Show(e.into()))?;
        Ok(AuthorizeCheck {
            pending,
            client_name: client.client_name,
            approved,
        })
    }

    /// Starts a GitHub login round trip for `purpose`, remembering `payload` server-side for
    /// ten minutes. Returns the `state` to send to GitHub (only its hash is stored).
    pub async fn start_login(
        &self,
        purpose: LoginPurpose,
        payload: &Value,
    ) -> Result<String, OAuthError> {
        let now = self.now();
        let state = new_token(&*self.entropy);
        self.oauth
            .put_login_state(LoginStateRow {
                state_hash: sha256_hex(&state),
                purpose: purpose.name().to_owned(),
                payload: payload.to_string(),
                created_at: now,
                expires_at: expiry(now, STATE_TTL_MS),
            })
            .await?;
        Ok(state)
    }

    /// Whether `state` names a live round trip of `purpose` (without spending it: it is spent
    /// only after GitHub's code exchange succeeded).
    pub async fn check_login(&self, purpose: LoginPurpose, state: &str) -> Result<(), OAuthError> {
        match self
            .oauth
            .login_state(&sha256_hex(state), purpose.name(), self.now())
            .await?
        {
            Some(_) => Ok(()),
            None => Err(OAuthError::access_denied(
                "this sign-in expired or was already used; start again",
            )),
        }
    }

    async fn take_login(
        &self,
        settings: &OwnerSettings,
        purpose: LoginPurpose,
        state: &str,
        login: &str,
        user_id: i64,
    ) -> Result<Value, OAuthError> {
        let row = self
            .oauth
            .take_login_state(&sha256_hex(state), purpose.name(), self.now())
            .await?
            .ok_or_else(|| {
                OAuthError::access_denied("this sign-in expired or was already used; start again")
            })?;
        if !settings.is_owner(login, user_id) {
            return Err(OAuthError::access_denied(format!(
                "GitHub user {login} is not this server's owner; only the owner is admitted"
            )));
        }
        serde_json::from_str(&row.payload)
            .map_err(|_| OAuthError::access_denied("this sign-in's stored request is unreadable"))
    }

    /// Completes an MCP client's authorization once GitHub vouched for `login`: spends the
    /// state, checks the owner, remembers the approval, and issues a single-use code. Returns
    /// the redirect to the client (`code`, `state`, `iss`).
    pub async fn finish_authorize(
        &self,
        settings: &OwnerSettings,
        state: &str,
        login: &str,
        user_id: i64,
    ) -> Result<String, OAuthError> {
        let payload = self
            .take_login(settings, LoginPurpose::Authorize, state, login, user_id)
            .await?;
        let pending: PendingAuthorization = serde_json::from_value(payload).map_err(|_| {
            OAuthError::access_denied("this sign-in's stored request is unreadable")
        })?;
        let now = self.now();
        let client = self
            .oauth
            .client(&pending.client_id, now)
            .await?
            .ok_or_else(|| OAuthError::invalid_request("the client's registration expired"))?;
        let tag = approval_tag(&client.client_id, &client.redirect_uris);
        self.oauth
            .approve_client(&tag, &client.client_id, now, expiry(now, APPROVAL_TTL_MS))
            .await?;
        let code = format!("capsid_ac_{}", new_token(&*self.entropy));
        self.oauth
            .insert_code(CodeRow {
                code_hash: sha256_hex(&code),
                client_id: pending.client_id.clone(),
                redirect_uri: pending.redirect_uri.clone(),
                code_challenge: pending.code_challenge.clone(),
                resource: pending.resource.clone(),
                scope: pending.scope.clone(),
                login: login.to_owned(),
                user_id,
                created_at: now,
                expires_at: expiry(now, CODE_TTL_MS),
                used_at: None,
            })
            .await?;
        let mut pairs = vec![("code", code.as_str())];
        if let Some(s) = &pending.state {
            pairs.push(("state", s.as_str()));
        }
        pairs.push(("iss", settings.issuer.as_str()));
        Ok(with_query(&pending.redirect_uri, &pairs))
    }

    /// Completes a console sign-in: spends the state, checks the owner, and starts a
    /// twelve-hour server-side session.
    pub async fn finish_console_login(
        &self,
        settings: &OwnerSettings,
        state: &str,
        login: &str,
        user_id: i64,
    ) -> Result<ConsoleLogin, OAuthError> {
        let payload = self
            .take_login(settings, LoginPurpose::Console, state, login, user_id)
            .await?;
        let return_path = payload["return"]
            .as_str()
            .filter(|p| console_return_path_ok(p))
            .unwrap_or("/console")
            .to_owned();
        let now = self.now();
        let token = new_token(&*self.entropy);
        self.oauth
            .insert_console_session(ConsoleSessionRow {
                session_hash: sha256_hex(&token),
                login: login.to_owned(),
                user_id,
                created_at: now,
                expires_at: expiry(now, CONSOLE_SESSION_TTL_MS),
                ended_at: None,
            })
            .await?;
        Ok(ConsoleLogin {
            token,
            return_path,
            login: login.to_owned(),
        })
    }
}

/// A console return path is accepted only under `/console` (never another origin).
pub fn console_return_path_ok(path: &str) -> bool {
    (path == "/console" || path.starts_with("/console?") || path.starts_with("/console/"))
        && !path.contains("//")
        && !path.contains('\\')
        && path.chars().all(|c| c.is_ascii_graphic())
}
