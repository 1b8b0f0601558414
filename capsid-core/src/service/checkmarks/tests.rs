//! The checkmarks area's refusals: bad input and the one check's refusals change nothing and
//! touch no store (the recording store fails the test if they did); the feed is the one read
//! a narrowed caller makes without naming its namespace.

use std::sync::Arc;

use futures::executor::block_on;
use serde_json::{Value, json};

use crate::caller::{AgentKind, Caller};
use crate::error::Error;
use crate::ids::CountingEntropy;
use crate::scope::{Axis, Grant, Scopes};
use crate::service::recording_store::RecordingStore;
use crate::service::{NoConfirmer, Service, ServiceConfig};
use crate::time::{ManualClock, Timestamp};

fn run(caller: &Caller, tool: &str, args: Value) -> (Result<Value, Error>, Vec<&'static str>) {
    let store = Arc::new(RecordingStore::default());
    let service = Service::new(
        store.clone(),
        Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000))),
        Arc::new(CountingEntropy::default()),
        ServiceConfig::default(),
    );
    let out = block_on(service.call_tool(caller, tool, args, &NoConfirmer));
    (out, store.touches())
}

/// Calls `tool` and expects a refusal made before any store call.
fn refused(caller: &Caller, tool: &str, args: Value) -> Error {
    let (out, touches) = run(caller, tool, args.clone());
    assert!(
        touches.is_empty(),
        "{tool} {args} touched {touches:?}: {out:?}"
    );
    out.expect_err("refused")
}

fn agent(name: &str, scopes: Scopes) -> Caller {
    Caller::agent("agent_000000000001", name, AgentKind::Driver, scopes)
}

fn worker() -> Caller {
    agent(
        "d1",
        Scopes {
            namespaces: Axis::Only(vec!["alpha".into()]),
            grants: [Grant::Read, Grant::Write].into(),
            ..Scopes::mint_defaults(Axis::All)
        },
    )
}

fn checkpoint(extra: Value) -> Value {
    let mut args = json!({"namespace": "alpha", "status": "working"});
    if let (Value::Object(a), Value::Object(e)) = (&mut args, extra) {
        a.extend(e);
    }
    args
}

#[test]
fn bad_checkpoints_are_refused_naming_the_field_before_any_store_call() {
    let w = worker();
    for (extra, field) in [
        (json!({"status": "finished"}), "status"),
        (
            json!({"where_it_stopped": "w".repeat(4097)}),
            "where_it_stopped",
        ),
        (json!({"summary": "s".repeat(65_537)}), "summary"),
        (
            json!({"status": "blocked", "question": "q".repeat(4097)}),
            "question",
        ),
        (json!({"next_steps": "run the tests"}), "next_steps"),
        (json!({"next_steps": [1, 2]}), "next_steps"),
        (json!({"next_steps": ["ok", ""]}), "next_steps"),
        (json!({"next_steps": vec!["s"; 51]}), "next_steps"),
        (json!({"next_steps": ["n".repeat(1025)]}), "next_steps"),
        (json!({"tests_status": "green"}), "tests_status"),
        (json!({"visibility": "everyone"}), "visibility"),
        (json!({"push_sha": "not-a-sha"}), "push_sha"),
        (json!({"cost_usd": -1.0}), "cost_usd"),
        (json!({"turns": -3}), "turns"),
        (json!({"agent": "a".repeat(65)}), "agent"),
        (json!({"status": "paused_for_input"}), "question"),
        (json!({"question": "why?"}), "question"),
        (
            json!({"status": "done", "tests_status": "fail"}),
            "tests_status",
        ),
        (json!({"status": "done"}), "tests_status"),
        (
            json!({"status": "done", "tests_status": "skipped"}),
            "tests_status",
        ),
    ] {
        let err = refused(&w, "checkpoint", checkpoint(extra.clone()));
        assert!(matches!(err, Error::Invalid(_)), "{extra}: {err}");
        assert!(
            err.to_string().contains(field),
            "{extra}: names {field}: {err}"
        );
    }
}

