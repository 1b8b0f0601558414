//! End to end, on both stores: every tool `tools/list` shows has a title and an `outputSchema`
//! (an object schema, as MCP asks: every tool's answer is typed); a call of each tool with
//! valid arguments answers `structuredContent` that validates against that schema, beside a
//! text item that parses to the same JSON, and so do the refusals answered as results. The
//! repo tools need a GitHub, so the GitHub adapter suite calls each of them instead.

use std::collections::BTreeSet;

use capsid_core::crypto::sha256_hex;
use capsid_core::service::REGISTRY;
use capsid_core::service::registry::spec;
use capsid_core::tools::ToolGroup;
use capsid_tests::e2e_cases;
use capsid_tests::server::{Client, ServerOptions, TestServer};
use rmcp::model::Tool;
use serde_json::{Value, json};

/// Typed tools whose answer is not a JSON object: `structuredContent` is `{"result": answer}`
/// (MCP before 2026-07-28 allows only objects there), the text item the bare answer.
const WRAPPED: &[&str] = &["namespaces"];

const OPERATOR: &str = "operator-write-key-for-typed-answers";

fn options() -> ServerOptions {
    ServerOptions {
        operator_keys: Some(sha256_hex(OPERATOR)),
        ..ServerOptions::default()
    }
}

async fn tools(c: &Client) -> Vec<Tool> {
    c.inner.peer().list_all_tools().await.expect("tools/list")
}

async fn every_tool_has_a_title_and_every_typed_tool_an_output_schema(s: &TestServer) {
    let c = s.client(OPERATOR).await;
    let listed = tools(&c).await;
    assert_eq!(listed.len(), REGISTRY.len(), "the operator sees every tool");
    for tool in &listed {
        let name = tool.name.as_ref();
        let title = tool.title.as_deref().unwrap_or_default();
        assert!(
            !title.is_empty() && title != name,
            "{name} has no human title"
        );
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert_eq!(annotations.title.as_deref(), Some(title), "{name}");
        assert!(
            annotations.idempotent_hint.is_some(),
            "{name}: idempotentHint"
        );
        assert!(
            annotations.open_world_hint.is_some(),
            "{name}: openWorldHint"
        );
        let schema = tool
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{name} lists no output schema"));
        assert_eq!(
            schema.get("type"),
            Some(&json!("object")),
            "{name}: {schema:?}"
        );
        let schema = Value::Object((**schema).clone());
        jsonschema::draft202012::new(&schema)
            .unwrap_or_else(|e| panic!("{name}'s output schema does not compile: {e}"));
    }
}

/// Calls `tool` with `args` and checks its structured answer against the listed schema;
/// returns the answer the text item carries.
async fn checked(c: &Client, schemas: &[Tool], tool: &str, args: Value) -> Value {
    let result = c
        .raw(tool, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
    let text: String = result
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .map(|t| t.text.clone())
        .collect();
    assert_ne!(result.is_error, Some(true), "{tool} {args} failed: {text}");
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool}: {e}"));
    let schema = schemas
        .iter()
        .find(|t| t.name == tool)
        .and_then(|t| t.output_schema.clone())
        .unwrap_or_else(|| panic!("{tool} lists no output schema"));
    let schema = Value::Object((*schema).clone());
    let structured = result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} sent no structuredContent"));
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&structured)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{tool}'s structuredContent does not validate: {errors:?}\n{structured:#}\n{schema:#}"
    );
    if WRAPPED.contains(&tool) {
        assert_eq!(structured, json!({ "result": answer }), "{tool}");
    } else {
        assert_eq!(
            structured, answer,
            "{tool}: the text item and structuredContent differ"
        );
    }
    answer
}

