//! PKCE (RFC 7636), S256 only: the challenge sent at authorize must be a base64url SHA-256
//! of the verifier sent at the token endpoint. `plain`, a missing method and a missing
//! challenge are refused at authorize, so no code exists without a challenge and the
//! "verifier without challenge" downgrade cannot happen.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::crypto::ct_eq;

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Whether `method` and `challenge`, as sent at authorize, are acceptable.
pub fn check_challenge(challenge: Option<&str>, method: Option<&str>) -> Result<(), String> {
    let Some(challenge) = challenge.filter(|c| !c.is_empty()) else {
        return Err("code_challenge is required (PKCE with S256)".into());
    };
    match method {
        Some("S256") => {}
        Some("plain") => {
            return Err("code_challenge_method plain is not accepted; use S256".into());
        }
        None => return Err("code_challenge_method is required and must be S256".into()),
        Some(other) => {
            return Err(format!(
                "code_challenge_method {other:?} is not supported; use S256"
            ));
        }
    }
    // base64url of 32 bytes, unpadded.
    if challenge.len() != 43 || !challenge.bytes().all(unreserved) {
        return Err(
            "code_challenge must be the 43-character base64url SHA-256 of the verifier".into(),
        );
    }
    Ok(())
}

/// The S256 challenge of `verifier`.
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `verifier` (43 to 128 unreserved characters) answers `challenge`, compared in
/// constant time.
pub fn verify(verifier: Option<&str>, challenge: &str) -> Result<(), String> {
    let Some(verifier) = verifier.filter(|v| !v.is_empty()) else {
        return Err("code_verifier is required".into());
    };
    if !(43..=128).contains(&verifier.len()) || !verifier.bytes().all(unreserved) {
        return Err("code_verifier must be 43 to 128 unreserved characters".into());
    }
    if ct_eq(s256(verifier), challenge) {
        Ok(())
    } else {
        Err("code_verifier does not match the code_challenge".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7636 appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn s256_round_trips_the_rfc_example() {
        assert_eq!(s256(VERIFIER), CHALLENGE);
        assert_eq!(verify(Some(VERIFIER), CHALLENGE), Ok(()));
        assert_eq!(check_challenge(Some(CHALLENGE), Some("S256")), Ok(()));
    }

    #[test]
    fn plain_missing_and_malformed_challenges_are_refused() {
        assert!(check_challenge(Some(CHALLENGE), Some("plain")).is_err());
        assert!(check_challenge(Some(CHALLENGE), None).is_err());
        assert!(check_challenge(Some(CHALLENGE), Some("s256")).is_err());
        assert!(check_challenge(None, Some("S256")).is_err());
        assert!(check_challenge(Some(""), Some("S256")).is_err());
        assert!(check_challenge(Some(VERIFIER), Some("S256")).is_ok());
        assert!(check_challenge(Some("short"), Some("S256")).is_err());
        assert!(check_challenge(Some(&"a".repeat(43).replace('a', "+")), Some("S256")).is_err());
    }

    #[test]
    fn wrong_missing_and_malformed_verifiers_are_refused() {
        assert!(verify(None, CHALLENGE).is_err());
        assert!(verify(Some(""), CHALLENGE).is_err());
        assert!(
            verify(Some(CHALLENGE), CHALLENGE).is_err(),
            "the challenge itself (plain)"
        );
        assert!(verify(Some(&"x".repeat(43)), CHALLENGE).is_err());
        assert!(verify(Some(&"x".repeat(129)), CHALLENGE).is_err());
        assert!(verify(Some("short"), CHALLENGE).is_err());
    }
}
