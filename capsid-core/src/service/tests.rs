//! Service tests: the one enforcement point refuses before any store call (the store here
//! records every call, and `call` fails the test when one was made), and every served tool is
//! in the registry with the reference's parameters.

use std::sync::Arc;

use futures::executor::block_on;
use serde_json::{Value, json};

use super::recording_store::RecordingStore;
use super::*;
use crate::caller::{AgentKind, Caller};
use crate::ids::CountingEntropy;
use crate::owner::{ConsoleAction, OwnerService};
use crate::scope::{Axis, Grant, Scopes};
use crate::time::{ManualClock, Timestamp};

fn service() -> Service {
    service_over(Arc::new(RecordingStore::default()))
}

fn service_over(store: Arc<RecordingStore>) -> Service {
    Service::new(
        store,
        Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000))),
        Arc::new(CountingEntropy::default()),
        ServiceConfig::default(),
    )
}

fn agent(scopes: Scopes) -> Caller {
    Caller::agent("agent_000000000001", "bot", AgentKind::Driver, scopes)
}

fn narrowed() -> Scopes {
    Scopes {
        namespaces: Axis::Only(vec!["alpha".into()]),
        grants: [Grant::Read, Grant::Write].into(),
        ..Scopes::unrestricted()
    }
}

/// Calls `tool` on a fresh service and fails the test if the call touched the store.
fn call(caller: &Caller, tool: &str, args: Value) -> Result<Value> {
    let store = Arc::new(RecordingStore::default());
    let out = block_on(service_over(store.clone()).call_tool(caller, tool, args, &NoConfirmer));
    let touches = store.touches();
    assert!(
        touches.is_empty(),
        "{tool} touched the store ({touches:?}) in a call that must be refused before any store call: {out:?}"
    );
    out
}

