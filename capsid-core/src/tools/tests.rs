//! Tool-table tests: the table is complete and consistent, and gating follows the reference.

use super::*;
use crate::caller::AgentKind;
use crate::scope::Axis;

#[test]
fn table_has_thirty_two_unique_tools_in_the_reference_groups() {
    let mut names: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 32);
    let count = |g| TOOLS.iter().filter(|t| t.group == g).count();
    assert_eq!(
        [
            count(Documents),
            count(Maintenance),
            count(Repo),
            count(Jobs),
            count(Improve),
            count(Admin)
        ],
        [12, 3, 13, 1, 2, 1]
    );
}

#[test]
fn unknown_tools_are_write_tools() {
    assert_eq!(requirement_of("no_such_tool"), Requirement::Write);
    let reader = Scopes {
        grants: [Grant::Read].into(),
        ..Scopes::unrestricted()
    };
    assert!(matches!(
        gate_call(&reader, "no_such_tool", None, None, Vec::new()),
        Err(ScopeRefusal::Grant {
            needed: Grant::Write,
            ..
        })
    ));
}

#[test]
fn read_only_hint_follows_the_grant() {
    for t in &TOOLS {
        let a = t.annotations();
        assert_eq!(
            a.read_only,
            t.requirement == Requirement::Read,
            "{}",
            t.name
        );
        assert!(
            !(a.read_only && a.destructive),
            "{} cannot be read-only and destructive",
            t.name
        );
    }
    assert!(tool_spec("delete").unwrap().annotations().destructive);
    assert!(
        tool_spec("read_repo_file")
            .unwrap()
            .annotations()
            .open_world
    );
}

#[test]
fn confirmation_rules() {
    assert_eq!(
        tool_spec("write").unwrap().confirmation,
        Confirmation::OnOverwrite
    );
    for t in ["delete", "move", "restore"] {
        assert_eq!(
            tool_spec(t).unwrap().confirmation,
            Confirmation::Always,
            "{t}"
        );
    }
    assert_eq!(
        tool_spec("lint").unwrap().confirmation,
        Confirmation::ForActions(&["finalize"])
    );
    assert_eq!(tool_spec("list").unwrap().confirmation, Confirmation::Never);
}

#[test]
fn action_grants() {
    assert_eq!(action_grant("jobs", "list"), Grant::Read);
    assert_eq!(action_grant("jobs", "claim"), Grant::Write);
    assert_eq!(action_grant("lint", "gather"), Grant::Read);
    assert_eq!(action_grant("lint", "report"), Grant::Write);
    assert_eq!(action_grant("lint", "finalize"), Grant::Write);
    assert_eq!(action_grant("jobs", "unknown"), Grant::Write);
}

fn narrowed(ns: &[&str]) -> Scopes {
    Scopes {
        namespaces: Axis::Only(ns.iter().map(|s| s.to_string()).collect()),
        grants: [Grant::Read, Grant::Write].into(),
        ..Scopes::unrestricted()
    }
}

#[test]
fn narrowed_caller_may_not_omit_the_namespace() {
    let s = narrowed(&["alpha"]);
    assert!(matches!(
        gate_call(&s, "search", None, None, Vec::new()),
        Err(ScopeRefusal::NamespaceOmitted { .. })
    ));
    assert!(gate_call(&s, "search", Some("alpha"), None, Vec::new()).is_ok());
    assert!(matches!(
        gate_call(&s, "search", Some("beta"), None, Vec::new()),
        Err(ScopeRefusal::Namespace { .. })
    ));
    // `namespaces` takes no namespace, so omission is fine.
    assert!(gate_call(&s, "namespaces", None, None, Vec::new()).is_ok());
    // The wildcard may omit it.
    assert!(gate_call(&Scopes::unrestricted(), "search", None, None, Vec::new()).is_ok());
}

#[test]
fn per_action_tools_skip_the_grant_at_the_registrar() {
    let no_grants = Scopes {
        grants: Default::default(),
        ..Scopes::unrestricted()
    };
    assert!(
        gate_call(&no_grants, "jobs", Some("a"), None, Vec::new()).is_ok(),
        "the handler checks the action"
    );
    assert!(gate_call(&no_grants, "read", Some("a"), None, Vec::new()).is_err());
}

