//! Every memory tool in one session: registration, writes in all four modes, reads, search,
//! links, history, move, delete, restore and lint.

use capsid_core::crypto::sha256_hex;
use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use serde_json::json;

use crate::e2e_memory::writer;

async fn memory_tools_round_trip(s: &TestServer) {
    let c = s.client(&writer(s).await).await;
    // Registration through the tool, with its refusals.
    let reg = c
        .ok(
            "register_namespace",
            json!({"namespace": "alpha", "repo": "octo/alpha"}),
        )
        .await;
    assert_eq!(reg["action"], "registered");
    assert!(
        reg["next"].as_str().unwrap().contains("agents mint"),
        "{reg}"
    );
    assert!(
        c.err(
            "register_namespace",
            json!({"namespace": "alpha", "repo": "octo/alpha"})
        )
        .await
        .contains("already registered")
    );
    assert!(
        c.err("register_namespace", json!({"namespace": "beta"}))
            .await
            .contains("owner/name")
    );
    let err = c
        .err(
            "write",
            json!({"namespace": "nowhere", "path": "a.md", "title": "t", "body": "b"}),
        )
        .await;
    assert!(err.contains("nowhere"), "unknown namespace is named: {err}");

    // write: create, with dash normalization of title and body.
    let created = c
        .ok("write", json!({"namespace": "alpha", "path": "core.md", "title": "Core — the hub", "body": "# Plan — now\n\nSteps 3–5 matter — a lot.", "type": "core"}))
        .await;
    assert_eq!(created["action"], "created");
    let read = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    assert_eq!(read["title"], "Core - the hub");
    assert_eq!(read["body"], "# Plan - now\n\nSteps 3-5 matter, a lot.");
    assert_eq!(read["last_actor"], "agent:writer");
    assert_eq!(read["type"], "core");
    assert_eq!(
        created["sha256"],
        sha256_hex(read["body"].as_str().unwrap())
    );

    // append needs no confirmation; bytes_before is reported.
    let appended = c
        .ok(
            "write",
            json!({"namespace": "alpha", "path": "core.md", "mode": "append", "body": "\n\nMore."}),
        )
        .await;
    assert_eq!(appended["action"], "updated");
    assert!(appended["bytes_before"].is_number());
    assert!(
        appended["concurrency_warning"].is_string(),
        "rewritten within the hour without if_match: {appended}"
    );
    let body = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(body.ends_with("a lot.\n\nMore."), "{body}");

    // patch overwrites: confirmation required, then applied.
    let patch = json!({"namespace": "alpha", "path": "core.md", "mode": "patch", "find": "More.", "replace_with": "Much more."});
    assert!(
        c.err("write", patch.clone())
            .await
            .contains("confirm: true")
    );
    let mut confirmed = patch.clone();
    confirmed["confirm"] = json!(true);
    c.ok("write", confirmed).await;
    assert!(
        c.ok("read", json!({"namespace": "alpha", "path": "core.md"}))
            .await["body"]
            .as_str()
            .unwrap()
            .ends_with("Much more.")
    );
    assert!(c.err("write", json!({"namespace": "alpha", "path": "core.md", "mode": "patch", "find": "absent", "replace_with": "x", "confirm": true})).await.contains("anchor not found"));

    // meta changes metadata only.
    let before = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    c.ok("write", json!({"namespace": "alpha", "path": "core.md", "mode": "meta", "status": "active", "tags": "hub"})).await;
    let after = c
        .ok("read", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    assert_eq!(after["body"], before["body"]);
    assert_eq!(after["status"], "active");
    assert!(c.err("write", json!({"namespace": "alpha", "path": "core.md", "type": "memo", "title": "t", "body": "b"})).await.contains("episodic"));

    // Links, backlinks and the dangling warning.
    let linked = c
        .ok("write", json!({"namespace": "alpha", "path": "notes/a.md", "title": "A", "body": "a", "type": "episodic",
                            "links": "[{\"type\":\"references\",\"to_path\":\"core.md\"},{\"type\":\"depends-on\",\"to_path\":\"missing.md\"}]"}))
        .await;
    assert_eq!(linked["links"], 2);
    assert!(
        linked["warning"]
            .as_str()
            .unwrap()
            .contains("alpha/missing.md"),
        "{linked}"
    );
    let back = c
        .ok(
            "backlinks",
            json!({"namespace": "alpha", "path": "core.md"}),
        )
        .await;
    assert_eq!(
        back["incoming"],
        json!([{"type": "references", "from_ns": "alpha", "from_path": "notes/a.md"}])
    );

    // list, find, search, namespaces.
    let list = c.ok("list", json!({"namespace": "alpha"})).await;
    assert_eq!(list["count"], 2);
    assert!(
        list["documents"][0].get("body").is_none(),
        "list carries no bodies"
    );
    let found = c
        .ok("find", json!({"namespace": "alpha", "glob": "notes/*"}))
        .await;
    assert_eq!(found["documents"][0]["path"], "notes/a.md");
    let hits = c
        .ok("search", json!({"query": "hub", "namespace": "alpha"}))
        .await;
    assert_eq!(
        hits["documents"][0]["path"], "core.md",
        "a title match is found: {hits}"
    );
    let hits = c
        .ok("search", json!({"query": "matter", "namespace": "alpha"}))
        .await;
    assert_eq!(hits["documents"][0]["path"], "core.md", "{hits}");
    assert!(
        hits["documents"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("[matter]"),
        "{hits}"
    );
    let nss = c.ok("namespaces", json!({})).await;
    assert_eq!(nss[0]["namespace"], "alpha");
    assert_eq!(nss[0]["unconsolidated"], 1);

    // history and restore.
    let hist = c
        .ok("history", json!({"namespace": "alpha", "path": "core.md"}))
        .await;
    let versions = hist["versions"].as_array().unwrap();
    assert!(versions.len() >= 3, "every overwrite snapshots: {hist}");
    let first = versions.last().unwrap()["id"].as_i64().unwrap();
    let v = c
        .ok(
            "history",
            json!({"namespace": "alpha", "path": "core.md", "version_id": first}),
        )
        .await;
    assert_eq!(v["body"], "# Plan - now\n\nSteps 3-5 matter, a lot.");
    assert!(
        c.err(
            "restore",
            json!({"namespace": "alpha", "path": "core.md", "version_id": first})
        )
        .await
        .contains("confirm")
    );
    let restored = c
        .ok(
            "restore",
            json!({"namespace": "alpha", "path": "core.md", "version_id": first, "confirm": true}),
        )
        .await;
    assert_eq!(restored["action"], "restored");
    assert_eq!(
        c.ok("read", json!({"namespace": "alpha", "path": "core.md"}))
            .await["body"],
        v["body"]
    );

    // brief.
    let brief = c.ok("brief", json!({"namespace": "alpha"})).await;
    assert_eq!(brief["core"]["path"], "core.md");
    assert_eq!(brief["recent_episodics"][0]["path"], "notes/a.md");

    // move repoints edges; delete removes them.
    let moved = c.ok("move", json!({"namespace": "alpha", "path": "notes/a.md", "new_path": "notes/b.md", "confirm": true})).await;
    assert_eq!(moved["action"], "moved");
    let back = c
        .ok(
            "backlinks",
            json!({"namespace": "alpha", "path": "core.md"}),
        )
        .await;
    assert_eq!(back["incoming"][0]["from_path"], "notes/b.md");
    c.ok("write", json!({"namespace": "alpha", "path": "notes/c.md", "title": "C", "body": "c", "type": "episodic"})).await;
    assert!(c.err("move", json!({"namespace": "alpha", "path": "notes/b.md", "new_path": "notes/c.md", "confirm": true})).await.contains("nothing changed"));
    let deleted = c
        .ok(
            "delete",
            json!({"namespace": "alpha", "path": "notes/c.md", "confirm": true}),
        )
        .await;
    assert_eq!(deleted["action"], "deleted");
    assert!(
        c.err("read", json!({"namespace": "alpha", "path": "notes/c.md"}))
            .await
            .contains("not found: alpha/notes/c.md")
    );

    // lint: gather, finalize (confirmed), report (stored as a document).
    let packet = c.ok("lint", json!({"namespace": "alpha"})).await;
    assert_eq!(packet["unconsolidated"][0]["path"], "notes/b.md");
    let fin = c.ok("lint", json!({"namespace": "alpha", "mode": "finalize", "consumed": ["notes/b.md"], "confirm": true})).await;
    assert_eq!(fin["archived"][0]["to"], "archive/notes/b.md");
    assert_eq!(c.ok("namespaces", json!({})).await[0]["unconsolidated"], 0);
    let report = c
        .ok("lint", json!({"namespace": "alpha", "mode": "report"}))
        .await;
    let stored = report["stored"].as_str().unwrap().to_owned();
    assert!(stored.starts_with("alpha/reports/lint-"), "{report}");
    let doc = c
        .ok(
            "read",
            json!({"namespace": "alpha", "path": stored.trim_start_matches("alpha/")}),
        )
        .await;
    assert!(
        doc["body"].as_str().unwrap().contains("not checked"),
        "repo drift is not checked without repo access"
    );

    // update_namespace is admin only (SPEC 8); a legacy write key is an admin, and the
    // remap keeps the previous mapping.
    let err = c
        .err(
            "update_namespace",
            json!({"namespace": "alpha", "repos": "[{\"repo\":\"octo/alpha2\"}]"}),
        )
        .await;
    assert!(err.contains("admin only"), "{err}");
    let op = s.client(crate::e2e_memory::OP_WRITE).await;
    let upd = op
        .ok(
            "update_namespace",
            json!({"namespace": "alpha", "repos": "[{\"repo\":\"octo/alpha2\"}]"}),
        )
        .await;
    assert_eq!(
        upd["previous"],
        "[{\"repo\":\"octo/alpha\",\"label\":\"primary\"}]"
    );
}

e2e_cases!(crate::e2e_memory::options();
    memory_tools_round_trip,
);
