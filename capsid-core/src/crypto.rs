//! Hashing, HMAC and constant-time comparison: the only place the core touches digests.
//!
//! Every secret comparison in Capsid goes through [`ct_eq`]; hex digests are lower-case.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(data.as_ref()))
}

/// Lower-case hex HMAC-SHA256 of `msg` under `key`.
pub fn hmac_sha256_hex(key: impl AsRef<[u8]>, msg: impl AsRef<[u8]>) -> String {
    // HMAC accepts keys of any length, so construction cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_ref())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(msg.as_ref());
    hex::encode(mac.finalize().into_bytes())
}

/// Raw HMAC-SHA256 of `msg` under `key` (a derived key, for example).
pub fn hmac_sha256(key: impl AsRef<[u8]>, msg: impl AsRef<[u8]>) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_ref())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(msg.as_ref());
    mac.finalize().into_bytes().into()
}

/// SHA-256 of bytes that arrive in pieces (a streamed file).
#[derive(Clone, Debug, Default)]
pub struct Sha256Stream(Sha256);

impl Sha256Stream {
    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The lower-case hex digest of everything added.
    pub fn finish_hex(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// Constant-time equality of two byte strings (length is not secret).
pub fn ct_eq(a: impl AsRef<[u8]>, b: impl AsRef<[u8]>) -> bool {
    let (a, b) = (a.as_ref(), b.as_ref());
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // RFC 4231 test case 2.
        assert_eq!(
            hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn streamed_and_raw_digests_agree_with_the_hex_ones() {
        let mut stream = Sha256Stream::default();
        stream.update(b"a");
        stream.update(b"bc");
        assert_eq!(stream.finish_hex(), sha256_hex("abc"));
        assert_eq!(
            hex::encode(hmac_sha256("Jefe", "what do ya want for nothing?")),
            hmac_sha256_hex("Jefe", "what do ya want for nothing?")
        );
    }

    #[test]
    fn ct_eq_compares_whole_values() {
        assert!(ct_eq("abc", "abc"));
        assert!(!ct_eq("abc", "abd"));
        assert!(!ct_eq("abc", "abcd"));
        assert!(ct_eq("", ""));
    }
}