#[test]
fn tools_list_visibility() {
    let only_read = Caller::agent(
        "agent_1",
        "r",
        AgentKind::Session,
        Scopes {
            tools: Axis::Only(vec!["read".into()]),
            ..narrowed(&["alpha"])
        },
    );
    let visible: Vec<_> = TOOLS
        .iter()
        .filter(|t| visible_to(&only_read, t))
        .map(|t| t.name)
        .collect();
    assert_eq!(visible, vec!["read"]);

    let reader = Caller::agent(
        "agent_2",
        "r2",
        AgentKind::Session,
        Scopes {
            grants: [Grant::Read].into(),
            ..Scopes::unrestricted()
        },
    );
    let visible: Vec<_> = TOOLS
        .iter()
        .filter(|t| visible_to(&reader, t))
        .map(|t| t.name)
        .collect();
    assert!(visible.contains(&"search") && visible.contains(&"jobs") && visible.contains(&"lint"));
    assert!(!visible.contains(&"write") && !visible.contains(&"agents"));

    let writer = Caller::agent("agent_3", "w", AgentKind::Seat, Scopes::unrestricted());
    assert!(
        !TOOLS
            .iter()
            .any(|t| t.name == "agents" && visible_to(&writer, t)),
        "agents is admin-only"
    );
    assert!(TOOLS.iter().all(|t| visible_to(&Caller::admin("owner"), t)));
}

#[test]
fn repo_write_flags_follow_the_table() {
    let f = |tool, path, mode, action, wf| {
        repo_write_flags(
            tool,
            &RepoWriteArgs {
                path,
                mode,
                action,
                allow_workflow_write: wf,
            },
        )
    };
    assert_eq!(
        f("write_repo_file", Some("src/a.rs"), Some("pr"), None, false),
        vec![]
    );
    assert_eq!(
        f(
            "write_repo_file",
            Some("src/a.rs"),
            Some("direct"),
            None,
            false
        ),
        vec![Flag::CanDirectWrite]
    );
    assert_eq!(
        f(
            "write_repo_file",
            Some(".github/workflows/ci.yml"),
            None,
            None,
            true
        ),
        vec![Flag::CanWriteWorkflows, Flag::CanTouchProtected]
    );
    assert_eq!(
        f("manage_pr", None, None, Some("merge"), false),
        vec![Flag::CanMerge]
    );
    assert_eq!(
        f("manage_pr", None, None, Some("comment"), false),
        vec![Flag::CanCommentPr]
    );
    assert_eq!(f("manage_pr", None, None, Some("close"), false), vec![]);
    assert_eq!(
        f("ci_dispatch", None, None, None, false),
        vec![Flag::CanDispatch]
    );
    assert_eq!(
        f(
            "delete_repo_file",
            Some("billing/tests/x.ts"),
            Some("direct"),
            None,
            false
        ),
        vec![
            Flag::CanDirectWrite,
            Flag::CanTouchProtected,
            Flag::MoneyPaths
        ]
    );
}

#[test]
fn the_registrar_check_asks_for_a_repo_mutations_flags() {
    let mut s = narrowed(&["alpha"]);
    s.flags.clear();
    let direct = RepoWriteArgs {
        path: Some("src/billing/x.rs"),
        mode: Some("direct"),
        ..RepoWriteArgs::default()
    };
    let flags = repo_write_flags("write_repo_file", &direct);
    assert_eq!(flags, vec![Flag::CanDirectWrite, Flag::MoneyPaths]);
    let err = gate_call(&s, "write_repo_file", Some("alpha"), None, flags.clone())
        .expect_err("no flags held");
    assert!(err.to_string().contains("can_direct_write"), "{err}");
    s.flags.insert(Flag::CanDirectWrite);
    let err = gate_call(&s, "write_repo_file", Some("alpha"), None, flags.clone())
        .expect_err("money_paths missing");
    assert!(err.to_string().contains("money_paths"), "{err}");
    s.flags.insert(Flag::MoneyPaths);
    assert!(gate_call(&s, "write_repo_file", Some("alpha"), None, flags).is_ok());
}
