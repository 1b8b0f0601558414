//! `capsid-load`: drives a real Capsid server with N concurrent MCP clients over HTTP and
//! prints calls per second and p50/p99 latency per tool. It starts a server in-process over a
//! fresh store (SQLite by default; with --database-url a new SQLite file, or a scratch
//! database created on the Postgres server the URL names and dropped afterwards) or targets
//! one (--url, --key).
//!
//! Modes: `calls` (a mix of read, search and write) and `claims` (post jobs, then every client
//! claims and completes until the queue is empty; checks each job was claimed exactly once).
//!
//! Calls mode then runs the same clients for the same time against a trivial axum handler on
//! the same runtime (`capsid_tests::baseline::http`, the transport's ceiling) and prints each
//! figure beside that baseline.

/// The allocator `capsid` ships with (mimalloc: per-thread caches for the per-call buffers),
/// so the benchmark's server allocates as the real one does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capsid_core::ports::{Store, WriteGuard};
use capsid_core::time::Timestamp;
use capsid_tests::baseline::http::BaselineServer;
use capsid_tests::baseline::{RawDb, raw_claims};
use capsid_tests::harness::ScratchDatabase;
use capsid_tests::server::{Client, ServerOptions, TestServer, claim_crowd};
use capsid_tests::textgen::{Rng, Vocabulary, corpus_document, reference_token};
use clap::Parser;
use serde_json::json;

/// Load generator for a Capsid server.
#[derive(Debug, Parser)]
struct Args {
    /// `calls` (read/search/write mix) or `claims` (the work queue).
    #[arg(long, default_value = "calls")]
    mode: String,
    /// Concurrent MCP clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Seconds to run (calls mode).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Weights of read,search,write in calls mode.
    #[arg(long, default_value = "1,0,0")]
    mix: String,
    /// The query every `search` call sends (calls mode). Without it, searches alternate
    /// between a document's unique reference token and a word drawn from the vocabulary.
    #[arg(long)]
    query: Option<String>,
    /// Documents to seed (calls mode), spread over 10 namespaces.
    #[arg(long, default_value_t = 1000)]
    docs: usize,
    /// Jobs to post (claims mode).
    #[arg(long, default_value_t = 2000)]
    jobs: usize,
    /// Target an existing server instead of starting one (needs --key).
    #[arg(long)]
    url: Option<String>,
    /// Bearer key for --url.
    #[arg(long)]
    key: Option<String>,
    /// Store for the in-process server (default: a fresh SQLite file in a temporary folder).
    /// A `sqlite://` URL names a file that must not exist yet; a `postgres://` URL is an admin
    /// URL: a scratch database is created on that server and dropped afterwards.
    #[arg(long)]
    database_url: Option<String>,
}

