//! Tool-spec tests: the registry's specs are complete and consistent, and the one check follows
//! the reference's order, per-action rules and the admin-only rule.

use super::*;
use crate::caller::AgentKind;
use crate::scope::{Axis, Scopes};
use crate::service::registry::{REGISTRY, spec};

fn specs() -> impl Iterator<Item = &'static ToolSpec> {
    REGISTRY.iter().map(|e| &e.spec)
}

fn named(name: &str) -> &'static ToolSpec {
    spec(name).unwrap_or_else(|| panic!("{name} is registered"))
}

fn agent(scopes: Scopes) -> Caller {
    Caller::agent("agent_000000000001", "bot", AgentKind::Driver, scopes)
}

fn narrowed(ns: &[&str]) -> Scopes {
    Scopes {
        namespaces: Axis::Only(ns.iter().map(|s| s.to_string()).collect()),
        grants: [Grant::Read, Grant::Write].into(),
        ..Scopes::unrestricted()
    }
}

fn with_tools(tools: &[&str]) -> Scopes {
    Scopes {
        tools: Axis::Only(tools.iter().map(|s| s.to_string()).collect()),
        ..narrowed(&["alpha"])
    }
}

fn call<'a>(namespace: Option<&'a str>, action: Option<&'a str>) -> Call<'a> {
    Call {
        action,
        namespace,
        takes_namespace: true,
        ..Call::default()
    }
}

#[test]
fn registry_has_thirty_six_unique_tools_in_their_groups() {
    let mut names: Vec<_> = specs().map(|t| t.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 36);
    let count = |g| specs().filter(|t| t.group == g).count();
    assert_eq!(
        [
            count(ToolGroup::Documents),
            count(ToolGroup::Maintenance),
            count(ToolGroup::Repo),
            count(ToolGroup::Jobs),
            count(ToolGroup::Improve),
            count(ToolGroup::Admin),
            count(ToolGroup::Checkmarks)
        ],
        [12, 4, 13, 1, 2, 1, 3]
    );
}

#[test]
fn an_unknown_action_is_a_write() {
    for t in ["jobs", "lint", "improve_run", "manage_pr", "agents"] {
        let rule = named(t).rule_for(Some("no_such_action"));
        assert_eq!(rule.grant, Grant::Write, "{t}");
    }
    let reader = agent(Scopes {
        grants: [Grant::Read].into(),
        ..Scopes::unrestricted()
    });
    let err = gate_call(&reader, named("jobs"), &call(Some("a"), Some("no_such")))
        .expect_err("an unknown action needs the write grant");
    assert!(err.to_string().contains("write grant"), "{err}");
}

#[test]
fn read_only_hint_follows_the_grant() {
    for t in specs() {
        let a = t.annotations();
        let reads = matches!(t.requirement, Requirement::Fixed(r) if r.grant == Grant::Read);
        assert_eq!(a.read_only, reads, "{}", t.name);
        assert!(
            !(a.read_only && a.destructive),
            "{} cannot be read-only and destructive",
            t.name
        );
    }
    assert!(named("delete").annotations().destructive);
    assert!(!named("list").annotations().destructive);
    assert!(named("read_repo_file").annotations().open_world);
    assert!(!named("read").annotations().open_world);
    assert!(named("read").annotations().idempotent);
    assert!(!named("write").annotations().idempotent);
    assert!(
        !named("jobs").annotations().destructive,
        "jobs is not marked destructive"
    );
}