#[test]
fn bad_reads_answers_and_keys_are_refused_before_any_store_call() {
    let w = worker();
    for (args, field) in [
        (
            json!({"action": "log", "namespace": "alpha", "agent": "d1", "cursor": "!!"}),
            "cursor",
        ),
        (json!({"action": "feed", "cursor": "eyJiIjowfQ"}), "cursor"),
        (
            json!({"action": "log", "namespace": "alpha", "agent": "d1", "limit": 0}),
            "limit",
        ),
        (json!({"action": "feed", "limit": 101}), "limit"),
        (json!({"action": "get", "namespace": "alpha"}), "agent"),
        (
            json!({"action": "answer", "namespace": "alpha", "agent": "d1"}),
            "answer",
        ),
        (
            json!({"action": "answer", "namespace": "alpha", "agent": "d1", "answer": "a".repeat(16_385)}),
            "answer",
        ),
        (
            json!({"action": "resume", "namespace": "alpha", "agent": "d1", "answer": "x"}),
            "answer",
        ),
        (json!({"action": "explode", "namespace": "alpha"}), "action"),
    ] {
        let err = refused(&w, "checkmarks", args.clone());
        assert!(
            err.to_string().contains(field),
            "{args}: names {field}: {err}"
        );
    }
    let admin = Caller::admin("octo");
    for (args, field) in [
        (json!({"action": "get", "key": "a/b"}), "key"),
        (
            json!({"action": "set", "key": "k", "value": "v".repeat(8193)}),
            "value",
        ),
        (json!({"action": "set", "key": "k"}), "value"),
        (json!({"action": "delete"}), "key"),
    ] {
        let err = refused(&admin, "shared", args.clone());
        assert!(matches!(err, Error::Invalid(_)), "{args}: {err}");
        assert!(
            err.to_string().contains(field),
            "{args}: names {field}: {err}"
        );
    }
}

#[test]
fn the_one_check_guards_every_action() {
    let w = worker();
    let err = refused(
        &w,
        "shared",
        json!({"action": "set", "key": "k", "value": "v"}),
    );
    assert!(matches!(err, Error::Denied(_)), "{err}");
    assert!(err.to_string().contains("can_write_shared"), "{err}");
    let err = refused(&w, "shared", json!({"action": "delete", "key": "k"}));
    assert!(err.to_string().contains("can_write_shared"), "{err}");
    let err = refused(
        &w,
        "checkmarks",
        json!({"action": "log", "namespace": "beta", "agent": "b1"}),
    );
    assert!(err.to_string().contains("\"beta\""), "{err}");
    let err = refused(&w, "checkmarks", json!({"action": "list"}));
    assert!(err.to_string().contains("without a namespace"), "{err}");
    let err = refused(
        &w,
        "checkpoint",
        json!({"namespace": "beta", "status": "working"}),
    );
    assert!(err.to_string().contains("\"beta\""), "{err}");
    let reader = Caller::operator_key(Grant::Read, "00112233445566778899aabbccddeeff");
    for args in [
        json!({"action": "answer", "namespace": "alpha", "agent": "d1", "answer": "yes"}),
        json!({"action": "resume", "namespace": "alpha", "agent": "d1"}),
    ] {
        let err = refused(&reader, "checkmarks", args);
        assert!(err.to_string().contains("write grant"), "{err}");
    }
    let err = refused(&reader, "checkpoint", checkpoint(json!({})));
    assert!(err.to_string().contains("write grant"), "{err}");
    let feed_only = agent(
        "watcher",
        Scopes {
            tools: Axis::Only(vec!["checkmarks".into(), "checkmarks.feed".into()]),
            ..Scopes::mint_defaults(Axis::Only(vec!["alpha".into()]))
        },
    );
    let err = refused(
        &feed_only,
        "checkmarks",
        json!({"action": "get", "namespace": "alpha", "agent": "d1"}),
    );
    assert!(err.to_string().contains("checkmarks.get"), "{err}");
}

