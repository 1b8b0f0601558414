//! Scope tests: fail-closed parsing, the check order, wording cues, and properties against a
//! simple model.

use super::*;
use proptest::prelude::*;

fn s(json: &str) -> Scopes {
    Scopes::parse(Some(json))
}

#[test]
fn malformed_stored_scopes_grant_nothing() {
    for bad in [
        None,
        Some(""),
        Some("   "),
        Some("null"),
        Some("{not json"),
        Some("[]"),
        Some("\"*\""),
        Some("42"),
        Some("[{\"namespaces\":\"*\"}]"),
    ] {
        assert_eq!(Scopes::parse(bad), Scopes::none(), "{bad:?}");
    }
}

#[test]
fn wrong_shapes_inside_an_object_fail_closed() {
    let parsed = s(
        r#"{"namespaces":"all","repos":{"a":1},"tools":["read","",7,null],"grants":["read","admin","WRITE"],
        "flags":{"can_merge":"yes","money_paths":1,"can_dispatch":true,"admin":true,"can_direct_write":false}}"#,
    );
    assert_eq!(parsed.namespaces, Axis::Only(vec![]));
    assert_eq!(parsed.repos, Axis::Only(vec![]));
    assert_eq!(parsed.tools, Axis::Only(vec!["read".into()]));
    assert_eq!(parsed.grants, [Grant::Read].into());
    assert_eq!(parsed.flags, [Flag::CanDispatch].into());
}

