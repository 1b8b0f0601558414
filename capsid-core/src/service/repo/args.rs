//! The thirteen repo tools' arguments (reference 2.3): one typed struct per tool, with the
//! reference's parameter names and bounds; their JSON Schemas are the MCP input schemas.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::docs::bounds;
use crate::scope::Flag;
use crate::scope_args;
use crate::service::args::ScopeArgs;
use crate::service::args::{Bounded, NamespaceArg};
use crate::tools::{RepoWriteArgs, repo_write_flags};

/// A repo selector: a label of the namespace's mapping or a mapped `owner/name`.
pub type RepoSelector = Option<Bounded<{ bounds::REPO_SELECTOR }>>;
/// A git ref argument.
pub type RefArg = Bounded<{ bounds::GIT_REF }>;
/// A repository path argument.
pub type PathArg = Bounded<{ bounds::PATH }>;

/// `list_repo_tree`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListTreeArgs {
    /// Namespace whose mapped repository to list.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label (primary, legacy, ...) or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// Directory to list; the repository root when omitted.
    pub path: Option<PathArg>,
    /// Branch, tag or sha; the default branch when omitted.
    #[serde(rename = "ref")]
    pub git_ref: Option<RefArg>,
}
scope_args!(ListTreeArgs, namespace, repo);

/// `read_repo_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// Namespace whose mapped repository to read.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// One file. Pass exactly one of path and paths.
    pub path: Option<PathArg>,
    /// Up to 20 files, each read independently and capped at 200 KiB.
    #[schemars(length(max = 20))]
    pub paths: Option<Vec<PathArg>>,
    /// Branch, tag or sha; the default branch when omitted.
    #[serde(rename = "ref")]
    pub git_ref: Option<RefArg>,
}
scope_args!(ReadFileArgs, namespace, repo);

/// `search_code`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchCodeArgs {
    /// Text to find (case-insensitive substring).
    pub query: Bounded<{ bounds::QUERY }>,
    /// Namespace whose mapped repository to search.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// Only scan files whose path starts with this prefix, e.g. app/lib/billing.
    pub path_prefix: Option<PathArg>,
    /// Branch, tag or sha to search; the default branch when omitted.
    #[serde(rename = "ref")]
    pub git_ref: Option<RefArg>,
    /// Cap on returned matches (default 20, max 200).
    pub max_results: Option<u32>,
    /// Cap on files fetched and scanned (default 200, max 200); resume with start.
    pub max_files: Option<u32>,
    /// Candidate-file offset to resume a truncated scan (the previous next_start).
    pub start: Option<u32>,
}
scope_args!(SearchCodeArgs, namespace, repo);

/// `repo_refs`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoRefsArgs {
    /// Namespace whose mapped repository to describe.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
}
scope_args!(RepoRefsArgs, namespace, repo);

/// `repo_history`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoHistoryArgs {
    /// Namespace whose mapped repository to read.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// Commits on this branch, tag or sha.
    #[serde(rename = "ref")]
    pub git_ref: Option<RefArg>,
    /// Comparison base. Requires head.
    pub base: Option<RefArg>,
    /// Comparison head. Requires base.
    pub head: Option<RefArg>,
    /// One commit, in full.
    pub sha: Option<Bounded<{ bounds::SHA }>>,
    /// How many commits (default 20, max 100).
    pub limit: Option<u32>,
    /// Include patch bodies, budgeted. Off by default.
    pub patch: Option<bool>,
}
scope_args!(RepoHistoryArgs, namespace, repo);

/// `ci_status`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CiStatusArgs {
    /// Namespace whose mapped repository to read.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// How many recent runs to return (default 10, max 20).
    pub limit: Option<u32>,
    /// Narrow to one branch or head sha (a hex object name is filtered as a sha).
    #[serde(rename = "ref")]
    pub git_ref: Option<RefArg>,
    /// Return only this run, by its GitHub run id.
    pub run_id: Option<u64>,
}
scope_args!(CiStatusArgs, namespace, repo);

/// How a file change lands.
pub use crate::tools::RepoWriteMode as WriteMode;

/// `write_repo_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// Namespace whose mapped repository to write.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// The file's path.
    pub path: PathArg,
    /// The new content, written verbatim.
    pub content: Bounded<{ bounds::BODY }>,
    /// Commit message.
    pub message: Bounded<{ bounds::COMMIT_MESSAGE }>,
    /// pr (default): a new branch and a pull request; direct: the default branch.
    pub mode: Option<WriteMode>,
    /// The branch to commit to (pr: the work branch; direct: instead of the default).
    pub branch: Option<RefArg>,
    /// Opt in to writing under .github/workflows/ (needs can_write_workflows; audited).
    pub allow_workflow_write: Option<bool>,
}
impl ScopeArgs for WriteFileArgs {
    fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str())
    }
    fn repo(&self) -> Option<&str> {
        self.repo.as_ref().map(|r| r.as_str())
    }
    fn flags(&self) -> Vec<Flag> {
        repo_write_flags(&RepoWriteArgs {
            path: Some(self.path.as_str()),
            mode: self.mode.unwrap_or_default(),
            allow_workflow_write: self.allow_workflow_write == Some(true),
        })
    }
}