struct Samples(BTreeMap<&'static str, Vec<Duration>>);

impl Samples {
    fn rate(&self, elapsed: Duration) -> f64 {
        self.0.values().map(Vec::len).sum::<usize>() as f64 / elapsed.as_secs_f64()
    }

    /// The median of every call.
    fn p50(&self) -> Duration {
        let mut all: Vec<Duration> = self.0.values().flatten().copied().collect();
        all.sort_unstable();
        all.get(all.len() / 2).copied().unwrap_or_default()
    }

    fn report(&self, label: &str, elapsed: Duration) {
        let total: usize = self.0.values().map(Vec::len).sum();
        println!(
            "{label}: {total} in {:.2}s = {:.0} calls/s",
            elapsed.as_secs_f64(),
            self.rate(elapsed)
        );
        for (tool, v) in &self.0 {
            let mut v = v.clone();
            v.sort_unstable();
            let pct =
                |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0;
            println!(
                "  {tool:<8} n={:<8} {:>8.0}/s  p50 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms",
                v.len(),
                v.len() as f64 / elapsed.as_secs_f64(),
                pct(0.5),
                pct(0.99),
                pct(1.0)
            );
        }
    }
}

/// The store the in-process server runs on, and where the bare-statement baseline finds it.
struct Scratch {
    store: Arc<dyn Store>,
    place: Place,
}

enum Place {
    Postgres(ScratchDatabase),
    Sqlite(std::path::PathBuf),
}

async fn open_store(url: Option<&str>, dir: &tempfile::TempDir) -> Result<Scratch> {
    match url {
        Some(admin_url) if admin_url.starts_with("postgres") => {
            let database = ScratchDatabase::create(admin_url, "capsid_load").await?;
            let s = capsid_store_postgres::PgStore::connect_with(&database.url, 64)
                .await
                .context("connect postgres")?;
            s.migrate().await.context("migrate")?;
            println!(
                "store: postgres (scratch database {}, dropped afterwards)",
                database.name
            );
            Ok(Scratch {
                store: Arc::new(s),
                place: Place::Postgres(database),
            })
        }
        other => {
            let path = match other {
                Some(u) => {
                    let path = u.trim_start_matches("sqlite://");
                    let path = std::path::PathBuf::from(path.split('?').next().unwrap_or(path));
                    if path.exists() {
                        bail!(
                            "{} exists: give a SQLite file that does not exist yet (the run mints its own agent and seeds its own data)",
                            path.display()
                        );
                    }
                    path
                }
                None => dir.path().join("load.db"),
            };
            let url = format!("sqlite://{}", path.display());
            let s = capsid_store_sqlite::SqliteStore::open(&url)
                .await
                .context("open sqlite")?;
            s.migrate().await.context("migrate")?;
            println!("store: sqlite ({url})");
            Ok(Scratch {
                store: Arc::new(s),
                place: Place::Sqlite(path),
            })
        }
    }
}

async fn seed_documents(server: &TestServer, docs: usize) -> Result<()> {
    for ns in 0..10 {
        server.namespace(&format!("ns{ns:02}")).await;
    }
    let vocabulary = Vocabulary::default();
    let started = Instant::now();
    let now = server.service.now();
    for i in 0..docs {
        let write = corpus_document(&vocabulary, 7, i, 10, now);
        server
            .store
            .write_document(write, WriteGuard::Upsert, Vec::new())
            .await
            .context("seed")?;
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "seeded {docs} documents in {secs:.1}s ({:.0} writes/s through the store)",
        docs as f64 / secs
    );
    Ok(())
}

/// The calls mode against `url`, then the same clients against the baseline.
async fn calls_with_baseline(args: &Args, url: &str, key: &str) -> Result<()> {
    let (capsid, took) = calls(args, url, key).await?;
    capsid.report("calls", took);
    let baseline = BaselineServer::start().await?;
    let (bare, bare_took) = calls(args, &baseline.url, key).await?;
    baseline.stop();
    bare.report("baseline (trivial axum handler, same client)", bare_took);
    println!(
        "capsid/baseline: {:.2}x of the calls/s, p50 {:.3} ms vs {:.3} ms ({:.2}x)",
        capsid.rate(took) / bare.rate(bare_took).max(1e-9),
        capsid.p50().as_secs_f64() * 1000.0,
        bare.p50().as_secs_f64() * 1000.0,
        capsid.p50().as_secs_f64() / bare.p50().as_secs_f64().max(1e-9)
    );
    Ok(())
}

async fn calls(args: &Args, url: &str, key: &str) -> Result<(Samples, Duration)> {
    let weights: Vec<usize> = args
        .mix
        .split(',')
        .map(|w| w.trim().parse().unwrap_or(0))
        .collect();
    if weights.len() != 3 || weights.iter().sum::<usize>() == 0 {
        bail!("--mix needs three weights for read,search,write, e.g. 1,0,0");
    }
    // The seeded documents' names, generated once: the clients' own work stays small.
    let vocabulary = Vocabulary::default();
    let targets: Arc<Vec<(String, String)>> = Arc::new(
        (0..args.docs.max(1))
            .map(|i| {
                let doc = corpus_document(&vocabulary, 7, i, 10, Timestamp::from_millis(0));
                (doc.namespace, doc.path)
            })
            .collect(),
    );
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let (url, key, weights, docs, targets, query) = (
            url.to_owned(),
            key.to_owned(),
            weights.clone(),
            args.docs.max(1),
            targets.clone(),
            args.query.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let client = Client::connect(&url, &key, ()).await;
            let vocabulary = Vocabulary::default();
            let mut rng = Rng::new(c as u64 + 1);
            let mut out: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
            let total: usize = weights.iter().sum();
            let mut n = 0usize;
            while Instant::now() < deadline {
                let pick = rng.below(total);
                let i = rng.below(docs);
                let (namespace, path) = &targets[i];
                let (tool, call) = if pick < weights[0] {
                    ("read", json!({"namespace": namespace, "path": path}))
                } else if pick < weights[0] + weights[1] {
                    let q = match &query {
                        Some(q) => q.clone(),
                        None if n.is_multiple_of(2) => reference_token(i),
                        None => vocabulary.draw(&mut rng).to_owned(),
                    };
                    ("search", json!({"query": q}))
                } else {
                    ("write", json!({"namespace": format!("ns{:02}", c % 10), "path": format!("load/{c}/{n}.md"), "title": "load", "body": vocabulary.sentence(&mut rng)}))
                };
                let t = Instant::now();
                let r = client.call_unchecked(tool, call).await;
                let dt = t.elapsed();
                if let Err(e) = r {
                    eprintln!("client {c}: {tool} failed: {e}");
                }
                out.entry(tool).or_default().push(dt);
                n += 1;
            }
            out
        }));
    }
    let mut all: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
    for t in tasks {
        for (k, v) in t.await? {
            all.entry(k).or_default().extend(v);
        }
    }
    Ok((Samples(all), started.elapsed()))
}