#[test]
fn open_world_and_idempotent_hints_name_exactly_the_tools_they_should() {
    // GitHub (the repo tools; jobs verifying evidence; lint gathering a repo's paths), the
    // model API and GitHub (improve_run's loop), or the owner's webhook (jobs and checkpoint
    // post to it when a job or an agent blocks or asks): nothing else leaves Capsid.
    let outside: Vec<&str> = specs()
        .filter(|t| t.annotations().open_world)
        .map(|t| t.name)
        .collect();
    let mut expected: Vec<&str> = specs()
        .filter(|t| t.group == ToolGroup::Repo)
        .map(|t| t.name)
        .chain(["jobs", "lint", "improve_run", "checkpoint"])
        .collect();
    expected.sort_unstable();
    let mut outside_sorted = outside.clone();
    outside_sorted.sort_unstable();
    assert_eq!(outside_sorted, expected);
    // A write whose repeat changes nothing more; a write that adds each time is not.
    for t in [
        "delete",
        "update_namespace",
        "delete_repo_file",
        "delete_branch",
        "create_branch",
    ] {
        let a = named(t).annotations();
        assert!(a.idempotent && !a.read_only, "{t}");
    }
    for t in [
        "write",
        "checkpoint",
        "jobs",
        "open_pr",
        "write_repo_file",
        "improve_run",
    ] {
        assert!(!named(t).annotations().idempotent, "{t}");
    }
}

#[test]
fn confirmation_rules() {
    assert_eq!(named("write").confirmation, Confirmation::OnOverwrite);
    for t in ["delete", "move", "restore"] {
        assert_eq!(named(t).confirmation, Confirmation::Always, "{t}");
    }
    assert_eq!(
        named("lint").confirmation,
        Confirmation::ForActions(&["finalize"])
    );
    assert_eq!(named("list").confirmation, Confirmation::Never);
}

#[test]
fn per_action_grants_follow_the_reference() {
    let grant = |t: &str, a: &str| named(t).rule_for(Some(a)).grant;
    assert_eq!(grant("jobs", "list"), Grant::Read);
    for a in [
        "post",
        "claim",
        "heartbeat",
        "complete",
        "fail",
        "block",
        "resume",
    ] {
        assert_eq!(grant("jobs", a), Grant::Write, "jobs {a}");
    }
    assert_eq!(grant("lint", "gather"), Grant::Read);
    assert_eq!(grant("lint", "report"), Grant::Write);
    assert_eq!(grant("lint", "finalize"), Grant::Write);
    assert_eq!(
        named("lint").rule_for(None).grant,
        Grant::Read,
        "lint's default action is gather"
    );
    assert_eq!(
        named("manage_pr").rule_for(Some("merge")).flags,
        &[Flag::CanMerge]
    );
    assert_eq!(
        named("manage_pr").rule_for(Some("comment")).flags,
        &[Flag::CanCommentPr]
    );
    assert!(named("manage_pr").rule_for(Some("close")).flags.is_empty());
    assert_eq!(
        named("ci_dispatch").rule_for(None).flags,
        &[Flag::CanDispatch]
    );
}

#[test]
fn narrowed_caller_may_not_omit_the_namespace() {
    let c = agent(narrowed(&["alpha"]));
    let search = named("search");
    assert!(matches!(
        gate_call(&c, search, &call(None, None)),
        Err(GateRefusal::Scope(ScopeRefusal::NamespaceOmitted { .. }))
    ));
    assert!(gate_call(&c, search, &call(Some("alpha"), None)).is_ok());
    assert!(matches!(
        gate_call(&c, search, &call(Some("beta"), None)),
        Err(GateRefusal::Scope(ScopeRefusal::Namespace { .. }))
    ));
    // A tool without a namespace field may omit it.
    let no_field = Call {
        takes_namespace: false,
        ..Call::default()
    };
    assert!(gate_call(&c, named("namespaces"), &no_field).is_ok());
    // The wildcard may omit it.
    let all = agent(Scopes::unrestricted());
    assert!(gate_call(&all, search, &call(None, None)).is_ok());
}

#[test]
fn the_gate_asks_the_repos_axis() {
    let c = agent(Scopes {
        repos: Axis::Only(vec!["octo/alpha".into()]),
        ..narrowed(&["alpha"])
    });
    let with_repo = |repo| Call {
        repo: Some(repo),
        ..call(Some("alpha"), None)
    };
    let err = gate_call(&c, named("read_repo_file"), &with_repo("octo/beta"))
        .expect_err("a repo outside the axis");
    assert!(
        matches!(err, GateRefusal::Scope(ScopeRefusal::Repo { .. })),
        "{err}"
    );
    assert!(gate_call(&c, named("read_repo_file"), &with_repo("octo/alpha")).is_ok());
}

