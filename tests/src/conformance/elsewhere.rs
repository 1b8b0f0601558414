//! Conformance cases for what another server on the same database changes: each case gets the
//! store under test and a second store on the same database (its own connections and, where
//! the store keeps them, its own read caches, as another replica or the CLI has). Whatever the
//! second one commits is what the first answers on its very next call: a cache may save a
//! round trip, never show an older state. The lookups are made twice before each change, so
//! a store that caches answers is answering from its cache when the change lands.

use capsid_core::caller::AgentKind;
use capsid_core::ports::{NewAgent, Store};

use super::support::{at, audit, put, write};

async fn body<S: Store>(store: &S, namespace: &str, path: &str) -> Option<String> {
    store
        .document_with_actor(namespace, path)
        .await
        .expect("read")
        .and_then(|found| found.document.body)
}

async fn read_twice<S: Store>(store: &S, namespace: &str, path: &str) -> Option<String> {
    let first = body(store, namespace, path).await;
    assert_eq!(body(store, namespace, path).await, first, "a repeated read");
    first
}

/// Moves `proj/<from>` to `proj/<to>` through `other`, `minutes` after t0.
async fn move_in<S: Store>(other: &S, from: &str, to: &str, minutes: i64) {
    other
        .move_document(
            "proj",
            from,
            to,
            None,
            at(minutes),
            audit("agent:writer", "move", "proj", from, at(minutes)),
        )
        .await
        .expect("move");
}

/// Deletes `proj/<path>` through `other`, `minutes` after t0.
async fn delete_in<S: Store>(other: &S, path: &str, minutes: i64) {
    other
        .delete_document(
            "proj",
            path,
            None,
            audit("agent:writer", "delete", "proj", path, at(minutes)),
        )
        .await
        .expect("delete");
}

/// `read`'s document: a write, a move and a delete made elsewhere are read at once.
pub async fn a_read_sees_what_another_server_wrote<S: Store>(store: &S, other: &S) {
    put(store, write("proj", "a.md", Some("A"), Some("one"), at(0))).await;
    assert_eq!(
        read_twice(store, "proj", "a.md").await.as_deref(),
        Some("one")
    );
    assert_eq!(read_twice(store, "proj", "b.md").await, None);

    for (n, text) in ["two", "three"].into_iter().enumerate() {
        let when = at(1 + i64::try_from(n).expect("small"));
        put(other, write("proj", "a.md", Some("A"), Some(text), when)).await;
        assert_eq!(
            read_twice(store, "proj", "a.md").await.as_deref(),
            Some(text),
            "a write by the other server is read on the next call"
        );
    }
    let last = store
        .document_with_actor("proj", "a.md")
        .await
        .expect("read")
        .and_then(|found| found.last_actor);
    assert_eq!(last.as_deref(), Some("agent:writer"));

    move_in(other, "a.md", "b.md", 5).await;
    assert_eq!(read_twice(store, "proj", "a.md").await, None, "moved away");
    assert_eq!(
        read_twice(store, "proj", "b.md").await.as_deref(),
        Some("three")
    );
    delete_in(other, "b.md", 6).await;
    assert_eq!(read_twice(store, "proj", "b.md").await, None, "deleted");
}

/// The `namespace/path` of each hit for `query`, sorted.
async fn paths<S: Store>(store: &S, query: &str, namespace: Option<&str>) -> Vec<String> {
    let mut paths: Vec<String> = store
        .search_documents(query, namespace, None, 20)
        .await
        .expect("search")
        .into_iter()
        .map(|hit| format!("{}/{}", hit.namespace, hit.path))
        .collect();
    paths.sort();
    paths
}

/// [`paths`], asked twice (so a cache, if the store keeps one, answers the second).
async fn found<S: Store>(store: &S, query: &str, namespace: Option<&str>) -> Vec<String> {
    let first = paths(store, query, namespace).await;
    assert_eq!(
        paths(store, query, namespace).await,
        first,
        "a repeated search"
    );
    first
}