async fn every_typed_tool_answers_structured_content_its_schema_accepts(s: &TestServer) {
    s.namespace("alpha").await;
    let c = s.client(OPERATOR).await;
    let schemas = tools(&c).await;
    let mut called = BTreeSet::new();
    let mut call = async |who: &Client, tool: &'static str, args: Value| {
        called.insert(tool);
        checked(who, &schemas, tool, args).await
    };
    let ns = "alpha";
    call(
        &c,
        "write",
        json!({"namespace": ns, "path": "core.md", "title": "Core", "type": "concept",
               "body": "The core of alpha."}),
    )
    .await;
    let appended = call(
        &c,
        "write",
        json!({"namespace": ns, "path": "core.md", "mode": "append", "body": "More core."}),
    )
    .await;
    assert_eq!(appended["action"], "updated", "{appended}");
    call(&c, "write",
        json!({"namespace": ns, "path": "notes.md", "title": "Notes", "body": "notes on the core",
               "links": r#"[{"type":"references","to_path":"core.md"},{"type":"references","to_path":"gone.md"}]"#}),
    )
    .await;
    call(&c, "list", json!({"namespace": ns})).await;
    call(&c, "list", json!({})).await;
    let read = call(&c, "read", json!({"namespace": ns, "path": "core.md"})).await;
    assert_eq!(read["title"], "Core", "{read}");
    call(&c, "brief", json!({"namespace": ns})).await;
    call(&c, "backlinks", json!({"namespace": ns, "path": "core.md"})).await;
    call(&c, "find", json!({"namespace": ns, "glob": "*.md"})).await;
    let page = call(&c, "search", json!({"query": "core", "limit": 1})).await;
    assert_eq!(page["truncated"], true, "two documents match: {page}");
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    call(
        &c,
        "search",
        json!({"query": "core", "limit": 1, "cursor": cursor}),
    )
    .await;
    let listed = call(&c, "namespaces", json!({})).await;
    assert!(listed.is_array(), "{listed}");
    let history = call(&c, "history", json!({"namespace": ns, "path": "core.md"})).await;
    let version = history["versions"][0]["id"].as_i64().expect("a version");
    call(
        &c,
        "history",
        json!({"namespace": ns, "path": "core.md", "version_id": version}),
    )
    .await;
    call(
        &c,
        "restore",
        json!({"namespace": ns, "path": "core.md", "version_id": version, "confirm": true}),
    )
    .await;
    call(
        &c,
        "move",
        json!({"namespace": ns, "path": "notes.md", "new_path": "moved.md", "confirm": true}),
    )
    .await;
    call(
        &c,
        "delete",
        json!({"namespace": ns, "path": "moved.md", "confirm": true}),
    )
    .await;
    let deleted = call(&c, "history", json!({"namespace": ns, "path": "moved.md"})).await;
    assert!(deleted["live"].is_null(), "{deleted}");
    call(
        &c,
        "register_namespace",
        json!({"namespace": "beta", "repo": "octo/beta"}),
    )
    .await;
    call(
        &c,
        "update_namespace",
        json!({"namespace": "beta", "repos": r#"[{"repo":"octo/beta2","label":"primary"}]"#}),
    )
    .await;
    call(
        &c,
        "update_namespace",
        json!({"namespace": "beta", "monthly_budget_usd": 12.5}),
    )
    .await;
    call(
        &c,
        "update_namespace",
        json!({"namespace": "beta", "root_dir": "/srv/beta", "test_command": "cargo test"}),
    )
    .await;
    let minted = call(
        &c,
        "agents",
        json!({"action": "mint", "name": "typed", "kind": "session", "namespaces": ["beta"],
               "grants": ["read"], "flags": {"can_comment_pr": true}}),
    )
    .await;
    assert_eq!(minted["ok"], true, "{minted}");
    call(&c, "agents", json!({"action": "list"})).await;
    call(
        &c,
        "agents",
        json!({"action": "update_scopes", "name": "typed", "repos": ["*"]}),
    )
    .await;
    call(&c, "agents", json!({"action": "revoke", "name": "typed"})).await;
    let refused = call(&c, "agents", json!({"action": "revoke", "name": "typed"})).await;
    assert_eq!(
        refused["ok"], false,
        "a refusal is an answer too: {refused}"
    );
    let key = s
        .mint(
            "worker",
            "driver",
            json!({"namespaces": [ns], "grants": ["read", "write"]}),
        )
        .await;
    let worker = s.client(&key).await;
    call(
        &worker,
        "checkpoint",
        json!({"namespace": ns, "status": "paused_for_input", "question": "Which core?",
               "where_it_stopped": "reading core.md", "next_steps": ["ask"], "summary": "read",
               "visibility": "global", "session_id": "s-1", "cost_usd": 0.25, "turns": 3}),
    )
    .await;
    call(&c, "checkmarks", json!({"action": "list", "namespace": ns})).await;
    call(
        &c,
        "checkmarks",
        json!({"action": "get", "namespace": ns, "agent": "worker"}),
    )
    .await;
    call(
        &c,
        "checkmarks",
        json!({"action": "log", "namespace": ns, "agent": "worker", "limit": 1}),
    )
    .await;
    call(&c, "checkmarks", json!({"action": "feed"})).await;
    call(
        &c,
        "checkmarks",
        json!({"action": "answer", "namespace": ns, "agent": "worker", "answer": "alpha's"}),
    )
    .await;
    call(
        &c,
        "checkmarks",
        json!({"action": "resume", "namespace": ns, "agent": "worker"}),
    )
    .await;
    call(
        &c,
        "shared",
        json!({"action": "set", "key": "style", "value": "terse"}),
    )
    .await;
    let overwritten = call(
        &c,
        "shared",
        json!({"action": "set", "key": "style", "value": "brief"}),
    )
    .await;
    assert!(overwritten["previous"].is_object(), "{overwritten}");
    call(&c, "shared", json!({"action": "get", "key": "style"})).await;
    call(&c, "shared", json!({"action": "list"})).await;
    call(&c, "shared", json!({"action": "delete", "key": "style"})).await;
    let posted = call(
        &c,
        "jobs",
        json!({"action": "post", "namespace": ns, "title": "Type the answers", "body": "Do it."}),
    )
    .await;
    let id = posted["job"]["id"].as_str().expect("a job id").to_owned();
    assert_eq!(posted["job"]["gate_required"], 0, "{posted}");
    call(&c, "jobs", json!({"action": "list", "namespace": ns})).await;
    let unended = call(&c, "jobs", json!({"action": "get", "id": id})).await;
    assert!(unended["outcome"].is_null(), "{unended}");
    let claimed = call(&worker, "jobs", json!({"action": "claim", "namespace": ns})).await;
    assert!(claimed["skills_offered"].is_array(), "{claimed}");
    assert!(
        claimed["run_credential"].is_string(),
        "a minted agent's claim carries its run credential: {claimed}"
    );
    call(
        &worker,
        "jobs",
        json!({"action": "heartbeat", "namespace": ns, "id": id}),
    )
    .await;
    let held = call(&worker, "jobs", json!({"action": "claim", "namespace": ns})).await;
    assert_eq!(held["ok"], false, "one job at a time: {held}");
    let completed = call(
        &worker,
        "jobs",
        json!({"action": "complete", "namespace": ns, "id": id, "result_summary": "typed", "result_ref": "notes/typed.md"}),
    )
    .await;
    assert!(completed["outcome"]["row"].is_object(), "{completed}");
    let ended = call(&c, "jobs", json!({"action": "get", "id": id})).await;
    assert_eq!(ended["outcome"]["job_id"], id.as_str(), "{ended}");
    let approval = call(
        &c,
        "jobs",
        json!({"action": "approval", "namespace": ns, "head_sha": "0123456789abcdef0123456789abcdef01234567"}),
    )
    .await;
    assert_eq!(approval["approved"], false, "{approval}");
    let packet = call(&c, "lint", json!({"namespace": ns})).await;
    assert_eq!(packet["mode"], "gather", "{packet}");
    let report = call(&c, "lint", json!({"namespace": ns, "mode": "report"})).await;
    assert_eq!(report["mode"], "report", "{report}");
    call(
        &c,
        "write",
        json!({"namespace": ns, "path": "episodes/one.md", "title": "One",
                             "type": "episodic", "body": "what happened"}),
    )
    .await;
    let finalized = call(
        &c,
        "lint",
        json!({"namespace": ns, "mode": "finalize", "consumed": ["episodes/one.md"], "confirm": true}),
    )
    .await;
    assert_eq!(finalized["consolidated"], 1, "{finalized}");
    let status = call(&c, "improve_status", json!({})).await;
    assert!(status["namespaces"].is_array(), "{status}");
    let one = call(
        &c,
        "improve_status",
        json!({"namespace": ns, "task_path": "improve/run-2026-12-01.md"}),
    )
    .await;
    assert_eq!(one["namespaces"][0]["namespace"], ns, "{one}");
    assert_eq!(one["task_verification"]["ok"], false, "{one}");
    let narrowed = call(&worker, "improve_status", json!({"namespace": ns})).await;
    assert!(narrowed["autonomy"]["hidden"].is_string(), "{narrowed}");
    // improve_run: every action an operator can take without a GitHub or a model, and its
    // refusals (answered as results, so their structured content is checked too).
    let run = "improve_run";
    let mode = call(&c, run, json!({"action": "mode", "value": "subscription"})).await;
    assert_eq!(mode["mode"], "subscription", "{mode}");
    let planned = call(
        &c,
        run,
        json!({"action": "mode", "value": "off", "dry_run": true}),
    )
    .await;
    assert_eq!(
        planned["mode"], "subscription",
        "a dry run stores nothing: {planned}"
    );
    let paused = call(
        &c,
        run,
        json!({"action": "pause", "namespace": ns, "reason": "typed"}),
    )
    .await;
    assert_eq!(paused["namespaces"], json!([ns]), "{paused}");
    call(
        &c,
        run,
        json!({"action": "unpause", "namespace": "all", "dry_run": true}),
    )
    .await;
    call(&c, run, json!({"action": "unpause", "namespace": ns})).await;
    let unnamed = call(&c, run, json!({"action": "pause"})).await;
    assert_eq!(unnamed["ok"], false, "{unnamed}");
    let budget = call(
        &c,
        run,
        json!({"action": "budget", "actions_minutes_month": 900, "model_usd_month": 20.5}),
    )
    .await;
    assert_eq!(budget["caps"]["model_usd_month"], 20.5, "{budget}");
    call(
        &c,
        run,
        json!({"action": "budget", "model_usd_month": 30, "dry_run": true}),
    )
    .await;
    let minted = call(&c, run, json!({"action": "mint_operator_key"})).await;
    assert!(
        minted["key"]
            .as_str()
            .is_some_and(|k| k.starts_with("capsid_ro_")),
        "{minted}"
    );
    let claimed = call(&c, run, json!({"action": "claim", "namespace": ns})).await;
    assert!(claimed["expires"].is_string(), "{claimed}");
    let released = call(
        &c,
        run,
        json!({"action": "claim", "namespace": ns, "release": true}),
    )
    .await;
    assert_eq!(released["released"], true, "{released}");
    let unheld = call(
        &c,
        run,
        json!({"action": "claim", "namespace": ns, "release": true}),
    )
    .await;
    assert_eq!(unheld["ok"], false, "{unheld}");
    let empty = call(&c, run, json!({"action": "roster"})).await;
    assert_eq!(empty["roster"], json!([]), "{empty}");
    assert!(empty["note"].is_null(), "{empty}");
    call(
        &c,
        run,
        json!({"action": "roster", "op": "add", "namespace": "beta"}),
    )
    .await;
    call(
        &c,
        run,
        json!({"action": "roster", "op": "remove", "namespace": "beta", "dry_run": true}),
    )
    .await;
    call(
        &c,
        run,
        json!({"action": "roster", "op": "remove", "namespace": "beta"}),
    )
    .await;
    let added = call(
        &c,
        run,
        json!({"action": "roster", "op": "add", "namespace": ns}),
    )
    .await;
    assert_eq!(added["roster"], json!([ns]), "{added}");
    let nameless = call(&c, run, json!({"action": "roster", "op": "add"})).await;
    assert_eq!(nameless["ok"], false, "{nameless}");
    let forbidden = call(&worker, run, json!({"action": "roster", "namespace": ns})).await;
    assert!(
        forbidden["ok"] == false
            && forbidden["refusal"]
                .as_str()
                .is_some_and(|r| r.contains("admin only")),
        "the roster is admin only: {forbidden}"
    );
    let cadence = call(&c, run, json!({"action": "cadence", "task": "sweep"})).await;
    assert!(cadence["cadence_minutes"].is_i64(), "{cadence}");
    let set = call(
        &c,
        run,
        json!({"action": "cadence", "task": "sweep", "value": "10", "dry_run": true}),
    )
    .await;
    assert_eq!(set["cadence_minutes"], 10, "{set}");
    call(&c, run, json!({"action": "cadence"})).await;
    let tick = call(&c, run, json!({"action": "tick", "task": "sweep"})).await;
    assert_eq!(tick["report"]["ran"][0]["task"], "sweep", "{tick}");
    call(
        &c,
        "write",
        json!({"namespace": ns, "path": "improve/scores.md", "title": "Scores",
               "body": "# Scores\n\n## Anchors\n- tests_pass: required\n- holdout_pass_rate: min 0.5\n\n## Secondary\n- bundle_kb: minimize weight 1\n",
               "allow_improve_paths": true, "confirm": true}),
    )
    .await;
    let pinned = call(
        &c,
        run,
        json!({"action": "pin", "namespace": ns, "dry_run": true}),
    )
    .await;
    assert_eq!(pinned["anchors"], 2, "{pinned}");
    let unpinnable = call(&c, run, json!({"action": "pin", "namespace": "beta"})).await;
    assert!(unpinnable["problems"].is_array(), "{unpinnable}");
    let planned = call(&c, run, json!({"action": "run", "dry_run": true})).await;
    assert!(
        planned["opened"].is_array() || planned["refused"].is_array(),
        "{planned}"
    );
    call(
        &c,
        run,
        json!({"action": "run", "namespace": ns, "dry_run": true}),
    )
    .await;
    let attempt = call(
        &c,
        run,
        json!({"action": "attempt", "namespace": ns, "head_sha": "0123456789abcdef"}),
    )
    .await;
    assert_eq!(attempt["ok"], false, "no live run: {attempt}");
    s.namespace("capsid").await;
    call(
        &c,
        "write",
        json!({"namespace": "capsid", "path": "policy/typed.md", "title": "Typed",
               "body": "# Typed policy\n\n- enabled: false\n", "allow_improve_paths": true}),
    )
    .await;
    let signed = call(
        &c,
        run,
        json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/typed.md"}),
    )
    .await;
    assert_eq!(signed["resigned"], false, "{signed}");
    let elsewhere = call(&c, run, json!({"action": "sign_policy", "namespace": ns})).await;
    assert_eq!(elsewhere["ok"], false, "{elsewhere}");
    let skills = call(&c, run, json!({"action": "skills"})).await;
    assert_eq!(skills["skills"], json!([]), "{skills}");
    call(
        &c,
        run,
        json!({"action": "skills", "namespace": ns, "status": "live"}),
    )
    .await;
    for refused in [
        json!({"action": "skill", "skill": "no-such-skill"}),
        json!({"action": "retire_skill", "skill": "no-such-skill", "reason": "typed"}),
        json!({"action": "accept_merge", "skill": "one", "other": "one"}),
        json!({"action": "reject_merge", "skill": "one"}),
        json!({"action": "propose_skill", "namespace": ns}),
        json!({"action": "propose_edit", "namespace": ns, "skill": "no-such-skill"}),
    ] {
        let answer = call(&c, run, refused.clone()).await;
        assert_eq!(answer["ok"], false, "{refused}: {answer}");
    }
    let off = call(&c, run, json!({"action": "mode", "value": "off"})).await;
    assert_eq!(off["mode"], "off", "{off}");
    let stopped = call(&c, run, json!({"action": "run", "namespace": ns})).await;
    assert_eq!(stopped["ok"], false, "the loop is off: {stopped}");
    // The repo tools need a GitHub: the GitHub adapter suite calls each of them once
    // (`every_repo_tool_answers_its_typed_answer`), through the same checks. `backup` needs a
    // media store: `e2e_backup`'s progress cases call it on both stores, through `Client`.
    let typed: BTreeSet<&str> = schemas
        .iter()
        .map(|t| t.name.as_ref())
        .filter(|n| spec(n).is_some_and(|s| s.group != ToolGroup::Repo))
        .filter(|n| *n != "backup")
        .collect();
    let called: BTreeSet<&str> = called.into_iter().collect();
    assert_eq!(
        called, typed,
        "every tool but the repo tools and backup is called above"
    );
}

e2e_cases!(super::options();
    every_tool_has_a_title_and_every_typed_tool_an_output_schema,
    every_typed_tool_answers_structured_content_its_schema_accepts,
);
