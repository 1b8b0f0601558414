//! The tool table (`TOOL_GRANTS`, reference 2 and 3.3): every one of the 32 tools with the
//! grant it needs, whether it takes a namespace, when it needs confirmation, and its MCP
//! annotations. MCP registration iterates this table, so a tool cannot exist without a
//! requirement; a name missing from it is treated as a write tool (fail closed).

use crate::caller::Caller;
use crate::guards::{is_money_path, protected_match};
use crate::scope::{Flag, Grant, Need, ScopeRefusal, Scopes, check_scope};

/// The group a tool belongs to (for documentation and `tools/list` ordering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolGroup {
    /// Documents (12).
    Documents,
    /// Maintenance (3).
    Maintenance,
    /// Repo access (13).
    Repo,
    /// Work queue (1).
    Jobs,
    /// Self-improvement (2).
    Improve,
    /// Agent administration (1).
    Admin,
}

/// What a tool needs before its handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// The read grant.
    Read,
    /// The write grant.
    Write,
    /// Decided per action inside the handler ([`action_grant`]).
    PerAction,
}

/// When a call must be confirmed by a human (`confirm: true` or an elicitation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmation {
    /// Never.
    Never,
    /// Every call.
    Always,
    /// When it overwrites an existing document (`write` with `replace` or `patch`).
    OnOverwrite,
    /// For some actions (`lint` finalize).
    ForActions(&'static [&'static str]),
}

/// MCP tool annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Annotations {
    /// `readOnlyHint`: derived from the requirement.
    pub read_only: bool,
    /// `destructiveHint`: may overwrite or remove something.
    pub destructive: bool,
    /// `idempotentHint`: repeating the call has no further effect.
    pub idempotent: bool,
    /// `openWorldHint`: reaches outside Capsid (GitHub).
    pub open_world: bool,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolSpec {
    /// The MCP tool name.
    pub name: &'static str,
    /// Its group.
    pub group: ToolGroup,
    /// What it needs.
    pub requirement: Requirement,
    /// Whether its input has a `namespace` field (omission by a narrowed caller is refused).
    pub takes_namespace: bool,
    /// When it needs confirmation.
    pub confirmation: Confirmation,
    /// Whether it may overwrite or remove something.
    pub destructive: bool,
    /// What the tool does, as shown to clients.
    pub description: &'static str,
}

impl ToolSpec {
    /// The MCP annotations, derived from the requirement and the row.
    pub fn annotations(&self) -> Annotations {
        let read_only = self.requirement == Requirement::Read;
        Annotations {
            read_only,
            destructive: !read_only && self.destructive,
            idempotent: read_only,
            open_world: self.group == ToolGroup::Repo,
        }
    }
}

const fn tool(
    name: &'static str,
    group: ToolGroup,
    requirement: Requirement,
    takes_namespace: bool,
    confirmation: Confirmation,
    destructive: bool,
    description: &'static str,
) -> ToolSpec {
    ToolSpec {
        name,
        group,
        requirement,
        takes_namespace,
        confirmation,
        destructive,
        description,
    }
}

use Confirmation::{Always, Never, OnOverwrite};
use Requirement::{PerAction, Read, Write};
use ToolGroup::{Admin, Documents, Improve, Jobs, Maintenance, Repo};

