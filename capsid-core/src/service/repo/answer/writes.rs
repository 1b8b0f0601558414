//! The write tools' answers: `write_repo_file`, `delete_repo_file`, `create_branch`,
//! `open_pr`, `delete_branch` and `manage_pr`.

use schemars::JsonSchema;
use serde::Serialize;

use super::Audited;

// ---- write_repo_file, delete_repo_file ------------------------------------------------

/// `write_repo_file` and `delete_repo_file`: the commit, and the pull request in pr mode.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FileChanged {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `pr` or `direct`.
    pub mode: &'static str,
    /// The branch committed to.
    pub branch: String,
    /// The file changed.
    pub path: String,
    /// The commit.
    #[serde(rename = "commitSha")]
    pub commit_sha: String,
    /// `write_repo_file` in direct mode: the file's new blob sha (`null` if GitHub named
    /// none).
    #[serde(rename = "fileSha", skip_serializing_if = "Option::is_none")]
    pub file_sha: Option<Option<String>>,
    /// pr mode: the pull request opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<PullOpened>,
    /// Present (true) when a workflow file was written with the opt-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_workflow_write: Option<bool>,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// A pull request opened.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PullOpened {
    /// Its number.
    pub number: u64,
    /// Its page on GitHub.
    pub url: String,
}

// ---- create_branch, open_pr, delete_branch --------------------------------------------

/// `create_branch`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BranchCreated {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The branch created.
    pub branch: String,
    /// The ref it was cut from.
    pub from: String,
    /// The commit it starts at.
    pub sha: String,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// `open_pr`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PrOpened {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The pull request's number.
    pub number: u64,
    /// Its page on GitHub.
    pub url: String,
    /// Its head branch.
    pub head: String,
    /// Its base branch.
    pub base: String,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// `delete_branch`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BranchDeleted {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The branch deleted.
    pub branch: String,
    /// Always true.
    pub deleted: bool,
    /// Whether `force` lifted the improve-prefix and open-PR refusals.
    pub forced: bool,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

// ---- manage_pr ------------------------------------------------------------------------

/// `manage_pr`: merged, closed or commented on.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ManagePrAnswer {
    /// `merge`.
    Merged(PrMerged),
    /// `close`.
    Closed(PrClosed),
    /// `comment`.
    Commented(PrCommented),
}

impl Audited for ManagePrAnswer {
    fn warn(&mut self, warning: String) {
        match self {
            ManagePrAnswer::Merged(a) => a.warn(warning),
            ManagePrAnswer::Closed(a) => a.warn(warning),
            ManagePrAnswer::Commented(a) => a.warn(warning),
        }
    }
}

/// A pull request merged.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PrMerged {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The pull request.
    pub number: u64,
    /// `merge`.
    pub action: &'static str,
    /// `merge`, `squash` or `rebase`.
    pub merge_method: &'static str,
    /// Whether GitHub merged it.
    pub merged: bool,
    /// The merge commit.
    pub sha: String,
    /// GitHub's message.
    pub message: String,
    /// What happened to the head branch.
    #[serde(flatten)]
    pub head: HeadCleanup,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// A pull request closed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PrClosed {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The pull request.
    pub number: u64,
    /// `close`.
    pub action: &'static str,
    /// Its state now.
    pub state: String,
    /// Its page on GitHub.
    pub url: String,
    /// What happened to the head branch.
    #[serde(flatten)]
    pub head: HeadCleanup,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// The head branch after a merge or close: deleted, or left alone and why.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct HeadCleanup {
    /// The head branch (`null`: the pull request could not be read).
    pub head_branch: Option<String>,
    /// Whether it was deleted.
    pub head_branch_deleted: bool,
    /// Why it was not deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_branch_note: Option<String>,
}

/// A comment posted on a pull request.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PrCommented {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The pull request.
    pub number: u64,
    /// `comment`.
    pub action: &'static str,
    /// The comment's id.
    pub comment_id: u64,
    /// The comment's page on GitHub.
    pub url: String,
    /// The review verdict it carries, when a minted agent posted one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewShown>,
    /// Present when the verdict could not be recorded, so it does not count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_warning: Option<String>,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// A review verdict, pinned to the head it reviewed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ReviewShown {
    /// `APPROVE`, `CHANGES` or `BLOCK`.
    pub verdict: &'static str,
    /// The head commit reviewed.
    pub head_sha: String,
    /// The reviewing agent.
    pub reviewer: String,
}
