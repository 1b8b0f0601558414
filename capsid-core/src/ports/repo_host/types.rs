//! The plain values the repository host port exchanges: what GitHub answered, reduced to the
//! fields Capsid reads. No rule lives here; the service decides what to do with them.

/// Facts about one pull request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    /// `owner/name` of the head's repository, when GitHub still knows it.
    pub head_repo: Option<String>,
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

/// A workflow run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkflowRun {
    /// Run id.
    pub id: u64,
    /// Workflow name.
    pub name: String,
    /// `queued`, `in_progress`, `completed`, ...
    pub status: String,
    /// Conclusion once completed.
    pub conclusion: Option<String>,
    /// The commit it ran on.
    pub head_sha: String,
    /// The branch it ran on, if any.
    pub head_branch: Option<String>,
    /// What started it (`push`, `workflow_dispatch`, ...).
    pub event: String,
    /// When it was created, as GitHub reports it.
    pub created_at: String,
    /// Its page on GitHub.
    pub url: String,
    /// The workflow file, e.g. `.github/workflows/ci.yml`.
    pub path: String,
}

/// Which workflow runs to list, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs on this branch.
    pub branch: Option<String>,
    /// Only runs on this (full) commit sha.
    pub head_sha: Option<String>,
    /// How many (GitHub's page size, at most 100).
    pub per_page: u32,
}

/// A job of a workflow run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunJob {
    /// Job id.
    pub id: u64,
    /// Job name.
    pub name: String,
    /// Conclusion once completed.
    pub conclusion: Option<String>,
    /// Its steps, in order.
    pub steps: Vec<RunStep>,
}

/// A step of a job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStep {
    /// Step name.
    pub name: String,
    /// Conclusion once completed.
    pub conclusion: Option<String>,
    /// When it started, as GitHub reports it.
    pub started_at: Option<String>,
    /// When it finished, as GitHub reports it.
    pub completed_at: Option<String>,
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

/// Facts about a repository.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoFacts {
    /// `owner/name` as GitHub spells it.
    pub full_name: String,
    /// The default branch.
    pub default_branch: String,
    /// Whether it is private.
    pub private: bool,
}

/// One entry of a directory listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeEntry {
    /// Path from the repository root.
    pub path: String,
    /// `file`, `dir`, `symlink` or `submodule`.
    pub kind: String,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Object sha.
    pub sha: String,
}

/// A file's bytes on a ref.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileBlob {
    /// Path from the repository root.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Blob sha.
    pub sha: String,
    /// The content, decoded from GitHub's transport encoding.
    pub bytes: Vec<u8>,
}

/// What a path names on a ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Contents {
    /// A file.
    File(FileBlob),
    /// A directory's entries.
    Dir(Vec<TreeEntry>),
    /// Something else (a symlink or submodule), with its type.
    Other {
        /// GitHub's type name.
        kind: String,
    },
}

/// One item of a recursive git tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitTreeItem {
    /// Path from the repository root.
    pub path: String,
    /// `blob`, `tree` or `commit`.
    pub kind: String,
    /// Object sha.
    pub sha: String,
    /// Size of a blob.
    pub size: Option<u64>,
}

/// A recursive git tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitTree {
    /// Every item.
    pub items: Vec<GitTreeItem>,
    /// Whether GitHub cut the listing short.
    pub truncated: bool,
}

/// A branch or tag and the commit it points at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefHead {
    /// Branch or tag name.
    pub name: String,
    /// Commit sha.
    pub sha: String,
}

/// An open pull request as a listing shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullSummary {
    /// Number.
    pub number: u64,
    /// Title.
    pub title: String,
    /// Head branch name.
    pub head_ref: String,
    /// Base branch name.
    pub base_ref: String,
    /// Last update, as GitHub reports it.
    pub updated_at: String,
    /// Its page on GitHub.
    pub url: String,
}

/// A commit in a list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitSummary {
    /// Sha.
    pub sha: String,
    /// Author name.
    pub author: String,
    /// Author date, as GitHub reports it.
    pub date: String,
    /// Committer date, as GitHub reports it.
    pub committed_date: String,
    /// The whole message.
    pub message: String,
}

/// A file a commit or comparison changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChange {
    /// Path.
    pub path: String,
    /// `added`, `modified`, `removed`, `renamed`, ...
    pub status: String,
    /// Lines added.
    pub additions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// The patch, when GitHub sent one.
    pub patch: Option<String>,
}

/// One commit in full.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitDetail {
    /// The commit.
    pub commit: CommitSummary,
    /// Parent shas.
    pub parents: Vec<String>,
    /// Changed files.
    pub files: Vec<FileChange>,
}

/// `base...head`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// `ahead`, `behind`, `diverged` or `identical`.
    pub status: String,
    /// Commits on head not on base.
    pub ahead_by: u64,
    /// Commits on base not on head.
    pub behind_by: u64,
    /// Commits in the comparison.
    pub total_commits: u64,
    /// The commits, oldest first.
    pub commits: Vec<CommitSummary>,
    /// Changed files.
    pub files: Vec<FileChange>,
}

/// A file to create or replace on a branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileWrite<'a> {
    /// Path.
    pub path: &'a str,
    /// The new content, verbatim.
    pub content: &'a str,
    /// Commit message.
    pub message: &'a str,
    /// Branch to commit to.
    pub branch: &'a str,
    /// The current blob sha when the file exists (GitHub needs it to replace).
    pub sha: Option<&'a str>,
}

/// What a file commit made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileCommit {
    /// The new commit.
    pub commit_sha: String,
    /// The new blob (absent for a deletion).
    pub file_sha: Option<String>,
}

/// A pull request just opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenedPull {
    /// Number.
    pub number: u64,
    /// Its page on GitHub.
    pub url: String,
}

/// A merge's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Whether GitHub merged it.
    pub merged: bool,
    /// The merge commit.
    pub sha: String,
    /// GitHub's message.
    pub message: String,
}

/// A pull request just closed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClosedPull {
    /// Number.
    pub number: u64,
    /// `closed`.
    pub state: String,
    /// Its page on GitHub.
    pub url: String,
}

/// A comment just posted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostedComment {
    /// Comment id.
    pub id: u64,
    /// Its page on GitHub.
    pub url: String,
}

/// An issue as the tracker shows it (pull requests are not issues here).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IssueFacts {
    /// Number (per repository).
    pub number: u64,
    /// GitHub's id of the issue (stable across renames and transfers).
    pub id: u64,
    /// Title.
    pub title: String,
    /// Description (empty when none).
    pub body: String,
    /// The login of whoever opened it.
    pub author: String,
    /// How GitHub relates that author to the repository (`author_association`: `OWNER`,
    /// `MEMBER`, `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIME_CONTRIBUTOR`, `FIRST_TIMER`,
    /// `NONE`); empty when GitHub did not say.
    pub association: String,
    /// Whether it is open.
    pub open: bool,
    /// Its labels' names.
    pub labels: Vec<String>,
    /// Its page on GitHub.
    pub url: String,
}
