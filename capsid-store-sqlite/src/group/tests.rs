//! Group commit, unit by unit: batch-mates acknowledged together and durable, a failing,
//! dropped or cancelled unit undone alone, a failed `COMMIT` acknowledging none, a unit
//! refused for a full database leaving its batch-mates whole, readers seeing only commits.

use std::sync::atomic::Ordering;

use capsid_core::ports::{StoreError, StoreResult};

use crate::SqliteStore;
use crate::store::commit;

async fn open(dir: &tempfile::TempDir) -> SqliteStore {
    let url = format!("sqlite://{}", dir.path().join("group.db").display());
    let store = SqliteStore::open(&url).await.unwrap();
    store.migrate().await.unwrap();
    store
}

async fn setup() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let mut unit = store.begin_write().await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE gc_rows (k TEXT PRIMARY KEY, v BLOB NOT NULL); \
         CREATE TABLE gc_parent (id INTEGER PRIMARY KEY); \
         CREATE TABLE gc_child (p INTEGER NOT NULL REFERENCES gc_parent(id) DEFERRABLE INITIALLY DEFERRED);",
    )
    .execute(&mut *unit)
    .await
    .unwrap();
    commit(unit).await.unwrap();
    (dir, store)
}

async fn insert(unit: &mut crate::group::WriteUnit, key: &str, bytes: usize) -> StoreResult<()> {
    sqlx::query("INSERT INTO gc_rows (k, v) VALUES (?, zeroblob(?))")
        .bind(key)
        .bind(i64::try_from(bytes).unwrap())
        .execute(&mut **unit)
        .await
        .map(|_| ())
        .map_err(crate::error::backend)
}

/// Whether a reader (committed data only) sees row `key`.
async fn committed(store: &SqliteStore, key: &str) -> bool {
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM gc_rows WHERE k = ?")
        .bind(key)
        .fetch_one(store.reader())
        .await
        .unwrap();
    n == 1
}

/// Yields until `n` units wait for the writer (the spawned tasks have queued).
async fn until_waiting(store: &SqliteStore, n: usize) {
    while store.group().waiting.load(Ordering::SeqCst) != n {
        tokio::task::yield_now().await;
    }
}

/// A task that writes `key` in its own unit and commits it.
fn writer(store: &SqliteStore, key: &'static str) -> tokio::task::JoinHandle<StoreResult<()>> {
    let store = store.clone();
    tokio::spawn(async move {
        let mut unit = store.begin_write().await?;
        insert(&mut unit, key, 16).await?;
        commit(unit).await
    })
}

#[tokio::test]
async fn concurrent_units_share_one_commit_and_each_is_durable() {
    let (dir, store) = setup().await;
    let before = store.commit_counts().await;
    let mut a = store.begin_write().await.unwrap();
    insert(&mut a, "a", 16).await.unwrap();
    let (b, c) = (writer(&store, "b"), writer(&store, "c"));
    until_waiting(&store, 2).await;
    commit(a).await.unwrap();
    b.await.unwrap().unwrap();
    c.await.unwrap().unwrap();
    let after = store.commit_counts().await;
    assert_eq!(
        (after.units - before.units, after.commits - before.commits),
        (3, 1),
        "three units, one durable COMMIT"
    );
    store.close().await;
    let reopened = open(&dir).await;
    for key in ["a", "b", "c"] {
        assert!(committed(&reopened, key).await, "{key} survived a reopen");
    }
}

#[tokio::test]
async fn a_lone_unit_commits_at_once() {
    let (_dir, store) = setup().await;
    let before = store.commit_counts().await;
    for key in ["x", "y"] {
        let mut unit = store.begin_write().await.unwrap();
        insert(&mut unit, key, 16).await.unwrap();
        commit(unit).await.unwrap();
        assert!(
            committed(&store, key).await,
            "{key} is committed when commit returns"
        );
    }
    let after = store.commit_counts().await;
    assert_eq!(after.commits - before.commits, 2);
}

#[tokio::test]
async fn a_failing_unit_loses_only_its_own_work() {
    let (_dir, store) = setup().await;
    let before = store.commit_counts().await;
    let mut a = store.begin_write().await.unwrap();
    insert(&mut a, "a", 16).await.unwrap();
    let failing = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut unit = store.begin_write().await?;
            insert(&mut unit, "b1", 16).await?;
            // A unique violation: the unit fails and is dropped uncommitted.
            insert(&mut unit, "a", 16).await?;
            commit(unit).await
        })
    };
    let c = writer(&store, "c");
    until_waiting(&store, 2).await;
    commit(a).await.unwrap();
    let refused = failing.await.unwrap();
    assert!(
        matches!(refused, Err(StoreError::Backend(ref m)) if m.contains("UNIQUE")),
        "{refused:?}"
    );
    c.await.unwrap().unwrap();
    assert!(committed(&store, "a").await);
    assert!(committed(&store, "c").await);
    assert!(
        !committed(&store, "b1").await,
        "the failed unit's first row is undone too"
    );
    let after = store.commit_counts().await;
    assert_eq!(
        (after.units - before.units, after.commits - before.commits),
        (2, 1)
    );
}