#[test]
fn an_agent_writes_only_its_own_checkmark() {
    let err = refused(&worker(), "checkpoint", checkpoint(json!({"agent": "d2"})));
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    assert!(err.to_string().contains("only its own"), "{err}");
    let err = refused(&Caller::admin("octo"), "checkpoint", checkpoint(json!({})));
    assert!(err.to_string().contains("agent is required"), "{err}");
}

#[test]
fn a_narrowed_reader_reads_the_global_feed_without_naming_its_namespace() {
    let (out, touches) = run(&worker(), "checkmarks", json!({"action": "feed"}));
    assert_eq!(touches, ["global_entries"], "{out:?}");
    let (_, touches) = run(
        &worker(),
        "checkmarks",
        json!({"action": "feed", "namespace": "alpha"}),
    );
    assert_eq!(
        touches,
        ["namespace_exists"],
        "the named namespace is checked first"
    );
}

#[test]
fn the_asking_agent_answers_and_resumes_nothing_of_its_own_before_any_store_call() {
    let w = worker();
    for args in [
        json!({"action": "answer", "namespace": "alpha", "agent": "d1", "answer": "yes"}),
        json!({"action": "answer", "namespace": "alpha", "agent": "d1", "answer": "yes", "resume": true}),
        json!({"action": "resume", "namespace": "alpha", "agent": "d1"}),
    ] {
        let err = refused(&w, "checkmarks", args.clone());
        assert!(matches!(err, Error::Forbidden(_)), "{args}: {err}");
        assert!(
            err.to_string()
                .contains("d1's open question is answered by someone else"),
            "{args}: {err}"
        );
    }
    // Another agent, and the admin, get past the rule to the store.
    for caller in [agent("d2", worker().scopes), Caller::admin("octo")] {
        let (_, touches) = run(
            &caller,
            "checkmarks",
            json!({"action": "answer", "namespace": "alpha", "agent": "d1", "answer": "yes"}),
        );
        assert!(!touches.is_empty(), "{}: reaches the store", caller.actor());
    }
}

#[test]
fn a_promotion_needs_the_shared_flag_and_an_entry_id_before_any_store_call() {
    // Without can_write_shared: the one check refuses, naming the flag.
    let err = refused(
        &worker(),
        "checkmarks",
        json!({"action": "promote", "namespace": "alpha", "entry_id": 7}),
    );
    assert!(matches!(err, Error::Denied(_)), "{err}");
    assert!(err.to_string().contains("can_write_shared"), "{err}");
    let mut flagged = worker().scopes;
    flagged.flags.insert(crate::scope::Flag::CanWriteShared);
    let sharer = agent("d1", flagged);
    // With it, but outside its namespaces.
    let err = refused(
        &sharer,
        "checkmarks",
        json!({"action": "promote", "namespace": "beta", "entry_id": 7}),
    );
    assert!(err.to_string().contains("\"beta\""), "{err}");
    // Bad input names the field.
    for (args, field) in [
        (
            json!({"action": "promote", "namespace": "alpha"}),
            "entry_id",
        ),
        (
            json!({"action": "promote", "namespace": "alpha", "entry_id": 0}),
            "entry_id",
        ),
        (
            json!({"action": "promote", "namespace": "alpha", "entry_id": "7"}),
            "entry_id",
        ),
        (
            json!({"action": "promote", "namespace": "alpha", "entry_id": 1.5}),
            "entry_id",
        ),
        (json!({"action": "promote", "entry_id": 7}), "namespace"),
    ] {
        let err = refused(&sharer, "checkmarks", args.clone());
        assert!(
            err.to_string().contains(field),
            "{args}: names {field}: {err}"
        );
    }
    // The flag holder and the admin get past the check to the store.
    for caller in [sharer, Caller::admin("octo")] {
        let (_, touches) = run(
            &caller,
            "checkmarks",
            json!({"action": "promote", "namespace": "alpha", "entry_id": 7}),
        );
        assert_eq!(touches, ["namespace_exists"], "{}", caller.actor());
    }
}
