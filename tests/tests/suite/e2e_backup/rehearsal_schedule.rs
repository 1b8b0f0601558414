//! The weekly restore rehearsal (issue 56, item 3) on both stores, driven by the server's
//! `ManualClock` through the scheduler's `rehearsal` task: nothing to rehearse before the
//! first dump (and nothing recorded), then the newest dump restored into a throwaway store of
//! the same engine and verified at the first turn, not again within the interval, again after
//! it; a dump whose file changed is recorded as refused naming the file; every throwaway store
//! made is removed. The interval is the server's (`with_rehearse_every`).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use capsid_core::backup::rehearsal::{RehearsalOutcome, RehearseEvery};
use capsid_core::ports::{BlobStore, ScratchStore, ScratchStores, Store};
use capsid_core::schedule::Task;
use capsid_core::time::{DAY_MS, MINUTE_MS, Timestamp};
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::{Backend, Fresh};
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

use super::{as_blobs, back_up, media_folder};

/// Throwaway stores of engine `S`, each a fresh migrated store; counts what it made and what
/// it removed.
struct Throwaway<S: Backend> {
    live: Mutex<Vec<(String, Fresh<S>)>>,
    made: Mutex<usize>,
}

#[async_trait]
impl<S: Backend> ScratchStores for Throwaway<S> {
    async fn create(&self) -> Result<ScratchStore, String> {
        let fresh = S::fresh("rehearsal_scratch").await.ok_or("no store")?;
        let name = {
            let mut made = self.made.lock().expect("lock");
            *made += 1;
            format!("scratch-{made}")
        };
        let store: Arc<dyn Store> = fresh.store.clone();
        self.live.lock().expect("lock").push((name.clone(), fresh));
        Ok(ScratchStore { store, name })
    }

    async fn discard(&self, name: &str) {
        let fresh = {
            let mut live = self.live.lock().expect("lock");
            let at = live
                .iter()
                .position(|(n, _)| n == name)
                .expect("a live scratch store");
            live.remove(at).1
        };
        fresh.finish().await;
    }
}

/// The rehearsal task's report at `at`.
async fn turn_at(s: &TestServer, at: Timestamp) -> Value {
    s.clock.set(at);
    let report = s
        .service
        .tick_now(Some(Task::Rehearsal))
        .await
        .expect("tick");
    let run = report
        .run_of(Task::Rehearsal)
        .expect("the rehearsal task ran");
    assert!(run.error.is_none(), "{at}: {:?}", run.error);
    run.report.clone()
}

async fn the_rehearsal_runs_weekly_on_the_clock<S: Backend>() {
    let Some(fresh) = S::fresh("rehearsal_weekly").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let blobs = as_blobs(&media);
    let scratch = Arc::new(Throwaway::<S> {
        live: Mutex::new(Vec::new()),
        made: Mutex::new(0),
    });
    let store: Arc<dyn Store> = fresh.store.clone();
    let (wired, maker) = (blobs.clone(), scratch.clone());
    let s = TestServer::start_customized(
        store,
        ServerOptions::default(),
        |_| None,
        move |svc| {
            svc.with_media(wired)
                .with_scratch_stores(maker)
                .with_rehearse_every(RehearseEvery::default())
        },
    )
    .await;
    s.namespace("alpha").await;
    s.admin("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": "Rehearsed every week.\n"})).await;

    let t0 = Timestamp::parse("2026-03-02T10:00:00Z").expect("an instant");
    // No dump yet: nothing rehearsed, nothing recorded.
    let report = turn_at(&s, t0).await;
    assert_eq!(report["rehearsed"], false, "{report}");
    assert_eq!(s.service.last_rehearsal().await.expect("read"), None);

    s.clock.set(t0.plus_millis(MINUTE_MS));
    let summary = back_up(&s).await;
    let run = summary.run.clone().expect("a run");
    let t1 = t0.plus_millis(2 * MINUTE_MS);
    let report = turn_at(&s, t1).await;
    assert_eq!(
        (report["rehearsed"].clone(), report["ok"].clone()),
        (json!(true), json!(true)),
        "{report}"
    );
    let record = s
        .service
        .last_rehearsal()
        .await
        .expect("read")
        .expect("a record");
    assert!(record.ok, "{record:?}");
    assert_eq!(record.outcome, RehearsalOutcome::Verified);
    assert_eq!(record.run.as_deref(), Some(run.as_str()));
    assert_eq!(Timestamp::parse(&record.at), Some(t1));
    assert_eq!(record.fts.as_deref(), Some("ok"));
    let documents = record
        .tables
        .iter()
        .find(|t| t.table == "documents")
        .expect("documents");
    assert_eq!((documents.expected, documents.restored), (1, 1));

    // Within the week: not again. A week after: again.
    let report = turn_at(&s, t1.plus_millis(7 * DAY_MS - MINUTE_MS)).await;
    assert_eq!(report["rehearsed"], false, "{report}");
    let t2 = t1.plus_millis(7 * DAY_MS);
    let report = turn_at(&s, t2).await;
    assert_eq!(report["rehearsed"], true, "{report}");

    // A file of the dump changed: refused before anything is written, and recorded.
    let key = format!("backups/json/{run}/agents.json");
    let mut bytes = media.get(&key).await.expect("agents.json");
    bytes.insert(bytes.len() - 2, b' ');
    media.put(&key, bytes).await.expect("alter");
    let t3 = t2.plus_millis(7 * DAY_MS);
    let report = turn_at(&s, t3).await;
    assert_eq!(
        (report["rehearsed"].clone(), report["ok"].clone()),
        (json!(true), json!(false)),
        "{report}"
    );
    let record = s
        .service
        .last_rehearsal()
        .await
        .expect("read")
        .expect("a record");
    assert_eq!(record.outcome, RehearsalOutcome::Refused, "{record:?}");
    assert!(
        record
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("agents.json")),
        "{record:?}"
    );
    assert_eq!(Timestamp::parse(&record.at), Some(t3));
    // The seal is checked before a throwaway store is made; a file's digest while restoring
    // into it (nothing written), and the store is removed all the same.
    assert_eq!(*scratch.made.lock().expect("lock"), 3);
    assert!(
        scratch.live.lock().expect("lock").is_empty(),
        "every throwaway store was removed"
    );
    s.stop().await;
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rehearsal_runs_weekly_on_the_clock_sqlite() {
    the_rehearsal_runs_weekly_on_the_clock::<SqliteStore>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rehearsal_runs_weekly_on_the_clock_postgres() {
    the_rehearsal_runs_weekly_on_the_clock::<PgStore>().await;
}
