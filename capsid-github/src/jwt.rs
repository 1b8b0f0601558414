//! The GitHub App JWT: RS256 over `{iat, exp, iss}` with the App's client id as issuer,
//! `iat` backdated a minute for clock skew and `exp` nine minutes ahead (GitHub refuses more
//! than ten). Time comes from the core's `Clock`.
//!
//! Signed with `ring`, which the TLS stack already links: a JWT of one fixed header is the
//! three base64url parts of RFC 7519, and the general JWT crates link every algorithm family
//! (RSA, ECDSA, EdDSA) in a second implementation, about half a megabyte of the binary for a
//! signature this server makes with one algorithm.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use capsid_core::time::Timestamp;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde::Serialize;

/// Seconds `iat` is backdated, so a server clock slightly ahead of GitHub's still passes.
pub const CLOCK_SKEW_SECS: i64 = 60;
/// Seconds from now until the JWT expires.
pub const JWT_LIFETIME_SECS: i64 = 9 * 60;

/// The JOSE header of every App JWT (`{"alg":"RS256","typ":"JWT"}`), base64url-encoded.
const HEADER: &str = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9";

#[derive(Serialize)]
struct Claims<'a> {
    iat: i64,
    exp: i64,
    iss: &'a str,
}

/// Signs App JWTs.
pub struct AppSigner {
    client_id: String,
    key: RsaKeyPair,
    rng: SystemRandom,
}

impl AppSigner {
    /// A signer for `client_id` with `pem` (PKCS#1, as GitHub hands App keys out, or PKCS#8);
    /// the key is tried once here so a key that does not parse is refused at start, never at
    /// the first request.
    pub fn new(client_id: &str, pem: &str) -> Result<AppSigner, String> {
        let pem = pem.trim().replace("\\n", "\n");
        let refused = |why: String| {
            format!(
                "CAPSID_GITHUB_APP_PRIVATE_KEY does not parse as an RSA private key in PEM form: {why}"
            )
        };
        let der =
            PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| refused(e.to_string()))?;
        let key = match &der {
            PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der()),
            PrivateKeyDer::Pkcs8(k) => RsaKeyPair::from_pkcs8(k.secret_pkcs8_der()),
            _ => {
                return Err(refused(
                    "it is an EC key; a GitHub App key is RSA".to_owned(),
                ));
            }
        }
        .map_err(|e| refused(e.to_string()))?;
        let signer = AppSigner {
            client_id: client_id.to_owned(),
            key,
            rng: SystemRandom::new(),
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
        let claims =
            serde_json::to_vec(&claims).map_err(|e| format!("signing the App JWT failed: {e}"))?;
        let signed = format!("{HEADER}.{}", URL_SAFE_NO_PAD.encode(claims));
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &self.rng,
                signed.as_bytes(),
                &mut signature,
            )
            .map_err(|_| {
                "signing the App JWT failed: the RSA signature could not be made".to_owned()
            })?;
        Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_rs256_as_a_jwt() {
        let header = URL_SAFE_NO_PAD.decode(HEADER).expect("base64url");
        assert_eq!(header, br#"{"alg":"RS256","typ":"JWT"}"#);
    }

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
