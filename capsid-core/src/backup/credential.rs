//! The backup credential (reference 8.3): a request signed with the backup-context HMAC key
//! (`HMAC(root, "capsid-backup-credential:v1")` over `"<timestamp>.<body>"`), inside ±30
//! minutes, its `jti` claimed once in the replay cache under scope `backup`. What it earns is
//! a read token for the `backups/` prefix of the media store, good for one hour, that the
//! server checks on every read (and, on an S3 store, signed URLs for the newest dump).

use serde::Deserialize;

use super::manifest::BACKUPS_PREFIX;
use crate::crypto::{ct_eq, hmac_sha256_hex};
use crate::time::{HOUR_MS, MINUTE_MS, Timestamp};

/// The HMAC context of credential requests.
pub const CREDENTIAL_CONTEXT: &str = "capsid-backup-credential:v1";
/// The HMAC context of the read tokens the server hands out (never accepted as a request key).
pub const READ_TOKEN_CONTEXT: &str = "capsid-backup-read:v1";
/// The replay-cache scope of credential requests.
pub const JTI_SCOPE: &str = "backup";
/// How far a request's timestamp may stand from now, either side.
pub const SIGNATURE_WINDOW_MS: i64 = 30 * MINUTE_MS;
/// How long a read token lasts.
pub const READ_TOKEN_TTL_MS: i64 = HOUR_MS;
/// The largest request body read.
pub const MAX_BODY_BYTES: usize = 16_384;
/// The request header carrying the timestamp (Unix seconds or RFC 3339).
pub const TIMESTAMP_HEADER: &str = "x-capsid-timestamp";
/// The request header carrying the hex signature.
pub const SIGNATURE_HEADER: &str = "x-capsid-signature";

/// Why a credential request is refused; each maps to one HTTP status.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialRefusal {
    /// No signing secret is configured (503).
    #[error("the signing secret is not configured: no backup credential can be checked")]
    NotConfigured,
    /// The timestamp header is missing or unreadable (400).
    #[error("{TIMESTAMP_HEADER} is missing or is neither Unix seconds nor an RFC 3339 instant")]
    BadTimestamp,
    /// The timestamp is more than 30 minutes from now (401).
    #[error("{TIMESTAMP_HEADER} is more than 30 minutes from the server's clock")]
    OutsideWindow,
    /// The signature does not verify (401).
    #[error("{SIGNATURE_HEADER} does not verify for this body and timestamp")]
    BadSignature,
    /// The body is too large or not `{"jti": "<1-256 chars>"}` (400).
    #[error(
        "the body must be JSON {{\"jti\": string of 1-256 characters}} of at most {MAX_BODY_BYTES} bytes: {0}"
    )]
    BadBody(String),
    /// The `jti` was used before (409).
    #[error("jti '{0}' was already used: sign a fresh request")]
    Replayed(String),
}

/// The key credential requests are signed with.
pub fn credential_key(root: &str) -> String {
    hmac_sha256_hex(root, CREDENTIAL_CONTEXT)
}

/// The signature of a request with `timestamp` and `body` (what a client computes).
pub fn sign_request(root: &str, timestamp: &str, body: &[u8]) -> String {
    sign_request_with_key(&credential_key(root), timestamp, body)
}

/// The same signature made with the [`credential_key`] itself, which is all an off-site
/// puller holds (never the signing secret).
pub fn sign_request_with_key(key: &str, timestamp: &str, body: &[u8]) -> String {
    let mut msg = Vec::with_capacity(timestamp.len() + 1 + body.len());
    msg.extend_from_slice(timestamp.as_bytes());
    msg.push(b'.');
    msg.extend_from_slice(body);
    hmac_sha256_hex(key, msg)
}

fn parse_timestamp(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let secs: i64 = text.parse().ok()?;
        return Some(Timestamp::from_millis(secs.checked_mul(1_000)?));
    }
    Timestamp::parse(text)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestBody {
    jti: String,
}

/// Checks a credential request in the reference's order (timestamp, window, signature,
/// body) and returns the `jti` to claim; the caller claims it and answers a replay with
/// [`CredentialRefusal::Replayed`].
pub fn verify_request(
    root: Option<&str>,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: Timestamp,
) -> Result<String, CredentialRefusal> {
    let root = root.ok_or(CredentialRefusal::NotConfigured)?;
    let raw_ts = timestamp.ok_or(CredentialRefusal::BadTimestamp)?;
    let at = parse_timestamp(raw_ts).ok_or(CredentialRefusal::BadTimestamp)?;
    if now.millis_since(at).abs() > SIGNATURE_WINDOW_MS {
        return Err(CredentialRefusal::OutsideWindow);
    }
    let expected = sign_request(root, raw_ts, body);
    let given = signature.unwrap_or("").trim().to_ascii_lowercase();
    if !ct_eq(expected.as_bytes(), given.as_bytes()) {
        return Err(CredentialRefusal::BadSignature);
    }
    if body.len() > MAX_BODY_BYTES {
        return Err(CredentialRefusal::BadBody("too large".into()));
    }
    let parsed: RequestBody =
        serde_json::from_slice(body).map_err(|e| CredentialRefusal::BadBody(e.to_string()))?;
    let n = parsed.jti.chars().count();
    if !(1..=256).contains(&n) {
        return Err(CredentialRefusal::BadBody(format!(
            "jti has {n} characters"
        )));
    }
    Ok(parsed.jti)
}

