use serde_json::json;

use super::*;
use crate::time::Timestamp;

fn ns() -> Namespace {
    Namespace::parse("n").unwrap()
}

fn prior() -> Document {
    Document {
        id: 3,
        namespace: "n".into(),
        path: "a.md".into(),
        title: Some("Old".into()),
        doc_type: "note".into(),
        status: "published".into(),
        tags: None,
        created_at: Timestamp::parse("2026-01-01T00:00:00.000Z").expect("instant"),
        updated_at: Timestamp::parse("2026-01-01T00:00:00.000Z").expect("instant"),
        body: Some("old body".into()),
    }
}

#[test]
fn step_one_checks_type_then_status_then_links() {
    let err = check_meta(&ns(), Some("session"), Some("nope"), Some("not json")).unwrap_err();
    assert!(
        matches!(err, WriteError::Kind(KindError::UnknownType(_))),
        "{err:?}"
    );
    let err = check_meta(&ns(), Some("task"), Some("nope"), Some("not json")).unwrap_err();
    assert!(
        matches!(err, WriteError::Kind(KindError::UnknownStatus(_))),
        "{err:?}"
    );
    let err = check_meta(&ns(), Some("task"), Some("closed"), Some("not json")).unwrap_err();
    assert!(err.to_string().starts_with("invalid links JSON"), "{err}");
    let ok = check_meta(&ns(), None, Some("closed"), Some("[]")).unwrap();
    assert_eq!(
        ok,
        CheckedMeta {
            doc_type: None,
            status: Some(DocStatus::Closed),
            links: Some(vec![])
        }
    );
    assert_eq!(check_meta(&ns(), None, None, None).unwrap().links, None);
}

#[test]
fn if_match_precheck() {
    let sha = sha256_hex("stored");
    assert_eq!(check_if_match(Some("stored"), &sha), Ok(()));
    assert_eq!(
        check_if_match(Some("stored"), &format!("  {}  ", sha.to_uppercase())),
        Ok(())
    );
    assert_eq!(check_if_match(None, &sha), Err(IfMatchFailure::Missing));
    let failure = check_if_match(Some("changed"), &sha).unwrap_err();
    assert_eq!(
        failure,
        IfMatchFailure::Mismatch {
            current: sha256_hex("changed"),
            passed: sha.clone()
        }
    );
    let text = WriteError::if_match("n", "a.md", failure).to_string();
    assert!(
        text.contains(&format!("Current sha256 is {}", sha256_hex("changed"))),
        "{text}"
    );
    assert!(text.starts_with("if_match mismatch on n/a.md"), "{text}");
    let text = WriteError::if_match("n", "a.md", IfMatchFailure::Missing).to_string();
    assert!(
        text.contains("does not exist") && text.contains("Omit if_match to create it"),
        "{text}"
    );
}

#[test]
fn prepare_normalizes_title_and_body_but_not_meta_bodies() {
    let input = WriteInput {
        title: Some("capsid — core"),
        body: Some("one — two\n# H — x"),
        ..WriteInput::default()
    };
    let prepared = prepare_write("n", "a.md", WriteMode::Replace, None, &input, false).unwrap();
    assert_eq!(prepared.title.as_deref(), Some("capsid - core"));
    assert_eq!(prepared.body, "one, two\n# H - x");

    let meta = WriteInput {
        title: Some("a – b"),
        ..WriteInput::default()
    };
    let prepared = prepare_write(
        "n",
        "a.md",
        WriteMode::Meta,
        Some("stored — dash"),
        &meta,
        false,
    )
    .unwrap();
    assert_eq!(prepared.body, "stored — dash");
    assert_eq!(prepared.title.as_deref(), Some("a - b"));

    // Append output is normalized as a whole, the stored part included.
    let append = WriteInput {
        body: Some("new — text"),
        ..WriteInput::default()
    };
    let prepared = prepare_write(
        "n",
        "a.md",
        WriteMode::Append,
        Some("old — text"),
        &append,
        false,
    )
    .unwrap();
    assert_eq!(prepared.body, "old, text\n\nnew, text");
}

