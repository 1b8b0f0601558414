//! The repository host port (GitHub): the facts the work queue, the review gate and
//! auto-merge read, and the operations behind the thirteen repo tools. Every rule about
//! which call is allowed lives in the service; an adapter only carries the call.

mod types;

use std::collections::BTreeMap;

use async_trait::async_trait;

pub use types::*;

/// `owner/name` of a repository.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoRef {
    /// Owner (user or organisation).
    pub owner: String,
    /// Repository name.
    pub name: String,
}

impl RepoRef {
    /// Parses `owner/name` (exactly one slash, both parts non-empty).
    pub fn parse(text: &str) -> Option<RepoRef> {
        let (owner, name) = text.split_once('/')?;
        (!owner.is_empty() && !name.is_empty() && !name.contains('/')).then(|| RepoRef {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for RepoRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// Why a repository call failed. Never treated as an approval or as verified evidence. Each
/// message names the repository and the operation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RepoHostError {
    /// No GitHub App is configured.
    #[error("GitHub App not configured")]
    NotConfigured,
    /// The object does not exist (or the App cannot see it): GitHub's 404.
    #[error("not found on GitHub: {0}")]
    NotFound(String),
    /// The App's quota is spent (primary or secondary rate limit, after the bounded retries).
    #[error("GitHub rate limit: {0}")]
    RateLimited(String),
    /// GitHub refused the App (401 after one token refresh, or 403).
    #[error("GitHub refused access: {0}")]
    Forbidden(String),
    /// GitHub's 409: the change conflicts with the current state.
    #[error("GitHub conflict: {0}")]
    Conflict(String),
    /// GitHub's 422: the request was understood and refused (the message is GitHub's).
    #[error("GitHub rejected the request: {0}")]
    Rejected(String),
    /// GitHub failed (5xx) or could not be reached.
    #[error("GitHub error: {0}")]
    Failed(String),
}

impl RepoHostError {
    /// Whether the App's quota or access is gone, so that every later call would fail the
    /// same way (a scan stops rather than skipping files).
    pub fn is_quota_or_access(&self) -> bool {
        matches!(
            self,
            RepoHostError::RateLimited(_) | RepoHostError::Forbidden(_)
        )
    }
}

/// Shorthand for repository host results.
pub type RepoResult<T> = Result<T, RepoHostError>;

/// Access to repositories, through the GitHub App.
#[async_trait]
pub trait RepoHost: Send + Sync {
    // --- the facts the work queue and auto-merge read ---

    /// One pull request.
    async fn pull_request(&self, repo: &RepoRef, number: u64) -> RepoResult<PullRequestFacts>;
    /// The paths a pull request changes (first 100).
    async fn pull_request_files(&self, repo: &RepoRef, number: u64) -> RepoResult<Vec<String>>;
    /// Check runs on a commit (first 100).
    async fn check_runs(&self, repo: &RepoRef, sha: &str) -> RepoResult<Vec<CheckRun>>;
    /// Workflow runs on a commit (newest 20).
    async fn workflow_runs(&self, repo: &RepoRef, sha: &str) -> RepoResult<Vec<WorkflowRun>>;
    /// Issue comments on a pull request (first 100).
    async fn issue_comments(&self, repo: &RepoRef, number: u64) -> RepoResult<Vec<IssueComment>>;
    /// Open issues of `repo` carrying `label` (first 100, oldest first); pull requests, which
    /// GitHub's issue listing also returns, are left out.
    async fn open_issues(&self, repo: &RepoRef, label: &str) -> RepoResult<Vec<IssueFacts>>;
    /// One issue, open or closed, with its labels ([`RepoHostError::NotFound`] when GitHub no
    /// longer shows it).
    async fn issue(&self, repo: &RepoRef, number: u64) -> RepoResult<IssueFacts>;
    /// A file's text on a ref (the default branch when `None`).
    async fn file_text(
        &self,
        repo: &RepoRef,
        path: &str,
        git_ref: Option<&str>,
    ) -> RepoResult<String>;

    // --- reads behind the repo tools ---

    /// The repository's facts (default branch).
    async fn repository(&self, repo: &RepoRef) -> RepoResult<RepoFacts>;
    /// What `path` names on `git_ref` (the default branch when `None`; the root when empty).
    async fn contents(
        &self,
        repo: &RepoRef,
        path: &str,
        git_ref: Option<&str>,
    ) -> RepoResult<Contents>;
    /// The whole tree of `git_ref`, recursively.
    async fn tree(&self, repo: &RepoRef, git_ref: &str) -> RepoResult<GitTree>;
    /// One blob's bytes.
    async fn blob(&self, repo: &RepoRef, sha: &str) -> RepoResult<Vec<u8>>;
    /// Branches (first 100).
    async fn branches(&self, repo: &RepoRef) -> RepoResult<Vec<RefHead>>;
    /// Tags (first 100).
    async fn tags(&self, repo: &RepoRef) -> RepoResult<Vec<RefHead>>;
    /// Open pull requests (first 100), only those whose head is `head` (a branch of this
    /// repository) when given.
    async fn open_pull_requests(
        &self,
        repo: &RepoRef,
        head: Option<&str>,
    ) -> RepoResult<Vec<PullSummary>>;
    /// Commits reachable from `git_ref`, newest first, at most `limit`.
    async fn commits(
        &self,
        repo: &RepoRef,
        git_ref: &str,
        limit: u32,
    ) -> RepoResult<Vec<CommitSummary>>;
    /// One commit (a sha, or any ref resolving to one) with its files.
    async fn commit(&self, repo: &RepoRef, sha: &str) -> RepoResult<CommitDetail>;
    /// `base...head`.
    async fn compare(&self, repo: &RepoRef, base: &str, head: &str) -> RepoResult<Comparison>;
    /// Recent workflow runs, newest first.
    async fn recent_workflow_runs(
        &self,
        repo: &RepoRef,
        query: &RunQuery,
    ) -> RepoResult<Vec<WorkflowRun>>;
    /// One workflow run.
    async fn workflow_run(&self, repo: &RepoRef, run_id: u64) -> RepoResult<WorkflowRun>;
    /// The jobs of a run.
    async fn run_jobs(&self, repo: &RepoRef, run_id: u64) -> RepoResult<Vec<RunJob>>;
    /// A job's whole log.
    async fn job_log(&self, repo: &RepoRef, job_id: u64) -> RepoResult<String>;

    // --- mutations behind the repo tools ---

    /// Creates branch `branch` at `sha` (an existing branch is [`RepoHostError::Rejected`]).
    async fn create_branch(&self, repo: &RepoRef, branch: &str, sha: &str) -> RepoResult<()>;
    /// Deletes branch `branch` (a missing one is [`RepoHostError::NotFound`] or `Rejected`).
    async fn delete_branch(&self, repo: &RepoRef, branch: &str) -> RepoResult<()>;
    /// Creates or replaces a file on a branch.
    async fn put_file(&self, repo: &RepoRef, write: &FileWrite<'_>) -> RepoResult<FileCommit>;
    /// Deletes a file (whose current blob is `sha`) on a branch; returns the commit.
    async fn delete_file(
        &self,
        repo: &RepoRef,
        path: &str,
        message: &str,
        sha: &str,
        branch: &str,
    ) -> RepoResult<String>;
    /// Opens a pull request.
    async fn create_pull(
        &self,
        repo: &RepoRef,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
    ) -> RepoResult<OpenedPull>;
    /// Merges a pull request with `method` (`merge`, `squash` or `rebase`); with `head`, only
    /// if the PR's head is still that commit (GitHub's `sha`: 409 otherwise), so what merges
    /// is what was evaluated.
    async fn merge_pull(
        &self,
        repo: &RepoRef,
        number: u64,
        method: &str,
        head: Option<&str>,
    ) -> RepoResult<MergeOutcome>;
    /// Closes a pull request.
    async fn close_pull(&self, repo: &RepoRef, number: u64) -> RepoResult<ClosedPull>;
    /// Posts a conversation comment on a pull request.
    async fn comment_pull(
        &self,
        repo: &RepoRef,
        number: u64,
        body: &str,
    ) -> RepoResult<PostedComment>;
    /// Posts a comment on an issue.
    async fn comment_issue(
        &self,
        repo: &RepoRef,
        number: u64,
        body: &str,
    ) -> RepoResult<PostedComment>;
    /// Starts `workflow` (a file name) on `git_ref` with `inputs` (GitHub answers 204 and
    /// names nothing it started).
    async fn dispatch_workflow(
        &self,
        repo: &RepoRef,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> RepoResult<()>;
    /// Re-runs a run's failed jobs.
    async fn rerun_failed_jobs(&self, repo: &RepoRef, run_id: u64) -> RepoResult<()>;
    /// Waits one dispatch-poll interval (the adapter owns the timer; the service owns how
    /// many polls it makes).
    async fn poll_pause(&self);
}
