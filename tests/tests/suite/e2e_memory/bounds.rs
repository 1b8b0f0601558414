//! Bounded outputs and growth (SPEC 8) through a real MCP client: a rendered prompt stays
//! within the body bound, a stored body stays within it after `append` and `patch`, and a
//! `find` glob is bounded in work. Each refusal names the rule and changes nothing.

use capsid_core::ports::{AuditFilter, Store};
use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::{Map, json};

use crate::e2e_memory::writer;

/// The body bound (reference 2.0).
const BODY: usize = 1_000_000;

async fn counts(store: &dyn Store) -> (usize, usize) {
    let audits = store
        .recent_audit(&AuditFilter::default(), 100_000)
        .await
        .expect("audit")
        .len();
    let versions = store
        .versions("alpha", "big.md", 1000)
        .await
        .expect("versions")
        .len();
    (audits, versions)
}

async fn a_prompt_renders_within_the_body_bound(s: &TestServer) {
    s.namespace("alpha").await;
    // 2,000 placeholders of a 1,000-character value would render 2,000,000 characters.
    let bomb = "{{a}}".repeat(2_000);
    s.admin("write", json!({"namespace": "alpha", "path": "prompts/bomb.md", "title": "Bomb", "type": "prompt", "body": bomb}))
        .await;
    let c = s.client(&writer(s).await).await;
    let peer = c.inner.peer();
    let mut args = Map::new();
    args.insert("a".into(), json!("x".repeat(1_000)));
    let got = peer
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("alpha/prompts/bomb").with_arguments(args),
        )
        .await;
    let text = format!("{got:?}");
    assert!(got.is_err(), "refused, not rendered: {} bytes", text.len());
    assert!(
        text.contains("1000000") && text.contains("prompts/bomb"),
        "the refusal names the bound: {text}"
    );
    // Within the bound it still renders.
    let mut args = Map::new();
    args.insert("a".into(), json!("x".repeat(400)));
    let got = peer
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("alpha/prompts/bomb").with_arguments(args),
        )
        .await
        .expect("800,000 characters render");
    assert!(format!("{got:?}").len() > 800_000);
}

async fn appends_and_patches_stay_within_the_body_bound(s: &TestServer) {
    s.namespace("alpha").await;
    let c = s.client(&writer(s).await).await;
    let near = "a".repeat(BODY - 10);
    c.ok(
        "write",
        json!({"namespace": "alpha", "path": "big.md", "title": "Big", "body": near}),
    )
    .await;
    let before = counts(&*s.store).await;
    let err = c
        .err(
            "write",
            json!({"namespace": "alpha", "path": "big.md", "mode": "append", "body": "b".repeat(100)}),
        )
        .await;
    assert!(
        err.contains("1000000") && err.contains("append"),
        "the refusal names the bound and the mode: {err}"
    );
    let err = c
        .err(
            "write",
            json!({"namespace": "alpha", "path": "big.md", "mode": "patch", "find": "aaaa", "replace_with": "c".repeat(100), "confirm": true}),
        )
        .await;
    // `aaaa` is ambiguous in a body of a's, so patch a unique anchor after a small append.
    assert!(
        err.contains("ambiguous") || err.contains("1000000"),
        "{err}"
    );
    c.ok(
        "write",
        json!({"namespace": "alpha", "path": "small.md", "title": "Small", "body": "anchor!"}),
    )
    .await;
    let err = c
        .err(
            "write",
            json!({"namespace": "alpha", "path": "small.md", "mode": "patch", "find": "anchor", "replace_with": "d".repeat(BODY), "confirm": true}),
        )
        .await;
    assert!(
        err.contains("1000000") && err.contains("patch"),
        "the refusal names the bound and the mode: {err}"
    );
    let doc = c
        .ok("read", json!({"namespace": "alpha", "path": "big.md"}))
        .await;
    assert_eq!(
        doc["body"].as_str().map(str::len),
        Some(BODY - 10),
        "nothing was written"
    );
    let small = c
        .ok("read", json!({"namespace": "alpha", "path": "small.md"}))
        .await;
    assert_eq!(small["body"], "anchor!");
    // One audit row more (the small document), no version more.
    let after = counts(&*s.store).await;
    assert_eq!(after, (before.0 + 1, before.1));
    // An append that fits still lands.
    let out = c
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "big.md", "mode": "append", "body": "b"}),
        )
        .await;
    assert_eq!(out["action"], "updated", "{out}");
}

