//! End to end: backups and restore through the real server and the real stores. A store is
//! seeded through the MCP tools, backed up to a real folder, restored SQLite→Postgres and
//! Postgres→SQLite, and every tool answer compared; the restore's refusals; retention by run;
//! pruning only after the export; the preflight; the HTTP routes and their grants.

mod authority;
mod http;
mod integrity;
mod media;
mod new_host;
mod progress;
mod refusals;
mod rehearsal;
mod rehearsal_schedule;
mod runs;
mod schedule;

use std::sync::Arc;

use capsid_blobs::ObjectBlobStore;
use capsid_core::backup::manifest::{MANIFEST, Manifest, run_key};
use capsid_core::backup::summary::NoProgress;
use capsid_core::ports::{BlobStore, Store};
use capsid_core::service::{Service, ServiceConfig};
use capsid_core::time::ManualClock;
use capsid_tests::server::{Client, TEST_SECRET, TestEntropy, TestServer};
use serde_json::{Value, json};

/// A media store in a temporary folder.
pub fn media_folder() -> (tempfile::TempDir, Arc<ObjectBlobStore>) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = ObjectBlobStore::folder(dir.path().join("media")).expect("a media folder");
    (dir, Arc::new(store))
}

/// A service over `store` (for restoring into it), on the server's clock.
pub fn service_over(store: Arc<dyn Store>, clock: Arc<ManualClock>) -> Service {
    Service::new(
        store,
        clock,
        Arc::new(TestEntropy),
        ServiceConfig {
            signing_secret: Some(TEST_SECRET.into()),
            operator_keys: Vec::new(),
            ..Default::default()
        },
    )
}

/// What seeding left behind: the keys that must keep working.
pub struct Seeded {
    /// A live agent with every namespace and both grants.
    pub writer_key: String,
}

