//! Global actions need global authority (issue 32), on SQLite and Postgres over real HTTP and
//! MCP: a key narrowed to one namespace and a few tools gets a scope refusal for
//! `POST /ops/backup`, `improve_run` mode, budget and unpause, and sees no foreign namespace in
//! `improve_status`; a key for every namespace needs `can_backup` too; and each caller runs
//! one backup on demand per interval (429 with `Retry-After` within it, driven by the test
//! clock).

use std::sync::Arc;

use capsid_core::improve::keys::{AWAITING_SEAT_KEY, BUDGET_KEY, IMPROVE_MODE_KEY, paused_key};
use capsid_core::ports::{BlobStore, Store};
use capsid_core::service::DEFAULT_ON_DEMAND_INTERVAL_MS;
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::harness::Backend;
use capsid_tests::server::{ServerOptions, TestServer};
use serde_json::{Value, json};

use super::{as_blobs, media_folder};

async fn post_backup(s: &TestServer, key: &str) -> (u16, Option<String>, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{}/ops/backup", s.url))
        .bearer_auth(key)
        .send()
        .await
        .expect("post");
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = resp.json().await.expect("JSON");
    (status, retry, body)
}

fn says(body: &Value, text: &str) {
    let description = body["error_description"].as_str().unwrap_or_default();
    assert!(description.contains(text), "{body} should say {text:?}");
}

