//! Measures `search_documents` latency on a generated corpus (100,000 documents by default)
//! in a fresh database under `CAPSID_TEST_POSTGRES_URL`:
//! `cargo run --release -p capsid-store-postgres --example pg_search_latency [-- <documents>]`.
//! Prints p50/p99 per query class (the same classes as the SQLite example); it asserts
//! nothing (benchmarks measure, tests check). The database is dropped at the end.

use std::time::{Duration, Instant};

use capsid_core::ports::DocumentStore;
use capsid_store_postgres::PgStore;
use sqlx::{AssertSqlSafe, PgPool};

const VOCABULARY: usize = 20_000;
const WORDS_PER_DOC: usize = 120;
const RUNS: usize = 200;
const BATCH: usize = 2_000;

/// A small deterministic generator (xorshift64*), the same as the SQLite example's.
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

async fn fill(pool: &PgPool, documents: usize) -> Result<(), sqlx::Error> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut start = 0;
    while start < documents {
        let end = (start + BATCH).min(documents);
        let (mut namespaces, mut paths, mut titles, mut bodies, mut types) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in start..end {
            let body: Vec<String> = (0..WORDS_PER_DOC).map(|_| word(rng.zipf())).collect();
            let title: Vec<String> = (0..4).map(|_| word(rng.zipf())).collect();
            // The first 50 (the oldest) form a small namespace.
            namespaces.push(if i < 50 {
                "tiny".to_owned()
            } else {
                format!("ns{}", i % 20)
            });
            paths.push(format!("notes/{i}.md"));
            titles.push(title.join(" "));
            bodies.push(body.join(" "));
            types.push(if i % 4 == 0 { "decision" } else { "note" });
        }
        sqlx::query(
            "INSERT INTO documents (namespace, path, title, body, type, status, created_at, updated_at) \
             SELECT n, p, t, b, ty, 'published', '2026-11-30T00:00:00.000Z', '2026-11-30T00:00:00.000Z' \
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(n, p, t, b, ty)",
        )
        .bind(namespaces)
        .bind(paths)
        .bind(titles)
        .bind(bodies)
        .bind(types)
        .execute(pool)
        .await?;
        start = end;
    }
    sqlx::query("VACUUM ANALYZE documents")
        .execute(pool)
        .await?;
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[start..].find('/') {
        Some(slash) => &base[..start + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{database}?{q}"),
        None => format!("{base}/{database}"),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let documents: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let admin_url = std::env::var("CAPSID_TEST_POSTGRES_URL").map_err(
        |_| "set CAPSID_TEST_POSTGRES_URL (source scripts/postgres.sh && capsid_pg_start)",
    )?;
    let admin = PgPool::connect(&admin_url).await?;
    let name = format!("capsid_search_bench_{}", std::process::id());
    sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&admin)
        .await?;
    let store = PgStore::connect(&with_database(&admin_url, &name)).await?;
    store.migrate().await?;
    let started = Instant::now();
    fill(store.pool(), documents).await?;
    println!(
        "{documents} documents inserted in {:.1?}",
        started.elapsed()
    );

    let repeated = "w1 ".repeat(200);
    let classes: [(&str, &str, Option<&str>); 12] = [
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
        ("phrase of common words", "\"w0 w1 w2\"", None),
        ("200 repeated words", repeated.as_str(), None),
    ];
    for (label, query, namespace) in classes {
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
        let shown: String = query.chars().take(14).collect();
        println!(
            "{label:<28} {:<14} hits {hits:>2}  p50 {:>9.3?}  p99 {:>9.3?}",
            shown,
            percentile(&times, 0.50),
            percentile(&times, 0.99)
        );
    }
    store.close().await;
    sqlx::query(AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&admin)
    .await?;
    admin.close().await;
    Ok(())
}
