//! The owner's way in (reference 11, SPEC 5): the rules of Capsid's small OAuth 2.1
//! authorization server and of the console's sessions, as pure functions and constants.
//!
//! GitHub is only the upstream identity provider: the owner proves who they are there, and
//! Capsid issues its own single-use codes and opaque tokens, kept as SHA-256 hashes. The HTTP
//! adapter carries requests; what is valid (redirect URIs, PKCE, audiences, lifetimes, limits,
//! the approval tag) is decided here, and the orchestration over the store is in
//! [`crate::service`] (`oauth*.rs`, `console.rs`).

pub mod error;
pub mod pkce;
pub mod redirect;
pub mod registration;
pub mod request;

pub use error::OAuthError;

use crate::crypto::sha256_hex;
use crate::time::{DAY_MS, HOUR_MS, MINUTE_MS, Timestamp};

/// An authorization code lives at most this long (ASVS V10.4.3: ten minutes at L1/L2).
pub const CODE_TTL_MS: i64 = 10 * MINUTE_MS;
/// A GitHub login round trip (authorize or console) must come back within this.
pub const STATE_TTL_MS: i64 = 10 * MINUTE_MS;
/// Access tokens are short-lived (15 minutes, as kanidm's; the refresh token carries the
/// session, rotated on every use).
pub const ACCESS_TOKEN_TTL_MS: i64 = 15 * MINUTE_MS;
/// A grant (its refresh tokens) ends this long after the login, however often it rotates.
pub const GRANT_TTL_MS: i64 = 30 * DAY_MS;
/// A registered client nobody used for this long is gone (renewed on every token issued).
pub const CLIENT_TTL_MS: i64 = 90 * DAY_MS;
/// The owner's approval of a client (bound to its redirect set) is remembered this long.
pub const APPROVAL_TTL_MS: i64 = 30 * DAY_MS;
/// A console session lasts twelve hours, unless the owner ends it first.
pub const CONSOLE_SESSION_TTL_MS: i64 = 12 * HOUR_MS;
/// A one-time console sign-in link of `capsid console login` is accepted this long, once.
pub const LOCAL_LOGIN_TTL_MS: i64 = 5 * MINUTE_MS;

/// Dynamic registrations per client address per hour.
pub const DCR_PER_HOUR: u64 = 30;
/// Dynamic registrations per client address per day.
pub const DCR_PER_DAY: u64 = 100;
/// CSP reports per client address per hour.
pub const CSP_REPORTS_PER_HOUR: u64 = 300;
/// CSP reports per client address per day.
pub const CSP_REPORTS_PER_DAY: u64 = 1000;

/// Token, authorization and console sign-in requests per client address per hour (ASVS
/// V2.4.1: anti-automation on unauthenticated endpoints). One owner needs a handful.
pub const AUTH_PER_HOUR: u64 = 120;
/// The same, per day.
pub const AUTH_PER_DAY: u64 = 1000;

/// The one scope Capsid grants: the owner's MCP access.
pub const SCOPE: &str = "mcp";

/// Where the OAuth-protected MCP route lives, below the public URL.
pub const MCP_PATH: &str = "/mcp";

/// Who the owner is and where this server lives: what every OAuth decision is made against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerSettings {
    /// The issuer: the public base URL without a trailing slash.
    pub issuer: String,
    /// `CAPSID_ADMIN_GITHUB_LOGIN`: a login (case-insensitive) or a numeric GitHub id.
    pub admin_login: String,
}

impl OwnerSettings {
    /// Settings for the server at `public_url` owned by `admin_login`.
    pub fn new(public_url: &str, admin_login: &str) -> OwnerSettings {
        OwnerSettings {
            issuer: public_url.trim_end_matches('/').to_owned(),
            admin_login: admin_login.trim().to_owned(),
        }
    }

    /// The canonical URI of the protected resource (RFC 8707 / RFC 9728): the MCP route.
    pub fn resource(&self) -> String {
        format!("{}{MCP_PATH}", self.issuer)
    }

    /// Whether a GitHub user is the owner (`isAdminUser`).
    pub fn is_owner(&self, login: &str, user_id: i64) -> bool {
        u64::try_from(user_id)
            .is_ok_and(|id| crate::caller::is_admin_user(&self.admin_login, login, id))
    }
}

/// What a login round trip was started for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoginPurpose {
    /// An MCP client's authorization request.
    Authorize,
    /// The admin console, through GitHub.
    Console,
    /// The admin console, through a one-time link printed by `capsid console login`.
    LocalConsole,
}

impl LoginPurpose {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            LoginPurpose::Authorize => "authorize",
            LoginPurpose::Console => "console",
            LoginPurpose::LocalConsole => "console-local",
        }
    }
}

/// The CSRF token of the console session `session_token`: bound to the session (every tab
/// and every render of one session carries the same one) and derived, never stored. Only
/// the session's holder can compute it: the store keeps `sha256(token)`, a different digest.
pub fn console_csrf(session_token: &str) -> String {
    sha256_hex(format!("capsid-console-csrf:v1:{session_token}"))
}

