//! A deterministic generator of realistic document text for seeding benchmarks and the plan
//! test: a Zipf-distributed vocabulary (a few very common words, a long tail of rare ones),
//! varied lengths, types and namespaces, and one unique reference token per document.

use capsid_core::ports::DocumentWrite;
use capsid_core::time::Timestamp;

const COMMON: [&str; 40] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be",
    "by", "this", "are", "from", "or", "have", "an", "they", "which", "one", "you", "were", "all",
    "we", "when", "there", "can", "more", "if", "no", "out", "so", "what", "up", "about", "into",
];
const SYLLABLES: [&str; 28] = [
    "ka", "lo", "mi", "ne", "ru", "ta", "shi", "vo", "pe", "zu", "ga", "ri", "do", "fen", "mar",
    "tol", "qui", "bex", "sa", "nor", "li", "pra", "um", "ost", "wy", "cha", "del", "ix",
];

/// Document types the generator assigns, most common first.
pub const TYPES: [&str; 6] = ["note", "note", "episodic", "concept", "decision", "task"];

/// A SplitMix64 stream: small, fast and the same on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A uniform number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The vocabulary: common English words, then syllable words, rank order = frequency order.
#[derive(Clone, Debug)]
pub struct Vocabulary {
    words: Vec<String>,
}

impl Default for Vocabulary {
    fn default() -> Self {
        let mut words: Vec<String> = COMMON.iter().map(|w| (*w).to_owned()).collect();
        for a in SYLLABLES {
            for b in SYLLABLES {
                for c in SYLLABLES {
                    words.push(format!("{a}{b}{c}"));
                }
            }
        }
        Self { words }
    }
}

impl Vocabulary {
    /// How many words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether it is empty (never).
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The word of frequency rank `rank` (0 = most common).
    pub fn word(&self, rank: usize) -> &str {
        &self.words[rank.min(self.words.len() - 1)]
    }

    /// A word drawn with probability proportional to 1 / rank.
    pub fn draw(&self, rng: &mut Rng) -> &str {
        let rank = (self.words.len() as f64).powf(rng.unit()) as usize;
        self.word(rank.saturating_sub(1))
    }

    /// A sentence of 6 to 20 words.
    pub fn sentence(&self, rng: &mut Rng) -> String {
        let n = 6 + rng.below(15);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(self.draw(rng));
        }
        s.push('.');
        s
    }

    /// A markdown body of roughly `min_len`..`2 * min_len` bytes with headings and a list.
    pub fn body(&self, rng: &mut Rng, min_len: usize) -> String {
        let mut out = String::new();
        while out.len() < min_len {
            match rng.below(8) {
                0 => out.push_str(&format!(
                    "## {}\n\n",
                    self.sentence(rng).trim_end_matches('.')
                )),
                1 => out.push_str(&format!(
                    "- {}\n- {}\n\n",
                    self.sentence(rng),
                    self.sentence(rng)
                )),
                _ => {
                    for _ in 0..1 + rng.below(4) {
                        out.push_str(&self.sentence(rng));
                        out.push(' ');
                    }
                    out.push_str("\n\n");
                }
            }
        }
        out
    }
}

/// The unique token document `i` carries (a term that matches exactly one document).
pub fn reference_token(i: usize) -> String {
    format!("ref{i:07}")
}

/// Document `i` of a seeded corpus: one of `namespaces` namespaces, varied type and length.
pub fn corpus_document(
    vocabulary: &Vocabulary,
    seed: u64,
    i: usize,
    namespaces: usize,
    at: Timestamp,
) -> DocumentWrite {
    let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    let namespace = format!("ns{:02}", i % namespaces.max(1));
    let folder = ["notes", "log", "wiki", "decisions", "tasks"][rng.below(5)];
    let title = vocabulary
        .sentence(&mut rng)
        .trim_end_matches('.')
        .to_owned();
    let min_len = [200, 400, 800, 1500, 3000][rng.below(5)];
    let body = format!(
        "{} {}\n\n{}",
        reference_token(i),
        title,
        vocabulary.body(&mut rng, min_len)
    );
    DocumentWrite {
        namespace,
        path: format!("{folder}/{i:07}.md"),
        title: Some(title),
        body: Some(body),
        doc_type: Some(TYPES[rng.below(TYPES.len())].to_owned()),
        status: Some("published".to_owned()),
        tags: None,
        links: None,
        at: at.plus_millis(i as i64),
    }
}

/// The body the durability child writes as document `i` of run `seed`: generated text with
/// CRLF, tabs, trailing spaces and non-ASCII, from a few bytes up to about 64 KB.
pub fn durable_body(seed: u64, i: usize) -> String {
    let vocabulary = Vocabulary::default();
    let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(i as u64));
    let min_len = [1, 100, 4_000, 64_000][rng.below(4)];
    format!(
        "durable {seed}/{i}\r\n\tünïcødé — 🦓 \n{}  \n",
        vocabulary.body(&mut rng, min_len)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_text() {
        let v = Vocabulary::default();
        let t = Timestamp::from_millis(0);
        assert_eq!(
            corpus_document(&v, 7, 3, 10, t),
            corpus_document(&v, 7, 3, 10, t)
        );
        assert_ne!(
            corpus_document(&v, 7, 3, 10, t).body,
            corpus_document(&v, 7, 4, 10, t).body
        );
        assert_eq!(v.len(), 40 + 28 * 28 * 28);
    }

    #[test]
    fn common_words_dominate_and_the_tail_is_rare() {
        let v = Vocabulary::default();
        let mut rng = Rng::new(1);
        let draws: Vec<String> = (0..100_000).map(|_| v.draw(&mut rng).to_owned()).collect();
        let the = draws.iter().filter(|w| *w == "the").count();
        let tail = draws.iter().filter(|w| *w == v.word(20_000)).count();
        assert!(the > 5_000, "{the}");
        assert!(tail < 10, "{tail}");
    }
}