#[test]
fn an_action_tool_asks_its_actions_grant_at_the_gate() {
    let no_grants = agent(Scopes {
        grants: Default::default(),
        ..Scopes::unrestricted()
    });
    let err = gate_call(&no_grants, named("jobs"), &call(Some("a"), Some("list")))
        .expect_err("list needs read");
    assert!(err.to_string().contains("read grant"), "{err}");
    let reader = agent(Scopes {
        grants: [Grant::Read].into(),
        ..Scopes::unrestricted()
    });
    assert!(gate_call(&reader, named("jobs"), &call(Some("a"), Some("list"))).is_ok());
    let err = gate_call(&reader, named("jobs"), &call(Some("a"), Some("claim")))
        .expect_err("claim needs write");
    assert!(err.to_string().contains("write grant"), "{err}");
}

#[test]
fn tool_action_narrowing_holds_for_every_action_tool() {
    let cases = [
        ("manage_pr", "comment", "close"),
        ("manage_pr", "comment", "merge"),
        ("improve_run", "claim", "pause"),
        ("improve_run", "claim", "budget"),
        ("jobs", "post", "claim"),
        ("lint", "gather", "finalize"),
    ];
    for (tool, allowed, refused) in cases {
        let qualified = format!("{tool}.{allowed}");
        let c = agent(Scopes {
            flags: Flag::ALL.into_iter().collect(),
            ..with_tools(&[tool, &qualified])
        });
        let spec = named(tool);
        assert!(
            gate_call(&c, spec, &call(Some("alpha"), Some(allowed))).is_ok(),
            "{qualified} is allowed"
        );
        let err = gate_call(&c, spec, &call(Some("alpha"), Some(refused)))
            .expect_err("a narrowed-away action is refused");
        assert!(
            matches!(&err, GateRefusal::Scope(ScopeRefusal::Tool { qualified, .. }) if *qualified == format!("{tool}.{refused}")),
            "{tool}.{refused}: {err}"
        );
    }
    // improve_run's default action is run, which a caller narrowed to claim may not do.
    let c = agent(with_tools(&["improve_run", "improve_run.claim"]));
    let err = gate_call(&c, named("improve_run"), &call(Some("alpha"), None)).unwrap_err();
    assert!(err.to_string().contains("improve_run.run"), "{err}");
}

#[test]
fn admin_only_actions_are_refused_at_the_gate_for_agents() {
    let strong = agent(Scopes {
        flags: Flag::ALL.into_iter().collect(),
        ..Scopes::unrestricted()
    });
    let err = gate_call(&strong, named("agents"), &call(None, Some("list"))).unwrap_err();
    assert!(
        matches!(err, GateRefusal::AdminOnly { action: "list", why } if why.contains("widen itself")),
        "{err}"
    );
    for action in ["mint_operator_key", "sign_policy"] {
        let err = gate_call(&strong, named("improve_run"), &call(None, Some(action))).unwrap_err();
        assert!(
            matches!(err, GateRefusal::AdminOnly { action: a, .. } if a == action),
            "{action}: {err}"
        );
    }
    assert!(gate_call(&strong, named("improve_run"), &call(None, Some("pause"))).is_ok());
    let admin = Caller::admin("owner");
    assert!(gate_call(&admin, named("agents"), &call(None, Some("mint"))).is_ok());
    assert!(
        gate_call(
            &admin,
            named("improve_run"),
            &call(None, Some("sign_policy"))
        )
        .is_ok()
    );
    // The scope check comes first: an agent without the tool is told that, not "admin only".
    let narrow = agent(with_tools(&["read"]));
    let err = gate_call(&narrow, named("agents"), &call(None, Some("mint"))).unwrap_err();
    assert!(
        matches!(err, GateRefusal::Scope(ScopeRefusal::Tool { .. })),
        "{err}"
    );
}