async fn narrowed_keys_hold_no_global_authority<S: Backend>() {
    let Some(fresh) = S::fresh("global_authority").await else {
        return;
    };
    let (_dir, media) = media_folder();
    let store: Arc<dyn Store> = fresh.store.clone();
    let s = TestServer::start_with_media(store.clone(), ServerOptions::default(), as_blobs(&media))
        .await;
    s.namespace("alpha").await;
    s.namespace("beta").await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "core.md", "title": "Core", "body": "Backed up.\n"}),
    )
    .await;
    for ns in ["alpha", "beta"] {
        let out = s
            .admin(
                "improve_run",
                json!({"action": "roster", "op": "add", "namespace": ns}),
            )
            .await;
        assert_eq!(out["ok"], true, "{out}");
        let out = s
            .admin(
                "improve_run",
                json!({"action": "pause", "namespace": ns, "reason": "the owner stopped it"}),
            )
            .await;
        assert_eq!(out["ok"], true, "{out}");
    }
    let awaiting = json!([
        {"namespace": "alpha", "repo": "octo/alpha", "number": 3, "failed": "ci_green", "why": "CI red", "at": "2026-12-01T00:00:00Z", "head_sha": "aa"},
        {"namespace": "beta", "repo": "octo/beta", "number": 4, "failed": "ci_green", "why": "CI red", "at": "2026-12-01T00:00:00Z", "head_sha": "bb"},
    ]);
    store
        .put_setting(AWAITING_SEAT_KEY, &awaiting.to_string(), None)
        .await
        .expect("awaiting seat");
    s.mint("otter", "driver", json!({"namespaces": ["alpha", "beta"]}))
        .await;
    s.mint("bee", "driver", json!({"namespaces": ["beta"]}))
        .await;
    let narrow = s
        .mint(
            "narrow",
            "session",
            json!({"namespaces": ["alpha"], "tools": ["improve_run", "improve_status", "read"],
                   "grants": ["read", "write"], "flags": {"can_backup": true}}),
        )
        .await;
    let wide = s
        .mint(
            "wide",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    let backer = s
        .mint(
            "backer",
            "cron",
            json!({"namespaces": ["*"], "grants": ["read", "write"], "flags": {"can_backup": true}}),
        )
        .await;
    let backer2 = s
        .mint(
            "backer2",
            "cron",
            json!({"namespaces": ["*"], "grants": ["read", "write"], "flags": {"can_backup": true}}),
        )
        .await;
    let now = s.service.now();
    let setting = |key: String| {
        let store = store.clone();
        async move { store.setting(&key, now).await.expect("setting") }
    };
    let before = (
        setting(IMPROVE_MODE_KEY.to_owned()).await,
        setting(BUDGET_KEY.to_owned()).await,
    );

    // The narrowed key: the backup, even holding can_backup.
    let (status, _, body) = post_backup(&s, &narrow).await;
    assert_eq!(status, 403, "{body}");
    says(&body, "POST /ops/backup changes state beyond one namespace");
    says(&body, "this caller's namespaces: alpha");
    assert!(media.list("backups/").await.expect("list").is_empty());

    // The mode, the budget and lifting the owner's pause of its own namespace.
    let c = s.client(&narrow).await;
    for (action, args) in [
        ("mode", json!({"action": "mode", "value": "api"})),
        (
            "mode",
            json!({"action": "mode", "value": "api", "namespace": "alpha"}),
        ),
        (
            "budget",
            json!({"action": "budget", "model_usd_month": 10_000.0}),
        ),
        (
            "unpause",
            json!({"action": "unpause", "namespace": "alpha"}),
        ),
    ] {
        let err = c.err("improve_run", args.clone()).await;
        assert!(
            err.contains(&format!(
                "scope refused: improve_run.{action} changes state beyond one namespace"
            )),
            "{args}: {err}"
        );
    }
    assert_eq!(
        (
            setting(IMPROVE_MODE_KEY.to_owned()).await,
            setting(BUDGET_KEY.to_owned()).await
        ),
        before,
        "nothing changed"
    );
    assert_eq!(
        setting(paused_key("alpha")).await.as_deref(),
        Some("the owner stopped it"),
        "the owner's pause stands"
    );

    // improve_status shows it its own namespace only.
    let status = c.ok("improve_status", json!({"namespace": "alpha"})).await;
    let text = status.to_string();
    assert!(!text.contains("beta"), "no foreign namespace: {text}");
    assert!(!text.contains("\"bee\""), "no agent of beta alone: {text}");
    assert_eq!(status["autonomy"]["roster"], json!(["alpha"]), "{status}");
    assert_eq!(status["awaiting_seat"][0]["namespace"], "alpha", "{status}");
    assert_eq!(status["awaiting_seat"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        status["autonomy"]["awaiting_seat"].as_array().map(Vec::len),
        Some(1),
        "{status}"
    );
    let otter = status["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "otter"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(otter["namespaces"], json!(["alpha"]), "{status}");
    // The admin sees both.
    let full = s.admin("improve_status", json!({})).await;
    let roster = full["autonomy"]["roster"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        roster.contains(&json!("alpha")) && roster.contains(&json!("beta")),
        "{full}"
    );
    assert_eq!(full["awaiting_seat"].as_array().map(Vec::len), Some(2));

    // A key for every namespace may set the mode, the budget and unpause ...
    let w = s.client(&wide).await;
    for args in [
        json!({"action": "mode", "value": "subscription"}),
        json!({"action": "budget", "model_usd_month": 5.0}),
        json!({"action": "unpause", "namespace": "beta"}),
    ] {
        let out = w.ok("improve_run", args.clone()).await;
        assert_eq!(out["ok"], true, "{args}: {out}");
    }
    assert_eq!(setting(paused_key("beta")).await, None);
    // ... but a backup needs can_backup too.
    let (status, _, body) = post_backup(&s, &wide).await;
    assert_eq!(status, 403, "{body}");
    says(&body, "can_backup");
    assert!(media.list("backups/").await.expect("list").is_empty());

    // One backup on demand per caller per interval, on the test clock.
    let (status, _, body) = post_backup(&s, &backer).await;
    assert_eq!((status, body["ran"].clone()), (200, json!(true)), "{body}");
    let runs = media.list("backups/").await.expect("list").len();
    let (status, retry, body) = post_backup(&s, &backer).await;
    assert_eq!(status, 429, "{body}");
    let interval_secs = DEFAULT_ON_DEMAND_INTERVAL_MS / 1000;
    assert_eq!(retry, Some(interval_secs.to_string()), "{body}");
    says(&body, "agent:backer ran a backup on demand");
    assert_eq!(
        media.list("backups/").await.expect("list").len(),
        runs,
        "nothing ran"
    );
    s.clock.advance(DEFAULT_ON_DEMAND_INTERVAL_MS / 2);
    let (status, retry, _) = post_backup(&s, &backer).await;
    assert_eq!(
        (status, retry),
        (429, Some((interval_secs / 2).to_string()))
    );
    // Another caller has its own interval.
    let (status, _, body) = post_backup(&s, &backer2).await;
    assert_eq!(status, 200, "{body}");
    s.clock.advance(DEFAULT_ON_DEMAND_INTERVAL_MS / 2);
    let (status, retry, body) = post_backup(&s, &backer).await;
    assert_eq!((status, retry), (200, None), "{body}");
    s.stop().await;
    fresh.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn narrowed_keys_hold_no_global_authority_sqlite() {
    narrowed_keys_hold_no_global_authority::<SqliteStore>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn narrowed_keys_hold_no_global_authority_postgres() {
    narrowed_keys_hold_no_global_authority::<PgStore>().await;
}
