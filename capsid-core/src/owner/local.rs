//! The console without GitHub: `capsid console login` (the command line holds the database,
//! so it is the admin) asks for a one-time sign-in link; opening it starts a normal console
//! session (the same cookie, lifetime, CSRF and revocation as a GitHub sign-in) for the local
//! owner, whose clicks are audited as `cli:<user>`. The link's token is stored only as its
//! SHA-256 in the login states, accepted for [`LOCAL_LOGIN_TTL_MS`] and spent by its first
//! use (`DELETE ... RETURNING`), so it works once.

use serde_json::json;

use super::OwnerService;
use super::oauth::ConsoleLogin;
use crate::caller::Caller;
use crate::crypto::sha256_hex;
use crate::ids::new_token;
use crate::oauth::{
    CONSOLE_SESSION_TTL_MS, LOCAL_LOGIN_TTL_MS, LoginPurpose, OAuthError, OwnerSettings, expiry,
};
use crate::ports::{AuditEntry, ConsoleSessionRow, LoginStateRow};
use crate::time::Timestamp;

/// The longest local user name a link carries.
pub const LOCAL_USER_MAX: usize = 64;

/// A one-time console sign-in link's secret, as `capsid console login` prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct LocalLoginLink {
    /// The token (only its hash is stored).
    pub token: String,
    /// When it stops being accepted.
    pub expires_at: Timestamp,
}

impl std::fmt::Debug for LocalLoginLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLoginLink")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Whose a console session is: the GitHub owner, or the local owner who ran `capsid console
/// login`. A stored session row carries it as its login and user id: GitHub ids are positive,
/// so a local session is the one whose id is [`LOCAL_SESSION_ID`] (which
/// [`OwnerSettings::is_owner`] never admits as a GitHub user).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionOwner {
    /// Signed in with GitHub.
    GitHub {
        /// The GitHub login.
        login: String,
        /// The GitHub user id.
        user_id: i64,
    },
    /// Signed in through a link of `capsid console login`.
    Local {
        /// The operating-system user who ran it.
        user: String,
    },
}

/// The user id stored for a local session.
pub const LOCAL_SESSION_ID: i64 = -1;

impl SessionOwner {
    /// Who a stored session row belongs to.
    pub fn of_row(row: &ConsoleSessionRow) -> SessionOwner {
        if row.user_id == LOCAL_SESSION_ID {
            SessionOwner::Local {
                user: row.login.clone(),
            }
        } else {
            SessionOwner::GitHub {
                login: row.login.clone(),
                user_id: row.user_id,
            }
        }
    }

    /// The login and user id a session row stores.
    pub fn to_row_fields(&self) -> (String, i64) {
        match self {
            SessionOwner::GitHub { login, user_id } => (login.clone(), *user_id),
            SessionOwner::Local { user } => (user.clone(), LOCAL_SESSION_ID),
        }
    }

    /// The caller the session acts as, re-checking a GitHub owner against `settings` (none:
    /// GitHub sign-in is not configured, so no GitHub session is admitted).
    pub fn caller(&self, settings: Option<&OwnerSettings>) -> Option<Caller> {
        match self {
            SessionOwner::Local { user } => Some(Caller::cli(user.clone())),
            SessionOwner::GitHub { login, user_id } => settings
                .is_some_and(|s| s.is_owner(login, *user_id))
                .then(|| Caller::admin(login.clone())),
        }
    }
}

/// A local user name as a link may carry it: 1 to 64 printable characters without spaces.
pub fn local_user_ok(user: &str) -> bool {
    !user.is_empty()
        && user.chars().count() <= LOCAL_USER_MAX
        && user
            .chars()
            .all(|c| c.is_ascii_graphic() || c.is_alphanumeric())
}

fn refused_link() -> OAuthError {
    OAuthError::access_denied(
        "this sign-in link expired or was already used: each link of `capsid console login` opens one session, within five minutes; run it again for a new one",
    )
}

