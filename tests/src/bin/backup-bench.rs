//! `backup-bench`: the backup and the restore of N documents with their versions (not a
//! test). Seeds a store in bulk through the import port (each document, one prior version and
//! an audit row), then times one backup run to a local media folder (dump, sidecars,
//! manifest, markdown mirror, retention, pruning) and one restore into a fresh store of the
//! chosen engine, printing seconds and the peak RSS of each phase (`VmHWM`, reset between
//! phases), beside the baseline of the raw dump size.
//!
//! `cargo run --release -p capsid-tests --bin backup-bench -- --backend sqlite`

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use async_trait::async_trait;
use capsid_blobs::ObjectBlobStore;
use capsid_core::backup::rows::{Cell, Row};
use capsid_core::backup::summary::NoProgress;
use capsid_core::backup::tables::{AUDIT_LOG, DOCUMENT_VERSIONS, DOCUMENTS, EXPORTED, TableSpec};
use capsid_core::ports::{RowSource, Store};
use capsid_core::service::{Service, ServiceConfig};
use capsid_core::time::{ManualClock, Timestamp};
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::{POSTGRES_URL_VAR, with_database};
use capsid_tests::server::TestEntropy;
use capsid_tests::textgen::{Vocabulary, corpus_document};
use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendName {
    Sqlite,
    Postgres,
}

/// Backup and restore benchmark.
#[derive(Debug, Parser)]
struct Args {
    /// Which store (source and restore target).
    #[arg(long, value_enum)]
    backend: BackendName,
    /// Postgres admin URL (fresh databases are created and dropped).
    #[arg(long, env = POSTGRES_URL_VAR)]
    url: Option<String>,
    /// Documents to seed (each with one version and one audit row).
    #[arg(long, default_value_t = 100_000)]
    documents: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// `VmHWM` (peak resident set) of this process in MB, from `/proc/self/status`.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Resets `VmHWM` to the current RSS, so the next phase's peak is its own.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Generated rows: documents, then one version per document, then one audit row each.
struct Seed {
    documents: usize,
    seed: u64,
    vocabulary: Vocabulary,
    start: Timestamp,
    table: usize,
    next: usize,
}

const SEEDED: [&TableSpec; 3] = [&DOCUMENTS, &DOCUMENT_VERSIONS, &AUDIT_LOG];

#[async_trait]
impl RowSource for Seed {
    async fn next_table(&mut self) -> Result<Option<&'static TableSpec>, String> {
        let table = SEEDED.get(self.table).copied();
        self.table += 1;
        self.next = 0;
        Ok(table)
    }

    async fn next_rows(&mut self) -> Result<Option<Vec<Row>>, String> {
        if self.next >= self.documents {
            return Ok(None);
        }
        let end = (self.next + 500).min(self.documents);
        let mut rows = Vec::with_capacity(end - self.next);
        for i in self.next..end {
            let doc = corpus_document(&self.vocabulary, self.seed, i, 20, self.start);
            let at = Cell::Text(doc.at.to_string());
            let t = |s: &str| Cell::Text(s.to_owned());
            let id = Cell::Int(i as i64 + 1);
            let row = match SEEDED[self.table - 1].name {
                "documents" => vec![
                    id,
                    t(&doc.namespace),
                    t(&doc.path),
                    doc.title.as_deref().map_or(Cell::Null, t),
                    doc.body.as_deref().map_or(Cell::Null, t),
                    t(doc.doc_type.as_deref().unwrap_or("note")),
                    t("published"),
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    at.clone(),
                    at,
                ],
                "document_versions" => vec![
                    id.clone(),
                    id,
                    t(&doc.namespace),
                    t(&doc.path),
                    doc.title.as_deref().map_or(Cell::Null, t),
                    t(&format!(
                        "An earlier draft. {}",
                        doc.body.as_deref().unwrap_or("")
                    )),
                    t("note"),
                    t("draft"),
                    Cell::Null,
                    at,
                ],
                _ => vec![
                    id,
                    t("agent:bench"),
                    t("write"),
                    t(&doc.namespace),
                    t(&doc.path),
                    t("{\"mode\":\"replace\"}"),
                    at,
                ],
            };
            rows.push(row);
        }
        self.next = end;
        Ok(Some(rows))
    }
}

