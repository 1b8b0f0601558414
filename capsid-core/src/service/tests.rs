//! Service tests: the one enforcement point refuses before any store call (the store here
//! fails the test when touched), and every served tool is in the table.

use std::sync::Arc;

use futures::executor::block_on;
use serde_json::{Value, json};

use super::untouchable::UntouchableStore;
use super::*;
use crate::caller::{AgentKind, Caller};
use crate::ids::CountingEntropy;
use crate::scope::{Axis, Grant, Scopes};
use crate::time::{ManualClock, Timestamp};
use crate::tools::TOOLS;

fn service() -> Service {
    Service::new(
        Arc::new(UntouchableStore),
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

fn call(caller: &Caller, tool: &str, args: Value) -> Result<Value> {
    block_on(service().call_tool(caller, tool, args, &NoConfirmer))
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
fn every_tool_in_the_table_is_served_and_nothing_else() {
    let admin = Caller::admin("owner");
    let listed = service().tools_for(&admin);
    assert_eq!(listed.len(), TOOLS.len());
    for tool in &TOOLS {
        // An empty argument object is refused by parsing or by the handler, never as unknown.
        // A caller with no scopes at all is refused by parsing or by the scope check: never
        // as an unknown tool, and never after touching the store.
        let nobody = agent(Scopes::none());
        let e = call(
            &nobody,
            tool.name,
            json!({"namespace": "a", "path": "x.md"}),
        )
        .unwrap_err();
        assert!(
            !e.to_string().starts_with("unknown tool"),
            "{}: {e}",
            tool.name
        );
        let schema = input_schema_of(tool.name);
        assert_eq!(schema.get("type"), Some(&json!("object")), "{}", tool.name);
    }
    let err = call(&admin, "no_such_tool", json!({})).unwrap_err();
    assert_eq!(err.to_string(), "unknown tool: no_such_tool");
}

#[test]
fn console_actions_and_revocation_refuse_anyone_but_the_owner_before_the_store() {
    let bot = agent(Scopes::unrestricted());
    let cli = Caller::cli("someone");
    for caller in [&bot, &cli] {
        let err = block_on(service().console_revoke_grants(caller)).unwrap_err();
        assert!(matches!(err, Error::Forbidden(_)), "{err}");
        let action = ConsoleAction::Mode {
            value: "off".into(),
        };
        let err = block_on(service().console_act(caller, &action)).unwrap_err();
        assert!(matches!(err, Error::Forbidden(_)), "{err}");
    }
}