fn read_signature(root: &str, expires: Timestamp) -> String {
    hmac_sha256_hex(
        hmac_sha256_hex(root, READ_TOKEN_CONTEXT),
        format!("{BACKUPS_PREFIX}\n{}", expires.as_millis()),
    )
}

/// A read token for the `backups/` prefix, good until `expires`: `<expiry ms>.<hex mac>`.
pub fn mint_read_token(root: &str, expires: Timestamp) -> String {
    format!("{}.{}", expires.as_millis(), read_signature(root, expires))
}

/// Whether `token` lets its holder read `key` at `now`: a live token of this server and a
/// key under `backups/` that cannot climb out of it.
pub fn read_token_allows(root: &str, token: &str, key: &str, now: Timestamp) -> bool {
    let Some((ms, mac)) = token.split_once('.') else {
        return false;
    };
    let Ok(ms) = ms.parse::<i64>() else {
        return false;
    };
    let expires = Timestamp::from_millis(ms);
    if now >= expires || !ct_eq(read_signature(root, expires), mac) {
        return false;
    }
    readable_backup_key(key)
}

/// A key under `backups/` with no empty, `.` or `..` segment and no control character.
pub fn readable_backup_key(key: &str) -> bool {
    let Some(rest) = key.strip_prefix(BACKUPS_PREFIX) else {
        return false;
    };
    !rest.is_empty()
        && !key.chars().any(char::is_control)
        && rest
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "root-secret";

    fn now() -> Timestamp {
        Timestamp::parse("2026-03-01T09:00:00Z").expect("instant")
    }

    fn signed(ts: &str, body: &[u8]) -> Result<String, CredentialRefusal> {
        let sig = sign_request(ROOT, ts, body);
        verify_request(Some(ROOT), Some(ts), Some(&sig), body, now())
    }

    #[test]
    fn the_key_is_the_backup_context_hmac() {
        assert_eq!(
            credential_key(ROOT),
            hmac_sha256_hex(ROOT, "capsid-backup-credential:v1")
        );
        let secs = (now().as_millis() / 1000).to_string();
        let body = br#"{"jti":"a"}"#;
        let by_hand = hmac_sha256_hex(credential_key(ROOT), format!("{secs}.{{\"jti\":\"a\"}}"));
        assert_eq!(sign_request(ROOT, &secs, body), by_hand);
    }

    #[test]
    fn requests_are_checked_in_order() {
        let secs = (now().as_millis() / 1000).to_string();
        let body = br#"{"jti":"j-1"}"#;
        assert_eq!(signed(&secs, body).as_deref(), Ok("j-1"));
        assert_eq!(signed("2026-03-01T09:10:00Z", body).as_deref(), Ok("j-1"));
        assert_eq!(
            verify_request(None, Some(&secs), Some("x"), body, now()),
            Err(CredentialRefusal::NotConfigured)
        );
        assert_eq!(
            signed("yesterday", body),
            Err(CredentialRefusal::BadTimestamp)
        );
        let early = ((now().as_millis() - 31 * MINUTE_MS) / 1000).to_string();
        assert_eq!(signed(&early, body), Err(CredentialRefusal::OutsideWindow));
        assert_eq!(
            verify_request(Some(ROOT), Some(&secs), Some("00"), body, now()),
            Err(CredentialRefusal::BadSignature)
        );
        let other_root = sign_request("other", &secs, body);
        assert_eq!(
            verify_request(Some(ROOT), Some(&secs), Some(&other_root), body, now()),
            Err(CredentialRefusal::BadSignature)
        );
        assert!(matches!(
            signed(&secs, br#"{"jti":""}"#),
            Err(CredentialRefusal::BadBody(_))
        ));
        assert!(matches!(
            signed(&secs, b"nope"),
            Err(CredentialRefusal::BadBody(_))
        ));
        assert!(matches!(
            signed(&secs, br#"{"jti":"a","more":1}"#),
            Err(CredentialRefusal::BadBody(_))
        ));
    }

    #[test]
    fn read_tokens_cover_the_backups_prefix_for_an_hour() {
        let token = mint_read_token(ROOT, now().plus_millis(READ_TOKEN_TTL_MS));
        let key = "backups/json/2026-03-01T09-00-00-000Z/manifest.json";
        assert!(read_token_allows(ROOT, &token, key, now()));
        assert!(!read_token_allows(
            ROOT,
            &token,
            key,
            now().plus_millis(READ_TOKEN_TTL_MS)
        ));
        assert!(!read_token_allows("other", &token, key, now()));
        assert!(!read_token_allows(ROOT, &token, "reports/x", now()));
        assert!(!read_token_allows(
            ROOT,
            &token,
            "backups/../signing.key",
            now()
        ));
        assert!(!read_token_allows(ROOT, &token, "backups/", now()));
        let forged = token.replacen('.', "9.", 1);
        assert!(!read_token_allows(ROOT, &forged, key, now()));
    }
}