async fn find_globs_are_bounded_in_work(s: &TestServer) {
    s.namespace("alpha").await;
    let c = s.client(&writer(s).await).await;
    c.ok(
        "write",
        json!({"namespace": "alpha", "path": "notes/2026-11-30.md", "title": "N", "body": "n"}),
    )
    .await;
    for glob in [
        "*a".repeat(256),
        "*?".repeat(200),
        format!("*[{}]", "bcdefghijklmnopqrstuvwxyz".repeat(19)),
        "[a][b][c][d][e][f][g][h][i]".to_owned(),
    ] {
        let err = c
            .err("find", json!({"namespace": "alpha", "glob": glob}))
            .await;
        assert!(
            err.contains("find") && err.contains("glob") && err.contains("limit"),
            "{glob:?}: {err}"
        );
    }
    // Ordinary globs are untouched.
    let out = c
        .ok(
            "find",
            json!({"namespace": "alpha", "glob": "notes/2026-??-??.md"}),
        )
        .await;
    assert_eq!(out["count"], 1, "{out}");
    let out = c
        .ok("find", json!({"namespace": "alpha", "glob": "*/*.md"}))
        .await;
    assert_eq!(out["count"], 1, "{out}");
}

/// `search` honours `limit` (1 to 100) and pages with `next_cursor` through every match, in
/// the same order as one large page; a bad limit or cursor is a clear error.
async fn search_pages_with_a_limit_and_a_cursor(s: &TestServer) {
    s.namespace("alpha").await;
    for n in 0..60 {
        s.admin("write", json!({"namespace": "alpha", "path": format!("notes/n{n:02}.md"), "title": format!("Note {n}"),
            "body": format!("A note about capybaras, number {n}.{}\n", " capybaras".repeat(n % 7))}))
            .await;
    }
    let c = s.client(&writer(s).await).await;
    let default = c.ok("search", json!({"query": "capybaras"})).await;
    assert_eq!(
        default["documents"].as_array().map(Vec::len),
        Some(25),
        "{default}"
    );
    let all = c
        .ok("search", json!({"query": "capybaras", "limit": 100}))
        .await;
    let paths = |v: &serde_json::Value| -> Vec<String> {
        v["documents"]
            .as_array()
            .expect("documents")
            .iter()
            .map(|d| d["path"].as_str().expect("a path").to_owned())
            .collect()
    };
    let everything = paths(&all);
    assert_eq!(everything.len(), 60, "{all}");
    assert!(
        all.get("next_cursor").is_none(),
        "one page holds them all: {all}"
    );
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut args = json!({"query": "capybaras", "limit": 25});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = c.ok("search", args).await;
        paged.extend(paths(&page));
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        paged, everything,
        "pages of 25 are the one page of 100, in order"
    );
    for (args, field) in [
        (json!({"query": "capybaras", "limit": 0}), "limit"),
        (json!({"query": "capybaras", "limit": 101}), "limit"),
        (json!({"query": "capybaras", "cursor": "25"}), "cursor"),
        (json!({"query": "capybaras", "cursor": "o999999"}), "cursor"),
    ] {
        let err = c.err("search", args.clone()).await;
        assert!(err.contains(field), "{args}: {err}");
    }
}

e2e_cases!(crate::e2e_memory::options();
    search_pages_with_a_limit_and_a_cursor,
    a_prompt_renders_within_the_body_bound,
    appends_and_patches_stay_within_the_body_bound,
    find_globs_are_bounded_in_work,
);
