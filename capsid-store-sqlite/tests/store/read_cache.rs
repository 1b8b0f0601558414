//! The read caches (`read`'s document, the bearer key's agent row) answer from memory only
//! while nothing committed since: a write through another handle on the same file, with its
//! own connections as another process has (the CLI's `agents revoke`), is seen at once. The
//! search answer cache obeys the same rule; these cases also count its hits and misses.

use crate::common::{at, audit, doc, put, store, url};
use capsid_core::caller::AgentKind;
use capsid_core::ports::{AgentStore, AuditEntry, DocumentStore, NewAgent, WriteGuard};
use capsid_store_sqlite::{CacheCounts, SqliteStore};

fn documents(store: &SqliteStore) -> CacheCounts {
    store.cache_counts().0
}

fn agents(store: &SqliteStore) -> CacheCounts {
    store.cache_counts().1
}

async fn body(store: &SqliteStore, path: &str) -> Option<String> {
    store
        .document_with_actor("n", path)
        .await
        .unwrap()
        .and_then(|found| found.document.body)
}

#[tokio::test]
async fn a_hot_document_is_read_from_memory_until_anything_commits() {
    let (_dir, store) = store().await;
    put(&store, doc("n", "a.md", "A", "one", "spec", at(0))).await;
    let before = documents(&store);
    assert_eq!(body(&store, "a.md").await.as_deref(), Some("one"));
    assert_eq!(body(&store, "a.md").await.as_deref(), Some("one"));
    assert_eq!(body(&store, "missing.md").await, None);
    assert_eq!(body(&store, "missing.md").await, None);
    let after = documents(&store);
    assert_eq!(after.misses - before.misses, 2, "{after:?}");
    assert_eq!(after.hits - before.hits, 2, "{after:?}");

    // A write to another document still empties the cache: the version is the database's.
    put(&store, doc("n", "b.md", "B", "bee", "spec", at(1))).await;
    assert_eq!(body(&store, "a.md").await.as_deref(), Some("one"));
    assert_eq!(documents(&store).misses - after.misses, 1);
    // The document that did not exist is read again, and now exists.
    put(&store, doc("n", "missing.md", "M", "here", "spec", at(2))).await;
    assert_eq!(body(&store, "missing.md").await.as_deref(), Some("here"));
}

#[tokio::test]
async fn a_write_through_other_connections_is_read_at_once() {
    let (dir, store) = store().await;
    put(&store, doc("n", "a.md", "A", "one", "spec", at(0))).await;
    assert_eq!(body(&store, "a.md").await.as_deref(), Some("one"));
    assert_eq!(body(&store, "a.md").await.as_deref(), Some("one"));
    assert!(documents(&store).hits >= 1);

    // Another handle on the same file: its own writer and readers, as another process.
    let other = SqliteStore::open(&url(&dir)).await.unwrap();
    for (n, text) in ["two", "three", "four"].into_iter().enumerate() {
        let secs = 10 + i64::try_from(n).unwrap();
        other
            .write_document(
                doc("n", "a.md", "A", text, "spec", at(secs)),
                WriteGuard::Upsert,
                vec![audit("write", "n", "a.md", at(secs))],
            )
            .await
            .unwrap();
        assert_eq!(body(&store, "a.md").await.as_deref(), Some(text));
        assert_eq!(body(&store, "a.md").await.as_deref(), Some(text));
    }
    let last_actor = store
        .document_with_actor("n", "a.md")
        .await
        .unwrap()
        .and_then(|found| found.last_actor);
    assert_eq!(last_actor.as_deref(), Some("agent:tester"));
    other.close().await;
    store.close().await;
}

fn minted(id: &str, hash: &str) -> NewAgent {
    NewAgent {
        id: id.into(),
        name: format!("{id}-name"),
        kind: AgentKind::Driver,
        key_hash: hash.into(),
        scopes: r#"{"namespaces":["n"]}"#.into(),
        created_by: "github:owner".into(),
        at: at(0),
    }
}

fn agent_audit(action: &str, name: &str) -> AuditEntry {
    let mut entry = audit(action, "agents", name, at(1));
    entry.actor = "github:owner".into();
    entry
}

#[tokio::test]
async fn a_revocation_elsewhere_takes_effect_on_the_next_lookup() {
    let (dir, store) = store().await;
    let hash = "cd".repeat(32);
    store
        .mint_agent(
            minted("agent_000000000001", &hash),
            agent_audit("agent-minted", "agent_000000000001-name"),
        )
        .await
        .unwrap();
    for _ in 0..3 {
        let row = store.agent_by_key_hash(&hash).await.unwrap().unwrap();
        assert_eq!(row.revoked_at, None);
    }
    let counted = agents(&store);
    assert!(counted.hits >= 2, "{counted:?}");

    let cli = SqliteStore::open(&url(&dir)).await.unwrap();
    cli.revoke_agent(
        "agent_000000000001",
        at(5),
        agent_audit("agent-revoked", "agent_000000000001-name"),
    )
    .await
    .unwrap()
    .expect("revoked");
    cli.close().await;

    let row = store.agent_by_key_hash(&hash).await.unwrap().unwrap();
    assert_eq!(
        row.revoked_at,
        Some(at(5)),
        "the revocation is read at once"
    );
    assert_eq!(agents(&store).misses, counted.misses + 1);
    store.close().await;
}

async fn paths_found(store: &SqliteStore, query: &str, namespace: Option<&str>) -> Vec<String> {
    store
        .search_documents(query, namespace, None, 20)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.path)
        .collect()
}

#[tokio::test]
async fn a_search_is_answered_from_memory_until_anything_commits_anywhere() {
    let (dir, store) = store().await;
    put(
        &store,
        doc("n", "a.md", "A", "quartz lantern", "spec", at(0)),
    )
    .await;
    put(&store, doc("m", "b.md", "B", "quartz", "spec", at(1))).await;
    let before = store.search_cache_counts();
    assert_eq!(paths_found(&store, "quartz", Some("n")).await, ["a.md"]);
    assert_eq!(paths_found(&store, "quartz", Some("n")).await, ["a.md"]);
    let counted = store.search_cache_counts();
    assert_eq!(counted.misses - before.misses, 1, "{counted:?}");
    assert_eq!(counted.hits - before.hits, 1, "{counted:?}");
    // Another filter, another query text or another limit is its own answer.
    let mut both = paths_found(&store, "quartz", None).await;
    both.sort();
    assert_eq!(both, ["a.md", "b.md"]);
    assert_eq!(paths_found(&store, "lantern", Some("n")).await, ["a.md"]);
    assert_eq!(
        store
            .search_documents("quartz", None, None, 1)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.search_cache_counts().misses - counted.misses, 3);

    // A write through another handle (another process) on the same file empties the cache:
    // the next search is read from the index and finds it. (What other writes, moves and
    // deletes made elsewhere leave is the conformance cases `elsewhere::*`, on both stores.)
    let other = SqliteStore::open(&url(&dir)).await.unwrap();
    other
        .write_document(
            doc("n", "c.md", "C", "more quartz here", "spec", at(10)),
            WriteGuard::Upsert,
            vec![audit("write", "n", "c.md", at(10))],
        )
        .await
        .unwrap();
    let missed = store.search_cache_counts().misses;
    let mut found = paths_found(&store, "quartz", Some("n")).await;
    found.sort();
    assert_eq!(found, ["a.md", "c.md"]);
    assert_eq!(store.search_cache_counts().misses, missed + 1);
    other.close().await;
    store.close().await;
}
