//! Policy document tests: the load refusals of reference 7.1, in their order.

use super::*;
use crate::improve::roster::Roster;

/// The roster these policies name (a fresh install's is empty).
fn roster() -> Roster {
    Roster::from_setting(Some(r#"["capsid","orchard"]"#))
}

const MERGE: &str = "# Auto-merge policy\n\n- version: 2026-09-10\n- enabled: true\n- namespaces: capsid, orchard\n\n\
    Checks, in order:\n\n\
    - `body_names_job` the body names a job\n- `author_is_driver`\n- `base_is_default_branch`\n- `ci_green`\n\
    - `paths_unprotected`\n- `paths_not_money`\n- `no_migration_workflow_lockfile`\n";

const GATES: &str = "- version: g1\n- enabled: TRUE\n\n- `additive_migration`: CREATE TABLE IF NOT EXISTS ...\n\
    - `push_branch`\n- `open_pr`\n";

#[test]
fn a_complete_merge_policy_loads() {
    let policy = parse_auto_merge_policy(MERGE, &roster()).expect("loads");
    assert_eq!(
        policy,
        AutoMergePolicy {
            version: "2026-09-10".into(),
            enabled: true,
            namespaces: vec!["capsid".into(), "orchard".into()],
        }
    );
    assert_eq!(
        parse_auto_merge_policy(&MERGE.replace("\n", "\r\n"), &roster()),
        Ok(policy),
        "CRLF documents load too"
    );
}

#[test]
fn merge_policy_refusals() {
    let table: Vec<(String, PolicyError)> = vec![
        (
            MERGE.replace("- version: 2026-09-10\n", ""),
            PolicyError::MissingVersion {
                kind: PolicyKind::AutoMerge,
            },
        ),
        (
            MERGE.replace("- version: 2026-09-10", "- version:   "),
            PolicyError::MissingVersion {
                kind: PolicyKind::AutoMerge,
            },
        ),
        (
            MERGE.replace("- enabled: true\n", ""),
            PolicyError::MissingEnabled {
                kind: PolicyKind::AutoMerge,
            },
        ),
        (
            MERGE.replace("- namespaces: capsid, orchard\n", ""),
            PolicyError::NoNamespaces,
        ),
        (
            MERGE.replace("capsid, orchard", " , "),
            PolicyError::NoNamespaces,
        ),
        (
            MERGE.replace("capsid, orchard", "capsid, recova, Foxing"),
            PolicyError::OffRoster {
                namespaces: vec!["recova".into(), "Foxing".into()],
            },
        ),
        (
            MERGE.replace("- `ci_green`\n", ""),
            PolicyError::DescribesLess {
                kind: PolicyKind::AutoMerge,
                missing: vec!["ci_green"],
            },
        ),
        (
            MERGE
                .replace("- `ci_green`\n", "- ci_green\n")
                .replace("- `paths_not_money`", "* `paths_not_money`"),
            PolicyError::DescribesLess {
                kind: PolicyKind::AutoMerge,
                missing: vec!["ci_green", "paths_not_money"],
            },
        ),
    ];
    for (body, want) in table {
        assert_eq!(
            parse_auto_merge_policy(&body, &roster()),
            Err(want.clone()),
            "{body}"
        );
    }
}

#[test]
fn refusal_wording_names_what_is_missing() {
    let missing = parse_auto_merge_policy(&MERGE.replace("- `ci_green`\n", ""), &roster())
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("ci_green") && missing.contains("describes less than the code"),
        "{missing}"
    );
    let roster = parse_auto_merge_policy(&MERGE.replace("capsid, orchard", "recova"), &roster())
        .unwrap_err()
        .to_string();
    assert!(
        roster.contains("recova") && roster.contains("not on the improve roster"),
        "{roster}"
    );
    // The roster is the setting the admin edits: a namespace added to it may be named.
    let widened = Roster::from_setting(Some(r#"["recova"]"#));
    assert!(parse_auto_merge_policy(&MERGE.replace("capsid, orchard", "recova"), &widened).is_ok());
    let err = parse_auto_merge_policy(MERGE, &widened)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("capsid, orchard") && err.contains("not on the improve roster"),
        "{err}"
    );
    let version = parse_gate_policy("- enabled: true")
        .unwrap_err()
        .to_string();
    assert!(
        version.contains("gate policy") && version.contains("version"),
        "{version}"
    );
}

#[test]
fn enabled_is_true_only_when_it_says_true() {
    for (value, enabled) in [
        ("true", true),
        ("TRUE", true),
        ("True ", true),
        ("yes", false),
        ("", false),
        ("false", false),
    ] {
        let body = GATES.replace("- enabled: TRUE", &format!("- enabled: {value}"));
        assert_eq!(
            parse_gate_policy(&body).map(|p| p.enabled),
            Ok(enabled),
            "{value:?}"
        );
    }
    let upper = GATES
        .replace("- enabled: TRUE", "- ENABLED: true")
        .replace("- version:", "- Version:");
    assert_eq!(
        parse_gate_policy(&upper),
        Ok(GatePolicy {
            version: "g1".into(),
            enabled: true
        }),
        "field names fold case"
    );
}

#[test]
fn gate_policy_must_name_all_three_classes_and_extra_ids_are_ignored() {
    assert_eq!(
        parse_gate_policy(GATES),
        Ok(GatePolicy {
            version: "g1".into(),
            enabled: true
        })
    );
    assert_eq!(
        parse_gate_policy(&GATES.replace("- `open_pr`\n", "")),
        Err(PolicyError::DescribesLess {
            kind: PolicyKind::Gates,
            missing: vec!["open_pr"]
        })
    );
    let extra = format!("{GATES}- `deploy_worker` not enforced by this code\n");
    assert_eq!(
        parse_gate_policy(&extra),
        Ok(GatePolicy {
            version: "g1".into(),
            enabled: true
        })
    );
    let extra_merge = format!("{MERGE}- `merge_on_friday`\n");
    assert!(parse_auto_merge_policy(&extra_merge, &roster()).is_ok());
}

#[test]
fn version_is_the_first_version_line_after_its_first_colon() {
    let body = GATES.replace("- version: g1", "  - version: 2026-09-10 12:00: second cut");
    assert_eq!(
        parse_gate_policy(&body).map(|p| p.version),
        Ok("2026-09-10 12:00: second cut".to_owned())
    );
}

#[test]
fn ids_are_read_only_from_list_item_heads() {
    assert_eq!(
        named_ids("- `a_b` x\n  - `c`\ntext `d`\n- `E`\n-`f`\n- `g_h`: y"),
        vec!["a_b".to_owned(), "c".to_owned(), "g_h".to_owned()]
    );
}

#[test]
fn a_disabled_policy_loads_disabled_whatever_its_enabled_line_said() {
    let off = disabled(MERGE);
    assert!(
        !parse_auto_merge_policy(&off, &roster())
            .expect("still loads")
            .enabled
    );
    assert_eq!(off.len(), MERGE.len() - "true".len() + "false".len());
    let gates = disabled(GATES);
    assert!(!parse_gate_policy(&gates).expect("loads").enabled);
    assert!(gates.contains("- enabled: false") && !gates.contains("TRUE"));
    // No enabled line: one is added, so the policy says plainly that it is off.
    let without = GATES.replace("- enabled: TRUE\n", "");
    assert!(
        parse_gate_policy(&without).is_err(),
        "no enabled line: refused"
    );
    let bare = disabled(&without);
    assert!(!parse_gate_policy(&bare).expect("loads").enabled);
    assert!(disabled("- version: g1").ends_with("- enabled: false\n"));
}

/// The reviewable copies shipped in `docs/policy/` (issue 56, item 12) parse as what they say
/// they are, name every id the code enforces, and survive signing: sealed, verified, and the
/// verified body parses the same.
#[test]
fn the_shipped_policies_parse_and_sign() {
    use crate::jobs::signature::{seal_task, verify_task};
    let merge = include_str!("../../../../docs/policy/auto-merge.md");
    let gates = include_str!("../../../../docs/policy/gates.md");
    let on_roster = Roster::from_setting(Some(r#"["demo"]"#));
    let parsed = parse_auto_merge_policy(merge, &on_roster).expect("auto-merge.md parses");
    assert_eq!((parsed.version.as_str(), parsed.enabled), ("1", false));
    assert_eq!(parsed.namespaces, ["demo"]);
    let parsed = parse_gate_policy(gates).expect("gates.md parses");
    assert_eq!((parsed.version.as_str(), parsed.enabled), ("1", false));
    for (kind, body) in [(PolicyKind::AutoMerge, merge), (PolicyKind::Gates, gates)] {
        let named = named_ids(body);
        for id in kind.enforced_ids() {
            assert!(named.iter().any(|n| n == id), "{id} in {kind:?}");
        }
        let sealed = seal_task("a-signing-secret-of-the-owner", body);
        let verified = verify_task("a-signing-secret-of-the-owner", &sealed).expect("verifies");
        assert_eq!(verified.trim(), body.trim());
        assert!(verify_task("another-secret", &sealed).is_err());
    }
    // Turned on, still the same policy.
    let on = merge.replace("- enabled: false", "- enabled: true");
    assert!(
        parse_auto_merge_policy(&on, &on_roster)
            .expect("parses")
            .enabled
    );
}
