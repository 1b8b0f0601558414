//! Measures `search_documents` latency on a generated corpus (100,000 documents by default):
//! `cargo run --release -p capsid-store-sqlite --example sqlite_search_latency [-- <documents>]`.
//! Prints p50/p99 per query class; it asserts nothing (benchmarks measure, tests check).

use std::time::{Duration, Instant};

use capsid_core::ports::DocumentStore;
use capsid_store_sqlite::SqliteStore;
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;

const VOCABULARY: usize = 20_000;
const WORDS_PER_DOC: usize = 120;
const RUNS: usize = 200;

/// A small deterministic generator (xorshift64*), enough for a synthetic corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A word rank with a roughly Zipfian distribution over the vocabulary.
    fn zipf(&mut self) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((VOCABULARY as f64).powf(u) as usize).saturating_sub(1)
    }
}

fn word(rank: usize) -> String {
    format!("w{rank}")
}

async fn fill(url: &str, documents: usize) -> Result<(), sqlx::Error> {
    let mut conn = SqliteConnection::connect(url).await?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut tx = conn.begin().await?;
    for i in 0..documents {
        let body: Vec<String> = (0..WORDS_PER_DOC).map(|_| word(rng.zipf())).collect();
        let title: Vec<String> = (0..4).map(|_| word(rng.zipf())).collect();
        sqlx::query(
            "INSERT INTO documents (namespace, path, title, body, type, status, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, 'published', '2026-11-30T00:00:00.000Z', '2026-11-30T00:00:00.000Z')",
        )
        // The first 50 (the oldest) form a small namespace.
        .bind(if i < 50 { "tiny".to_owned() } else { format!("ns{}", i % 20) })
        .bind(format!("notes/{i}.md"))
        .bind(title.join(" "))
        .bind(body.join(" "))
        .bind(if i % 4 == 0 { "decision" } else { "note" })
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    conn.close().await
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let documents: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let store = SqliteStore::open(&url).await?;
    store.migrate().await?;
    let started = Instant::now();
    fill(&url, documents).await?;
    println!(
        "{documents} documents inserted in {:.1?}",
        started.elapsed()
    );

    let classes: [(&str, &str, Option<&str>); 10] = [
        ("most common word", "w0", None),
        ("common word", "w3", None),
        ("mid word", "w150", None),
        ("rare word", "w15000", None),
        ("two words", "w2 w40", None),
        ("common word in a namespace", "w0", Some("ns7")),
        ("rare word in a namespace", "w15000", Some("ns7")),
        ("common word, small namespace", "w0", Some("tiny")),
        ("prefix", "w12*", None),
        ("hostile (phrase retry)", "nosuch:w5 \"", None),
    ];
    for (name, query, namespace) in classes {
        let mut times = Vec::with_capacity(RUNS);
        let mut hits = 0;
        for _ in 0..RUNS {
            let t = Instant::now();
            hits = store
                .search_documents(query, namespace, None, 26)
                .await?
                .len();
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "{name:<28} {query:<14} hits {hits:>2}  p50 {:>9.3?}  p99 {:>9.3?}",
            percentile(&times, 0.50),
            percentile(&times, 0.99)
        );
    }
    store.close().await;
    Ok(())
}