#[test]
fn tools_list_visibility() {
    let only_read = agent(with_tools(&["read"]));
    let visible: Vec<_> = specs()
        .filter(|t| visible_to(&only_read, t))
        .map(|t| t.name)
        .collect();
    assert_eq!(visible, vec!["read"]);

    let reader = agent(Scopes {
        grants: [Grant::Read].into(),
        ..Scopes::unrestricted()
    });
    let visible: Vec<_> = specs()
        .filter(|t| visible_to(&reader, t))
        .map(|t| t.name)
        .collect();
    assert!(visible.contains(&"search") && visible.contains(&"jobs") && visible.contains(&"lint"));
    assert!(!visible.contains(&"write") && !visible.contains(&"improve_run"));
    assert!(!visible.contains(&"agents"));

    let poster = agent(Scopes {
        tools: Axis::Only(vec!["jobs".into(), "jobs.post".into()]),
        grants: [Grant::Write].into(),
        ..Scopes::unrestricted()
    });
    let visible: Vec<_> = specs()
        .filter(|t| visible_to(&poster, t))
        .map(|t| t.name)
        .collect();
    assert_eq!(visible, vec!["jobs"], "jobs.post with write sees jobs only");

    let writer = agent(Scopes::unrestricted());
    assert!(
        !visible_to(&writer, named("agents")),
        "agents is admin-only"
    );
    assert!(specs().all(|t| visible_to(&Caller::admin("owner"), t)));
}

#[test]
fn repo_write_flags_follow_the_table() {
    let f = |path, mode, wf| {
        repo_write_flags(&RepoWriteArgs {
            path,
            mode,
            allow_workflow_write: wf,
        })
    };
    assert_eq!(f(Some("src/a.rs"), RepoWriteMode::Pr, false), vec![]);
    assert_eq!(
        f(Some("src/a.rs"), RepoWriteMode::Direct, false),
        vec![Flag::CanDirectWrite]
    );
    assert_eq!(
        f(Some(".github/workflows/ci.yml"), RepoWriteMode::Pr, true),
        vec![Flag::CanWriteWorkflows, Flag::CanTouchProtected]
    );
    assert_eq!(
        f(Some("billing/tests/x.ts"), RepoWriteMode::Direct, false),
        vec![
            Flag::CanDirectWrite,
            Flag::CanTouchProtected,
            Flag::MoneyPaths
        ]
    );
    assert_eq!(f(None, RepoWriteMode::Pr, false), vec![]);
}

#[test]
fn the_registrar_check_asks_for_a_repo_mutations_flags() {
    let mut s = narrowed(&["alpha"]);
    s.flags.clear();
    let direct = RepoWriteArgs {
        path: Some("src/billing/x.rs"),
        mode: RepoWriteMode::Direct,
        ..RepoWriteArgs::default()
    };
    let flags = repo_write_flags(&direct);
    assert_eq!(flags, vec![Flag::CanDirectWrite, Flag::MoneyPaths]);
    let with = |flags: &Vec<Flag>| Call {
        flags: flags.clone(),
        ..call(Some("alpha"), None)
    };
    let spec = named("write_repo_file");
    let err = gate_call(&agent(s.clone()), spec, &with(&flags)).expect_err("no flags held");
    assert!(err.to_string().contains("can_direct_write"), "{err}");
    s.flags.insert(Flag::CanDirectWrite);
    let err = gate_call(&agent(s.clone()), spec, &with(&flags)).expect_err("money_paths missing");
    assert!(err.to_string().contains("money_paths"), "{err}");
    s.flags.insert(Flag::MoneyPaths);
    assert!(gate_call(&agent(s.clone()), spec, &with(&flags)).is_ok());
    // The rule's own flags come first, then the arguments'.
    s.flags.clear();
    let err = gate_call(&agent(s), named("ci_dispatch"), &call(Some("alpha"), None))
        .expect_err("ci_dispatch needs can_dispatch");
    assert!(err.to_string().contains("can_dispatch"), "{err}");
}