#[test]
fn wildcard_only_as_the_whole_value() {
    let parsed = s(r#"{"namespaces":["*"],"repos":"*","tools":"*","grants":["read"]}"#);
    assert_eq!(
        parsed.namespaces,
        Axis::Only(vec!["*".into()]),
        "a listed \"*\" is a literal name"
    );
    assert!(!parsed.namespaces.allows("alpha"));
    assert!(parsed.namespaces.allows("*"));
    assert!(parsed.repos.is_all());
    assert_eq!(
        Axis::from_input(vec!["*".into()]),
        Axis::All,
        "mint converts exactly [\"*\"]"
    );
    assert_eq!(
        Axis::from_input(vec!["*".into(), "a".into()]),
        Axis::Only(vec!["*".into(), "a".into()])
    );
}

#[test]
fn stored_form_round_trips() {
    let scopes = Scopes {
        namespaces: Axis::Only(vec!["alpha".into(), "beta".into()]),
        repos: Axis::All,
        tools: Axis::Only(vec!["jobs".into(), "jobs.post".into()]),
        grants: [Grant::Read, Grant::Write].into(),
        flags: [Flag::CanMerge, Flag::MoneyPaths].into(),
    };
    assert_eq!(s(&scopes.to_json().to_string()), scopes);
    let json = scopes.to_json();
    assert_eq!(json["flags"]["can_merge"], true);
    assert_eq!(json["flags"]["can_dispatch"], false, "every flag is listed");
}

#[test]
fn the_eighth_flag_parses_fail_closed_like_the_others() {
    assert_eq!(Flag::ALL.len(), 10);
    assert_eq!(Flag::parse("can_raise_budget"), Some(Flag::CanRaiseBudget));
    assert_eq!(Flag::parse("can_write_shared"), Some(Flag::CanWriteShared));
    assert_eq!(Flag::parse("can_write_Shared"), None);
    let held = s(r#"{"flags":{"can_write_shared":true}}"#);
    assert!(held.flags.contains(&Flag::CanWriteShared));
    for not_held in [
        r#"{"flags":{"can_write_shared":"yes"}}"#,
        r#"{"flags":{"can_write_shared":1}}"#,
        r#"{"flags":["can_write_shared"]}"#,
        r#"{"can_write_shared":true}"#,
    ] {
        assert!(s(not_held).flags.is_empty(), "{not_held}");
    }
    let json = Scopes::unrestricted().to_json();
    assert_eq!(json["flags"]["can_write_shared"], true);
    assert_eq!(
        Scopes::mint_defaults(Axis::All).to_json()["flags"]["can_write_shared"],
        false,
        "shown, and off by default"
    );
    let refusal = check_scope(
        &Scopes::mint_defaults(Axis::All),
        &Need {
            tool: "shared",
            action: Some("set"),
            grant: Some(Grant::Read),
            flags: vec![Flag::CanWriteShared],
            ..Need::default()
        },
    )
    .unwrap_err();
    assert!(
        refusal.to_string().contains("can_write_shared"),
        "{refusal}"
    );
}

#[test]
fn raising_a_cap_is_its_own_flag_off_by_default_and_named_in_its_refusal() {
    assert_eq!(Flag::CanRaiseBudget.name(), "can_raise_budget");
    assert!(
        !Scopes::mint_defaults(Axis::All)
            .flags
            .contains(&Flag::CanRaiseBudget)
    );
    let refusal = check_scope(
        &Scopes::mint_defaults(Axis::All),
        &Need {
            tool: "jobs",
            action: Some("raise"),
            grant: Some(Grant::Read),
            flags: vec![Flag::CanRaiseBudget],
            ..Need::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(refusal.contains("can_raise_budget"), "{refusal}");
    assert!(
        refusal.contains("spend more of the namespace's money"),
        "{refusal}"
    );
}

#[test]
fn tool_action_narrowing() {
    let tools = Axis::Only(vec!["jobs".into(), "jobs.post".into(), "read".into()]);
    assert!(allows_tool_action(&tools, "jobs", None));
    assert!(allows_tool_action(&tools, "jobs", Some("post")));
    assert!(!allows_tool_action(&tools, "jobs", Some("claim")));
    assert!(
        allows_tool_action(&tools, "read", Some("anything")),
        "no qualified sibling: not narrowed"
    );
    let only_qualified = Axis::Only(vec!["jobs.post".into()]);
    assert!(
        !allows_tool_action(&only_qualified, "jobs", Some("post")),
        "the bare name must be listed"
    );
    assert!(!allows_tool_action(&Axis::Only(vec![]), "read", None));
    assert!(allows_tool_action(&Axis::All, "jobs", Some("claim")));
}

fn need<'a>(tool: &'a str) -> Need<'a> {
    Need {
        tool,
        ..Need::default()
    }
}

#[test]
fn refusal_order_and_wording() {
    // Everything wrong at once: the tool is named first, so namespaces are not leaked.
    let narrow = s(
        r#"{"namespaces":["alpha"],"repos":["o/r"],"tools":["jobs","jobs.post"],"grants":["read"],"flags":{}}"#,
    );
    let everything_wrong = Need {
        tool: "jobs",
        action: Some("claim"),
        namespace: Some("beta"),
        repo: Some("x/y"),
        grant: Some(Grant::Write),
        flags: vec![Flag::CanMerge],
    };
    let err = check_scope(&narrow, &everything_wrong).unwrap_err();
    assert!(matches!(err, ScopeRefusal::Tool { .. }));
    assert!(err.to_string().contains("jobs.claim"), "{err}");
    assert!(
        err.to_string().contains("jobs, jobs.post"),
        "prints the tool scope: {err}"
    );

    let err = check_scope(
        &narrow,
        &Need {
            action: Some("post"),
            ..everything_wrong.clone()
        },
    )
    .unwrap_err();
    assert!(matches!(
        err,
        ScopeRefusal::Grant {
            needed: Grant::Write,
            ..
        }
    ));
    assert!(
        err.to_string().contains("write grant") && err.to_string().contains("holds read"),
        "{err}"
    );

    let writer = s(
        r#"{"namespaces":["alpha"],"repos":["o/r"],"tools":"*","grants":["read","write"],"flags":{}}"#,
    );
    let err = check_scope(
        &writer,
        &Need {
            action: Some("post"),
            ..everything_wrong.clone()
        },
    )
    .unwrap_err();
    assert!(matches!(err, ScopeRefusal::Namespace { .. }));
    assert!(
        err.to_string().contains("\"beta\"") && err.to_string().contains("(alpha)"),
        "{err}"
    );

    let err = check_scope(
        &writer,
        &Need {
            namespace: Some("alpha"),
            ..everything_wrong.clone()
        },
    )
    .unwrap_err();
    assert!(matches!(err, ScopeRefusal::Repo { .. }));
    assert!(err.to_string().contains("x/y"), "{err}");

    let err = check_scope(
        &writer,
        &Need {
            namespace: Some("alpha"),
            repo: Some("o/r"),
            flags: vec![Flag::CanDispatch, Flag::CanMerge],
            ..everything_wrong
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        ScopeRefusal::Flag {
            flag: Flag::CanDispatch
        },
        "the first missing flag in order"
    );
    assert!(
        err.to_string().contains("can_dispatch") && err.to_string().contains("Actions minutes"),
        "{err}"
    );
}

#[test]
fn grant_refusal_says_no_grant_at_all() {
    let none = s(r#"{"namespaces":"*","repos":"*","tools":"*","grants":[]}"#);
    let err = check_scope(
        &none,
        &Need {
            grant: Some(Grant::Read),
            ..need("read")
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("no grant at all"), "{err}");
}

#[test]
fn namespace_describe() {
    assert_eq!(Axis::All.describe(), "*");
    assert_eq!(Axis::Only(vec![]).describe(), "(none)");
    assert_eq!(Axis::Only(vec!["a".into(), "b".into()]).describe(), "a, b");
}

#[test]
fn patch_applies_only_named_axes() {
    let base = Scopes::mint_defaults(Axis::Only(vec!["alpha".into()]));
    let mut flags = BTreeMap::new();
    flags.insert("can_merge".to_owned(), true);
    let patch = ScopePatch::from_input(
        None,
        None,
        Some(vec!["read".into()]),
        Some(vec!["read".into(), "write".into()]),
        Some(flags),
    )
    .unwrap();
    let after = base.apply(&patch);
    assert_eq!(after.namespaces, base.namespaces);
    assert_eq!(after.repos, Axis::All);
    assert_eq!(after.tools, Axis::Only(vec!["read".into()]));
    assert_eq!(after.flags, [Flag::CanMerge].into());
    let mut off = BTreeMap::new();
    off.insert("can_merge".to_owned(), false);
    let cleared = after.apply(&ScopePatch::from_input(None, None, None, None, Some(off)).unwrap());
    assert!(cleared.flags.is_empty());
    assert_eq!(cleared.tools, after.tools, "unnamed axes untouched");

    let mut bad = BTreeMap::new();
    bad.insert("admin".to_owned(), true);
    let err = ScopePatch::from_input(None, None, None, None, Some(bad)).unwrap_err();
    assert!(err.contains("unknown flag \"admin\""), "{err}");
    let err =
        ScopePatch::from_input(None, None, None, Some(vec!["root".into()]), None).unwrap_err();
    assert!(err.contains("unknown grant"), "{err}");
}

/// An axis given at mint or update time may not hold an empty (or blank) entry: it would
/// name nothing and read as a mistake. Each axis says so by name; nothing is patched.
#[test]
fn patch_refuses_empty_list_entries_naming_the_axis() {
    let list = || Some(vec!["alpha".to_owned(), "  ".to_owned()]);
    let cases = [
        (
            ScopePatch::from_input(list(), None, None, None, None),
            "namespaces",
        ),
        (
            ScopePatch::from_input(None, list(), None, None, None),
            "repos",
        ),
        (
            ScopePatch::from_input(None, None, list(), None, None),
            "tools",
        ),
    ];
    for (got, field) in cases {
        let err = got.expect_err(field);
        assert_eq!(err, format!("{field}: entries must be non-empty strings"));
    }
    assert!(ScopePatch::from_input(Some(vec!["alpha".into()]), None, None, None, None).is_ok());
}

// ---- properties ----

const NAMES: [&str; 5] = ["alpha", "beta", "*", "jobs", "jobs.post"];

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(NAMES.to_vec()).prop_map(str::to_owned)
}

/// Arbitrary JSON values that resemble stored scopes, including every malformed shape.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i32>().prop_map(|n| serde_json::json!(n)),
        name().prop_map(serde_json::Value::String),
        Just(serde_json::json!("")),
        Just(serde_json::json!("read")),
        Just(serde_json::json!("write")),
        Just(serde_json::json!("can_merge")),
        Just(serde_json::json!("yes")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "namespaces",
                    "repos",
                    "tools",
                    "grants",
                    "flags",
                    "can_merge",
                    "money_paths",
                    "admin",
                    "can_dispatch",
                    "can_write_shared",
                ])
                .prop_map(str::to_owned),
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The model: what a stored JSON value says, read literally.
fn model_allows_list(stored: &serde_json::Value, axis: &str, value: &str) -> bool {
    match stored.get(axis) {
        Some(serde_json::Value::String(s)) => s == "*",
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .any(|i| i.as_str() == Some(value) && !value.is_empty()),
        _ => false,
    }
}

proptest! {
    #[test]
    fn parsing_never_grants_more_than_the_json_says(v in json_value()) {
        let parsed = Scopes::parse(Some(&v.to_string()));
        if !v.is_object() {
            prop_assert_eq!(&parsed, &Scopes::none());
        }
        for axis_name in ["namespaces", "repos", "tools"] {
            let axis = match axis_name { "namespaces" => &parsed.namespaces, "repos" => &parsed.repos, _ => &parsed.tools };
            for n in NAMES {
                prop_assert_eq!(axis.allows(n), model_allows_list(&v, axis_name, n), "{} {}", axis_name, n);
            }
        }
        for g in [Grant::Read, Grant::Write] {
            let listed = v.get("grants").and_then(|g| g.as_array())
                .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(g.name())));
            prop_assert_eq!(parsed.has_grant(g), listed);
        }
        for f in Flag::ALL {
            let literal_true = v.get("flags").and_then(|m| m.as_object()).and_then(|m| m.get(f.name())) == Some(&serde_json::Value::Bool(true));
            prop_assert_eq!(parsed.flags.contains(&f), literal_true);
        }
    }

    #[test]
    fn arbitrary_text_never_panics_and_non_objects_grant_nothing(text in ".{0,64}") {
        let parsed = Scopes::parse(Some(&text));
        let is_object = matches!(serde_json::from_str::<serde_json::Value>(&text), Ok(serde_json::Value::Object(_)));
        if !is_object {
            prop_assert_eq!(parsed, Scopes::none());
        }
    }
}

fn axis() -> impl Strategy<Value = Axis> {
    prop_oneof![
        Just(Axis::All),
        prop::collection::vec(name(), 0..4).prop_map(Axis::Only)
    ]
}

fn scopes() -> impl Strategy<Value = Scopes> {
    (
        axis(),
        axis(),
        axis(),
        prop::collection::btree_set(prop::sample::select(vec![Grant::Read, Grant::Write]), 0..3),
        prop::collection::btree_set(prop::sample::select(Flag::ALL.to_vec()), 0..9),
    )
        .prop_map(|(namespaces, repos, tools, grants, flags)| Scopes {
            namespaces,
            repos,
            tools,
            grants,
            flags,
        })
}

#[derive(Debug, Clone)]
struct OwnedNeed {
    tool: String,
    action: Option<String>,
    namespace: Option<String>,
    repo: Option<String>,
    grant: Option<Grant>,
    flags: Vec<Flag>,
}

fn owned_need() -> impl Strategy<Value = OwnedNeed> {
    (
        prop::sample::select(vec!["jobs", "read", "alpha"]),
        prop::option::of(prop::sample::select(vec!["post", "claim"])),
        prop::option::of(name()),
        prop::option::of(name()),
        prop::option::of(prop::sample::select(vec![Grant::Read, Grant::Write])),
        prop::collection::vec(prop::sample::select(Flag::ALL.to_vec()), 0..3),
    )
        .prop_map(|(tool, action, namespace, repo, grant, flags)| OwnedNeed {
            tool: tool.to_owned(),
            action: action.map(str::to_owned),
            namespace,
            repo,
            grant,
            flags,
        })
}

/// The model of `checkScope`, written independently: which step refuses, if any.
fn model_check(s: &Scopes, n: &OwnedNeed) -> Option<&'static str> {
    let listed = |axis: &Axis, v: &str| match axis {
        Axis::All => true,
        Axis::Only(l) => l.contains(&v.to_owned()),
    };
    let tool_ok = match &s.tools {
        Axis::All => true,
        Axis::Only(list) => {
            list.contains(&n.tool)
                && match &n.action {
                    None => true,
                    Some(a) => {
                        let qualified: Vec<_> = list
                            .iter()
                            .filter(|t| t.starts_with(&format!("{}.", n.tool)))
                            .collect();
                        qualified.is_empty()
                            || qualified.iter().any(|t| **t == format!("{}.{a}", n.tool))
                    }
                }
        }
    };
    if !tool_ok {
        return Some("tool");
    }
    if n.grant.is_some_and(|g| !s.grants.contains(&g)) {
        return Some("grant");
    }
    if n.namespace
        .as_ref()
        .is_some_and(|ns| !listed(&s.namespaces, ns))
    {
        return Some("namespace");
    }
    if n.repo.as_ref().is_some_and(|r| !listed(&s.repos, r)) {
        return Some("repo");
    }
    if n.flags.iter().any(|f| !s.flags.contains(f)) {
        return Some("flag");
    }
    None
}

