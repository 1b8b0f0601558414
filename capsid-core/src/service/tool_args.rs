//! [`parse_tool_args`]: a tool's arguments parsed and bounded exactly as
//! [`Service::call_tool`](super::Service::call_tool) parses them before its scope check, without
//! a caller, a store or a call. The fuzz target for tool arguments drives it; a property test
//! holds it to `call_tool`'s own parse, so the two cannot drift apart.

use serde_json::Value;

use super::args::{ScopeArgs, parse_args};
use super::{agents, documents, improve, jobs, lint, namespaces, repo_args, writes};
use crate::error::{Error, Result};

/// What the scope check would be asked about a call whose arguments parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedCall {
    /// The namespace the call names.
    pub namespace: Option<String>,
    /// The repo selector it names.
    pub repo: Option<String>,
    /// How many flags its arguments need.
    pub flags: usize,
}

fn scope_of<T: ScopeArgs>(tool: &str, parsed: &T) -> ParsedCall {
    ParsedCall {
        namespace: parsed.namespace().map(str::to_owned),
        repo: parsed.repo().map(str::to_owned),
        flags: parsed
            .repo_write()
            .map(|w| crate::tools::repo_write_flags(tool, &w).len())
            .unwrap_or_default(),
    }
}

/// Parses `args` for `tool` as `call_tool` does (bounds, path and namespace rules), and
/// reports what its scope check would be asked. An unknown tool is refused as `call_tool`
/// refuses it.
pub fn parse_tool_args(tool: &str, args: Value) -> Result<ParsedCall> {
    macro_rules! parse {
        ($($name:literal => $Args:ty),* $(,)?) => {
            match tool {
                $($name => {
                    let parsed: $Args = parse_args(tool, args)?;
                    Ok(scope_of(tool, &parsed))
                })*
                _ => Err(Error::Invalid(format!("unknown tool: {tool}"))),
            }
        };
    }
    parse! {
        "list" => documents::ListArgs,
        "read" => documents::ReadArgs,
        "brief" => documents::BriefArgs,
        "backlinks" => documents::ReadArgs,
        "find" => documents::FindArgs,
        "search" => documents::SearchArgs,
        "namespaces" => documents::NoArgs,
        "history" => documents::HistoryArgs,
        "write" => writes::WriteArgs,
        "delete" => writes::DeleteArgs,
        "move" => writes::MoveArgs,
        "restore" => writes::RestoreArgs,
        "lint" => lint::LintArgs,
        "register_namespace" => namespaces::RegisterArgs,
        "update_namespace" => namespaces::UpdateArgs,
        "jobs" => jobs::JobsArgs,
        "improve_run" => improve::RunArgs,
        "improve_status" => improve::StatusArgs,
        "agents" => agents::AgentsArgs,
        "list_repo_tree" => repo_args::ListTreeArgs,
        "read_repo_file" => repo_args::ReadFileArgs,
        "search_code" => repo_args::SearchCodeArgs,
        "repo_refs" => repo_args::RepoRefsArgs,
        "repo_history" => repo_args::RepoHistoryArgs,
        "ci_status" => repo_args::CiStatusArgs,
        "write_repo_file" => repo_args::WriteFileArgs,
        "create_branch" => repo_args::CreateBranchArgs,
        "open_pr" => repo_args::OpenPrArgs,
        "delete_repo_file" => repo_args::DeleteFileArgs,
        "manage_pr" => repo_args::ManagePrArgs,
        "delete_branch" => repo_args::DeleteBranchArgs,
        "ci_dispatch" => repo_args::CiDispatchArgs,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::caller::Caller;
    use crate::ids::CountingEntropy;
    use crate::scope::Scopes;
    use crate::service::untouchable::UntouchableStore;
    use crate::service::{NoConfirmer, Service, ServiceConfig};
    use crate::time::{ManualClock, Timestamp};
    use crate::tools::TOOLS;

    /// `call_tool` as a caller with no scopes at all: it parses, then the scope check refuses
    /// before any handler (the store panics if touched).
    fn call_parse(tool: &str, args: Value) -> Result<Value> {
        let service = Service::new(
            Arc::new(UntouchableStore),
            Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000))),
            Arc::new(CountingEntropy::default()),
            ServiceConfig::default(),
        );
        let caller = Caller::agent(
            "a1",
            "nobody",
            crate::caller::AgentKind::Session,
            Scopes::none(),
        );
        futures::executor::block_on(service.call_tool(&caller, tool, args, &NoConfirmer))
    }

    fn agree(tool: &str, args: Value) {
        let ours = parse_tool_args(tool, args.clone());
        let theirs = call_parse(tool, args.clone());
        match (&ours, &theirs) {
            (Err(Error::Invalid(a)), Err(Error::Invalid(b))) => assert_eq!(a, b, "{tool} {args}"),
            (Ok(_), Err(Error::Denied(_))) => {}
            _ => panic!("{tool} {args}: parse_tool_args gave {ours:?}, call_tool gave {theirs:?}"),
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z/._*-]{0,12}".prop_map(Value::String),
            prop_oneof![
                Just("capsid"),
                Just("docs/a.md"),
                Just("octo/alpha"),
                Just("claim"),
                Just("append")
            ]
            .prop_map(|s| Value::String(s.to_owned())),
        ];
        leaf.prop_recursive(2, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("namespace"),
                        Just("path"),
                        Just("action"),
                        Just("body"),
                        Just("repo"),
                        Just("mode"),
                        Just("id"),
                        Just("query"),
                        Just("limit"),
                        Just("title"),
                        Just("ref"),
                    ]
                    .prop_map(str::to_owned),
                    inner,
                    0..5,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn every_tool_in_the_table_parses_here_as_in_call_tool() {
        for t in TOOLS {
            agree(t.name, json!({}));
            agree(t.name, json!({"namespace": "capsid", "path": "docs/a.md"}));
            agree(t.name, json!([1, 2]));
        }
        agree("no_such_tool", json!({}));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn arbitrary_arguments_parse_here_as_in_call_tool(
            tool in prop::sample::select(TOOLS.iter().map(|t| t.name).collect::<Vec<_>>()),
            args in arb_json(),
        ) {
            agree(tool, args);
        }
    }
}
