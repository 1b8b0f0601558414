//! The holdout store as the scorer path sees it (reference 8.3): one namespace's prefix
//! `improve/holdout/<ns>/` at a time, read only, and the one-hour read token
//! `POST /improve/holdout-credential` mints for that prefix (`<ns>.<expiry ms>.<hex mac>`
//! under `HMAC(root, "capsid-improve-holdout-read:v1")`), which the server checks on every
//! read. The store itself is wrapped in [`HoldoutStore`]: nothing can list, write or delete
//! through it, and no key outside the namespace's prefix is reachable.

use std::sync::Arc;

use super::report::{HoldoutManifest, manifest_key, namespace_header_ok};
use crate::crypto::{ct_eq, hmac_sha256_hex};
use crate::ports::{BlobError, BlobReader, BlobStore};
use crate::time::{HOUR_MS, Timestamp};

/// The HMAC context of holdout read tokens (never accepted as a request key).
pub const HOLDOUT_READ_CONTEXT: &str = "capsid-improve-holdout-read:v1";
/// How long a holdout read token lasts.
pub const HOLDOUT_TOKEN_TTL_MS: i64 = HOUR_MS;

/// `improve/holdout/<ns>/`: everything of one namespace's hidden suite.
pub fn holdout_prefix(namespace: &str) -> String {
    format!("improve/holdout/{namespace}/")
}

/// Whether `key` lies under `namespace`'s holdout prefix with no empty, `.` or `..` segment
/// and no control character.
pub fn holdout_key_ok(namespace: &str, key: &str) -> bool {
    let Some(rest) = key.strip_prefix(&holdout_prefix(namespace)) else {
        return false;
    };
    namespace_header_ok(namespace)
        && !rest.is_empty()
        && !key.chars().any(char::is_control)
        && rest
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

fn token_mac(root: &str, namespace: &str, expires: Timestamp) -> String {
    hmac_sha256_hex(
        hmac_sha256_hex(root, HOLDOUT_READ_CONTEXT),
        format!("{}\n{}", holdout_prefix(namespace), expires.as_millis()),
    )
}

/// A read token for `namespace`'s holdout prefix, good until `expires`.
pub fn mint_holdout_token(root: &str, namespace: &str, expires: Timestamp) -> String {
    format!(
        "{namespace}.{}.{}",
        expires.as_millis(),
        token_mac(root, namespace, expires)
    )
}

/// Whether `token` lets its holder read `key` at `now`: a live token of this server whose
/// namespace's prefix holds `key`.
pub fn holdout_token_allows(root: &str, token: &str, key: &str, now: Timestamp) -> bool {
    let mut parts = token.splitn(3, '.');
    let (Some(namespace), Some(ms), Some(mac)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(ms) = ms.parse::<i64>() else {
        return false;
    };
    let expires = Timestamp::from_millis(ms);
    namespace_header_ok(namespace)
        && now < expires
        && ct_eq(token_mac(root, namespace, expires), mac)
        && holdout_key_ok(namespace, key)
}

/// The holdout store, reachable only one namespace's prefix at a time and only for reading.
#[derive(Clone)]
pub struct HoldoutStore {
    store: Arc<dyn BlobStore>,
}

impl std::fmt::Debug for HoldoutStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoldoutStore").finish_non_exhaustive()
    }
}

fn outside(key: &str) -> BlobError {
    BlobError::NotFound(format!(
        "{} is outside the namespace's holdout prefix",
        key.chars().take(120).collect::<String>()
    ))
}

impl HoldoutStore {
    /// Wraps the holdout store.
    pub fn new(store: Arc<dyn BlobStore>) -> HoldoutStore {
        HoldoutStore { store }
    }

