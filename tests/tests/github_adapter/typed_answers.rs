//! Every repo tool answers a typed value (each scenario once per store): one call of each of
//! the thirteen with valid arguments, whose `structuredContent` [`Client::call`] checks
//! against the tool's output schema and the text item. The typed-answers suite calls every
//! other typed tool; this one makes sure no repo tool goes unexercised.

use std::collections::BTreeSet;

use capsid_core::service::{REGISTRY, output_schema};
use capsid_core::tools::ToolGroup;
use capsid_tests::fake_github::{FakeGitHub, job, step};
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

use super::{ALPHA, agent, setup_alpha};

capsid_tests::github_cases!(every_repo_tool_answers_its_typed_answer,);

async fn every_repo_tool_answers_its_typed_answer(s: &TestServer, g: &FakeGitHub) {
    setup_alpha(s, g).await;
    let c = agent(
        s,
        "typed",
        &["read", "write"],
        json!({"can_merge": true, "can_comment_pr": true, "can_dispatch": true}),
    )
    .await;
    let mut called = BTreeSet::new();
    let mut call = async |c: &Client, tool: &'static str, args: Value| {
        assert!(
            output_schema(tool).is_some(),
            "{tool} lists no output schema"
        );
        called.insert(tool);
        c.ok(tool, args).await
    };
    let ns = "alpha";
    g.add_run(
        ALPHA,
        "ci.yml",
        "main",
        Some("failure"),
        vec![job(
            "test",
            "failure",
            vec![step(
                "cargo test",
                "failure",
                "2026-11-30T00:00:10Z",
                "2026-11-30T00:01:00Z",
            )],
            "2026-11-30T00:00:20Z error: 1 failed\n",
        )],
    );
    g.workflow(ALPHA, "ci.yml", true, true);

    let tree = call(&c, "list_repo_tree", json!({"namespace": ns})).await;
    assert_eq!(tree["path"], "/", "{tree}");
    let file = call(
        &c,
        "read_repo_file",
        json!({"namespace": ns, "path": "README.md"}),
    )
    .await;
    assert_eq!(file["truncated"], false, "{file}");
    let found = call(
        &c,
        "search_code",
        json!({"namespace": ns, "query": "hello"}),
    )
    .await;
    assert!(found["total_results"].as_u64() > Some(0), "{found}");
    let refs = call(&c, "repo_refs", json!({"namespace": ns})).await;
    assert_eq!(refs["default_branch"], "main", "{refs}");
    let history = call(&c, "repo_history", json!({"namespace": ns, "ref": "main"})).await;
    assert_eq!(history["mode"], "commits", "{history}");
    let ci = call(&c, "ci_status", json!({"namespace": ns})).await;
    assert_eq!(ci["failed_run"]["failing_step"], "cargo test", "{ci}");
    let written = call(
        &c,
        "write_repo_file",
        json!({"namespace": ns, "path": "notes/typed.md", "content": "typed\n",
               "message": "Add typed notes"}),
    )
    .await;
    assert!(written["pr"]["number"].is_u64(), "{written}");
    let branch = call(
        &c,
        "create_branch",
        json!({"namespace": ns, "branch": "typed"}),
    )
    .await;
    assert_eq!(branch["from"], "main", "{branch}");
    g.commit(
        ALPHA,
        "typed",
        &[("src/typed.rs", Some("// typed\n"))],
        "Typed",
    );
    let pr = call(
        &c,
        "open_pr",
        json!({"namespace": ns, "title": "Typed", "head": "typed"}),
    )
    .await;
    let number = pr["number"].as_u64().expect("number");
    let deleted = call(
        &c,
        "delete_repo_file",
        json!({"namespace": ns, "path": "docs/guide.md", "message": "Drop the guide"}),
    )
    .await;
    assert!(deleted["commitSha"].is_string(), "{deleted}");
    let commented = call(
        &c,
        "manage_pr",
        json!({"namespace": ns, "number": number, "action": "comment", "body": "Typed."}),
    )
    .await;
    assert_eq!(commented["action"], "comment", "{commented}");
    let dropped = call(
        &c,
        "delete_branch",
        json!({"namespace": ns, "branch": "typed", "force": true}),
    )
    .await;
    assert_eq!(dropped["forced"], true, "{dropped}");
    let dispatched = call(
        &c,
        "ci_dispatch",
        json!({"namespace": ns, "workflow": "ci.yml", "ref": "main"}),
    )
    .await;
    assert!(dispatched["run_id"].is_u64(), "{dispatched}");

    let repo_tools: BTreeSet<&str> = REGISTRY
        .iter()
        .filter(|e| e.spec.group == ToolGroup::Repo)
        .map(|e| e.spec.name)
        .collect();
    assert_eq!(repo_tools.len(), 13);
    assert_eq!(called, repo_tools, "every repo tool is called above");
}