/// Seeds documents with versions, links and an archive, jobs in every state with outcomes,
/// agents (one revoked) and settings, through the tools.
pub async fn seed(s: &TestServer) -> Seeded {
    s.namespace("alpha").await;
    s.namespace("beta").await;
    let writer_key = s
        .mint(
            "writer",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    let w = s.client(&writer_key).await;
    w.ok("write", json!({"namespace": "alpha", "path": "core.md", "type": "core", "title": "Alpha core", "body": "The alpha project keeps its conventions here.\n"})).await;
    w.ok("write", json!({"namespace": "alpha", "path": "core.md", "title": "Alpha core", "body": "The alpha project keeps its conventions here, revised.\n", "confirm": true})).await;
    w.ok("write", json!({"namespace": "alpha", "path": "core.md", "title": "Alpha core", "body": "The alpha project keeps its conventions here, revised twice.\n", "tags": "core,alpha", "confirm": true})).await;
    w.ok("write", json!({"namespace": "alpha", "path": "decisions/storage.md", "type": "decision", "status": "active", "title": "Storage decision", "body": "We keep documents in one database file; the rehearsal proves restores.\n",
        "links": "[{\"type\":\"references\",\"to_path\":\"core.md\"},{\"type\":\"depends-on\",\"to_ns\":\"beta\",\"to_path\":\"notes/one.md\"}]"})).await;
    w.ok("write", json!({"namespace": "alpha", "path": "notes/raw.md", "type": "episodic", "title": "Session log", "body": "Raw notes about zeppelins to consolidate.\n"})).await;
    w.ok("write", json!({"namespace": "beta", "path": "notes/one.md", "title": "Beta one", "body": "Beta's first note mentions quokkas.\n"})).await;
    w.ok("write", json!({"namespace": "beta", "path": "notes/two.md", "title": "Beta two", "body": "A note to delete.\n"})).await;
    w.ok(
        "delete",
        json!({"namespace": "beta", "path": "notes/two.md", "confirm": true}),
    )
    .await;
    w.ok("move", json!({"namespace": "beta", "path": "notes/one.md", "new_path": "notes/first.md", "confirm": true})).await;
    let fin = w
        .ok("lint", json!({"namespace": "alpha", "mode": "finalize", "consumed": ["notes/raw.md"], "confirm": true}))
        .await;
    assert!(
        fin.to_string().contains("archive"),
        "the archive happened: {fin}"
    );

    // Jobs in every state, each driver holding at most one claim.
    let post = |title: &'static str| {
        let w = &w;
        async move {
            let out = w.ok("jobs", json!({"action": "post", "namespace": "alpha", "title": title, "body": format!("Do {title}.\n")})).await;
            assert_eq!(out["ok"], true, "{out}");
            out["job"]["id"].as_str().expect("an id").to_owned()
        }
    };
    let done = post("done job").await;
    let failed = post("failed job").await;
    let blocked = post("blocked job").await;
    let claimed = post("claimed job").await;
    post("queued job").await;
    let mut drivers = Vec::new();
    for n in 0..4 {
        let key = s
            .mint(
                &format!("driver-{n}"),
                "driver",
                json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
            )
            .await;
        drivers.push(s.client(&key).await);
    }
    async fn claim(c: &Client, id: &str) {
        let out = c
            .ok(
                "jobs",
                json!({"action": "claim", "namespace": "alpha", "id": id}),
            )
            .await;
        assert_eq!(out["ok"], true, "{out}");
    }
    claim(&drivers[0], &done).await;
    let out = drivers[0].ok("jobs", json!({"action": "complete", "namespace": "alpha", "id": done, "result_summary": "finished"})).await;
    assert_eq!(out["ok"], true, "{out}");
    claim(&drivers[1], &failed).await;
    drivers[1]
        .ok(
            "jobs",
            json!({"action": "fail", "namespace": "alpha", "id": failed, "reason": "could not"}),
        )
        .await;
    claim(&drivers[2], &blocked).await;
    drivers[2].ok("jobs", json!({"action": "block", "namespace": "alpha", "id": blocked, "reason": "needs a push", "command": "git push origin main"})).await;
    claim(&drivers[3], &claimed).await;
    let revoked = s
        .admin(
            "agents",
            json!({"action": "revoke", "name": "driver-1", "confirm": true}),
        )
        .await;
    assert_eq!(revoked["ok"], true, "{revoked}");

    // Settings the sidecar carries (the roster, and per roster namespace), and one it must not.
    s.store
        .put_setting("improve:roster", r#"["capsid","orchard"]"#, None)
        .await
        .expect("the roster");
    s.admin(
        "improve_run",
        json!({"action": "budget", "actions_minutes_month": 120.0, "model_usd_month": 25.0}),
    )
    .await;
    s.admin(
        "improve_run",
        json!({"action": "pause", "namespace": "capsid", "reason": "rehearsal"}),
    )
    .await;
    let now = s.service.now();
    s.store
        .put_setting("cache:github-installation", "not carried", None)
        .await
        .expect("a setting");
    s.store
        .put_setting(
            "improve:anchor:orchard",
            "abc123",
            Some(now.plus_millis(86_400_000)),
        )
        .await
        .expect("a setting");
    Seeded { writer_key }
}

/// Every tool answer that does not carry the time of the call, as `(call, answer)`.
pub async fn answers(c: &Client) -> Vec<(String, Value)> {
    let calls = [
        ("namespaces", json!({})),
        ("list", json!({})),
        ("list", json!({"namespace": "alpha", "type": "core"})),
        ("find", json!({"namespace": "alpha", "glob": "archive/*"})),
        ("read", json!({"namespace": "alpha", "path": "core.md"})),
        (
            "read",
            json!({"namespace": "alpha", "path": "decisions/storage.md"}),
        ),
        (
            "read",
            json!({"namespace": "beta", "path": "notes/first.md"}),
        ),
        ("history", json!({"namespace": "alpha", "path": "core.md"})),
        (
            "history",
            json!({"namespace": "beta", "path": "notes/two.md"}),
        ),
        (
            "backlinks",
            json!({"namespace": "alpha", "path": "core.md"}),
        ),
        (
            "backlinks",
            json!({"namespace": "beta", "path": "notes/first.md"}),
        ),
        ("search", json!({"query": "conventions"})),
        ("search", json!({"query": "quokkas", "namespace": "beta"})),
        ("search", json!({"query": "zeppelins"})),
        ("brief", json!({"namespace": "alpha"})),
        ("jobs", json!({"action": "list", "namespace": "alpha"})),
        (
            "jobs",
            json!({"action": "list", "namespace": "alpha", "status": "done"}),
        ),
        ("improve_status", json!({})),
    ];
    let mut out = Vec::new();
    for (tool, args) in calls {
        let mut answer = c
            .call(tool, args.clone())
            .await
            .unwrap_or_else(|e| json!({"error": e}));
        // Snippets are each engine's own rendering of the same hit; the hits must agree.
        let hits = answer.get_mut("documents").and_then(Value::as_array_mut);
        if let Some(hits) = hits.filter(|_| tool == "search") {
            for hit in hits {
                if let Some(map) = hit.as_object_mut() {
                    map.remove("snippet");
                }
            }
        }
        out.push((format!("{tool} {args}"), answer));
    }
    out
}

/// The admin's view of the agents, without `last_seen` (stamped by the calls themselves).
pub async fn agents(s: &TestServer) -> Value {
    let mut list = s.admin("agents", json!({"action": "list"})).await;
    if let Some(rows) = list["agents"].as_array_mut() {
        for row in rows {
            if let Some(map) = row.as_object_mut() {
                map.remove("last_seen");
            }
        }
    }
    list
}

/// Backs up `s` to `media`, expecting a run.
pub async fn back_up(s: &TestServer) -> capsid_core::backup::summary::BackupSummary {
    let summary = s
        .service
        .run_backup(&NoProgress)
        .await
        .expect("the backup ran");
    assert!(summary.ran, "{summary:?}");
    summary
}

/// Edits the manifest of `run` with `edit` and seals it again under the test secret (a dump a
/// faulty build could have made: the checks behind the seal must still refuse it).
pub async fn reseal(media: &dyn BlobStore, run: &str, edit: impl FnOnce(&mut Manifest)) {
    let key = run_key(run, MANIFEST);
    let bytes = media.get(&key).await.expect("the manifest");
    let mut manifest: Manifest = serde_json::from_slice(&bytes).expect("a manifest");
    edit(&mut manifest);
    capsid_core::backup::integrity::seal(&mut manifest, TEST_SECRET);
    media
        .put(&key, serde_json::to_vec_pretty(&manifest).expect("render"))
        .await
        .expect("put");
}

/// Puts `bytes` at `key` of `run` with its digest in the manifest, sealed again.
pub async fn put_resealed(media: &dyn BlobStore, run: &str, key: &str, bytes: Vec<u8>) {
    let digest = capsid_core::crypto::sha256_hex(&bytes);
    media.put(key, bytes).await.expect("put");
    reseal(media, run, |m| {
        for t in m.tables.iter_mut().chain([&mut m.settings]) {
            if t.key == key {
                t.sha256 = Some(digest.clone());
            }
        }
    })
    .await;
}

/// The media store of a test, as the port.
pub fn as_blobs(media: &Arc<ObjectBlobStore>) -> Arc<dyn BlobStore> {
    media.clone()
}
