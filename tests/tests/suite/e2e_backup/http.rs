//! The HTTP surface: `POST /ops/backup` (401 without a key, 403 for a read-only key, 200 with
//! the summary, 409 while another run holds the lease; the narrowed keys, `can_backup` and the
//! interval are `authority.rs`), `/health` showing the real age after a
//! run, and `POST /backup/credential` with the reads its token allows.

use std::sync::Arc;

use capsid_core::backup::BACKUP_LEASE_KEY;
use capsid_core::backup::credential::{SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_request};
use capsid_core::ports::{BlobStore, Store};
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TEST_SECRET, TestServer};
use serde_json::{Value, json};

use super::{as_blobs, media_folder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ops_backup_needs_a_write_key_and_answers_409_while_leased() {
    let Some(fresh) = SqliteStore::fresh("ops_backup").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store.clone(), ServerOptions::default(), as_blobs(&media))
        .await;
    s.namespace("alpha").await;
    s.admin("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": "Backed up over HTTP.\n"})).await;
    let reader = s
        .mint(
            "reader",
            "session",
            json!({"namespaces": ["*"], "grants": ["read"]}),
        )
        .await;
    let writer = s
        .mint(
            "ops",
            "cron",
            json!({"namespaces": ["*"], "grants": ["read", "write"], "flags": {"can_backup": true}}),
        )
        .await;
    let http = reqwest::Client::new();
    let url = format!("{}/ops/backup", s.url);

    let health: Value = http
        .get(format!("{}/health", s.url))
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("JSON");
    assert_eq!(health["backup"]["warning"], "no successful backup recorded");

    let anonymous = http.post(&url).send().await.expect("post");
    assert_eq!(anonymous.status(), 401);
    let read_only = http
        .post(&url)
        .bearer_auth(&reader)
        .send()
        .await
        .expect("post");
    assert_eq!(read_only.status(), 403);
    let why: Value = read_only.json().await.expect("JSON");
    assert!(
        why["error_description"]
            .as_str()
            .unwrap_or("")
            .contains("write grant"),
        "{why}"
    );
    assert!(
        media.list("backups/").await.expect("list").is_empty(),
        "a refused call wrote nothing"
    );

    let ran = http
        .post(&url)
        .bearer_auth(&writer)
        .send()
        .await
        .expect("post");
    assert_eq!(ran.status(), 200);
    let summary: Value = ran.json().await.expect("JSON");
    assert_eq!(summary["ran"], true, "{summary}");
    assert_eq!(summary["preflight"]["fts"], "ok", "{summary}");
    assert_eq!(summary["markdown_written"], 1, "{summary}");
    // The keys to take off-site: every object the run wrote under its folder, each there,
    // the manifest among them, and every object of the run listed (issue 56, item 5).
    let run = summary["run"].as_str().expect("the run's id");
    let keys: Vec<String> = summary["json_keys"]
        .as_array()
        .expect("a list of keys")
        .iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    assert_eq!(summary["json_key_count"], keys.len(), "{summary}");
    assert!(
        keys.contains(&format!("backups/json/{run}/manifest.json")),
        "{keys:?}"
    );
    assert!(
        keys.contains(&format!("backups/json/{run}/documents.json")),
        "{keys:?}"
    );
    let mut written = media
        .list(&format!("backups/json/{run}/"))
        .await
        .expect("the run's objects");
    written.sort();
    let mut listed = keys.clone();
    listed.sort();
    assert_eq!(listed, written, "the list is exactly what the run wrote");

    let health: Value = http
        .get(format!("{}/health", s.url))
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("JSON");
    assert_eq!(health["backup"]["age_hours"], 0.0, "{health}");
    assert!(health["backup"].get("warning").is_none(), "{health}");

    // Past the caller's interval between backups on demand, another run's lease answers 409.
    s.clock
        .advance(capsid_core::service::DEFAULT_ON_DEMAND_INTERVAL_MS);
    let now = s.service.now();
    assert!(
        store
            .compare_and_set_setting(
                BACKUP_LEASE_KEY,
                None,
                Some("another-run"),
                Some(now.plus_millis(60_000)),
                now
            )
            .await
            .expect("take the lease")
    );
    let held = http
        .post(&url)
        .bearer_auth(&writer)
        .send()
        .await
        .expect("post");
    assert_eq!(held.status(), 409);
    let body: Value = held.json().await.expect("JSON");
    assert_eq!(
        body,
        json!({"ran": false, "skipped": "lease-held", "json_keys": [], "json_key_count": 0, "markdown_written": 0, "markdown_pruned": 0, "json_backups_pruned": 0, "reports_pruned": 0, "versions_pruned": 0, "audit_pruned": 0, "prune_refused": null})
    );
    // The refused run did not use up the caller's interval (issue 53, item 10): once the other
    // run's lease is gone, the same caller's retry runs at once, on the same clock.
    assert!(
        store
            .compare_and_set_setting(BACKUP_LEASE_KEY, Some("another-run"), None, None, now)
            .await
            .expect("end the other run's lease")
    );
    let retry = http
        .post(&url)
        .bearer_auth(&writer)
        .send()
        .await
        .expect("post");
    let status = retry.status();
    let body: Value = retry.json().await.expect("JSON");
    assert_eq!(
        (status.as_u16(), body["ran"].clone()),
        (200, json!(true)),
        "{body}"
    );
    // That run counts: the next one within the interval waits.
    let again = http
        .post(&url)
        .bearer_auth(&writer)
        .send()
        .await
        .expect("post");
    assert_eq!(again.status(), 429);
    s.stop().await;
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_credential_is_signed_once_and_reads_only_backups() {
    let Some(fresh) = SqliteStore::fresh("backup_credential").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store, ServerOptions::default(), as_blobs(&media)).await;
    s.namespace("alpha").await;
    s.admin("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": "Pulled off-site.\n"})).await;
    let run = super::back_up(&s).await.run.expect("a run");
    media
        .put("reports/private.md", b"not a backup".to_vec())
        .await
        .expect("put");
    let http = reqwest::Client::new();
    let url = format!("{}/backup/credential", s.url);
    let ts = (s.service.now().as_millis() / 1000).to_string();
    let body = r#"{"jti":"pull-1"}"#;
    let ask = |ts: String, sig: String, body: &'static str| {
        http.post(&url)
            .header(TIMESTAMP_HEADER, ts)
            .header(SIGNATURE_HEADER, sig)
            .body(body)
            .send()
    };
    let bad = ask(ts.clone(), "00".repeat(32), body).await.expect("post");
    assert_eq!(bad.status(), 401);
    let stale_ts = ((s.service.now().as_millis() / 1000) - 3600).to_string();
    let stale = ask(
        stale_ts.clone(),
        sign_request(TEST_SECRET, &stale_ts, body.as_bytes()),
        body,
    )
    .await
    .expect("post");
    assert_eq!(stale.status(), 401);
    let ok = ask(
        ts.clone(),
        sign_request(TEST_SECRET, &ts, body.as_bytes()),
        body,
    )
    .await
    .expect("post");
    assert_eq!(ok.status(), 200);
    let credential: Value = ok.json().await.expect("JSON");
    assert_eq!(credential["scope"], "backups/");
    assert_eq!(credential["newest_run"], run.as_str());
    let replay = ask(
        ts.clone(),
        sign_request(TEST_SECRET, &ts, body.as_bytes()),
        body,
    )
    .await
    .expect("post");
    assert_eq!(replay.status(), 409);

    let token = credential["token"].as_str().expect("a token");
    let manifest_key = format!("backups/json/{run}/manifest.json");
    assert!(
        credential["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .any(|o| o["key"] == manifest_key.as_str())
    );
    let read = http
        .get(format!("{}/backup/objects/{manifest_key}", s.url))
        .bearer_auth(token)
        .send()
        .await
        .expect("get");
    assert_eq!(read.status(), 200);
    let manifest: Value = read.json().await.expect("JSON");
    assert_eq!(manifest["run"], run.as_str());
    let mirror = http
        .get(format!(
            "{}/backup/objects/backups/markdown/alpha/core.md?token={token}",
            s.url
        ))
        .send()
        .await
        .expect("get");
    assert_eq!(mirror.text().await.expect("text"), "Pulled off-site.\n");
    let outside = http
        .get(format!("{}/backup/objects/reports/private.md", s.url))
        .bearer_auth(token)
        .send()
        .await
        .expect("get");
    assert_eq!(
        outside.status(),
        401,
        "the token reads nothing outside backups/"
    );
    let climbing = http
        .get(format!(
            "{}/backup/objects/backups/%2E%2E/reports/private.md",
            s.url
        ))
        .bearer_auth(token)
        .send()
        .await
        .expect("get");
    assert_eq!(climbing.status(), 401);
    let no_token = http
        .get(format!("{}/backup/objects/{manifest_key}", s.url))
        .send()
        .await
        .expect("get");
    assert_eq!(no_token.status(), 401);
    s.stop().await;
    fresh.finish().await;
}