/// Every tool, in the reference's order.
pub const TOOLS: [ToolSpec; 32] = [
    tool(
        "list",
        Documents,
        Read,
        true,
        Never,
        false,
        "List documents (no bodies), optionally filtered by namespace, type and status; ordered by namespace, path; at most 500.",
    ),
    tool(
        "read",
        Documents,
        Read,
        true,
        Never,
        false,
        "Read one document: its columns, body and last_actor (who last changed it).",
    ),
    tool(
        "brief",
        Documents,
        Read,
        true,
        Never,
        false,
        "Start a session in one call: conventions, repo structure, the namespace's core.md, open tasks, recent episodics and core links.",
    ),
    tool(
        "backlinks",
        Documents,
        Read,
        true,
        Never,
        false,
        "Typed links out of and into one document.",
    ),
    tool(
        "find",
        Documents,
        Read,
        true,
        Never,
        false,
        "Find documents whose path matches a glob (SQLite GLOB semantics: * ? [...]); at most 500.",
    ),
    tool(
        "search",
        Documents,
        Read,
        true,
        Never,
        false,
        "Full-text search over titles and bodies; the 25 best matches by bm25 with [marked] snippets.",
    ),
    tool(
        "namespaces",
        Documents,
        Read,
        false,
        Never,
        false,
        "Registered namespaces with their repos and how many episodic/source documents await consolidation.",
    ),
    tool(
        "history",
        Documents,
        Read,
        true,
        Never,
        false,
        "A document's version snapshots (newest first, at most 100), or one version by version_id.",
    ),
    tool(
        "write",
        Documents,
        Write,
        true,
        OnOverwrite,
        true,
        "Create or change a document: mode replace (default), append, patch (find/replace_with) or meta; if_match guards against lost updates; links replaces outgoing edges. Overwrites need confirm.",
    ),
    tool(
        "delete",
        Documents,
        Write,
        true,
        Always,
        true,
        "Delete a document (snapshotted first) and every link touching it. Needs confirm.",
    ),
    tool(
        "move",
        Documents,
        Write,
        true,
        Always,
        true,
        "Rename a document within its namespace, repointing links. Needs confirm.",
    ),
    tool(
        "restore",
        Documents,
        Write,
        true,
        Always,
        true,
        "Restore a document's title and body from a version snapshot (recreating it if deleted). Needs confirm.",
    ),
    tool(
        "lint",
        Maintenance,
        PerAction,
        true,
        Confirmation::ForActions(&["finalize"]),
        true,
        "Consolidation loop: mode gather (read-only packet), finalize (archive consumed episodic/source docs, needs confirm) or report (truth report).",
    ),
    tool(
        "register_namespace",
        Maintenance,
        Write,
        true,
        Never,
        false,
        "Register a new namespace with its repositories (exactly one labelled primary). Create-only.",
    ),
    tool(
        "update_namespace",
        Maintenance,
        Write,
        true,
        Never,
        true,
        "Replace a namespace's repository mapping (exactly one labelled primary).",
    ),
    tool(
        "list_repo_tree",
        Repo,
        Read,
        true,
        Never,
        false,
        "List a directory of a mapped repository.",
    ),
    tool(
        "read_repo_file",
        Repo,
        Read,
        true,
        Never,
        false,
        "Read one file (path) or several (paths) from a mapped repository.",
    ),
    tool(
        "search_code",
        Repo,
        Read,
        true,
        Never,
        false,
        "Case-insensitive substring search over a mapped repository's files, paged with start.",
    ),
    tool(
        "repo_refs",
        Repo,
        Read,
        true,
        Never,
        false,
        "Branches (with ahead/behind and open PR), tags and open pull requests of a mapped repository.",
    ),
    tool(
        "repo_history",
        Repo,
        Read,
        true,
        Never,
        false,
        "Commits on a ref, a base...head comparison, or one commit; patches only when asked.",
    ),
    tool(
        "ci_status",
        Repo,
        Read,
        true,
        Never,
        false,
        "Recent workflow runs, and for the latest failure its failing jobs and steps (log tail for write-grant callers).",
    ),
    tool(
        "write_repo_file",
        Repo,
        Write,
        true,
        Never,
        true,
        "Write a file to a mapped repository: through a new branch and pull request (default) or directly (needs can_direct_write).",
    ),
    tool(
        "create_branch",
        Repo,
        Write,
        true,
        Never,
        false,
        "Create a branch off the default branch or another ref.",
    ),
    tool(
        "open_pr",
        Repo,
        Write,
        true,
        Never,
        false,
        "Open a pull request.",
    ),
    tool(
        "delete_repo_file",
        Repo,
        Write,
        true,
        Never,
        true,
        "Delete a file from a mapped repository (through a pull request by default).",
    ),
    tool(
        "manage_pr",
        Repo,
        Write,
        true,
        Never,
        true,
        "Merge (needs can_merge), close or comment on (needs can_comment_pr) a pull request.",
    ),
    tool(
        "delete_branch",
        Repo,
        Write,
        true,
        Never,
        true,
        "Delete a branch (never the default branch; improve/ branches and branches with open PRs need force).",
    ),
    tool(
        "ci_dispatch",
        Repo,
        Write,
        true,
        Never,
        false,
        "Dispatch a workflow on a ref, or re-run a run's failed jobs (needs can_dispatch).",
    ),
    tool(
        "jobs",
        Jobs,
        PerAction,
        true,
        Never,
        false,
        "The signed work queue: post, claim, heartbeat, complete, fail, block, resume, list.",
    ),
    tool(
        "improve_run",
        Improve,
        Write,
        true,
        Never,
        false,
        "Control the self-improvement loop: run, mode, pause, unpause, budget, claim, mint_operator_key, sign_policy.",
    ),
    tool(
        "improve_status",
        Improve,
        Read,
        true,
        Never,
        false,
        "Queue, agents and loop status per namespace.",
    ),
    tool(
        "agents",
        Admin,
        Write,
        false,
        Never,
        true,
        "Admin only: mint, list, revoke or re-scope agent credentials.",
    ),
];