/// `delete_repo_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteFileArgs {
    /// Namespace whose mapped repository to change.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// The file's path; it must exist.
    pub path: PathArg,
    /// Commit message.
    pub message: Bounded<{ bounds::COMMIT_MESSAGE }>,
    /// pr (default): a new branch and a pull request; direct: the default branch.
    pub mode: Option<WriteMode>,
    /// The branch to commit to.
    pub branch: Option<RefArg>,
    /// Opt in to deleting under .github/workflows/ (needs can_write_workflows; audited).
    pub allow_workflow_write: Option<bool>,
}
impl ScopeArgs for DeleteFileArgs {
    fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str())
    }
    fn repo(&self) -> Option<&str> {
        self.repo.as_ref().map(|r| r.as_str())
    }
    fn flags(&self) -> Vec<Flag> {
        repo_write_flags(&RepoWriteArgs {
            path: Some(self.path.as_str()),
            mode: self.mode.unwrap_or_default(),
            allow_workflow_write: self.allow_workflow_write == Some(true),
        })
    }
}

/// `create_branch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CreateBranchArgs {
    /// Namespace whose mapped repository to change.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// The new branch.
    pub branch: RefArg,
    /// Branch, tag or sha to start from; the default branch when omitted.
    pub from: Option<RefArg>,
}
scope_args!(CreateBranchArgs, namespace, repo);

/// `open_pr`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenPrArgs {
    /// Namespace whose mapped repository to change.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// Pull request title.
    pub title: Bounded<{ bounds::PR_TITLE }>,
    /// The branch with the changes.
    pub head: RefArg,
    /// The branch to merge into; the default branch when omitted.
    pub base: Option<RefArg>,
    /// Pull request description.
    pub body: Option<Bounded<{ bounds::PR_BODY }>>,
}
scope_args!(OpenPrArgs, namespace, repo);

/// What `manage_pr` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PrAction {
    /// Merge (needs can_merge).
    Merge,
    /// Close without merging.
    Close,
    /// Comment (needs can_comment_pr).
    Comment,
}

impl PrAction {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PrAction::Merge => "merge",
            PrAction::Close => "close",
            PrAction::Comment => "comment",
        }
    }
}

/// How `manage_pr merge` merges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MergeMethod {
    /// A merge commit.
    Merge,
    /// One squashed commit (the default).
    #[default]
    Squash,
    /// Rebased commits.
    Rebase,
}

impl MergeMethod {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        }
    }
}

/// `manage_pr`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ManagePrArgs {
    /// Namespace whose mapped repository to change.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// The pull request number.
    pub number: u64,
    /// merge, close or comment.
    pub action: PrAction,
    /// merge: squash (default), merge or rebase.
    pub merge_method: Option<MergeMethod>,
    /// comment: the comment's text.
    pub body: Option<Bounded<{ bounds::PR_BODY }>>,
}
impl ScopeArgs for ManagePrArgs {
    fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str())
    }
    fn repo(&self) -> Option<&str> {
        self.repo.as_ref().map(|r| r.as_str())
    }
    fn action(&self) -> Option<&str> {
        Some(self.action.as_str())
    }
}

/// `delete_branch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteBranchArgs {
    /// Namespace whose mapped repository to change.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// The branch to delete.
    pub branch: RefArg,
    /// Lift the improve-prefix and open-PR refusals (never the default-branch one).
    pub force: Option<bool>,
}
scope_args!(DeleteBranchArgs, namespace, repo);

/// `ci_dispatch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CiDispatchArgs {
    /// Namespace whose mapped repository to run.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label or owner/name. Default: primary.
    pub repo: RepoSelector,
    /// Workflow file name, e.g. ci.yml. Requires ref.
    pub workflow: Option<PathArg>,
    /// The branch or sha to run the workflow on. Requires workflow.
    #[serde(rename = "ref")]
    pub git_ref: Option<RefArg>,
    /// Rerun this run's failed jobs. Not combinable with workflow.
    pub run_id: Option<u64>,
    /// workflow_dispatch inputs, a flat string map (at most 10).
    pub inputs: Option<BTreeMap<String, RefArg>>,
}
scope_args!(CiDispatchArgs, namespace, repo);