#[test]
fn every_repo_a_call_maps_is_asked_of_the_repos_axis() {
    // A registration may map only repositories the caller's repos axis allows, and a tools
    // axis narrowed to the tool itself does not stop an allowed mapping.
    let c = agent(Scopes {
        repos: Axis::Only(vec!["octo/alpha".into()]),
        ..with_tools(&["register_namespace"])
    });
    let mapping = |repos: &[&str]| Call {
        new_mapping: repos.iter().map(|r| r.to_string()).collect(),
        ..call(Some("alpha"), None)
    };
    let spec = named("register_namespace");
    let err = gate_call(&c, spec, &mapping(&["octo/alpha", "octo/beta"]))
        .expect_err("octo/beta is outside the repos axis");
    assert!(
        matches!(&err, GateRefusal::Scope(ScopeRefusal::Repo { repo, .. }) if repo == "octo/beta"),
        "{err}"
    );
    assert!(gate_call(&c, spec, &mapping(&["octo/alpha"])).is_ok());
}

#[test]
fn a_tool_is_listed_only_when_one_of_its_calls_is_allowed() {
    // Narrowed to `jobs.list` (a read) while holding only write: no call of `jobs` is
    // allowed, so the tool is not listed; with read it is.
    let narrowed_to_list = |grants: &[Grant]| {
        agent(Scopes {
            grants: grants.iter().copied().collect(),
            ..with_tools(&["jobs", "jobs.list"])
        })
    };
    assert!(!visible_to(
        &narrowed_to_list(&[Grant::Write]),
        named("jobs")
    ));
    assert!(visible_to(&narrowed_to_list(&[Grant::Read]), named("jobs")));
}

#[test]
fn a_write_modes_wire_name_is_the_one_its_argument_parses() {
    // The answer's `mode` is the spelling the `mode` argument accepts.
    for (mode, wire) in [(RepoWriteMode::Pr, "pr"), (RepoWriteMode::Direct, "direct")] {
        assert_eq!(mode.as_str(), wire);
        let parsed: RepoWriteMode =
            serde_json::from_value(serde_json::json!(wire)).expect("the wire name parses");
        assert_eq!(parsed, mode);
    }
}

/// `improve_run` mode, budget and unpause change state beyond one namespace: a caller
/// narrowed to some namespaces is refused whatever else it holds, before admin-only; a caller
/// whose namespaces are `*` and the admin pass.
#[test]
fn global_actions_need_every_namespace() {
    let run = named("improve_run");
    let narrow = Scopes {
        grants: [Grant::Read, Grant::Write].into(),
        flags: Flag::ALL.into(),
        ..narrowed(&["alpha"])
    };
    let wide = Scopes {
        namespaces: Axis::All,
        ..narrow.clone()
    };
    for action in ["mode", "budget", "unpause"] {
        let call = Call {
            action: Some(action),
            namespace: Some("alpha"),
            takes_namespace: true,
            ..Call::default()
        };
        let err = gate_call(&agent(narrow.clone()), run, &call).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, GateRefusal::Scope(ScopeRefusal::Global { .. })),
            "{action}: {err}"
        );
        assert!(
            text.contains(&format!(
                "improve_run.{action} changes state beyond one namespace"
            )),
            "{text}"
        );
        assert_eq!(
            gate_call(&agent(wide.clone()), run, &call),
            Ok(()),
            "{action}"
        );
        assert_eq!(
            gate_call(&Caller::admin("octo"), run, &call),
            Ok(()),
            "{action}"
        );
    }
    // Pausing one's own namespace stays a narrowed caller's to do.
    let pause = Call {
        action: Some("pause"),
        namespace: Some("alpha"),
        takes_namespace: true,
        ..Call::default()
    };
    assert_eq!(gate_call(&agent(narrow), run, &pause), Ok(()));
}

#[test]
fn every_tool_has_a_title_of_its_own() {
    let mut seen = std::collections::BTreeSet::new();
    for entry in &REGISTRY {
        let title = entry.spec.title();
        assert_ne!(title, entry.spec.name, "{} has no title", entry.spec.name);
        assert!(
            title.chars().next().is_some_and(char::is_uppercase),
            "{title}"
        );
        assert!(seen.insert(title), "{title} is used twice");
    }
}