/// The approval tag (reference 11): `<client_id>.<first 16 hex of sha256(sorted redirect URIs
/// joined by a space)>`, so an approval covers exactly the redirect set it was given for.
pub fn approval_tag(client_id: &str, redirect_uris: &[String]) -> String {
    let mut sorted: Vec<&str> = redirect_uris.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let digest = sha256_hex(sorted.join(" "));
    format!("{client_id}.{}", &digest[..16])
}

/// `now + ttl`.
pub fn expiry(now: Timestamp, ttl_ms: i64) -> Timestamp {
    now.plus_millis(ttl_ms)
}

/// Whether a stored expiry (RFC 3339 text) has passed at `now`. Unreadable means expired.
pub fn is_expired(expires_at: &str, now: Timestamp) -> bool {
    Timestamp::parse(expires_at).is_none_or(|t| t <= now)
}

/// The rate-limit counter keys of `what` for `client` at `now`: per hour and per day, each
/// with the instant its window ends.
pub fn rate_windows(what: &str, client: &str, now: Timestamp) -> [(String, Timestamp, u64); 2] {
    let text = now.to_string();
    let hour = &text[..13];
    let hour_start = Timestamp::parse(&format!("{hour}:00:00Z")).unwrap_or(now);
    let day_start = Timestamp::parse(&format!("{}T00:00:00Z", now.date())).unwrap_or(now);
    let (per_hour, per_day) = match what {
        "csp" => (CSP_REPORTS_PER_HOUR, CSP_REPORTS_PER_DAY),
        "token" | "authorize" | "login" => (AUTH_PER_HOUR, AUTH_PER_DAY),
        _ => (DCR_PER_HOUR, DCR_PER_DAY),
    };
    [
        (
            format!("{what}:h:{client}:{hour}"),
            hour_start.plus_millis(HOUR_MS),
            per_hour,
        ),
        (
            format!("{what}:d:{client}:{}", now.date()),
            day_start.plus_millis(DAY_MS),
            per_day,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_approval_tag_binds_the_exact_redirect_set() {
        let a = approval_tag("c1", &["https://b/cb".into(), "https://a/cb".into()]);
        let b = approval_tag("c1", &["https://a/cb".into(), "https://b/cb".into()]);
        assert_eq!(a, b, "order does not matter");
        assert!(a.starts_with("c1.") && a.len() == 3 + 16);
        let c = approval_tag("c1", &["https://a/cb".into()]);
        assert_ne!(a, c, "a different set is a different approval");
        assert_ne!(
            approval_tag("c2", &["https://a/cb".into()]),
            c,
            "and so is a different client"
        );
    }

    #[test]
    fn owner_and_resource() {
        let s = OwnerSettings::new("https://capsid.example/", " Octo ");
        assert_eq!(s.resource(), "https://capsid.example/mcp");
        assert!(s.is_owner("octo", 1));
        assert!(!s.is_owner("mallory", 1));
        assert!(!s.is_owner("octo", -1), "a negative id is nobody");
        let by_id = OwnerSettings::new("https://capsid.example", "42");
        assert!(by_id.is_owner("renamed", 42));
        assert!(!by_id.is_owner("42", 7));
    }

    #[test]
    fn the_console_csrf_is_the_sessions_and_not_its_stored_hash() {
        let a = console_csrf("session-a");
        assert_eq!(a, console_csrf("session-a"), "the same in every render");
        assert_ne!(a, console_csrf("session-b"));
        assert_ne!(a, sha256_hex("session-a"), "not what the store holds");
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn expiry_is_judged_at_now() {
        let now = Timestamp::parse("2026-11-30T10:00:00Z").unwrap();
        let exp = expiry(now, CODE_TTL_MS).to_string();
        assert!(!is_expired(&exp, now.plus_millis(CODE_TTL_MS - 1)));
        assert!(is_expired(&exp, now.plus_millis(CODE_TTL_MS)));
        assert!(is_expired("garbage", now), "unreadable is expired");
    }

    #[test]
    fn rate_windows_are_calendar_hours_and_days() {
        let now = Timestamp::parse("2026-11-30T10:42:07Z").unwrap();
        let [h, d] = rate_windows("dcr", "10.0.0.1", now);
        assert_eq!(h.0, "dcr:h:10.0.0.1:2026-11-30T10");
        assert_eq!(h.1.to_string(), "2026-11-30T11:00:00.000Z");
        assert_eq!(h.2, DCR_PER_HOUR);
        assert_eq!(d.0, "dcr:d:10.0.0.1:2026-11-30");
        assert_eq!(d.1.to_string(), "2026-12-01T00:00:00.000Z");
        assert_eq!(rate_windows("csp", "x", now)[1].2, CSP_REPORTS_PER_DAY);
        assert_eq!(rate_windows("token", "x", now)[0].2, AUTH_PER_HOUR);
        assert_eq!(rate_windows("login", "x", now)[1].2, AUTH_PER_DAY);
    }
}
