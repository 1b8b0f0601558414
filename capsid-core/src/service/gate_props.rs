//! The one check, property-tested through the real registry: for arbitrary scopes, callers and
//! calls, a handler is entered exactly when an independent model of the reference's rules
//! (tools axis with `tool.action` narrowing, grant, namespace, repo, flags, omitted namespace,
//! admin only) allows the call, and a refused call never touches the store.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::executor::block_on;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::recording_store::RecordingStore;
use super::registry::{CallObserver, REGISTRY};
use super::{NoConfirmer, Service, ServiceConfig};
use crate::caller::{AgentKind, Caller};
use crate::error::Error;
use crate::ids::CountingEntropy;
use crate::scope::{Axis, Flag, Grant, Scopes};
use crate::time::{ManualClock, Timestamp};

/// Counts handler entries.
#[derive(Default)]
struct Entries {
    count: AtomicUsize,
    tools: Mutex<Vec<&'static str>>,
}

impl CallObserver for Entries {
    fn entered(&self, tool: &'static str) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tool);
    }
}

const NAMESPACES: [&str; 3] = ["alpha", "beta", "gamma"];
const REPOS: [&str; 2] = ["octo/alpha", "primary"];

/// The reference's requirement of one call, restated for the model (reference 2 and 3.3):
/// the grant, whether only an admin may make it, and the flags it always needs.
fn reference_rule(tool: &str, action: Option<&str>) -> (Grant, bool, Vec<Flag>) {
    use Grant::{Read, Write};
    match (tool, action) {
        (
            "list" | "read" | "brief" | "backlinks" | "find" | "search" | "namespaces" | "history"
            | "list_repo_tree" | "read_repo_file" | "search_code" | "repo_refs" | "repo_history"
            | "ci_status" | "improve_status",
            _,
        ) => (Read, false, vec![]),
        ("jobs", Some("list" | "get" | "approval") | None) | ("lint", Some("gather") | None) => {
            (Read, false, vec![])
        }
        ("checkmarks", Some("list" | "get" | "log" | "feed") | None) => (Read, false, vec![]),
        ("shared", Some("get" | "list") | None) => (Read, false, vec![]),
        ("shared", Some("set" | "delete")) => (Write, false, vec![Flag::CanWriteShared]),
        ("manage_pr", Some("merge")) => (Write, false, vec![Flag::CanMerge]),
        ("manage_pr", Some("comment")) => (Write, false, vec![Flag::CanCommentPr]),
        ("ci_dispatch", _) => (Write, false, vec![Flag::CanDispatch]),
        ("improve_run", Some("mint_operator_key" | "sign_policy")) => (Write, true, vec![]),
        ("agents", _) => (Write, true, vec![]),
        // SPEC 8: the namespace mapping is the authorization boundary, so remapping is admin only.
        ("update_namespace", _) => (Write, true, vec![]),
        // As `POST /ops/backup` (reference 1): a write key that may back up.
        ("backup", _) => (Write, false, vec![Flag::CanBackup]),
        // Beyond the reference (issue 49): raising a job's cap spends the namespace's money.
        ("jobs", Some("raise")) => (Write, false, vec![Flag::CanRaiseBudget]),
        // Beyond the reference (issue 55): a review verdict is a comment on a pull request.
        ("jobs", Some("approve" | "reject")) => (Write, false, vec![Flag::CanCommentPr]),
        // Beyond the reference (issue 56, item 8): promoting a log entry writes the global feed.
        ("checkmarks", Some("promote")) => (Write, false, vec![Flag::CanWriteShared]),
        _ => (Write, false, vec![]),
    }
}

/// Each action tool's actions (the first is what a call without one performs).
fn actions_of(tool: &str) -> &'static [&'static str] {
    match tool {
        "jobs" => &[
            "list",
            "post",
            "claim",
            "heartbeat",
            "complete",
            "fail",
            "block",
            "resume",
            "get",
            "approval",
            "raise",
            "meter",
            "approve",
            "reject",
        ],
        "lint" => &["gather", "finalize", "report"],
        "improve_run" => &[
            "run",
            "mode",
            "pause",
            "unpause",
            "budget",
            "mint_operator_key",
            "claim",
            "sign_policy",
        ],
        "manage_pr" => &["merge", "close", "comment"],
        "agents" => &["list", "mint", "revoke", "update_scopes"],
        "checkmarks" => &["list", "get", "log", "feed", "answer", "resume", "promote"],
        "shared" => &["list", "get", "set", "delete"],
        _ => &[],
    }
}