#[test]
fn hostile_paths_are_refused_before_any_store_call() {
    let admin = Caller::admin("owner");
    let long = "a".repeat(600);
    for path in [
        "../x",
        "/x",
        "a//b",
        "x/",
        "a\u{1}b",
        "tab\there",
        long.as_str(),
        "",
        "a/../b",
    ] {
        for tool in ["read", "write", "delete", "history", "backlinks"] {
            let err = call(
                &admin,
                tool,
                json!({"namespace": "alpha", "path": path, "title": "t", "body": "b"}),
            )
            .expect_err("hostile path must be refused");
            assert!(matches!(err, Error::Invalid(_)), "{tool} {path:?}: {err}");
            assert!(
                err.to_string().contains("path"),
                "{tool}: the refusal names the field: {err}"
            );
        }
    }
    let err = call(
        &admin,
        "move",
        json!({"namespace": "alpha", "path": "a.md", "new_path": "../b"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("new_path"), "{err}");
}

#[test]
fn oversized_fields_are_refused_naming_the_field_and_bound() {
    let admin = Caller::admin("owner");
    let err = call(
        &admin,
        "write",
        json!({"namespace": "alpha", "path": "a.md", "title": "t".repeat(1025), "body": "b"}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "write: title is 1025 characters long; the limit is 1024"
    );
    let err = call(&admin, "search", json!({"query": "q".repeat(513)})).unwrap_err();
    assert!(
        err.to_string().contains("query") && err.to_string().contains("512"),
        "{err}"
    );
    let err = call(
        &admin,
        "read",
        json!({"namespace": "n".repeat(65), "path": "a.md"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("namespace"), "{err}");
    let err = call(
        &admin,
        "write",
        json!({"namespace": "alpha", "path": "a.md", "mode": "explode"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("mode"), "{err}");
    let err = call(
        &admin,
        "history",
        json!({"namespace": "alpha", "path": "a.md", "version_id": "seven"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("version_id"), "{err}");
    assert!(call(&admin, "read", json!("not an object")).is_err());
}

#[test]
fn a_narrowed_agent_must_name_its_namespace() {
    let a = agent(narrowed());
    let err = call(&a, "search", json!({"query": "x"})).unwrap_err();
    assert!(err.to_string().contains("without a namespace"), "{err}");
    let err = call(&a, "read", json!({"namespace": "beta", "path": "a.md"})).unwrap_err();
    assert!(
        err.to_string().contains("\"beta\"") && err.to_string().contains("alpha"),
        "{err}"
    );
    let err = call(&a, "list", json!({})).unwrap_err();
    assert!(matches!(err, Error::Denied(_)), "{err}");
}

#[test]
fn read_only_callers_cannot_write() {
    let ro = Caller::operator_key(Grant::Read, "00112233445566778899aabbccddeeff");
    for (tool, args) in [
        (
            "write",
            json!({"namespace": "a", "path": "x.md", "title": "t", "body": "b"}),
        ),
        (
            "delete",
            json!({"namespace": "a", "path": "x.md", "confirm": true}),
        ),
        (
            "move",
            json!({"namespace": "a", "path": "x.md", "new_path": "y.md", "confirm": true}),
        ),
        (
            "restore",
            json!({"namespace": "a", "path": "x.md", "version_id": 1, "confirm": true}),
        ),
        (
            "register_namespace",
            json!({"namespace": "a", "repo": "o/r"}),
        ),
        ("update_namespace", json!({"namespace": "a", "repos": "[]"})),
        ("agents", json!({"action": "list"})),
    ] {
        let err = call(&ro, tool, args).unwrap_err();
        assert!(err.to_string().contains("write grant"), "{tool}: {err}");
    }
    // lint report is a write action of a per-action tool: refused by the handler's check.
    let err = call(&ro, "lint", json!({"namespace": "a", "mode": "report"})).unwrap_err();
    assert!(err.to_string().contains("write grant"), "{err}");
}

#[test]
fn tools_axis_and_action_narrowing_refuse_first() {
    let only_read = agent(Scopes {
        tools: Axis::Only(vec!["read".into()]),
        ..narrowed()
    });
    let err = call(
        &only_read,
        "write",
        json!({"namespace": "beta", "path": "x.md"}),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("may not use write"),
        "tool refused before the namespace: {err}"
    );
    let lint_gather_only = agent(Scopes {
        tools: Axis::Only(vec!["lint".into(), "lint.gather".into()]),
        ..narrowed()
    });
    let err = call(
        &lint_gather_only,
        "lint",
        json!({"namespace": "alpha", "mode": "finalize", "consumed": ["a.md"]}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("lint.finalize"), "{err}");
}

#[test]
fn a_minted_agent_is_refused_by_agents_without_touching_the_store() {
    let a = agent(Scopes::unrestricted());
    let out = call(
        &a,
        "agents",
        json!({"action": "mint", "name": "x", "kind": "driver", "namespaces": ["*"]}),
    )
    .unwrap();
    assert_eq!(out["ok"], false);
    assert_eq!(out["action"], "mint");
    assert!(
        out["refusal"].as_str().unwrap().contains("admin only"),
        "{out}"
    );
}

#[test]
fn improve_override_needs_can_touch_protected() {
    let writer = agent(Scopes {
        flags: Default::default(),
        ..narrowed()
    });
    let err = call(&writer, "write", json!({"namespace": "alpha", "path": "improve/skills/a.md", "title": "t", "body": "b", "allow_improve_paths": true}))
        .unwrap_err();
    assert!(err.to_string().contains("can_touch_protected"), "{err}");
}

#[test]
fn arguments_a_tool_does_not_take_are_named_and_the_call_still_parses() {
    assert_eq!(
        registry::unknown_arguments("list", &json!({"namepsace": "alpha", "type": "core"})),
        ["namepsace"]
    );
    assert_eq!(
        registry::unknown_arguments(
            "agents",
            &json!({"action": "revoke", "name": "a", "confirm": true})
        ),
        ["confirm"]
    );
    assert!(registry::unknown_arguments("backup", &json!({})).is_empty());
    assert!(registry::unknown_arguments("no_such_tool", &json!({"x": 1})).is_empty());
    for entry in &REGISTRY {
        assert_eq!(
            registry::unknown_arguments(entry.spec.name, &json!({"no_such_argument": 1})),
            ["no_such_argument"],
            "{}",
            entry.spec.name
        );
    }
    // As the reference: the call is parsed without them.
    let parsed = parse_tool_args("list", json!({"namepsace": "alpha"})).expect("parses");
    assert_eq!(parsed.namespace, None);
}

#[test]
fn every_registered_tool_is_served_and_nothing_else() {
    let admin = Caller::admin("owner");
    let listed = service().tools_for(&admin);
    assert_eq!(listed.len(), REGISTRY.len());
    for entry in &REGISTRY {
        // A caller with no scopes at all is refused by parsing or by the scope check: never
        // as an unknown tool, and never after touching the store.
        let nobody = agent(Scopes::none());
        let e = call(
            &nobody,
            entry.spec.name,
            json!({"namespace": "a", "path": "x.md"}),
        )
        .unwrap_err();
        assert!(
            !e.to_string().starts_with("unknown tool"),
            "{}: {e}",
            entry.spec.name
        );
    }
    let err = call(&admin, "no_such_tool", json!({})).unwrap_err();
    assert_eq!(err.to_string(), "unknown tool: no_such_tool");
}

/// Every tool's parameters as reference section 2 names them (and, for the three tools of the
/// sister design, as SPEC 8 and issue 13 do, and the backup of issue 36); `*` marks a
/// required one.
const REFERENCE_PARAMETERS: [(&str, &[&str]); 36] = [
    ("list", &["namespace", "type", "status"]),
    ("read", &["*namespace", "*path"]),
    ("brief", &["*namespace"]),
    ("backlinks", &["*namespace", "*path"]),
    ("find", &["namespace", "*glob"]),
    // `limit` and `cursor` go beyond the reference (issue 33): pages past the 25 best.
    (
        "search",
        &["*query", "namespace", "type", "limit", "cursor"],
    ),
    ("namespaces", &[]),
    ("history", &["*namespace", "*path", "version_id"]),
    (
        "write",
        &[
            "*namespace",
            "*path",
            "title",
            "body",
            "mode",
            "find",
            "replace_with",
            "type",
            "tags",
            "status",
            "confirm",
            "links",
            "if_match",
            "allow_improve_paths",
        ],
    ),
    (
        "delete",
        &["*namespace", "*path", "confirm", "allow_improve_paths"],
    ),
    (
        "move",
        &[
            "*namespace",
            "*path",
            "*new_path",
            "confirm",
            "allow_improve_paths",
        ],
    ),
    (
        "restore",
        &[
            "*namespace",
            "*path",
            "*version_id",
            "confirm",
            "if_match",
            "allow_improve_paths",
        ],
    ),
    ("lint", &["*namespace", "mode", "consumed", "confirm"]),
    (
        "register_namespace",
        &["*namespace", "repo", "label", "repos"],
    ),
    (
        "update_namespace",
        &[
            "*namespace",
            "repos",
            "root_dir",
            "test_command",
            "build_command",
            "agent_command",
            "credential_ref",
            "monthly_budget_usd",
            "job_max_cost_usd",
            "runtime",
            "migration_tools",
            "protected_branches",
            "dispatch_limits",
            "deploy_command",
        ],
    ),
    ("list_repo_tree", &["*namespace", "repo", "path", "ref"]),
    (
        "read_repo_file",
        &["*namespace", "repo", "path", "paths", "ref"],
    ),
    (
        "search_code",
        &[
            "*query",
            "*namespace",
            "repo",
            "path_prefix",
            "ref",
            "max_results",
            "max_files",
            "start",
        ],
    ),
    ("repo_refs", &["*namespace", "repo"]),
    (
        "repo_history",
        &[
            "*namespace",
            "repo",
            "ref",
            "base",
            "head",
            "sha",
            "limit",
            "patch",
        ],
    ),
    (
        "ci_status",
        &["*namespace", "repo", "limit", "ref", "run_id"],
    ),
    (
        "write_repo_file",
        &[
            "*namespace",
            "repo",
            "*path",
            "*content",
            "*message",
            "mode",
            "branch",
            "allow_workflow_write",
        ],
    ),
    ("create_branch", &["*namespace", "repo", "*branch", "from"]),
    (
        "open_pr",
        &["*namespace", "repo", "*title", "*head", "base", "body"],
    ),
    (
        "delete_repo_file",
        &[
            "*namespace",
            "repo",
            "*path",
            "*message",
            "mode",
            "branch",
            "allow_workflow_write",
        ],
    ),
    (
        "manage_pr",
        &[
            "*namespace",
            "repo",
            "*number",
            "*action",
            "merge_method",
            "body",
        ],
    ),
    ("delete_branch", &["*namespace", "repo", "*branch", "force"]),
    (
        "ci_dispatch",
        &["*namespace", "repo", "workflow", "ref", "run_id", "inputs"],
    ),
    (
        "jobs",
        &[
            "*action",
            "namespace",
            "title",
            "body",
            "priority",
            "parent",
            "gate_required",
            "review_required",
            "required_flags",
            "min_record",
            // Beyond the reference (issue 49): the job's cap on what one run may spend.
            "max_cost_usd",
            // Beyond the reference (issue 50): the runtime a job asks for, and what a driver runs.
            "runtime",
            "runtimes",
            // Beyond the reference (issue 55): the job's role.
            "role",
            // Beyond the reference (issue 51): where a job works, and the list's path filter.
            "paths",
            "path",
            "status",
            "id",
            "result_summary",
            "result_ref",
            "reason",
            "command",
            "approved_by_policy",
            "evidence",
            "skills_used",
            "skill_verdict",
            "head_sha",
            "pull_request",
            "repo",
            // Beyond the reference (issue 49): the calls the holder's model door metered; (issue
            // 48) what the holder's box doors saw.
            "calls",
            "doors",
        ],
    ),
    (
        "improve_run",
        &[
            "action",
            "namespace",
            "value",
            "reason",
            "actions_minutes_month",
            "model_usd_month",
            "dry_run",
            "release",
            "condition",
            "path",
            "op",
            "task",
            "head_sha",
            "summary",
            "skill",
            "other",
            "status",
            "source_kind",
            "source_id",
            "proposal",
            "ops",
        ],
    ),
    ("improve_status", &["namespace", "task_path"]),
    (
        "agents",
        &[
            "*action",
            "name",
            "kind",
            "namespaces",
            "repos",
            "tools",
            "grants",
            "flags",
        ],
    ),
    (
        "checkpoint",
        &[
            "*namespace",
            "agent",
            "*status",
            "where_it_stopped",
            "next_steps",
            "question",
            "summary",
            "decisions",
            "tests_status",
            "build_status",
            "clean_tree",
            "visibility",
            "push_sha",
            "job_id",
            "session_id",
            "cost_usd",
            "turns",
        ],
    ),
    (
        "checkmarks",
        &[
            "*action",
            "namespace",
            "agent",
            "cursor",
            "limit",
            "answer",
            "resume",
            "entry_id",
        ],
    ),
    ("shared", &["*action", "key", "value"]),
    // Beyond the reference (issue 36): a backup on demand over MCP, with progress.
    ("backup", &[]),
];

/// Every format keyword in every tool's input and output schema: what a validator reads.
fn formats_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(f) = map.get("format").and_then(Value::as_str) {
                out.push(f.to_owned());
            }
            map.values().for_each(|c| formats_in(c, out));
        }
        Value::Array(items) => items.iter().for_each(|c| formats_in(c, out)),
        _ => {}
    }
}

#[test]
fn every_schema_uses_only_the_formats_json_schema_defines() {
    let admin = Caller::admin("owner");
    for listing in service().tools_for(&admin) {
        let mut found = Vec::new();
        formats_in(&Value::Object((*listing.input_schema).clone()), &mut found);
        formats_in(
            &Value::Object((*listing.output_schema.schema).clone()),
            &mut found,
        );
        for f in found {
            assert!(
                crate::service::args::STANDARD_FORMATS.contains(&f.as_str()),
                "{}: format {f:?} is not one JSON Schema defines",
                listing.spec.name
            );
        }
    }
    // The standard ones are kept, and a property named `format` is a property.
    let mut v = json!({"type": "object", "properties": {
        "at": {"type": "string", "format": "date-time"},
        "n": {"type": "integer", "format": "uint64", "minimum": 0},
        "format": {"type": "string", "format": "uint"},
        "list": {"type": "array", "items": {"type": "number", "format": "double"}},
    }});
    crate::service::args::standard_formats(&mut v);
    assert_eq!(
        v,
        json!({"type": "object", "properties": {
            "at": {"type": "string", "format": "date-time"},
            "n": {"type": "integer", "minimum": 0},
            "format": {"type": "string"},
            "list": {"type": "array", "items": {"type": "number"}},
        }})
    );
}

#[test]
fn every_tools_schema_has_the_reference_parameters_and_required_fields() {
    let admin = Caller::admin("owner");
    let listed = service().tools_for(&admin);
    assert_eq!(listed.len(), REFERENCE_PARAMETERS.len());
    for (listing, (name, params)) in listed.iter().zip(REFERENCE_PARAMETERS) {
        assert_eq!(
            listing.spec.name, name,
            "registry order follows the reference"
        );
        let schema = &listing.input_schema;
        assert_eq!(schema.get("type"), Some(&json!("object")), "{name}");
        let props = schema["properties"].as_object().expect("properties");
        let mut got: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut want: Vec<&str> = params.iter().map(|p| p.trim_start_matches('*')).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{name}: parameters");
        let mut required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut want_required: Vec<&str> =
            params.iter().filter_map(|p| p.strip_prefix('*')).collect();
        required.sort_unstable();
        want_required.sort_unstable();
        assert_eq!(required, want_required, "{name}: required");
        for (param, p) in props {
            assert!(
                p.get("description").is_some() || p.get("$ref").is_some(),
                "{name}.{param} has no description: {p}"
            );
            // A schema that constrains nothing (any JSON) lets clients send anything; every
            // parameter states a type, an enum or alternatives.
            let constrains = ["type", "enum", "anyOf", "oneOf", "$ref", "const"]
                .iter()
                .any(|k| p.get(*k).is_some());
            assert!(constrains, "{name}.{param} constrains nothing: {p}");
        }
        for bounded in ["namespace", "path", "title", "body", "query", "glob"] {
            if let Some(p) = props.get(bounded)
                && p.get("type") == Some(&json!("string"))
            {
                assert!(
                    p.get("maxLength").is_some(),
                    "{name}.{bounded} is unbounded: {p}"
                );
            }
        }
    }
}

#[test]
fn console_actions_and_revocation_refuse_anyone_but_the_owner_before_the_store() {
    // The owner is the GitHub owner or the local owner (`cli:<user>`, who holds the
    // database); an unrestricted agent and the server's own loop are not.
    let bot = agent(Scopes::unrestricted());
    let own_loop = Caller::improve_loop();
    for caller in [&bot, &own_loop] {
        let store = Arc::new(RecordingStore::default());
        let err =
            block_on(OwnerService::new(service_over(store.clone())).console_revoke_grants(caller))
                .unwrap_err();
        assert!(matches!(err, Error::Forbidden(_)), "{err}");
        let action = ConsoleAction::Mode {
            value: "off".into(),
        };
        let err =
            block_on(OwnerService::new(service_over(store.clone())).console_act(caller, &action))
                .unwrap_err();
        assert!(matches!(err, Error::Forbidden(_)), "{err}");
        assert!(store.touches().is_empty(), "{:?}", store.touches());
    }
}
