//! The repository host port (GitHub): the facts the work queue, the review gate and
//! auto-merge read. The repo tools' operations join it with the GitHub adapter.

use async_trait::async_trait;

/// `owner/name` of a repository.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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

/// Why a repository read failed. Never treated as an approval or as verified evidence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RepoHostError {
    /// No GitHub App is configured.
    #[error("GitHub App not configured")]
    NotConfigured,
    /// The object does not exist (or the App cannot see it).
    #[error("not found on GitHub: {0}")]
    NotFound(String),
    /// GitHub refused or failed; the message names the repository and operation.
    #[error("GitHub error: {0}")]
    Failed(String),
}

/// Facts about one pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequestFacts {
    /// Number.
    pub number: u64,
    /// Whether it was merged.
    pub merged: bool,
    /// Whether it is open.
    pub open: bool,
    /// Commit count.
    pub commits: u64,
    /// Changed file count.
    pub changed_files: u64,
    /// Head branch name.
    pub head_ref: String,
    /// Head commit.
    pub head_sha: String,
    /// Whether the head is in another repository (a fork).
    pub head_is_fork: bool,
    /// Base branch name.
    pub base_ref: String,
    /// Description.
    pub body: String,
}

/// A check run on a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckRun {
    /// `queued`, `in_progress`, `completed`, ...
    pub status: String,
    /// `success`, `failure`, `skipped`, `neutral`, ... once completed.
    pub conclusion: Option<String>,
}

/// A workflow run on a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkflowRun {
    /// Run id.
    pub id: u64,
    /// Workflow name.
    pub name: String,
    /// `queued`, `in_progress`, `completed`, ...
    pub status: String,
    /// Conclusion once completed.
    pub conclusion: Option<String>,
}

/// An issue (conversation) comment on a pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssueComment {
    /// Author login.
    pub login: String,
    /// Text.
    pub body: String,
    /// Creation time as GitHub reports it.
    pub created_at: String,
}

/// Read access to repositories, through the GitHub App.
#[async_trait]
pub trait RepoHost: Send + Sync {
    /// One pull request.
    async fn pull_request(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<PullRequestFacts, RepoHostError>;
    /// The paths a pull request changes (first 100).
    async fn pull_request_files(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<Vec<String>, RepoHostError>;
    /// Check runs on a commit (first 100).
    async fn check_runs(&self, repo: &RepoRef, sha: &str) -> Result<Vec<CheckRun>, RepoHostError>;
    /// Workflow runs on a commit (newest 20).
    async fn workflow_runs(
        &self,
        repo: &RepoRef,
        sha: &str,
    ) -> Result<Vec<WorkflowRun>, RepoHostError>;
    /// Issue comments on a pull request (first 100).
    async fn issue_comments(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<Vec<IssueComment>, RepoHostError>;
    /// A file's text on a ref (the default branch when `None`).
    async fn file_text(
        &self,
        repo: &RepoRef,
        path: &str,
        git_ref: Option<&str>,
    ) -> Result<String, RepoHostError>;
}