/// The field an action tool names its action with.
fn action_field(tool: &str) -> &'static str {
    if tool == "lint" { "mode" } else { "action" }
}

/// Minimal arguments that parse for `tool` (without namespace and repo).
fn base_args(tool: &str) -> Value {
    match tool {
        "read" | "backlinks" | "history" | "delete" => json!({"path": "a.md"}),
        "write" => json!({"path": "a.md", "title": "t", "body": "b"}),
        "move" => json!({"path": "a.md", "new_path": "b.md"}),
        "restore" => json!({"path": "a.md", "version_id": 1}),
        "find" => json!({"glob": "*"}),
        "search" | "search_code" => json!({"query": "x"}),
        "update_namespace" => json!({"repos": "[]"}),
        "write_repo_file" => json!({"path": "src/a.rs", "content": "c", "message": "m"}),
        "delete_repo_file" => json!({"path": "src/a.rs", "message": "m"}),
        "create_branch" | "delete_branch" => json!({"branch": "b"}),
        "open_pr" => json!({"title": "t", "head": "h"}),
        "manage_pr" => json!({"number": 1, "action": "close"}),
        "jobs" | "agents" | "checkmarks" | "shared" => json!({"action": "list"}),
        "checkpoint" => json!({"status": "working"}),
        _ => json!({}),
    }
}

/// Whether the tool's arguments have a namespace field, and whether it is required.
fn namespace_field(tool: &str) -> (bool, bool) {
    match tool {
        "namespaces" | "agents" | "shared" | "backup" => (false, false),
        "list" | "find" | "search" | "jobs" | "improve_run" | "improve_status" | "checkmarks" => {
            (true, false)
        }
        _ => (true, true),
    }
}

/// Whether the tool's arguments name a repository the repos axis judges (a selector, or the
/// repository `register_namespace` maps).
fn takes_repo(tool: &str) -> bool {
    tool == "register_namespace"
        || REGISTRY
            .iter()
            .find(|e| e.spec.name == tool)
            .is_some_and(|e| e.spec.group == crate::tools::ToolGroup::Repo)
}

#[derive(Clone, Debug)]
struct Case {
    scopes: Scopes,
    principal: u8,
    tool: usize,
    action: Option<usize>,
    namespace: Option<usize>,
    repo: Option<usize>,
}

fn axis(names: &'static [&'static str]) -> impl Strategy<Value = Axis> {
    prop_oneof![
        Just(Axis::All),
        proptest::sample::subsequence(names.to_vec(), 0..=names.len())
            .prop_map(|v| Axis::Only(v.into_iter().map(str::to_owned).collect())),
    ]
}

fn tools_axis() -> impl Strategy<Value = Axis> {
    let mut names: Vec<String> = REGISTRY.iter().map(|e| e.spec.name.to_owned()).collect();
    for e in &REGISTRY {
        for a in actions_of(e.spec.name) {
            names.push(format!("{}.{a}", e.spec.name));
        }
    }
    prop_oneof![
        1 => Just(Axis::All),
        4 => proptest::sample::subsequence(names.clone(), 0..12).prop_map(Axis::Only),
    ]
}

fn scopes() -> impl Strategy<Value = Scopes> {
    (
        axis(&NAMESPACES),
        axis(&REPOS),
        tools_axis(),
        proptest::sample::subsequence(vec![Grant::Read, Grant::Write], 0..=2),
        proptest::sample::subsequence(Flag::ALL.to_vec(), 0..=Flag::ALL.len()),
    )
        .prop_map(|(namespaces, repos, tools, grants, flags)| Scopes {
            namespaces,
            repos,
            tools,
            grants: grants.into_iter().collect(),
            flags: flags.into_iter().collect::<BTreeSet<_>>(),
        })
}

fn case() -> impl Strategy<Value = Case> {
    (
        scopes(),
        0u8..4,
        0..REGISTRY.len(),
        proptest::option::of(0usize..8),
        proptest::option::of(0..NAMESPACES.len()),
        proptest::option::of(0..REPOS.len()),
    )
        .prop_map(|(scopes, principal, tool, action, namespace, repo)| Case {
            scopes,
            principal,
            tool,
            action,
            namespace,
            repo,
        })
}

