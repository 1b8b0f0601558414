//! Metadata stays in scope (SPEC 8), through a real MCP client: a narrowed caller's
//! `namespaces`, agent inventory, backlinks, brief links and dangling-link warnings show only
//! what its namespace axis reaches, and never whether a document exists where it may not read.

use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

async fn setup(s: &TestServer) -> capsid_tests::server::Client {
    s.namespace("alpha").await;
    s.namespace("secret").await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "core.md", "title": "Core", "type": "concept", "body": "core"}),
    )
    .await;
    s.admin("write", json!({"namespace": "secret", "path": "plan.md", "title": "Plan", "body": "secret plan",
                            "links": r#"[{"type":"references","to_ns":"alpha","to_path":"core.md"}]"#}))
        .await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "notes.md", "title": "Notes", "body": "n",
                            "links": r#"[{"type":"references","to_path":"core.md"}]"#}),
    )
    .await;
    s.admin(
        "write",
        json!({"namespace": "secret", "path": "exists.md", "title": "E", "body": "e"}),
    )
    .await;
    let key = s
        .mint(
            "narrow",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    s.client(&key).await
}

fn names(v: &Value, key: &str) -> Vec<String> {
    v.as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r[key].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn namespaces_lists_only_what_the_caller_may_name(s: &TestServer) {
    let c = setup(s).await;
    let listed = c.ok("namespaces", json!({})).await;
    assert_eq!(names(&listed, "namespace"), ["alpha"], "{listed}");
    let all = s.admin("namespaces", json!({})).await;
    assert_eq!(names(&all, "namespace"), ["alpha", "secret"], "{all}");
}

async fn backlinks_and_the_brief_omit_edges_from_outside_the_scope(s: &TestServer) {
    let c = setup(s).await;
    let links = c
        .ok(
            "backlinks",
            json!({"namespace": "alpha", "path": "core.md"}),
        )
        .await;
    assert_eq!(
        names(&links["incoming"], "from_path"),
        ["notes.md"],
        "{links}"
    );
    assert!(!links.to_string().contains("secret"), "{links}");
    let brief = c.ok("brief", json!({"namespace": "alpha"})).await;
    assert!(
        !brief["core_links"].to_string().contains("secret"),
        "{}",
        brief["core_links"]
    );
    assert!(
        brief["core_links"].to_string().contains("notes.md"),
        "{}",
        brief["core_links"]
    );
    // The admin still sees every edge.
    let links = s
        .admin(
            "backlinks",
            json!({"namespace": "alpha", "path": "core.md"}),
        )
        .await;
    assert_eq!(
        names(&links["incoming"], "from_ns"),
        ["alpha", "secret"],
        "{links}"
    );
}

/// A dangling-link warning says the same of an existing and a missing document in a
/// namespace the caller may not read.
async fn a_dangling_link_warning_reveals_nothing_outside_the_scope(s: &TestServer) {
    let c = setup(s).await;
    let out = c
        .ok("write", json!({"namespace": "alpha", "path": "linked.md", "title": "L", "body": "l",
                            "links": r#"[{"type":"references","to_ns":"secret","to_path":"exists.md"},{"type":"references","to_ns":"secret","to_path":"missing.md"},{"type":"references","to_path":"nowhere.md"}]"#}))
        .await;
    let warning = out["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("secret/exists.md") && warning.contains("secret/missing.md"),
        "both are named alike: {warning}"
    );
    assert!(warning.contains("alpha/nowhere.md"), "{warning}");
    let mine = out["warning"].to_string();
    let (exists_at, missing_at) = (
        mine.find("secret/exists.md"),
        mine.find("secret/missing.md"),
    );
    let (Some(e), Some(m)) = (exists_at, missing_at) else {
        panic!("{mine}")
    };
    assert!(
        !mine[e.min(m)..e.max(m)].contains("alpha/nowhere.md"),
        "the two secret targets sit in the same sentence: {mine}"
    );
}

async fn the_agent_inventory_shows_overlapping_agents_only(s: &TestServer) {
    let c = setup(s).await;
    s.mint(
        "secret-bot",
        "driver",
        json!({"namespaces": ["secret"], "grants": ["read"]}),
    )
    .await;
    s.mint(
        "everywhere",
        "seat",
        json!({"namespaces": ["*"], "grants": ["read"]}),
    )
    .await;
    s.mint(
        "both",
        "session",
        json!({"namespaces": ["secret", "alpha"], "grants": ["read"]}),
    )
    .await;
    let status = c.ok("improve_status", json!({"namespace": "alpha"})).await;
    let mut seen = names(&status["agents"], "name");
    seen.sort();
    assert_eq!(
        seen,
        ["both", "everywhere", "narrow"],
        "{}",
        status["agents"]
    );
    // Of an agent that shares one of its namespaces, it sees that one only.
    let both = status["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "both"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(both["namespaces"], json!(["alpha"]), "{both}");
    assert!(!status["agents"].to_string().contains("secret"), "{status}");
    let status = s.admin("improve_status", json!({})).await;
    let mut seen = names(&status["agents"], "name");
    seen.sort();
    assert_eq!(
        seen,
        ["both", "everywhere", "narrow", "secret-bot"],
        "the admin sees every agent"
    );
}

e2e_cases!(crate::e2e_memory::options();
    namespaces_lists_only_what_the_caller_may_name,
    backlinks_and_the_brief_omit_edges_from_outside_the_scope,
    a_dangling_link_warning_reveals_nothing_outside_the_scope,
    the_agent_inventory_shows_overlapping_agents_only,
);