async fn claims(args: &Args, server: &TestServer, raw: &RawDb) -> Result<()> {
    let run = claim_crowd(server, args.clients, args.jobs).await;
    println!(
        "claims: {} jobs claimed and completed by {} clients in {:.2}s = {:.0} claims/s (each a claim + a complete over MCP); distinct {}; races retried {}",
        run.claimed,
        args.clients,
        run.elapsed.as_secs_f64(),
        run.claimed as f64 / run.elapsed.as_secs_f64(),
        run.distinct,
        run.retries
    );
    let (bare, doubled) = raw_claims(raw, args.jobs, args.clients).await?;
    let rate = run.claimed as f64 / run.elapsed.as_secs_f64();
    println!(
        "baseline (the bare queue statements on the same database, {} claimers): {bare:.0} claims/s, {doubled} double claims; capsid/baseline {:.2}x",
        args.clients,
        rate / bare.max(1e-9)
    );
    // The figure and its in-run baseline on one line, for tables and scripts.
    println!(
        "claims-summary: engine={} clients={} jobs={} capsid={rate:.0}/s baseline={bare:.0}/s ratio={:.2}x double_claims={}",
        raw.engine(),
        args.clients,
        args.jobs,
        rate / bare.max(1e-9),
        run.claimed.saturating_sub(run.distinct) + doubled
    );
    if run.distinct != run.claimed || run.claimed != args.jobs {
        bail!(
            "double claims or lost jobs: {} claims, {} distinct, {} posted",
            run.claimed,
            run.distinct,
            args.jobs
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(url) = &args.url {
        let key = args.key.as_deref().context("--url needs --key")?;
        if args.mode != "calls" {
            bail!("only calls mode can target an external server");
        }
        return calls_with_baseline(
            &args,
            &format!("{}/ops/mcp", url.trim_end_matches('/')),
            key,
        )
        .await;
    }
    let dir = tempfile::tempdir()?;
    let scratch = open_store(args.database_url.as_deref(), &dir).await?;
    let outcome = run_in_process(&args, &scratch).await;
    if let Place::Postgres(database) = scratch.place {
        database.drop_database().await?;
    }
    outcome
}

/// Starts the server over the scratch store and runs the chosen mode against it.
async fn run_in_process(args: &Args, scratch: &Scratch) -> Result<()> {
    let server = TestServer::start(scratch.store.clone(), ServerOptions::default()).await;
    let key = server
        .mint(
            "load",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    match args.mode.as_str() {
        "calls" => {
            seed_documents(&server, args.docs).await?;
            calls_with_baseline(args, &server.ops_url(), &key).await?;
        }
        "claims" => {
            let raw = match &scratch.place {
                Place::Postgres(database) => RawDb::postgres(&database.url, 64).await?,
                Place::Sqlite(path) => RawDb::sqlite(path, 4).await?,
            };
            claims(args, &server, &raw).await?;
            raw.close().await;
        }
        other => bail!("unknown mode {other}: calls or claims"),
    }
    server.stop().await;
    Ok(())
}
