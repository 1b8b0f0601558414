//! The thirteen repo tools as the registry serves them (reference 2.3): each tool's spec,
//! arguments and handler. A file change's flags come from its arguments
//! ([`crate::tools::repo_write_flags`]); `manage_pr`'s and `ci_dispatch`'s from their rules.

use crate::caller::Caller;
use crate::scope::Flag;
use crate::service::Areas;
use crate::service::Confirmer;
use crate::service::registry::{Tool, ToolFuture};
use crate::service::repo::answer::*;
use crate::service::repo::args::*;
use crate::tools::{Requirement, Requirement::Fixed, Rule, ToolGroup::Repo, ToolSpec, action};

/// `list_repo_tree`.
#[derive(Debug)]
pub struct ListRepoTree;
impl Tool for ListRepoTree {
    type Args = ListTreeArgs;
    type Answer = TreeAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "list_repo_tree",
        Repo,
        Fixed(Rule::read()),
        "List a directory of a mapped repository.",
    )
    .titled("List a repository's files");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: ListTreeArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().list_repo_tree(c, a, k).await })
    }
}

/// `read_repo_file`.
#[derive(Debug)]
pub struct ReadRepoFile;
impl Tool for ReadRepoFile {
    type Args = ReadFileArgs;
    type Answer = ReadFileAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "read_repo_file",
        Repo,
        Fixed(Rule::read()),
        "Read one file (path) or several (paths) from a mapped repository.",
    )
    .titled("Read a repository file");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: ReadFileArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().read_repo_file(c, a, k).await })
    }
}

/// `search_code`.
#[derive(Debug)]
pub struct SearchCode;
impl Tool for SearchCode {
    type Args = SearchCodeArgs;
    type Answer = SearchAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "search_code",
        Repo,
        Fixed(Rule::read()),
        "Case-insensitive substring search over a mapped repository's files, paged with start.",
    )
    .titled("Search a repository's code");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: SearchCodeArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().search_code(c, a, k).await })
    }
}

/// `repo_refs`.
#[derive(Debug)]
pub struct RepoRefs;
impl Tool for RepoRefs {
    type Args = RepoRefsArgs;
    type Answer = RefsAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "repo_refs",
        Repo,
        Fixed(Rule::read()),
        "Branches (with ahead/behind and open PR), tags and open pull requests of a mapped repository.",
    )
    .titled("Repository branches and tags");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: RepoRefsArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().repo_refs(c, a, k).await })
    }
}

/// `repo_history`.
#[derive(Debug)]
pub struct RepoHistory;
impl Tool for RepoHistory {
    type Args = RepoHistoryArgs;
    type Answer = HistoryAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "repo_history",
        Repo,
        Fixed(Rule::read()),
        "Commits on a ref, a base...head comparison, or one commit; patches only when asked.",
    )
    .titled("Repository commit history");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: RepoHistoryArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().repo_history(c, a, k).await })
    }
}

/// `ci_status`.
#[derive(Debug)]
pub struct CiStatus;
impl Tool for CiStatus {
    type Args = CiStatusArgs;
    type Answer = CiStatusAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "ci_status",
        Repo,
        Fixed(Rule::read()),
        "Recent workflow runs, and for the latest failure its failing jobs and steps (log tail for write-grant callers).",
    )
    .titled("CI status");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: CiStatusArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().ci_status(c, a, k).await })
    }
}

/// `write_repo_file`.
#[derive(Debug)]
pub struct WriteRepoFile;
impl Tool for WriteRepoFile {
    type Args = WriteFileArgs;
    type Answer = FileChanged;
    const SPEC: ToolSpec = ToolSpec::new(
        "write_repo_file",
        Repo,
        Fixed(Rule::write()),
        "Write a file to a mapped repository: through a new branch and pull request (default) or directly (needs can_direct_write).",
    )
    .destructive()
    .titled("Write a repository file");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: WriteFileArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().write_repo_file(c, a, k).await })
    }
}

/// `create_branch`.
#[derive(Debug)]
pub struct CreateBranch;
impl Tool for CreateBranch {
    type Args = CreateBranchArgs;
    type Answer = BranchCreated;
    const SPEC: ToolSpec = ToolSpec::new(
        "create_branch",
        Repo,
        Fixed(Rule::write()),
        "Create a branch off the default branch or another ref.",
    )
    .idempotent()
    .titled("Create a branch");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: CreateBranchArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().create_branch(c, a, k).await })
    }
}

/// `open_pr`.
#[derive(Debug)]
pub struct OpenPr;
impl Tool for OpenPr {
    type Args = OpenPrArgs;
    type Answer = PrOpened;
    const SPEC: ToolSpec = ToolSpec::new(
        "open_pr",
        Repo,
        Fixed(Rule::write()),
        "Open a pull request.",
    )
    .titled("Open a pull request");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: OpenPrArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().open_pr(c, a, k).await })
    }
}

/// `delete_repo_file`.
#[derive(Debug)]
pub struct DeleteRepoFile;
impl Tool for DeleteRepoFile {
    type Args = DeleteFileArgs;
    type Answer = FileChanged;
    const SPEC: ToolSpec = ToolSpec::new(
        "delete_repo_file",
        Repo,
        Fixed(Rule::write()),
        "Delete a file from a mapped repository (through a pull request by default).",
    )
    .idempotent()
    .destructive()
    .titled("Delete a repository file");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: DeleteFileArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().delete_repo_file(c, a, k).await })
    }
}

/// `manage_pr`.
#[derive(Debug)]
pub struct ManagePr;
impl Tool for ManagePr {
    type Args = ManagePrArgs;
    type Answer = ManagePrAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "manage_pr",
        Repo,
        Requirement::PerAction {
            default: "close",
            actions: &[
                action("merge", Rule::write().with_flags(&[Flag::CanMerge])),
                action("close", Rule::write()),
                action("comment", Rule::write().with_flags(&[Flag::CanCommentPr])),
            ],
        },
        "Merge (needs can_merge), close or comment on (needs can_comment_pr) a pull request.",
    )
    .destructive()
    .titled("Review, comment on or merge a pull request");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: ManagePrArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().manage_pr(c, a, k).await })
    }
}

/// `delete_branch`.
#[derive(Debug)]
pub struct DeleteBranch;
impl Tool for DeleteBranch {
    type Args = DeleteBranchArgs;
    type Answer = BranchDeleted;
    const SPEC: ToolSpec = ToolSpec::new(
        "delete_branch",
        Repo,
        Fixed(Rule::write()),
        "Delete a branch (never the default branch; improve/ branches and branches with open PRs need force).",
    )
    .idempotent()
    .destructive()
    .titled("Delete a branch");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: DeleteBranchArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().delete_branch(c, a, k).await })
    }
}

/// `ci_dispatch`.
#[derive(Debug)]
pub struct CiDispatch;
impl Tool for CiDispatch {
    type Args = CiDispatchArgs;
    type Answer = CiDispatchAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "ci_dispatch",
        Repo,
        Fixed(Rule::write().with_flags(&[Flag::CanDispatch])),
        "Dispatch a workflow on a ref, or re-run a run's failed jobs (needs can_dispatch).",
    )
    .titled("Dispatch a CI workflow");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: CiDispatchArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.repo().ci_dispatch(c, a, k).await })
    }
}
