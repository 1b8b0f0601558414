//! `store-bench`: storage benchmarks (not tests). Seeds N documents through `write_document`
//! (the single-document write rate), runs M searches (rare and common terms, some within a
//! namespace) reporting latency percentiles, then posts J jobs and runs C concurrent claimers
//! (claim, complete, claim again) reporting claims per second and verifying zero double
//! claims.
//!
//! `cargo run --release -p capsid-tests --bin store-bench -- --backend sqlite`

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use capsid_core::ports::{AuditEntry, JobCounts, Store, WriteGuard};
use capsid_core::time::Timestamp;
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::{POSTGRES_URL_VAR, with_database};
use capsid_tests::load::{post_jobs, run_claimers};
use capsid_tests::textgen::{Rng, Vocabulary, corpus_document, reference_token};
use clap::{Parser, ValueEnum};
use sqlx::AssertSqlSafe;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendName {
    Sqlite,
    Postgres,
}

/// Storage benchmarks for the Capsid stores.
#[derive(Debug, Parser)]
struct Args {
    /// Which store.
    #[arg(long, value_enum)]
    backend: BackendName,
    /// Postgres admin URL (a fresh database is created and dropped).
    #[arg(long, env = POSTGRES_URL_VAR)]
    url: Option<String>,
    /// Documents to seed.
    #[arg(long, default_value_t = 100_000)]
    documents: usize,
    /// Search queries to time.
    #[arg(long, default_value_t = 2_000)]
    searches: usize,
    /// Jobs to post and claim.
    #[arg(long, default_value_t = 10_000)]
    jobs: usize,
    /// Concurrent claimers.
    #[arg(long, default_value_t = 64)]
    claimers: usize,
    /// Postgres pool size (default: the adapter's default).
    #[arg(long)]
    pool: Option<u32>,
    /// Namespaces the documents spread over.
    #[arg(long, default_value_t = 20)]
    namespaces: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match args.backend {
            BackendName::Sqlite => {
                let dir = tempfile::tempdir()?;
                let path = dir.path().join("bench.db");
                let store = SqliteStore::open(&format!("sqlite://{}", path.display())).await?;
                store.migrate().await?;
                println!("backend sqlite ({})", path.display());
                let store = Arc::new(store);
                bench(store.clone(), &args).await?;
                store.close().await;
                Ok(())
            }
            BackendName::Postgres => {
                let Some(admin_url) = args.url.clone() else {
                    bail!("give --url or set {POSTGRES_URL_VAR} to the Postgres admin URL");
                };
                let admin = sqlx::PgPool::connect(&admin_url)
                    .await
                    .context("connect to the admin database")?;
                let name = format!("capsid_bench_{}", std::process::id());
                sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .execute(&admin)
                    .await?;
                let store = PgStore::connect_with(
                    &with_database(&admin_url, &name),
                    args.pool
                        .unwrap_or(capsid_store_postgres::DEFAULT_MAX_CONNECTIONS),
                )
                .await?;
                store.migrate().await?;
                println!(
                    "backend postgres (database {name}, pool {})",
                    args.pool
                        .unwrap_or(capsid_store_postgres::DEFAULT_MAX_CONNECTIONS)
                );
                let store = Arc::new(store);
                let outcome = bench(store.clone(), &args).await;
                store.close().await;
                sqlx::query(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .execute(&admin)
                .await?;
                outcome
            }
        }
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn summary(label: &str, mut samples: Vec<Duration>) -> String {
    samples.sort_unstable();
    let mean = samples.iter().sum::<Duration>() / samples.len().max(1) as u32;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "{label:<22} n={:<6} p50 {:>7.3} ms  p95 {:>7.3} ms  p99 {:>7.3} ms  mean {:>7.3} ms  max {:>8.3} ms",
        samples.len(),
        ms(percentile(&samples, 50.0)),
        ms(percentile(&samples, 95.0)),
        ms(percentile(&samples, 99.0)),
        ms(mean),
        ms(samples.last().copied().unwrap_or_default()),
    )
}

async fn bench<S: Store + 'static>(store: Arc<S>, args: &Args) -> anyhow::Result<()> {
    let start = Timestamp::parse("2026-03-01T00:00:00Z").context("epoch")?;
    let vocabulary = Vocabulary::default();