proptest! {
    #[test]
    fn check_agrees_with_the_model(s in scopes(), n in owned_need()) {
        let need = Need {
            tool: &n.tool,
            action: n.action.as_deref(),
            namespace: n.namespace.as_deref(),
            repo: n.repo.as_deref(),
            grant: n.grant,
            flags: n.flags.clone(),
        };
        let got = match check_scope(&s, &need) {
            Ok(()) => None,
            Err(ScopeRefusal::Tool { .. }) => Some("tool"),
            Err(ScopeRefusal::Grant { .. }) => Some("grant"),
            Err(ScopeRefusal::Namespace { .. }) => Some("namespace"),
            Err(ScopeRefusal::Repo { .. }) => Some("repo"),
            Err(ScopeRefusal::Flag { flag }) => {
                prop_assert_eq!(Some(&flag), n.flags.iter().find(|f| !s.flags.contains(f)));
                Some("flag")
            }
            Err(ScopeRefusal::NamespaceOmitted { .. }) => Some("omitted"),
            Err(ScopeRefusal::Global { .. }) => Some("global"),
        };
        prop_assert_eq!(got, model_check(&s, &n));
    }

    #[test]
    fn narrowing_a_scope_never_widens_access(s in scopes(), n in owned_need(), drop_flag in prop::sample::select(Flag::ALL.to_vec())) {
        let need = Need {
            tool: &n.tool, action: n.action.as_deref(), namespace: n.namespace.as_deref(),
            repo: n.repo.as_deref(), grant: n.grant, flags: n.flags.clone(),
        };
        let mut narrower = s.clone();
        narrower.flags.remove(&drop_flag);
        narrower.grants.remove(&Grant::Write);
        if check_scope(&narrower, &need).is_ok() {
            prop_assert!(check_scope(&s, &need).is_ok());
        }
    }
}

