//! The GitHub App JWT: RS256 over `{iat, exp, iss}` with the App's client id as issuer,
//! `iat` backdated a minute for clock skew and `exp` nine minutes ahead (GitHub refuses more
//! than ten). Time comes from the core's `Clock`.

use capsid_core::time::Timestamp;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

/// Seconds `iat` is backdated, so a server clock slightly ahead of GitHub's still passes.
pub const CLOCK_SKEW_SECS: i64 = 60;
/// Seconds from now until the JWT expires.
pub const JWT_LIFETIME_SECS: i64 = 9 * 60;

#[derive(Serialize)]
struct Claims<'a> {
    iat: i64,
    exp: i64,
    iss: &'a str,
}

/// Signs App JWTs.
pub struct AppSigner {
    client_id: String,
    key: EncodingKey,
}

impl AppSigner {
    /// A signer for `client_id` with `pem`; the key is tried once here so a key that does not
    /// parse is refused at start, never at the first request.
    pub fn new(client_id: &str, pem: &str) -> Result<AppSigner, String> {
        let pem = pem.trim().replace("\\n", "\n");
        let key = EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(|e| {
            format!("CAPSID_GITHUB_APP_PRIVATE_KEY does not parse as an RSA private key in PEM form: {e}")
        })?;
        let signer = AppSigner {
            client_id: client_id.to_owned(),
            key,
        };
        signer
            .sign(Timestamp::from_millis(0))
            .map_err(|e| format!("CAPSID_GITHUB_APP_PRIVATE_KEY cannot sign an RS256 JWT: {e}"))?;
        Ok(signer)
    }

    /// A JWT valid from a minute before `now` until nine minutes after it.
    pub fn sign(&self, now: Timestamp) -> Result<String, String> {
        let secs = now.as_millis().div_euclid(1000);
        let claims = Claims {
            iat: secs - CLOCK_SKEW_SECS,
            exp: secs + JWT_LIFETIME_SECS,
            iss: &self.client_id,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map_err(|e| format!("signing the App JWT failed: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_does_not_parse_is_refused_naming_the_setting() {
        let err = AppSigner::new("Iv1.x", "not a key")
            .err()
            .unwrap_or_default();
        assert!(err.contains("CAPSID_GITHUB_APP_PRIVATE_KEY"), "{err}");
        let err = AppSigner::new(
            "Iv1.x",
            "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
        )
        .err()
        .unwrap_or_default();
        assert!(err.contains("CAPSID_GITHUB_APP_PRIVATE_KEY"), "{err}");
    }
}