#[test]
fn prepare_names_the_document_and_runs_the_improve_guard_last() {
    let err = prepare_write(
        "n",
        "a.md",
        WriteMode::Patch,
        None,
        &WriteInput::default(),
        false,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("Create it with mode 'replace' first. (n/a.md)"),
        "{err}"
    );
    let input = WriteInput {
        title: Some("t"),
        body: Some("b"),
        ..WriteInput::default()
    };
    let err = prepare_write(
        "n",
        "improve/skills/x.md",
        WriteMode::Replace,
        None,
        &input,
        false,
    )
    .unwrap_err();
    assert!(matches!(err, WriteError::ImproveGuard(_)), "{err:?}");
    assert!(
        prepare_write(
            "n",
            "improve/skills/x.md",
            WriteMode::Replace,
            None,
            &input,
            true
        )
        .is_ok()
    );
}

#[test]
fn outcome_shape() {
    let created = serde_json::to_value(WriteOutcome::new(
        "n",
        "a.md",
        WriteMode::Replace,
        "héllo",
        None,
    ))
    .unwrap();
    assert_eq!(
        created,
        json!({"namespace": "n", "path": "a.md", "action": "created", "mode": "replace",
               "sha256": sha256_hex("héllo"), "bytes": 6, "snapshotted": false})
    );
    let replaced = WriteOutcome::new("n", "a.md", WriteMode::Replace, "x", Some("old"));
    assert_eq!(replaced.bytes_before, None);
    assert_eq!(replaced.action, WriteAction::Updated);
    let mut appended = WriteOutcome::new("n", "a.md", WriteMode::Append, "old\n\nx", Some("old"));
    appended.links = Some(2);
    let wire = serde_json::to_value(&appended).unwrap();
    assert_eq!(wire["bytes_before"], 3);
    assert_eq!(wire["links"], 2);
    assert_eq!(wire["snapshotted"], true);
    assert!(wire.get("warning").is_none() && wire.get("concurrency_warning").is_none());
}

#[test]
fn audit_params_record_prior_meta_only_when_meta_changes() {
    let p = prior();
    let body_only = write_audit_params(&MetaChange::default(), WriteMode::Append, Some(&p), false);
    assert_eq!(body_only, json!({"mode": "append", "updated": true}));
    let change = MetaChange {
        status: Some("closed"),
        ..MetaChange::default()
    };
    let meta = write_audit_params(&change, WriteMode::Meta, Some(&p), true);
    assert_eq!(
        meta,
        json!({"status": "closed", "mode": "meta", "updated": true, "allow_improve_paths": true,
               "prior_meta": {"title": "Old", "type": "note", "status": "published", "tags": null}})
    );
    let create = MetaChange {
        title: Some("T"),
        doc_type: Some("task"),
        ..MetaChange::default()
    };
    assert_eq!(
        write_audit_params(&create, WriteMode::Replace, None, false),
        json!({"title": "T", "type": "task", "mode": "replace", "updated": false})
    );
    assert_eq!(links_audit_params(3), json!({"edges": 3}));
}

#[test]
fn conflict_wording() {
    let changed = |if_match_given, elicited| {
        WriteError::BodyChanged {
            namespace: "n".into(),
            path: "a.md".into(),
            current: "c".into(),
            if_match_given,
            elicited,
        }
        .to_string()
    };
    assert!(changed(true, false).starts_with("if_match mismatch on n/a.md"));
    assert!(changed(false, true).starts_with("stale confirmation on n/a.md"));
    assert!(changed(false, true).contains("while the overwrite confirmation was pending"));
    assert!(!changed(true, true).contains("pending"));
    let t = overwrite_confirmation("n", "a.md");
    assert!(t.unsupported.contains("confirm: true") && t.unsupported.contains("n/a.md"));
    assert_eq!(t.declined, "overwrite of n/a.md declined");
}
