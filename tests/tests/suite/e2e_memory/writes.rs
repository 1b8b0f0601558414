//! Writes that must change nothing when refused: overwrite without confirmation, a stale
//! `if_match`, hostile paths; racing appends lose no acknowledged line.

use capsid_core::crypto::sha256_hex;
use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::json;

use crate::e2e_memory::writer;

async fn overwrite_without_confirm_changes_nothing(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    s.namespace("alpha").await;
    c.ok(
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "first"}),
    )
    .await;
    let e = c
        .err(
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "second"}),
        )
        .await;
    assert!(
        e.contains("confirmation required") && e.contains("confirm: true"),
        "{e}"
    );
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "first"
    );
    assert_eq!(
        c.ok("history", json!({"namespace": "alpha", "path": "a.md"}))
            .await["versions"],
        json!([]),
        "no snapshot either"
    );
    assert!(
        c.err("delete", json!({"namespace": "alpha", "path": "a.md"}))
            .await
            .contains("confirm")
    );
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "first"
    );
}

async fn if_match_mismatch_returns_the_current_hash(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    s.namespace("alpha").await;
    let w = c
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "v1"}),
        )
        .await;
    let e = c.err("write", json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "v2", "confirm": true, "if_match": sha256_hex("stale")})).await;
    assert!(
        e.contains(w["sha256"].as_str().unwrap()),
        "the refusal carries the current sha256: {e}"
    );
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "a.md"}))
            .await["body"],
        "v1"
    );
    let ok = c.ok("write", json!({"namespace": "alpha", "path": "a.md", "title": "A", "body": "v2", "confirm": true, "if_match": w["sha256"]})).await;
    assert!(
        ok.get("concurrency_warning").is_none(),
        "if_match given: no warning"
    );
}

async fn hostile_paths_are_refused_and_nothing_changes(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    s.namespace("alpha").await;
    let long = "p".repeat(600);
    for path in [
        "../x",
        "/x",
        "a//b",
        "x/",
        "a\u{0}b",
        "a\u{7f}",
        long.as_str(),
    ] {
        let e = c
            .err(
                "write",
                json!({"namespace": "alpha", "path": path, "title": "t", "body": "b"}),
            )
            .await;
        assert!(e.contains("path"), "{path:?}: {e}");
    }
    assert_eq!(
        c.ok("list", json!({"namespace": "alpha"})).await["count"],
        0
    );
}

/// Appends race each other: every append the server acknowledged is in the final body, and
/// one it refused as a conflict left nothing behind. Without the commit-time guard on derived
/// modes, a racing append silently overwrote another's acknowledged line.
async fn racing_appends_lose_no_acknowledged_line(s: &TestServer) {
    let key = writer(s).await;
    s.namespace("alpha").await;
    let first = s.client(&key).await;
    first
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "log.md", "title": "Log", "body": "start"}),
        )
        .await;
    let mut tasks = Vec::new();
    for w in 0..6 {
        let c = s.client(&key).await;
        tasks.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let mut refused = Vec::new();
            for i in 0..12 {
                let line = format!("<line-{w}-{i}>");
                let args =
                    json!({"namespace": "alpha", "path": "log.md", "mode": "append", "body": line});
                match c.call("write", args).await {
                    Ok(_) => acknowledged.push(line),
                    Err(e) => {
                        assert!(
                            e.contains("conflict"),
                            "only a conflict may refuse an append: {e}"
                        );
                        refused.push(line);
                    }
                }
            }
            (acknowledged, refused)
        }));
    }
    let (mut acknowledged, mut refused) = (Vec::new(), Vec::new());
    for t in tasks {
        let (a, r) = t.await.expect("appender");
        acknowledged.extend(a);
        refused.extend(r);
    }
    let body = first
        .ok("read", json!({"namespace": "alpha", "path": "log.md"}))
        .await["body"]
        .as_str()
        .expect("body")
        .to_owned();
    for line in &acknowledged {
        assert!(
            body.contains(line.as_str()),
            "acknowledged {line} was lost: {body}"
        );
    }
    for line in &refused {
        assert!(
            !body.contains(line.as_str()),
            "refused {line} was written anyway"
        );
    }
    assert_eq!(acknowledged.len() + refused.len(), 72);
    assert!(!acknowledged.is_empty(), "some appends go through");
}

e2e_cases!(crate::e2e_memory::options();
    overwrite_without_confirm_changes_nothing,
    if_match_mismatch_returns_the_current_hash,
    hostile_paths_are_refused_and_nothing_changes,
    racing_appends_lose_no_acknowledged_line,
);