    // 1. Seeding: one write_document (snapshot check, insert, FTS, audit) after another.
    let began = Instant::now();
    let mut writes = Vec::with_capacity(args.documents);
    let mut bytes = 0usize;
    for i in 0..args.documents {
        let change = corpus_document(&vocabulary, args.seed, i, args.namespaces, start);
        bytes += change.body.as_ref().map_or(0, String::len);
        let audit = vec![AuditEntry {
            actor: "agent:bench".into(),
            action: "write".into(),
            namespace: Some(change.namespace.clone()),
            path: Some(change.path.clone()),
            params: serde_json::json!({"mode": "replace"}),
            at: change.at,
        }];
        let t = Instant::now();
        store
            .write_document(change, WriteGuard::Create, audit)
            .await
            .with_context(|| format!("seed document {i}"))?;
        writes.push(t.elapsed());
        if (i + 1) % (args.documents / 10).max(1) == 0 {
            eprintln!(
                "  seeded {} documents ({:.0}/s)",
                i + 1,
                (i + 1) as f64 / began.elapsed().as_secs_f64()
            );
        }
    }
    let seeding = began.elapsed();
    println!(
        "seed      {} documents ({:.1} MB of bodies) in {:.1} s: {:.0} writes/s",
        args.documents,
        bytes as f64 / 1e6,
        seeding.as_secs_f64(),
        args.documents as f64 / seeding.as_secs_f64()
    );
    println!("{}", summary("  write_document", writes));

    // 2. Search: rare, mid and common terms, phrases of two, a third within one namespace.
    let mut rng = Rng::new(args.seed ^ 0x5EA2C4);
    let mut queries = Vec::with_capacity(args.searches);
    for q in 0..args.searches {
        let (kind, text) = match q % 5 {
            0 => (
                "rare (1 doc)",
                reference_token(rng.below(args.documents.max(1))),
            ),
            1 => (
                "tail word",
                vocabulary.word(8_000 + rng.below(12_000)).to_owned(),
            ),
            2 => ("mid word", vocabulary.word(100 + rng.below(900)).to_owned()),
            3 => ("common word", vocabulary.word(rng.below(60)).to_owned()),
            _ => (
                "two words",
                format!(
                    "{} {}",
                    vocabulary.word(40 + rng.below(200)),
                    vocabulary.word(300 + rng.below(3000))
                ),
            ),
        };
        let namespace =
            (rng.below(3) == 0).then(|| format!("ns{:02}", rng.below(args.namespaces.max(1))));
        queries.push((kind, text, namespace));
    }
    for (_, text, namespace) in queries.iter().take(100) {
        store
            .search_documents(text, namespace.as_deref(), None, 25)
            .await?;
    }
    let mut all = Vec::new();
    let mut by_kind: Vec<(&str, Vec<Duration>)> = Vec::new();
    let mut scoped = Vec::new();
    let mut hits = 0usize;
    for (kind, text, namespace) in &queries {
        let t = Instant::now();
        let found = store
            .search_documents(text, namespace.as_deref(), None, 25)
            .await?;
        let took = t.elapsed();
        hits += found.len();
        all.push(took);
        if namespace.is_some() {
            scoped.push(took);
        }
        match by_kind.iter_mut().find(|(k, _)| k == kind) {
            Some((_, v)) => v.push(took),
            None => by_kind.push((kind, vec![took])),
        }
    }
    println!(
        "search    {} queries over {} documents, {:.1} hits per query",
        queries.len(),
        args.documents,
        hits as f64 / queries.len().max(1) as f64
    );
    println!("{}", summary("  all", all));
    println!("{}", summary("  with namespace", scoped));
    for (kind, samples) in by_kind {
        println!("{}", summary(&format!("  {kind}"), samples));
    }

    // 3. Claims: post the jobs, then the claimer crowd.
    let posting = post_jobs(store.clone(), "bench-jobs", args.jobs, 8, start).await;
    println!(
        "jobs      posted {} in {:.1} s: {:.0} posts/s (8 posters)",
        args.jobs,
        posting.as_secs_f64(),
        args.jobs as f64 / posting.as_secs_f64()
    );
    let run = run_claimers(
        store.clone(),
        "bench-jobs",
        args.claimers,
        start.plus_millis(86_400_000),
        0,
    )
    .await;
    let counts = store.job_counts("bench-jobs", start).await?;
    println!(
        "claims    {} by {} claimers in {:.2} s: {:.0} claims/s (each claim + complete), {} lost races",
        run.claims,
        args.claimers,
        run.elapsed.as_secs_f64(),
        run.claims as f64 / run.elapsed.as_secs_f64(),
        run.lost_races
    );
    let done = JobCounts {
        queued: 0,
        claimed: 0,
        blocked: 0,
        done_today: args.jobs as u64,
    };
    let clean = run.double_claims.is_empty()
        && run.anomalies.is_empty()
        && run.overlapping_holds == 0
        && run.claims == args.jobs
        && counts == done;
    println!(
        "          double claims {}, holders seen with two jobs {} ({} samples), anomalies {}, all done: {}",
        run.double_claims.len(),
        run.overlapping_holds,
        run.monitor_samples,
        run.anomalies.len(),
        counts == done
    );
    if !clean {
        bail!(
            "the claim run was not clean: {:?} {:?} {counts:?}",
            run.double_claims,
            run.anomalies
        );
    }
    Ok(())
}
