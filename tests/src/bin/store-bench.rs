//! `store-bench`: storage benchmarks (not tests). Seeds N documents through `write_document`
//! (the single-document write rate), runs M searches (rare and common terms, some within a
//! namespace) reporting latency percentiles, then posts J jobs and runs C concurrent claimers
//! (claim, complete, claim again) reporting claims per second and verifying zero double
//! claims. Each figure is printed beside its baseline, measured in the same run on the same
//! database (`capsid_tests::baseline`: the raw SQL the operation comes down to), and the ratio
//! of the two.
//!
//! `cargo run --release -p capsid-tests --bin store-bench -- --backend sqlite`

/// The allocator `capsid` ships with (mimalloc), so the stores under test allocate as they do
/// in the shipped binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use capsid_core::ports::{AuditEntry, DocumentWrite, JobCounts, Store, WriteGuard};
use capsid_core::time::Timestamp;
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::baseline::{
    RawDb, raw_claims, raw_search, raw_writes, raw_writes_one_connection,
};
use capsid_tests::harness::{POSTGRES_URL_VAR, ScratchDatabase};
use capsid_tests::load::{post_jobs, run_claimers};
use capsid_tests::textgen::{Rng, Vocabulary, corpus_document, reference_token};
use clap::{Parser, ValueEnum};

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
    /// Documents written by the concurrent writers (after the seeding).
    #[arg(long, default_value_t = 8_000)]
    concurrent_documents: usize,
    /// Concurrent writers.
    #[arg(long, default_value_t = 32)]
    writers: usize,
    /// Postgres pool size (default: the adapter's default).
    #[arg(long)]
    pool: Option<u32>,
    /// Namespaces the documents spread over.
    #[arg(long, default_value_t = 20)]
    namespaces: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Postgres: keep the benchmark's database afterwards (its name is printed), to study
    /// its plans with `EXPLAIN`; drop it yourself when done.
    #[arg(long)]
    keep_database: bool,
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
                let raw = RawDb::sqlite(&path, 4).await?;
                bench(store.clone(), &raw, &args, Some(&path)).await?;
                raw.close().await;
                store.close().await;
                Ok(())
            }
            BackendName::Postgres => {
                let Some(admin_url) = args.url.clone() else {
                    bail!("give --url or set {POSTGRES_URL_VAR} to the Postgres admin URL");
                };
                let scratch = ScratchDatabase::create(&admin_url, "capsid_bench").await?;
                let (name, url) = (scratch.name.clone(), scratch.url.clone());
                let store = PgStore::connect_with(
                    &url,
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
                let raw = RawDb::postgres(
                    &url,
                    args.pool
                        .unwrap_or(capsid_store_postgres::DEFAULT_MAX_CONNECTIONS),
                )
                .await?;
                let outcome = bench(store.clone(), &raw, &args, None).await;
                raw.close().await;
                store.close().await;
                if args.keep_database {
                    println!("kept database {name} (--keep-database): {url}");
                } else {
                    scratch.drop_database().await?;
                }
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

/// The audit row of a benchmark write.
fn write_audit(change: &DocumentWrite) -> Vec<AuditEntry> {
    vec![AuditEntry {
        actor: "agent:bench".into(),
        action: "write".into(),
        namespace: Some(change.namespace.clone()),
        path: Some(change.path.clone()),
        params: serde_json::json!({"mode": "replace"}),
        at: change.at,
    }]
}

/// `figure (baseline B, ratio R)`: how far the store is from the raw statement.
fn against(figure: f64, baseline: f64) -> String {
    format!(
        "baseline {baseline:.0}, {:.2}x of it",
        if baseline > 0.0 {
            figure / baseline
        } else {
            0.0
        }
    )
}

/// `sqlite`: the SQLite file, for the baseline that needs a connection of its own.
async fn bench<S: Store + 'static>(
    store: Arc<S>,
    raw: &RawDb,
    args: &Args,
    sqlite: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let start = Timestamp::parse("2026-03-01T00:00:00Z").context("epoch")?;
    let vocabulary = Vocabulary::default();

    // 1. Seeding: one write_document (snapshot check, insert, FTS, audit) after another.
    let began = Instant::now();
    let mut writes = Vec::with_capacity(args.documents);
    let mut bytes = 0usize;
    for i in 0..args.documents {
        let change = corpus_document(&vocabulary, args.seed, i, args.namespaces, start);
        bytes += change.body.as_ref().map_or(0, String::len);
        let audit = write_audit(&change);
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
    let sample: Vec<String> = (0..args.documents.min(5_000))
        .map(|i| {
            corpus_document(&vocabulary, args.seed, i, args.namespaces, start)
                .body
                .unwrap_or_default()
        })
        .collect();
    let sample = Arc::new(sample);
    let raw_one = raw_writes(raw, sample.clone(), 1).await?;
    println!(
        "          1 writer: {:.0} writes/s ({}: one durable INSERT per commit, {} rows)",
        args.documents as f64 / seeding.as_secs_f64(),
        against(args.documents as f64 / seeding.as_secs_f64(), raw_one),
        sample.len()
    );

    // 1b. Concurrent writers: the same write_document from `writers` tasks at once.
    let began = Instant::now();
    let mut tasks = Vec::new();
    let first = args.documents;
    for w in 0..args.writers.max(1) {
        let store = store.clone();
        let vocabulary = vocabulary.clone();
        let (seed, namespaces, writers, count) = (
            args.seed,
            args.namespaces,
            args.writers.max(1),
            args.concurrent_documents,
        );
        tasks.push(tokio::spawn(async move {
            for i in (first + w..first + count).step_by(writers) {
                let change = corpus_document(&vocabulary, seed, i, namespaces, start);
                let audit = write_audit(&change);
                store
                    .write_document(change, WriteGuard::Create, audit)
                    .await
                    .with_context(|| format!("concurrent document {i}"))?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let concurrent = args.concurrent_documents as f64 / began.elapsed().as_secs_f64();
    let raw_many = raw_writes(raw, sample.clone(), args.writers).await?;
    println!(
        "writes    {} documents by {} writers: {concurrent:.0} writes/s ({})",
        args.concurrent_documents,
        args.writers,
        against(concurrent, raw_many)
    );
    if let Some(path) = sqlite {
        let one = raw_writes_one_connection(path, sample.clone(), args.writers).await?;
        println!(
            "          {} writers: {concurrent:.0} writes/s ({}: {} raw BEGIN IMMEDIATE; INSERT; COMMIT loops over one connection)",
            args.writers,
            against(concurrent, one),
            args.writers
        );
    }

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
    let texts: Vec<String> = queries.iter().map(|(_, text, _)| text.clone()).collect();
    raw_search(raw, &texts[..texts.len().min(100)]).await?;
    let bare = raw_search(raw, &texts).await?;
    let ratio = |p: f64| {
        let (mut a, mut b) = (all.clone(), bare.clone());
        a.sort_unstable();
        b.sort_unstable();
        percentile(&a, p).as_secs_f64() / percentile(&b, p).as_secs_f64().max(1e-9)
    };
    let (p50, p99) = (ratio(50.0), ratio(99.0));
    println!("{}", summary("  all", all));
    println!("{}", summary("  raw (baseline)", bare));
    println!(
        "          search/baseline: p50 {p50:.2}x, p99 {p99:.2}x (the bare ranked match, no filter)"
    );
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
    let (bare_rate, bare_doubles) = raw_claims(raw, args.jobs, args.claimers).await?;
    println!(
        "          {} ({} claims + completes by {} claimers, {bare_doubles} double claims)",
        against(run.claims as f64 / run.elapsed.as_secs_f64(), bare_rate),
        args.jobs,
        args.claimers
    );
    if bare_doubles > 0 {
        bail!("the baseline queue claimed {bare_doubles} rows twice");
    }
    if !clean {
        bail!(
            "the claim run was not clean: {:?} {:?} {counts:?}",
            run.double_claims,
            run.anomalies
        );
    }
    Ok(())
}