fn caller_of(case: &Case) -> Caller {
    match case.principal {
        // The owner and the CLI are admins with every scope.
        0 => Caller::admin("owner"),
        1 => Caller::agent(
            "agent_000000000001",
            "bot",
            AgentKind::Driver,
            case.scopes.clone(),
        ),
        2 => Caller::agent(
            "agent_000000000002",
            "seat",
            AgentKind::Seat,
            case.scopes.clone(),
        ),
        _ => Caller::agent(
            "agent_000000000003",
            "narrow",
            AgentKind::Session,
            case.scopes.clone(),
        ),
    }
}

/// The model: does the reference allow this call?
fn allowed(
    caller: &Caller,
    tool: &str,
    action: Option<&str>,
    ns: Option<&str>,
    repo: Option<&str>,
) -> bool {
    let s = &caller.scopes;
    let tools_ok = match &s.tools {
        Axis::All => true,
        Axis::Only(list) => {
            let bare = list.iter().any(|t| t == tool);
            let prefix = format!("{tool}.");
            let narrowed: Vec<&str> = list
                .iter()
                .filter_map(|t| t.strip_prefix(&prefix))
                .collect();
            let action = action.or_else(|| actions_of(tool).first().copied());
            bare && (narrowed.is_empty() || action.is_some_and(|a| narrowed.contains(&a)))
        }
    };
    let (grant, admin_only, flags) = reference_rule(tool, action);
    let ns_ok = ns.is_none_or(|n| s.namespaces.allows(n));
    let repo_ok = repo.is_none_or(|r| s.repos.allows(r));
    let flags_ok = flags.iter().all(|f| s.flags.contains(f));
    // The global feed is shared with every namespace by design: omitting the namespace there
    // widens nothing.
    let feed = tool == "checkmarks" && action == Some("feed");
    let omitted = namespace_field(tool).0 && ns.is_none() && !s.namespaces.is_all() && !feed;
    // Issue 32: the loop's mode and budget, and lifting a pause, reach every namespace; so
    // does a backup.
    let global = (tool == "improve_run" && matches!(action, Some("mode" | "unpause" | "budget")))
        || tool == "backup";
    tools_ok
        && s.grants.contains(&grant)
        && ns_ok
        && repo_ok
        && flags_ok
        && !omitted
        && (!global || s.namespaces.is_all())
        && (!admin_only || caller.is_admin())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_handler_runs_exactly_when_the_model_allows_the_call(case in case()) {
        let caller = caller_of(&case);
        let tool = REGISTRY[case.tool].spec.name;
        let mut args = base_args(tool);
        let actions = actions_of(tool);
        let action = match (actions.is_empty(), case.action) {
            (false, Some(i)) => Some(actions[i % actions.len()]),
            _ => None,
        };
        // These schemas require an action; the others default it.
        let action = action.or_else(|| {
            ["jobs", "agents", "manage_pr", "checkmarks", "shared"]
                .contains(&tool)
                .then(|| args[action_field(tool)].as_str())
                .flatten()
                .and_then(|a| actions.iter().copied().find(|x| *x == a))
        });
        if let Some(a) = action {
            args[action_field(tool)] = json!(a);
        }
        let (has_ns, ns_required) = namespace_field(tool);
        let ns = case.namespace.map(|i| NAMESPACES[i]).filter(|_| has_ns);
        let ns = if ns_required { ns.or(Some("alpha")) } else { ns };
        if let Some(n) = ns {
            args["namespace"] = json!(n);
        }
        let repo = case.repo.map(|i| REPOS[i]).filter(|_| takes_repo(tool));
        if let Some(r) = repo {
            args["repo"] = json!(r);
        }

        let store = Arc::new(RecordingStore::default());
        let entries = Arc::new(Entries::default());
        let service = Service::new(
            store.clone(),
            Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000))),
            Arc::new(CountingEntropy::default()),
            ServiceConfig::default(),
        )
        .with_observer(entries.clone());
        let result = block_on(service.call_tool(&caller, tool, args.clone(), &NoConfirmer));
        let entered = entries.count.load(Ordering::SeqCst);
        let expected = allowed(&caller, tool, action, ns, repo);
        prop_assert_eq!(
            entered,
            usize::from(expected),
            "{} {} by {:?}: model says {}, got {:?}",
            tool, args, caller.scopes, expected, result
        );
        if !expected {
            prop_assert!(store.touches().is_empty(), "a refused call touched {:?}", store.touches());
            let refused = match &result {
                Err(Error::Denied(_) | Error::Forbidden(_)) => true,
                Ok(v) => v["ok"] == json!(false),
                _ => false,
            };
            prop_assert!(refused, "{} {}: {:?}", tool, args, result);
        }
    }
}