#[tokio::test]
async fn a_dropped_unit_leaves_nothing() {
    let (_dir, store) = setup().await;
    let mut unit = store.begin_write().await.unwrap();
    insert(&mut unit, "gone", 16).await.unwrap();
    drop(unit);
    let mut next = store.begin_write().await.unwrap();
    let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM gc_rows")
        .fetch_one(&mut *next)
        .await
        .unwrap();
    assert_eq!(seen, 0, "not even the writer sees the dropped unit's row");
    next.rollback().await.unwrap();
    assert!(!committed(&store, "gone").await);
    let explicit = {
        let mut unit = store.begin_write().await.unwrap();
        insert(&mut unit, "rolled", 16).await.unwrap();
        unit.rollback().await
    };
    explicit.unwrap();
    assert!(!committed(&store, "rolled").await);
}

#[tokio::test]
async fn a_cancelled_unit_does_not_strand_its_batch_mates() {
    let (_dir, store) = setup().await;
    let mut a = store.begin_write().await.unwrap();
    insert(&mut a, "a", 16).await.unwrap();
    let (inside, is_inside) = tokio::sync::oneshot::channel();
    let cancelled = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut unit = store.begin_write().await?;
            insert(&mut unit, "b", 16).await?;
            let _ = inside.send(());
            std::future::pending::<()>().await;
            commit(unit).await
        })
    };
    until_waiting(&store, 1).await;
    // `a` hands the writer on (a unit is waiting) and waits for the batch.
    let a = tokio::spawn(commit(a));
    is_inside.await.unwrap();
    assert!(
        !committed(&store, "a").await,
        "released, not yet committed: readers do not see it"
    );
    cancelled.abort();
    assert!(cancelled.await.unwrap_err().is_cancelled());
    a.await.unwrap().unwrap();
    assert!(committed(&store, "a").await);
    assert!(!committed(&store, "b").await);
    // And a unit cancelled while it waits for the writer strands no one either.
    let mut holder = store.begin_write().await.unwrap();
    insert(&mut holder, "h", 16).await.unwrap();
    let queued = writer(&store, "q");
    until_waiting(&store, 1).await;
    let holder = tokio::spawn(commit(holder));
    queued.abort();
    let _ = queued.await;
    holder.await.unwrap().unwrap();
    assert!(committed(&store, "h").await);
}

#[tokio::test]
async fn a_failed_commit_acknowledges_no_unit_of_its_batch() {
    let (_dir, store) = setup().await;
    let before = store.commit_counts().await;
    let mut a = store.begin_write().await.unwrap();
    // A deferred foreign key to a parent that does not exist: only the COMMIT checks it.
    sqlx::query("INSERT INTO gc_child (p) VALUES (42)")
        .execute(&mut *a)
        .await
        .unwrap();
    let b = writer(&store, "b");
    until_waiting(&store, 1).await;
    let a = commit(a).await;
    let b = b.await.unwrap();
    for outcome in [&a, &b] {
        assert!(
            matches!(outcome, Err(StoreError::Backend(m)) if m.contains("FOREIGN KEY")),
            "{outcome:?}"
        );
    }
    assert!(!committed(&store, "b").await);
    // The writer recovers: the next unit commits.
    writer(&store, "c").await.unwrap().unwrap();
    assert!(committed(&store, "c").await);
    let children: i64 = sqlx::query_scalar("SELECT count(*) FROM gc_child")
        .fetch_one(store.reader())
        .await
        .unwrap();
    assert_eq!(children, 0);
    let after = store.commit_counts().await;
    assert_eq!(
        (after.units - before.units, after.commits - before.commits),
        (1, 1)
    );
}

#[tokio::test]
async fn a_unit_refused_for_a_full_database_leaves_its_batch_mates_whole() {
    let (_dir, store) = setup().await;
    let pages: i64 = sqlx::query_scalar("SELECT page_count FROM pragma_page_count()")
        .fetch_one(store.reader())
        .await
        .unwrap();
    store
        .cap_pages(u64::try_from(pages).unwrap() + 4)
        .await
        .unwrap();
    let mut a = store.begin_write().await.unwrap();
    insert(&mut a, "a", 16).await.unwrap();
    let full = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut unit = store.begin_write().await?;
            insert(&mut unit, "huge", 1 << 20).await?;
            commit(unit).await
        })
    };
    let c = writer(&store, "c");
    until_waiting(&store, 2).await;
    commit(a).await.unwrap();
    let refused = full.await.unwrap();
    assert!(
        matches!(refused, Err(StoreError::Unavailable(ref m)) if m.contains("full")),
        "{refused:?}"
    );
    c.await.unwrap().unwrap();
    assert!(committed(&store, "a").await);
    assert!(committed(&store, "c").await);
    assert!(!committed(&store, "huge").await);
    store.cap_pages(1 << 30).await.unwrap();
    writer(&store, "after").await.unwrap().unwrap();
    assert!(committed(&store, "after").await);
}