async fn bench<S: Store + 'static>(
    source: Arc<S>,
    target: Arc<S>,
    args: &Args,
) -> anyhow::Result<()> {
    let start = Timestamp::parse("2026-11-30T08:00:00Z").context("epoch")?;
    let clock = Arc::new(ManualClock::new(start.plus_millis(3_600_000)));
    let began = Instant::now();
    let mut seed = Seed {
        documents: args.documents,
        seed: args.seed,
        vocabulary: Vocabulary::default(),
        start,
        table: 0,
        next: 0,
    };
    source.import_tables(&mut seed).await.context("seeding")?;
    println!(
        "seed      {} documents, {} versions, {} audit rows in {:.1} s (bulk import)",
        args.documents,
        args.documents,
        args.documents,
        began.elapsed().as_secs_f64()
    );
    let media_dir = tempfile::tempdir()?;
    let media = Arc::new(ObjectBlobStore::folder(media_dir.path().join("media"))?);
    let service = Service::new(
        source.clone(),
        clock.clone(),
        Arc::new(TestEntropy),
        bench_config(),
    )
    .with_media(media.clone());

    reset_peak();
    let rss_before = peak_rss_mb();
    let began = Instant::now();
    let summary = service
        .run_backup(&NoProgress)
        .await
        .context("the backup")?;
    let backup_secs = began.elapsed().as_secs_f64();
    let backup_peak = peak_rss_mb();
    if !summary.ran || summary.prune_refused.is_some() {
        bail!("the backup did not run cleanly: {summary:?}");
    }
    let dump_bytes: u64 = walk(&media_dir.path().join("media/backups/json"))?;
    println!(
        "backup    {:.1} s: {} tables, {:.1} MB of JSON, {} markdown files; peak RSS {:.0} MB (at start {:.0} MB)",
        backup_secs,
        summary.tables.len(),
        dump_bytes as f64 / 1e6,
        summary.markdown_written,
        backup_peak,
        rss_before
    );

    // Baseline: reading the dump's bytes back, nothing else.
    let began = Instant::now();
    let mut read = 0u64;
    for table in EXPORTED.iter().take(4) {
        let run = summary.run.as_deref().unwrap_or_default();
        let key = capsid_core::backup::manifest::table_key(run, table.name);
        let mut reader = capsid_core::ports::BlobStore::reader(media.as_ref(), &key).await?;
        while let Some(chunk) = reader.next_chunk().await? {
            read += chunk.len() as u64;
        }
    }
    println!(
        "baseline  reading the dump's first four tables ({:.1} MB) back: {:.2} s",
        read as f64 / 1e6,
        began.elapsed().as_secs_f64()
    );

    let restorer = Service::new(target.clone(), clock, Arc::new(TestEntropy), bench_config());
    reset_peak();
    let rss_before = peak_rss_mb();
    let began = Instant::now();
    let report = restorer
        .restore_dump(media.as_ref(), summary.run.as_deref(), &NoProgress)
        .await
        .map_err(|e| anyhow::anyhow!("the restore: {e}"))?;
    let restore_secs = began.elapsed().as_secs_f64();
    if !report.verified {
        bail!("the restore did not verify: {report:?}");
    }
    println!(
        "restore   {:.1} s: {} rows verified, fts {}; peak RSS {:.0} MB (at start {:.0} MB)",
        restore_secs,
        report.tables.iter().map(|t| t.restored).sum::<u64>(),
        report.fts,
        peak_rss_mb(),
        rss_before
    );
    Ok(())
}

fn walk(dir: &std::path::Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        total += if entry.file_type()?.is_dir() {
            walk(&entry.path())?
        } else {
            entry.metadata()?.len()
        };
    }
    Ok(total)
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
                let open = |name: &str| {
                    let path = dir.path().join(name);
                    async move {
                        let store =
                            SqliteStore::open(&format!("sqlite://{}", path.display())).await?;
                        store.migrate().await?;
                        anyhow::Ok(Arc::new(store))
                    }
                };
                let (source, target) = (open("source.db").await?, open("target.db").await?);
                println!("backend sqlite ({})", dir.path().display());
                bench(source, target, &args).await
            }
            BackendName::Postgres => {
                let Some(admin_url) = args.url.clone() else {
                    bail!("give --url or set {POSTGRES_URL_VAR} to the Postgres admin URL");
                };
                let names = [
                    format!("capsid_bbench_src_{}", std::process::id()),
                    format!("capsid_bbench_dst_{}", std::process::id()),
                ];
                let mut stores = Vec::new();
                for name in &names {
                    let url =
                        capsid_store_postgres::create_scratch_database(&admin_url, name).await?;
                    let store = PgStore::connect(&with_database(&url, name)).await?;
                    store.migrate().await?;
                    stores.push(Arc::new(store));
                }
                println!("backend postgres");
                let outcome = bench(stores[0].clone(), stores[1].clone(), &args).await;
                for (store, name) in stores.iter().zip(&names) {
                    store.close().await;
                    capsid_store_postgres::drop_scratch_database(&admin_url, name).await?;
                }
                outcome
            }
        }
    })
}

/// Both services of the bench share one signing secret: the dump is sealed under it and the
/// restore verifies it.
fn bench_config() -> ServiceConfig {
    ServiceConfig {
        signing_secret: Some("capsid-backup-bench".into()),
        operator_keys: Vec::new(),
        ..Default::default()
    }
}
