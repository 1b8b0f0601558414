//! No hot query scans a whole table: each backend is seeded with thousands of documents, jobs
//! (with their mirrors and audit rows) and versions, and every plan `query_plans()` reports
//! must reach `documents`, `jobs`, `audit_log` and `document_versions` through an index.

use std::sync::Arc;

use capsid_core::jobs::state::JobStatus;
use capsid_core::ports::{AuditEntry, DocumentWrite, Store, WriteGuard};
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::conformance::jobs_claim::claimed;
use capsid_tests::conformance::support::{Toward, at, best, complete_patch, transition};
use capsid_tests::harness::{Backend, Fresh, full_scans};
use capsid_tests::load::post_jobs;
use capsid_tests::textgen::{Vocabulary, corpus_document};

const DOCUMENTS: usize = 5_000;
const JOBS: usize = 5_000;
const UPDATES: usize = 1_000;
/// The table aliases the adapters' SQL uses; SQLite names a scanned table by its alias.
const ALIASES: [&str; 6] = ["a", "d", "s", "t", "j", "v"];
/// The namespace the adapters explain their queries with: it must hold real data, or a
/// planner that expects no rows may choose any access path.
const NAMESPACE: &str = "capsid";

/// Document `i` of the seed, half of them in [`NAMESPACE`].
fn seed_document(vocabulary: &Vocabulary, seed: u64, i: usize, when: i64) -> DocumentWrite {
    let mut change = corpus_document(vocabulary, seed, i, 10, at(when));
    if i.is_multiple_of(2) {
        change.namespace = NAMESPACE.to_owned();
    }
    change
}

fn audit_of(change: &DocumentWrite) -> Vec<AuditEntry> {
    vec![AuditEntry {
        actor: "agent:seed".into(),
        action: "write".into(),
        namespace: Some(change.namespace.clone()),
        path: Some(change.path.clone()),
        params: serde_json::json!({}),
        at: change.at,
    }]
}

async fn seed<S: Store + 'static>(store: Arc<S>) {
    let vocabulary = Arc::new(Vocabulary::default());
    let mut writers = Vec::new();
    for w in 0..4 {
        let (store, vocabulary) = (store.clone(), vocabulary.clone());
        writers.push(tokio::spawn(async move {
            for i in (w..DOCUMENTS).step_by(4) {
                let change = seed_document(&vocabulary, 42, i, 0);
                let audit = audit_of(&change);
                store
                    .write_document(change, WriteGuard::Upsert, audit)
                    .await
                    .expect("seed document");
            }
            for i in (w..UPDATES).step_by(4) {
                let mut change = seed_document(&vocabulary, 43, i, 60);
                change.path = seed_document(&vocabulary, 42, i, 0).path;
                let audit = audit_of(&change);
                store
                    .write_document(change, WriteGuard::Upsert, audit)
                    .await
                    .expect("update document");
            }
        }));
    }
    for writer in writers {
        writer.await.expect("writer");
    }
    post_jobs(store.clone(), NAMESPACE, JOBS, 4, at(0)).await;
    for k in 0..20u32 {
        // `agent:driver` is the holder the adapters explain the held-claim query with.
        let actor = if k == 1 {
            "agent:driver".to_owned()
        } else {
            format!("agent:plan-{k}")
        };
        let job = claimed(&*store, &actor, best(NAMESPACE), at(120)).await;
        if k.is_multiple_of(2) {
            store
                .transition_job(
                    transition(
                        &job.id,
                        NAMESPACE,
                        JobStatus::Claimed,
                        &actor,
                        complete_patch(),
                        at(121),
                    )
                    .toward(JobStatus::Done),
                )
                .await
                .expect("complete")
                .expect("applied");
        }
    }
}

async fn no_full_scans<S: Backend>(fresh: Fresh<S>, analyze: bool) {
    seed(fresh.store.clone()).await;
    if analyze {
        fresh.probe.execute("ANALYZE").await;
    }
    let documents = fresh.probe.count("SELECT COUNT(*) FROM documents").await;
    assert_eq!(
        documents,
        (DOCUMENTS + JOBS) as i64,
        "seeded documents and job mirrors"
    );
    let plans = fresh.store.plans().await.expect("query plans");
    let mut report = String::new();
    let mut scans = Vec::new();
    for (name, plan) in &plans {
        report.push_str(&format!("--- {name}\n{plan}\n"));
        for line in full_scans(plan, &ALIASES) {
            scans.push(format!("{name}: {}", line.trim()));
        }
    }
    eprintln!("{} plans ({}):\n{report}", plans.len(), S::NAME);
    assert!(
        plans.len() >= 8,
        "the adapter explains its hot queries: {plans:?}"
    );
    assert_eq!(
        scans,
        Vec::<String>::new(),
        "full scans of hot tables in {}:\n{report}",
        S::NAME
    );
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_hot_queries_use_indexes() {
    let fresh = SqliteStore::fresh("sqlite_hot_queries_use_indexes")
        .await
        .expect("sqlite is always available");
    no_full_scans(fresh, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_hot_queries_use_indexes() {
    let Some(fresh) = PgStore::fresh("postgres_hot_queries_use_indexes").await else {
        return;
    };
    // Autovacuum analyzes a live database; the test does it at once instead of waiting.
    no_full_scans(fresh, true).await;
}
