//! Test-only RSA key pairs for the fake GitHub App, generated once per test process (never
//! committed, never used outside tests): the App's key, and a second one the fake must refuse.

use std::sync::OnceLock;

use jsonwebtoken::DecodingKey;
use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey, LineEnding};
use rsa::{PrivateKey, PublicKey};

/// A key pair: the PEM the adapter signs with and the key the fake verifies with.
pub struct TestKey {
    /// PKCS#1 PEM, as GitHub hands out App keys.
    pub private_pem: String,
    /// The public half, for verifying signatures.
    pub decoding: DecodingKey,
}

fn generate() -> TestKey {
    let mut rng = rand::rng();
    let key = PrivateKey::new(&mut rng, 2048).expect("generate a test RSA key");
    let private_pem = key
        .to_pkcs1_pem(LineEnding::LF)
        .expect("encode the test key")
        .to_string();
    let public_pem = PublicKey::from(&key)
        .to_pkcs1_pem(LineEnding::LF)
        .expect("encode the test public key");
    TestKey {
        private_pem,
        decoding: DecodingKey::from_rsa_pem(public_pem.as_bytes()).expect("decoding key"),
    }
}

/// The fake App's key pair.
pub fn test_key() -> &'static TestKey {
    static KEY: OnceLock<TestKey> = OnceLock::new();
    KEY.get_or_init(generate)
}

/// Another key pair, whose JWTs the fake must refuse.
pub fn other_test_key() -> &'static TestKey {
    static KEY: OnceLock<TestKey> = OnceLock::new();
    KEY.get_or_init(generate)
}