/// `search`: a write, a rewrite, a move and a delete made elsewhere are found (or not) by
/// the next search, with the new text in the snippet.
pub async fn a_search_sees_what_another_server_wrote<S: Store>(store: &S, other: &S) {
    put(
        store,
        write("proj", "a.md", Some("A"), Some("quartz lantern"), at(0)),
    )
    .await;
    put(
        store,
        write("side", "b.md", Some("B"), Some("quartz"), at(1)),
    )
    .await;
    assert_eq!(found(store, "quartz", Some("proj")).await, ["proj/a.md"]);
    assert_eq!(
        found(store, "quartz", None).await,
        ["proj/a.md", "side/b.md"]
    );
    assert_eq!(found(store, "meadow", None).await, Vec::<String>::new());

    put(
        other,
        write(
            "proj",
            "c.md",
            Some("C"),
            Some("more quartz, a meadow"),
            at(2),
        ),
    )
    .await;
    assert_eq!(
        found(store, "quartz", Some("proj")).await,
        ["proj/a.md", "proj/c.md"]
    );
    assert_eq!(
        found(store, "quartz", None).await,
        ["proj/a.md", "proj/c.md", "side/b.md"]
    );
    let hits = store
        .search_documents("meadow", None, None, 20)
        .await
        .expect("search");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].snippet.contains("[meadow]"), "{hits:?}");

    // A rewrite that drops the word: no longer found.
    put(
        other,
        write("proj", "a.md", Some("A"), Some("lantern only"), at(3)),
    )
    .await;
    assert_eq!(found(store, "quartz", Some("proj")).await, ["proj/c.md"]);
    move_in(other, "c.md", "d.md", 4).await;
    assert_eq!(found(store, "meadow", None).await, ["proj/d.md"]);
    delete_in(other, "d.md", 5).await;
    assert_eq!(found(store, "meadow", None).await, Vec::<String>::new());
    assert_eq!(found(store, "quartz", None).await, ["side/b.md"]);
}

/// The bearer key's agent: a revocation and a re-scope made elsewhere are seen by the next
/// lookup (the next call is refused, or runs with the new scopes).
pub async fn a_revocation_by_another_server_is_seen_on_the_next_lookup<S: Store>(
    store: &S,
    other: &S,
) {
    let hash = "e7".repeat(32);
    let minted = store
        .mint_agent(
            NewAgent {
                id: "agent_00000000e7e7".into(),
                name: "replica-driver".into(),
                kind: AgentKind::Driver,
                key_hash: hash.clone(),
                scopes: r#"{"namespaces":["proj"]}"#.into(),
                created_by: "github:owner".into(),
                at: at(0),
            },
            audit(
                "github:owner",
                "agent-minted",
                "agents",
                "replica-driver",
                at(0),
            ),
        )
        .await
        .expect("mint");
    for _ in 0..2 {
        let row = store.agent_by_key_hash(&hash).await.expect("lookup");
        assert_eq!(row.as_ref().map(|r| r.revoked_at), Some(None));
    }
    other
        .rescope_agent(
            &minted.id,
            &minted.scopes,
            r#"{"namespaces":["side"]}"#,
            audit(
                "github:owner",
                "agent-rescoped",
                "agents",
                "replica-driver",
                at(1),
            ),
        )
        .await
        .expect("rescope")
        .expect("the live agent is re-scoped");
    for _ in 0..2 {
        let row = store
            .agent_by_key_hash(&hash)
            .await
            .expect("lookup")
            .expect("row");
        assert_eq!(
            row.scopes, r#"{"namespaces":["side"]}"#,
            "the new scopes, at once"
        );
    }
    other
        .revoke_agent(
            &minted.id,
            at(2),
            audit(
                "github:owner",
                "agent-revoked",
                "agents",
                "replica-driver",
                at(2),
            ),
        )
        .await
        .expect("revoke")
        .expect("the live agent is revoked");
    let row = store
        .agent_by_key_hash(&hash)
        .await
        .expect("lookup")
        .expect("row");
    assert_eq!(row.revoked_at, Some(at(2)), "the revocation, at once");
}