#[test]
fn axes_overlap_when_some_value_is_in_both() {
    let only = |v: &[&str]| Axis::Only(v.iter().map(|s| (*s).to_owned()).collect());
    assert!(Axis::All.overlaps(&Axis::All));
    assert!(Axis::All.overlaps(&only(&["a"])));
    assert!(only(&["a"]).overlaps(&Axis::All));
    assert!(!Axis::All.overlaps(&only(&[])));
    assert!(only(&["a", "b"]).overlaps(&only(&["c", "b"])));
    assert!(!only(&["a"]).overlaps(&only(&["b"])));
    assert!(!only(&[]).overlaps(&only(&[])));
}

#[test]
fn can_backup_is_the_ninth_flag_off_by_default_and_parsed_fail_closed() {
    assert_eq!(Flag::ALL[8], Flag::CanBackup);
    assert_eq!(Flag::parse("can_backup"), Some(Flag::CanBackup));
    assert!(
        s(r#"{"flags":{"can_backup":true}}"#)
            .flags
            .contains(&Flag::CanBackup)
    );
    assert!(s(r#"{"flags":{"can_backup":"true"}}"#).flags.is_empty());
    assert_eq!(
        Scopes::mint_defaults(Axis::All).to_json()["flags"]["can_backup"],
        false
    );
    assert!(Scopes::unrestricted().flags.contains(&Flag::CanBackup));
}

#[test]
fn only_a_caller_reaching_every_namespace_passes_the_global_rule() {
    assert_eq!(
        check_global(&Scopes::unrestricted(), "improve_run.mode", "why"),
        Ok(())
    );
    assert_eq!(
        check_global(&Scopes::mint_defaults(Axis::All), "improve_run.mode", "why"),
        Ok(())
    );
    for narrowed in [
        Axis::Only(vec!["alpha".into()]),
        Axis::Only(vec!["*".into(), "alpha".into()]),
        Axis::Only(Vec::new()),
    ] {
        let held = narrowed.describe();
        let err = check_global(
            &Scopes::mint_defaults(narrowed),
            "improve_run.budget",
            "the budget is every namespace's",
        )
        .unwrap_err();
        assert_eq!(
            err,
            ScopeRefusal::Global {
                what: "improve_run.budget".into(),
                why: "the budget is every namespace's",
                held: held.clone()
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("improve_run.budget changes state beyond one namespace"),
            "{text}"
        );
        assert!(
            text.ends_with(&format!("this caller's namespaces: {held}")),
            "{text}"
        );
    }
}

/// An axis's schema (part of `agents`' output schema) admits exactly what it serializes to:
/// `"*"` for every value, or a list; no other string.
#[test]
fn an_axis_schema_admits_the_wildcard_or_a_list_and_nothing_else() {
    let schema = serde_json::to_value(schemars::schema_for!(AxisView)).expect("schema");
    let branches = schema["anyOf"]
        .as_array()
        .expect("an untagged enum's branches");
    let wildcard = serde_json::to_value(AxisView::All(Wildcard)).expect("json");
    assert_eq!(wildcard, serde_json::json!("*"));
    let admits = |value: &serde_json::Value| {
        branches.iter().any(|b| {
            let b = match b.get("$ref").and_then(|r| r.as_str()) {
                Some(r) => &schema["$defs"][r.trim_start_matches("#/$defs/")],
                None => b,
            };
            match (b.get("const"), b.get("type").and_then(|t| t.as_str())) {
                (Some(c), _) => c == value,
                (None, Some("array")) => value.is_array(),
                _ => false,
            }
        })
    };
    assert!(admits(&wildcard), "{schema}");
    assert!(admits(&serde_json::json!(["alpha"])), "{schema}");
    assert!(
        !admits(&serde_json::json!("alpha")),
        "only \"*\" is a string axis: {schema}"
    );
}