impl OwnerService {
    /// Issues a one-time console sign-in link for the local owner `user` (the command line's
    /// caller): only the token's hash is stored, for [`LOCAL_LOGIN_TTL_MS`].
    pub async fn start_local_console_login(
        &self,
        user: &str,
    ) -> Result<LocalLoginLink, OAuthError> {
        if !local_user_ok(user) {
            return Err(OAuthError::invalid_request(format!(
                "console login: the user name must be 1 to {LOCAL_USER_MAX} printable characters without spaces"
            )));
        }
        let now = self.now();
        let token = format!("capsid_cl_{}", new_token(&*self.entropy));
        let expires_at = expiry(now, LOCAL_LOGIN_TTL_MS);
        self.oauth
            .put_login_state(LoginStateRow {
                state_hash: sha256_hex(&token),
                purpose: LoginPurpose::LocalConsole.name().to_owned(),
                payload: json!({"user": user}).to_string(),
                created_at: now,
                expires_at,
            })
            .await?;
        Ok(LocalLoginLink { token, expires_at })
    }

    /// Spends a one-time link and starts a twelve-hour console session for its local owner,
    /// audited as `console-login` under `cli:<user>`. A link that is unknown, spent or
    /// expired is refused, and nothing is written.
    pub async fn finish_local_console_login(
        &self,
        token: &str,
    ) -> Result<ConsoleLogin, OAuthError> {
        if token.is_empty() || token.len() > 256 || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(refused_link());
        }
        let now = self.now();
        let row = self
            .oauth
            .take_login_state(&sha256_hex(token), LoginPurpose::LocalConsole.name(), now)
            .await?
            .ok_or_else(refused_link)?;
        let payload: serde_json::Value =
            serde_json::from_str(&row.payload).map_err(|_| refused_link())?;
        let user = payload["user"]
            .as_str()
            .filter(|u| local_user_ok(u))
            .ok_or_else(refused_link)?
            .to_owned();
        let owner = SessionOwner::Local { user: user.clone() };
        let (login, user_id) = owner.to_row_fields();
        let session = new_token(&*self.entropy);
        self.oauth
            .insert_console_session(ConsoleSessionRow {
                session_hash: sha256_hex(&session),
                login,
                user_id,
                created_at: now,
                expires_at: expiry(now, CONSOLE_SESSION_TTL_MS),
                ended_at: None,
            })
            .await?;
        let caller = Caller::cli(user);
        self.audit_log
            .append_audit(AuditEntry {
                actor: caller.actor(),
                action: "console-login".into(),
                namespace: None,
                path: None,
                params: json!({"via": "capsid console login"}),
                at: now,
            })
            .await?;
        Ok(ConsoleLogin {
            token: session,
            return_path: "/console".into(),
            login: caller.actor(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_owners_round_trip_through_their_rows() {
        for owner in [
            SessionOwner::GitHub {
                login: "octo".into(),
                user_id: 42,
            },
            SessionOwner::Local {
                user: "alice".into(),
            },
        ] {
            let (login, user_id) = owner.to_row_fields();
            let row = ConsoleSessionRow {
                session_hash: "h".into(),
                login,
                user_id,
                created_at: Timestamp::from_millis(0),
                expires_at: Timestamp::from_millis(1),
                ended_at: None,
            };
            assert_eq!(SessionOwner::of_row(&row), owner);
        }
    }

    #[test]
    fn a_local_session_is_the_cli_and_a_github_one_needs_the_configured_owner() {
        let settings = OwnerSettings::new("http://127.0.0.1:8787", "octo");
        let local = SessionOwner::Local {
            user: "alice".into(),
        };
        assert_eq!(local.caller(None), Some(Caller::cli("alice")));
        assert_eq!(local.caller(Some(&settings)), Some(Caller::cli("alice")));
        let gh = SessionOwner::GitHub {
            login: "octo".into(),
            user_id: 42,
        };
        assert_eq!(gh.caller(None), None, "no GitHub configured: not admitted");
        assert_eq!(gh.caller(Some(&settings)), Some(Caller::admin("octo")));
        let other = SessionOwner::GitHub {
            login: "mallory".into(),
            user_id: 7,
        };
        assert_eq!(other.caller(Some(&settings)), None);
        assert!(
            !settings.is_owner("alice", LOCAL_SESSION_ID),
            "a local row is never a GitHub owner"
        );
    }

    #[test]
    fn local_user_names_are_bounded_and_printable() {
        assert!(local_user_ok("alice") && local_user_ok("ops-1.x"));
        assert!(!local_user_ok("") && !local_user_ok("a b") && !local_user_ok("a\nb"));
        assert!(!local_user_ok(&"a".repeat(65)));
    }
}