/// The row for `name`, if it is a known tool.
pub fn tool_spec(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// What `name` needs; a tool missing from the table is a write tool.
pub fn requirement_of(name: &str) -> Requirement {
    tool_spec(name).map_or(Write, |t| t.requirement)
}

/// The grant an action of a per-action tool needs: `jobs list` and `lint gather` read, every
/// other action writes (fail closed for unknown actions and tools).
pub fn action_grant(tool: &str, action: &str) -> Grant {
    match (tool, action) {
        ("jobs", "list") | ("lint", "gather") => Grant::Read,
        _ => Grant::Write,
    }
}

/// The registrar wrapper's check (`guardRegistrations`): the tool's requirement from the table
/// with the call's `namespace`, `repo` and the `flags` its arguments need (a repo mutation's
/// [`repo_write_flags`]), then the rule that a narrowed caller may not omit the namespace of a
/// tool that takes one. Per-action grants are asked afterwards through [`check_scope`] by the
/// handler.
pub fn gate_call(
    scopes: &Scopes,
    tool: &str,
    namespace: Option<&str>,
    repo: Option<&str>,
    flags: Vec<Flag>,
) -> Result<(), ScopeRefusal> {
    let grant = match requirement_of(tool) {
        Read => Some(Grant::Read),
        Write => Some(Grant::Write),
        PerAction => None,
    };
    check_scope(
        scopes,
        &Need {
            tool,
            namespace,
            repo,
            grant,
            flags,
            ..Need::default()
        },
    )?;
    let takes_namespace = tool_spec(tool).is_some_and(|t| t.takes_namespace);
    if takes_namespace && namespace.is_none() && !scopes.namespaces.is_all() {
        return Err(ScopeRefusal::NamespaceOmitted {
            tool: tool.to_owned(),
            held: scopes.namespaces.describe(),
        });
    }
    Ok(())
}

/// Whether `caller` sees `tool` in `tools/list`: the tools axis allows it and the caller holds
/// its grant (per-action tools show if either grant is held); `agents` shows only to admins.
pub fn visible_to(caller: &Caller, tool: &ToolSpec) -> bool {
    if tool.group == ToolGroup::Admin && !caller.is_admin() {
        return false;
    }
    let scopes = &caller.scopes;
    let need = |grant| Need {
        tool: tool.name,
        grant,
        ..Need::default()
    };
    match tool.requirement {
        Read => check_scope(scopes, &need(Some(Grant::Read))).is_ok(),
        Write => check_scope(scopes, &need(Some(Grant::Write))).is_ok(),
        PerAction => check_scope(scopes, &need(None)).is_ok() && !scopes.grants.is_empty(),
    }
}

/// The arguments of a repo mutation that decide its flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepoWriteArgs<'a> {
    /// The repository path written or deleted.
    pub path: Option<&'a str>,
    /// `pr` or `direct`.
    pub mode: Option<&'a str>,
    /// `manage_pr`'s action.
    pub action: Option<&'a str>,
    /// Whether the caller opted into writing under `.github/workflows/`.
    pub allow_workflow_write: bool,
}

/// `repoWriteFlags` (reference 3.4): the flags a repo mutation needs, in the table's order.
pub fn repo_write_flags(tool: &str, args: &RepoWriteArgs<'_>) -> Vec<Flag> {
    let mut flags = Vec::new();
    if args.mode == Some("direct") {
        flags.push(Flag::CanDirectWrite);
    }
    if args.allow_workflow_write {
        flags.push(Flag::CanWriteWorkflows);
    }
    if tool == "manage_pr" && args.action == Some("merge") {
        flags.push(Flag::CanMerge);
    }
    if tool == "manage_pr" && args.action == Some("comment") {
        flags.push(Flag::CanCommentPr);
    }
    if tool == "ci_dispatch" {
        flags.push(Flag::CanDispatch);
    }
    if let Some(path) = args.path {
        if protected_match(path).is_some() {
            flags.push(Flag::CanTouchProtected);
        }
        if is_money_path(path) {
            flags.push(Flag::MoneyPaths);
        }
    }
    flags
}

#[cfg(test)]
mod tests;