    /// `namespace`'s manifest: `None` when absent or not a manifest of that namespace.
    pub async fn manifest(&self, namespace: &str) -> Result<Option<HoldoutManifest>, BlobError> {
        if !namespace_header_ok(namespace) {
            return Ok(None);
        }
        let bytes = match self.store.get(&manifest_key(namespace)).await {
            Ok(bytes) => bytes,
            Err(BlobError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(serde_json::from_slice::<HoldoutManifest>(&bytes)
            .ok()
            .filter(|m| m.namespace == namespace))
    }

    /// The keys under `namespace`'s prefix.
    pub async fn keys(&self, namespace: &str) -> Result<Vec<String>, BlobError> {
        if !namespace_header_ok(namespace) {
            return Ok(Vec::new());
        }
        let mut keys = self.store.list(&holdout_prefix(namespace)).await?;
        keys.retain(|k| holdout_key_ok(namespace, k));
        keys.sort();
        Ok(keys)
    }

    /// A URL the store signs for `key` (S3), when `key` is under `namespace`'s prefix.
    pub async fn signed_url(
        &self,
        namespace: &str,
        key: &str,
        ttl_ms: i64,
    ) -> Result<Option<String>, BlobError> {
        if !holdout_key_ok(namespace, key) {
            return Err(outside(key));
        }
        self.store.signed_read_url(key, ttl_ms).await
    }

    /// Opens `key` for reading, when `key` is under `namespace`'s prefix.
    pub async fn reader(
        &self,
        namespace: &str,
        key: &str,
    ) -> Result<Box<dyn BlobReader>, BlobError> {
        if !holdout_key_ok(namespace, key) {
            return Err(outside(key));
        }
        self.store.reader(key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "root-secret";

    fn now() -> Timestamp {
        Timestamp::parse("2026-12-01T03:00:00Z").expect("instant")
    }

    #[test]
    fn keys_stay_inside_one_namespace_prefix() {
        assert!(holdout_key_ok(
            "capsid",
            "improve/holdout/capsid/manifest.json"
        ));
        assert!(holdout_key_ok(
            "capsid",
            "improve/holdout/capsid/cases/a.json"
        ));
        assert!(!holdout_key_ok(
            "capsid",
            "improve/holdout/orchard/manifest.json"
        ));
        assert!(!holdout_key_ok("capsid", "improve/holdout/capsid/"));
        assert!(!holdout_key_ok(
            "capsid",
            "improve/holdout/capsid/../orchard/manifest.json"
        ));
        assert!(!holdout_key_ok("capsid", "improve/holdout/capsid//x"));
        assert!(!holdout_key_ok("capsid", "improve/holdout/capsid/a\nb"));
        assert!(!holdout_key_ok("Capsid", "improve/holdout/Capsid/x"));
        assert!(!holdout_key_ok("capsid", "backups/json/x"));
    }

    #[test]
    fn tokens_read_their_namespace_for_an_hour() {
        let expires = now().plus_millis(HOLDOUT_TOKEN_TTL_MS);
        let token = mint_holdout_token(ROOT, "capsid", expires);
        let key = "improve/holdout/capsid/manifest.json";
        assert!(holdout_token_allows(ROOT, &token, key, now()));
        assert!(holdout_token_allows(
            ROOT,
            &token,
            key,
            expires.plus_millis(-1)
        ));
        assert!(!holdout_token_allows(ROOT, &token, key, expires));
        assert!(!holdout_token_allows("other", &token, key, now()));
        assert!(!holdout_token_allows(
            ROOT,
            &token,
            "improve/holdout/orchard/manifest.json",
            now()
        ));
        let renamed = token.replacen("capsid", "orchard", 1);
        assert!(!holdout_token_allows(
            ROOT,
            &renamed,
            "improve/holdout/orchard/manifest.json",
            now()
        ));
        let later = token.replacen(
            &expires.as_millis().to_string(),
            &(expires.as_millis() + HOUR_MS).to_string(),
            1,
        );
        assert!(!holdout_token_allows(ROOT, &later, key, now()));
        assert!(!holdout_token_allows(ROOT, "", key, now()));
        assert!(!holdout_token_allows(ROOT, "capsid.x.y", key, now()));
    }
}
