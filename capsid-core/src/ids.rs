//! Identifiers and secrets minted by Capsid, drawn from the [`Entropy`] port.
//!
//! The core draws no randomness itself: an adapter supplies the bytes (the OS generator in
//! production, a seeded or counting source in tests). The formats are the Worker's.

/// Where random bytes come from.
pub trait Entropy: Send + Sync {
    /// Fills `buf` with cryptographically random bytes.
    fn fill(&self, buf: &mut [u8]);
}

fn random_hex(entropy: &dyn Entropy, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    entropy.fill(&mut buf);
    hex::encode(buf)
}

/// A job id: `job_` + 12 lower-case hex (6 random bytes).
pub fn new_job_id(entropy: &dyn Entropy) -> String {
    format!("job_{}", random_hex(entropy, 6))
}

/// An agent id: `agent_` + 12 lower-case hex (6 random bytes).
pub fn new_agent_id(entropy: &dyn Entropy) -> String {
    format!("agent_{}", random_hex(entropy, 6))
}

/// A minted agent key: `capsid_agent_` + 64 lower-case hex (32 random bytes). Shown once,
/// stored only as its SHA-256.
pub fn new_agent_key(entropy: &dyn Entropy) -> String {
    format!("capsid_agent_{}", random_hex(entropy, 32))
}

/// A 256-bit opaque token as 64 hex characters (OAuth codes, sessions, CSRF tokens).
pub fn new_token(entropy: &dyn Entropy) -> String {
    random_hex(entropy, 32)
}

/// Whether `id` has the shape of a job id (`job_` + 12 lower-case hex).
pub fn is_job_id(id: &str) -> bool {
    id.len() == 16
        && id.starts_with("job_")
        && id[4..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A deterministic source for tests: each call yields the next bytes of a counter stream.
#[derive(Debug, Default)]
pub struct CountingEntropy(std::sync::atomic::AtomicU64);

impl Entropy for CountingEntropy {
    fn fill(&self, buf: &mut [u8]) {
        for b in buf.iter_mut() {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            *b = (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_match_the_worker() {
        let e = CountingEntropy::default();
        let job = new_job_id(&e);
        assert!(is_job_id(&job), "{job}");
        let agent = new_agent_id(&e);
        assert_eq!(agent.len(), "agent_".len() + 12);
        let key = new_agent_key(&e);
        assert_eq!(key.len(), "capsid_agent_".len() + 64);
        assert_ne!(new_job_id(&e), job, "successive ids differ");
        assert!(!is_job_id("job_ABCDEF123456"));
        assert!(!is_job_id("job_12345"));
    }
}
