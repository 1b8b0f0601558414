//! What the thirteen repo tools answer: one type per answer shape, built by the handlers and
//! serialized once, so each tool's output schema is its answer's type. The wire text is the
//! reference's: a key that appears only in some answers is an `Option` skipped when absent,
//! a key that is `null` when unknown is an `Option` kept. A mutation's answer carries
//! `audit_warning` when its audit row could not be written ([`Audited`]).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// A mutation's answer: it says so when the audit row of a change already made could not be
/// written.
pub(crate) trait Audited: Serialize {
    /// Adds the warning that the audit row was not written.
    fn warn(&mut self, warning: String);
}

/// An answer kept as plain JSON (what a failed change audits).
impl Audited for Value {
    fn warn(&mut self, warning: String) {
        if let Value::Object(map) = self {
            map.insert("audit_warning".into(), Value::String(warning));
        }
    }
}

/// Mutation answers whose `audit_warning` field is the warning.
macro_rules! audited {
    ($($answer:ty),*) => {
        $(impl Audited for $answer {
            fn warn(&mut self, warning: String) {
                self.audit_warning = Some(warning);
            }
        })*
    };
}

audited!(
    FileChanged,
    BranchCreated,
    PrOpened,
    PrMerged,
    PrClosed,
    PrCommented,
    BranchDeleted,
    CiRerun,
    CiDispatched
);

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

// ---- ci_status ------------------------------------------------------------------------

/// `ci_status`: recent runs, and the latest failure's failing jobs and steps.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CiStatusAnswer {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The runs, newest first.
    pub runs: Vec<RunRow>,
    /// What the runs were filtered by, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<RunFilter>,
    /// The newest failed run among them, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_run: Option<FailedRun>,
}

/// A workflow run.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunRow {
    /// The workflow's name.
    pub name: String,
    /// The commit it ran on (short).
    pub head_sha: String,
    /// `queued`, `in_progress`, `completed`...
    pub status: String,
    /// How it ended (`null` while running).
    pub conclusion: Option<String>,
    /// What started it.
    pub event: String,
    /// When it was created.
    pub created_at: String,
    /// Its page on GitHub.
    pub url: String,
}

/// What `ci_status` filtered the runs by.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RunFilter {
    /// One run.
    Run {
        /// Its id.
        run_id: u64,
    },
    /// A branch or commit.
    Ref {
        /// The ref asked for.
        #[serde(rename = "ref")]
        git_ref: String,
    },
}

/// The newest failed run: its failing jobs and steps, and for a write-grant caller the
/// failing step's log. Every degraded path is named by the key it sets.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailedRun {
    /// The workflow's name.
    pub name: String,
    /// The commit it ran on (short).
    pub head_sha: String,
    /// Its page on GitHub.
    pub url: String,
    /// Why its jobs could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs_unavailable: Option<String>,
    /// Its failing jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Vec<FailedJob>>,
    /// Why no log is returned although the caller may read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail_unavailable: Option<String>,
    /// Why no log is returned to this caller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail_withheld: Option<String>,
    /// The first failing job, whose log is returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_job: Option<String>,
    /// Its failing step, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_step: Option<Option<String>>,
    /// Which part of the job's log `log` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_region: Option<String>,
    /// The log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// A failing job.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailedJob {
    /// Its name.
    pub name: String,
    /// Its failing steps' names.
    pub failed_steps: Vec<String>,
}

// ---- ci_dispatch ----------------------------------------------------------------------

/// `ci_dispatch`: a rerun requested, or a workflow dispatched.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CiDispatchAnswer {
    /// `run_id`: its failed jobs rerun.
    Rerun(CiRerun),
    /// `workflow` and `ref`: dispatched.
    Dispatch(CiDispatched),
}

impl Audited for CiDispatchAnswer {
    fn warn(&mut self, warning: String) {
        match self {
            CiDispatchAnswer::Rerun(a) => a.warn(warning),
            CiDispatchAnswer::Dispatch(a) => a.warn(warning),
        }
    }
}

/// A rerun of a run's failed jobs, requested.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CiRerun {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `rerun`.
    pub mode: &'static str,
    /// The run.
    pub run_id: u64,
    /// Always true.
    pub rerun_requested: bool,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// A workflow dispatched, with the run it started when one appeared.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CiDispatched {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `dispatch`.
    pub mode: &'static str,
    /// The workflow file.
    pub workflow: String,
    /// The ref it runs on.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// Always true: GitHub accepted the dispatch.
    pub dispatched: bool,
    /// The run it started (`null`: none appeared in time).
    pub run_id: Option<u64>,
    /// The run's status, when one appeared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The run's page, when one appeared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How many times the runs were listed to find it.
    pub polls: u64,
    /// What to do when no run appeared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

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
