//! The read tools' answers: `list_repo_tree`, `read_repo_file`, `repo_refs`,
//! `repo_history` and `search_code`.

use schemars::JsonSchema;
use serde::Serialize;

// ---- list_repo_tree -------------------------------------------------------------------

/// `list_repo_tree`: one directory (or the one file or other item the path names).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TreeAnswer {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The directory listed (`/` for the root).
    pub path: String,
    /// Its entries.
    pub entries: Vec<TreeItem>,
}

/// One entry of a listing.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TreeItem {
    /// Its path from the repository root.
    pub path: String,
    /// `file`, `dir`, or GitHub's type name for anything else (`symlink`, `submodule`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its size in bytes (absent for an item that is neither file nor directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Its blob or tree sha (absent for an item that is neither file nor directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
}

// ---- read_repo_file -------------------------------------------------------------------

/// `read_repo_file`: one file (`path`) or a batch (`paths`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ReadFileAnswer {
    /// `path`: the file.
    One(FileRead),
    /// `paths`: each file answering for itself.
    Batch(FileBatch),
}

/// One file, decoded to text.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FileRead {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The file's path.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its blob sha.
    pub sha: String,
    /// Whether `content` was cut at the single-file budget.
    pub truncated: bool,
    /// Its text (invalid UTF-8 replaced).
    pub content: String,
    /// How much was cut and how to find the rest, when `truncated`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A batch read.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FileBatch {
    /// The repository, `owner/name`.
    pub repo: String,
    /// Paths asked for.
    pub requested: usize,
    /// Files read.
    pub ok: usize,
    /// Paths that failed.
    pub failed: usize,
    /// Bytes of content returned.
    pub bytes: usize,
    /// One per path, in the order asked.
    pub files: Vec<BatchFile>,
}

/// One path of a batch.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum BatchFile {
    /// Read.
    Read(BatchFileRead),
    /// Failed, and why.
    Failed(BatchFileFailed),
}

/// A file of a batch, read.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BatchFileRead {
    /// The path asked for.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its blob sha.
    pub sha: String,
    /// Whether `content` was cut at the per-file budget.
    pub truncated: bool,
    /// Its text.
    pub content: String,
}

/// A path of a batch that could not be read.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BatchFileFailed {
    /// The path asked for.
    pub path: String,
    /// Why it could not be read.
    pub error: String,
}

// ---- repo_refs ------------------------------------------------------------------------

/// `repo_refs`: branches, tags and open pull requests.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RefsAnswer {
    /// The repository, `owner/name`.
    pub repo: String,
    /// Its default branch.
    pub default_branch: String,
    /// Whether a list filled GitHub's page (100), so more may exist.
    pub truncated: bool,
    /// The branches.
    pub branches: Vec<BranchRow>,
    /// The tags.
    pub tags: Vec<TagRow>,
    /// The open pull requests.
    pub pull_requests: Vec<OpenPullRow>,
}

/// A branch, compared with the default branch.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BranchRow {
    /// Its name.
    pub name: String,
    /// Its head commit.
    pub sha: String,
    /// When its newest commit ahead of the default branch was committed (`null`: none, or
    /// not compared).
    pub committed_date: Option<String>,
    /// Commits ahead of the default branch (`null`: the comparison failed).
    pub ahead_by: Option<u64>,
    /// Commits behind the default branch (`null`: the comparison failed).
    pub behind_by: Option<u64>,
    /// The open pull request from it, if any.
    pub open_pr: Option<u64>,
    /// Whether it is the default branch.
    pub is_default: bool,
}

/// A tag.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TagRow {
    /// Its name.
    pub name: String,
    /// The commit it names.
    pub sha: String,
}

/// An open pull request.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct OpenPullRow {
    /// Its number.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its head branch.
    pub head: String,
    /// Its base branch.
    pub base: String,
    /// When it last changed.
    pub updated_at: String,
    /// Its page on GitHub.
    pub url: String,
}

// ---- repo_history ---------------------------------------------------------------------

/// `repo_history`: one commit, a comparison, or the commits on a ref.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum HistoryAnswer {
    /// `sha`: one commit.
    Commit(OneCommit),
    /// `base` and `head`: a comparison.
    Compare(Compared),
    /// `ref`: commits on it.
    Commits(CommitList),
}

/// One commit, whole.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct OneCommit {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `commit`.
    pub mode: &'static str,
    /// The commit.
    pub commit: CommitShown,
    /// The files it changed.
    pub files: ChangedFiles,
}

/// A commit with its whole message and its parents.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CommitShown {
    /// Its sha.
    pub sha: String,
    /// When it was authored.
    pub date: String,
    /// Its author.
    pub author: String,
    /// Its whole message.
    pub message: String,
    /// Its parents' shas.
    pub parents: Vec<String>,
}

/// A `base...head` comparison.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Compared {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `compare`.
    pub mode: &'static str,
    /// The base asked for.
    pub base: String,
    /// The head asked for.
    pub head: String,
    /// GitHub's status (`ahead`, `behind`, `diverged`, `identical`).
    pub status: String,
    /// Commits head has that base lacks.
    pub ahead_by: u64,
    /// Commits base has that head lacks.
    pub behind_by: u64,
    /// Commits in the comparison.
    pub total_commits: u64,
    /// Its commits, up to the limit.
    pub commits: Vec<CommitLine>,
    /// The files it changes.
    pub files: ChangedFiles,
}

/// The commits on a ref.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CommitList {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `commits`.
    pub mode: &'static str,
    /// The ref asked for.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// Most commits listed.
    pub limit: u32,
    /// Its commits, newest first.
    pub commits: Vec<CommitLine>,
}

/// A commit in a list: the subject only (the message's first line).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CommitLine {
    /// Its sha.
    pub sha: String,
    /// When it was authored.
    pub date: String,
    /// Its author.
    pub author: String,
    /// Its message's first line.
    pub subject: String,
}

/// Changed files with status and line counts; patches only when asked, within the budget.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChangedFiles {
    /// Files listed.
    pub count: usize,
    /// Whether a patch was left out for the budget.
    pub patch_truncated: bool,
    /// Bytes of patch returned.
    pub patch_bytes: usize,
    /// The files.
    pub entries: Vec<ChangedFile>,
}

/// One changed file.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChangedFile {
    /// Its path.
    pub path: String,
    /// `added`, `modified`, `removed`, `renamed`...
    pub status: String,
    /// Lines added.
    pub additions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// Its patch (only when asked, and within the budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

// ---- search_code ----------------------------------------------------------------------

/// `search_code`: the matches of one page of the scan.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SearchAnswer {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The ref scanned.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// The query.
    pub query: String,
    /// Files worth scanning under the prefix.
    pub candidates: usize,
    /// The candidate this page started at.
    pub start: usize,
    /// Files read on this page.
    pub files_scanned: usize,
    /// Matches returned.
    pub total_results: usize,
    /// Whether matches may exist past what is returned.
    pub truncated: bool,
    /// The matches.
    pub items: Vec<CodeMatch>,
    /// Files that could not be read (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable_files: Option<usize>,
    /// Up to ten of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable_sample: Option<Vec<String>>,
    /// The `start` that continues the scan, when it stopped at the file cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_start: Option<usize>,
    /// Why the answer is truncated, and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One matching line.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CodeMatch {
    /// The file.
    pub path: String,
    /// The line number (from 1).
    pub line: usize,
    /// The line, trimmed and cut.
    pub text: String,
}
