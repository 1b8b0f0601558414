//! The thirteen repo tools' arguments and their checks at the one enforcement point: the
//! namespace's repository mapping is the authorization boundary, and the flags a mutation
//! needs come from the core's `repo_write_flags`. The GitHub calls go through the
//! [`crate::ports::RepoHost`] port; without a GitHub App every repo tool says so.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Bounded, NamespaceArg};
use super::{Confirmer, Service};
use crate::caller::Caller;
use crate::docs::bounds;
use crate::error::{Error, Result};
use crate::paths::repo_path_problem;
use crate::ports::RepoRef;
use crate::repos::{resolve_repo, stored_repos};
use crate::scope::Need;
use crate::tools::{RepoWriteArgs, repo_write_flags};

/// Arguments every repo tool accepts; the tool-specific ones are optional here and checked by
/// the tool (the Worker's schemas name the same fields).
// The operation-specific fields are the wire schema clients see; the operations that read
// them arrive with the GitHub adapter.
#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoArgs {
    /// Namespace whose mapped repository to use.
    pub namespace: NamespaceArg,
    /// A mapped repository: its label (primary, legacy, ...) or owner/name. Default: primary.
    pub repo: Option<Bounded<{ bounds::REPO_SELECTOR }>>,
    /// A path in the repository.
    pub path: Option<Bounded<{ bounds::PATH }>>,
    /// Several paths (read_repo_file).
    pub paths: Option<Vec<Bounded<{ bounds::PATH }>>>,
    /// A branch, tag or sha.
    #[serde(rename = "ref")]
    pub git_ref: Option<Bounded<{ bounds::GIT_REF }>>,
    /// search_code: the text to find.
    pub query: Option<Bounded<{ bounds::QUERY }>>,
    /// write_repo_file: the file content.
    pub content: Option<Bounded<{ bounds::BODY }>>,
    /// A commit message.
    pub message: Option<Bounded<{ bounds::COMMIT_MESSAGE }>>,
    /// pr (default) or direct.
    pub mode: Option<Bounded<8>>,
    /// A branch name.
    pub branch: Option<Bounded<{ bounds::GIT_REF }>>,
    /// Opt into writing under .github/workflows/ (needs can_write_workflows).
    pub allow_workflow_write: Option<bool>,
    /// manage_pr: merge, close or comment.
    pub action: Option<Bounded<16>>,
    /// A pull request number.
    pub number: Option<u64>,
    /// A workflow run id.
    pub run_id: Option<u64>,
    /// open_pr: the title.
    pub title: Option<Bounded<{ bounds::PR_TITLE }>>,
    /// open_pr, manage_pr comment: the text.
    pub body: Option<Bounded<{ bounds::PR_BODY }>>,
    /// open_pr: the head branch.
    pub head: Option<Bounded<{ bounds::GIT_REF }>>,
    /// open_pr / repo_history: the base.
    pub base: Option<Bounded<{ bounds::GIT_REF }>>,
    /// repo_history: one commit.
    pub sha: Option<Bounded<{ bounds::SHA }>>,
    /// Result bounds.
    pub limit: Option<u32>,
    /// search_code: a path prefix.
    pub path_prefix: Option<Bounded<{ bounds::PATH }>>,
    /// search_code: offset.
    pub start: Option<u32>,
    /// search_code: most results.
    pub max_results: Option<u32>,
    /// search_code: most files scanned.
    pub max_files: Option<u32>,
    /// repo_history: include patches.
    pub patch: Option<bool>,
    /// manage_pr merge: squash (default), merge or rebase.
    pub merge_method: Option<Bounded<8>>,
    /// delete_branch: also delete improve/ branches and branches with an open PR.
    pub force: Option<bool>,
    /// create_branch: the ref to branch from.
    pub from: Option<Bounded<{ bounds::GIT_REF }>>,
    /// ci_dispatch: the workflow file.
    pub workflow: Option<Bounded<{ bounds::PATH }>>,
    /// ci_dispatch: workflow inputs (flat string map, at most 10).
    pub inputs: Option<Value>,
}

impl super::args::ScopeArgs for RepoArgs {
    fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str())
    }
    fn repo(&self) -> Option<&str> {
        self.repo.as_ref().map(|r| r.as_str())
    }
}

impl Service {
    /// Resolves the namespace's mapped repository for a repo tool and checks the flags its
    /// arguments need. Returns the repository.
    pub(super) async fn repo_preamble(
        &self,
        caller: &Caller,
        tool: &str,
        a: &RepoArgs,
    ) -> Result<RepoRef> {
        for p in a.path.iter().chain(a.paths.iter().flatten()) {
            if let Some(problem) = repo_path_problem(p.as_str()) {
                return Err(Error::Invalid(format!(
                    "{tool}: path {:?}: {problem}",
                    p.as_str()
                )));
            }
        }
        let flags = repo_write_flags(
            tool,
            &RepoWriteArgs {
                path: a.path.as_ref().map(|p| p.as_str()),
                mode: a.mode.as_ref().map(|m| m.as_str()),
                action: a.action.as_ref().map(|m| m.as_str()),
                allow_workflow_write: a.allow_workflow_write == Some(true),
            },
        );
        if !flags.is_empty() {
            let ns = a.namespace.as_str();
            self.check(
                caller,
                &Need {
                    tool,
                    namespace: Some(ns),
                    repo: a.repo.as_ref().map(|r| r.as_str()),
                    flags,
                    ..Need::default()
                },
            )?;
        }
        let ns = a.namespace.as_str();
        let row = self
            .store
            .namespace(ns)
            .await?
            .ok_or_else(|| Error::NotFound(crate::docs::mutations::unknown_namespace(ns)))?;
        let list = stored_repos(ns, row.repos.as_deref()).map_err(Error::Internal)?;
        resolve_repo(ns, &list, a.repo.as_ref().map(|r| r.as_str())).map_err(Error::Forbidden)
    }

    pub(super) async fn repo_tool(
        &self,
        caller: &Caller,
        tool: &str,
        a: RepoArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        let repo = self.repo_preamble(caller, tool, &a).await?;
        match &self.repo_host {
            None => Err(Error::Unavailable(format!(
                "GitHub App not configured: {tool} on {repo} needs CAPSID_GITHUB_APP_CLIENT_ID and CAPSID_GITHUB_APP_PRIVATE_KEY"
            ))),
            Some(_) => Err(Error::Unavailable(format!(
                "{tool} on {repo}: repository operations are not available in this build (only the work queue's GitHub reads are)"
            ))),
        }
    }
}
