//! A repository host behind the `RepoHost` port for work-queue tests: pull requests, review
//! comments and workflow runs the test sets up, files and the folders they make up, and
//! repositories it cannot read. The repo tools' other operations are not faked here: they
//! answer "not faked" (the real GitHub adapter is tested against the fake GitHub HTTP server
//! in `fake_github`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use async_trait::async_trait;
use capsid_core::ports::{
    CheckRun, ClosedPull, CommitDetail, CommitSummary, Comparison, Contents, FileCommit, FileWrite,
    GitTree, IssueComment, IssueFacts, MergeOutcome, OpenedPull, PostedComment, PullRequestFacts,
    PullSummary, RefHead, RepoFacts, RepoHost, RepoHostError, RepoRef, RepoResult, RunJob,
    RunQuery, TreeEntry, WorkflowRun,
};

fn not_faked<T>(what: &str) -> RepoResult<T> {
    Err(RepoHostError::Failed(format!(
        "{what} is not faked by FakeRepoHost"
    )))
}

/// In-memory facts keyed by `owner/name#number` and `owner/name@sha`.
#[derive(Debug, Default)]
pub struct FakeRepoHost {
    prs: Mutex<BTreeMap<String, PullRequestFacts>>,
    comments: Mutex<BTreeMap<String, Vec<IssueComment>>>,
    runs: Mutex<BTreeMap<String, Vec<WorkflowRun>>>,
    files: Mutex<BTreeMap<String, String>>,
    unreadable: Mutex<BTreeSet<String>>,
}

fn pr_key(repo: &RepoRef, number: u64) -> String {
    format!("{repo}#{number}")
}

impl FakeRepoHost {
    /// Adds a pull request.
    pub fn add_pr(
        &self,
        repo: &str,
        number: u64,
        merged: bool,
        commits: u64,
        changed_files: u64,
        head_sha: &str,
    ) {
        let facts = PullRequestFacts {
            number,
            merged,
            open: !merged,
            commits,
            changed_files,
            head_ref: format!("feature-{number}"),
            head_sha: head_sha.to_owned(),
            head_is_fork: false,
            head_repo: Some(repo.to_owned()),
            base_ref: "main".into(),
            body: String::new(),
        };
        self.prs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("{repo}#{number}"), facts);
    }

    /// Adds a conversation comment on a pull request.
    pub fn comment(&self, repo: &str, number: u64, login: &str, body: &str, created_at: &str) {
        self.comments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(format!("{repo}#{number}"))
            .or_default()
            .push(IssueComment {
                login: login.into(),
                body: body.into(),
                created_at: created_at.into(),
            });
    }

    /// Sets the workflow runs on a commit.
    pub fn runs(&self, repo: &str, sha: &str, runs: &[(&str, Option<&str>)]) {
        let runs = runs
            .iter()
            .enumerate()
            .map(|(i, (status, conclusion))| WorkflowRun {
                id: i as u64 + 1,
                name: "ci".into(),
                status: (*status).to_owned(),
                conclusion: conclusion.map(str::to_owned),
                head_sha: sha.to_owned(),
                ..WorkflowRun::default()
            })
            .collect();
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("{repo}@{sha}"), runs);
    }

    /// Sets a file's text on the default branch.
    pub fn file(&self, repo: &str, path: &str, text: &str) {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("{repo}:{path}"), text.into());
    }

    /// Makes every read of `repo` fail.
    pub fn break_repo(&self, repo: &str) {
        self.unreadable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(repo.into());
    }

    fn check(&self, repo: &RepoRef) -> Result<(), RepoHostError> {
        if self
            .unreadable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&repo.to_string())
        {
            return Err(RepoHostError::Failed(format!("{repo}: 502 from GitHub")));
        }
        Ok(())
    }
}

#[async_trait]
impl RepoHost for FakeRepoHost {
    async fn pull_request(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<PullRequestFacts, RepoHostError> {
        self.check(repo)?;
        self.prs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&pr_key(repo, number))
            .cloned()
            .ok_or_else(|| RepoHostError::NotFound(pr_key(repo, number)))
    }

    async fn pull_request_files(
        &self,
        repo: &RepoRef,
        _number: u64,
    ) -> Result<Vec<String>, RepoHostError> {
        self.check(repo)?;
        Ok(Vec::new())
    }

    async fn check_runs(&self, repo: &RepoRef, _sha: &str) -> Result<Vec<CheckRun>, RepoHostError> {
        self.check(repo)?;
        Ok(Vec::new())
    }

    async fn workflow_runs(
        &self,
        repo: &RepoRef,
        sha: &str,
    ) -> Result<Vec<WorkflowRun>, RepoHostError> {
        self.check(repo)?;
        Ok(self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&format!("{repo}@{sha}"))
            .cloned()
            .unwrap_or_default())
    }

    async fn issue_comments(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<Vec<IssueComment>, RepoHostError> {
        self.check(repo)?;
        Ok(self
            .comments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&pr_key(repo, number))
            .cloned()
            .unwrap_or_default())
    }

    async fn file_text(
        &self,
        repo: &RepoRef,
        path: &str,
        _git_ref: Option<&str>,
    ) -> Result<String, RepoHostError> {
        self.check(repo)?;
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&format!("{repo}:{path}"))
            .cloned()
            .ok_or_else(|| RepoHostError::NotFound(format!("{repo}:{path}")))
    }
    async fn repository(&self, repo: &RepoRef) -> RepoResult<RepoFacts> {
        self.check(repo)?;
        Ok(RepoFacts {
            full_name: repo.to_string(),
            default_branch: "main".into(),
            private: true,
        })
    }
    /// A folder's files (the direct children of `path`), from the files [`FakeRepoHost::file`]
    /// added; a path with none under it is not found.
    async fn contents(&self, repo: &RepoRef, path: &str, _: Option<&str>) -> RepoResult<Contents> {
        self.check(repo)?;
        let prefix = format!("{repo}:{}/", path.trim_end_matches('/'));
        let entries: Vec<TreeEntry> = self
            .files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|(key, text)| {
                let name = key.strip_prefix(&prefix)?;
                (!name.contains('/')).then(|| TreeEntry {
                    path: key[repo.to_string().len() + 1..].to_owned(),
                    kind: "file".into(),
                    size: text.len() as u64,
                    sha: String::new(),
                })
            })
            .collect();
        if entries.is_empty() {
            return Err(RepoHostError::NotFound(format!("{repo}:{path}")));
        }
        Ok(Contents::Dir(entries))
    }
    async fn tree(&self, _: &RepoRef, _: &str) -> RepoResult<GitTree> {
        not_faked("tree")
    }
    async fn blob(&self, _: &RepoRef, _: &str) -> RepoResult<Vec<u8>> {
        not_faked("blob")
    }
    async fn branches(&self, _: &RepoRef) -> RepoResult<Vec<RefHead>> {
        not_faked("branches")
    }
    async fn tags(&self, _: &RepoRef) -> RepoResult<Vec<RefHead>> {
        not_faked("tags")
    }
    async fn open_pull_requests(
        &self,
        _: &RepoRef,
        _: Option<&str>,
    ) -> RepoResult<Vec<PullSummary>> {
        not_faked("open_pull_requests")
    }
    async fn commits(&self, _: &RepoRef, _: &str, _: u32) -> RepoResult<Vec<CommitSummary>> {
        not_faked("commits")
    }
    async fn commit(&self, _: &RepoRef, _: &str) -> RepoResult<CommitDetail> {
        not_faked("commit")
    }
    async fn compare(&self, _: &RepoRef, _: &str, _: &str) -> RepoResult<Comparison> {
        not_faked("compare")
    }
    async fn recent_workflow_runs(
        &self,
        _: &RepoRef,
        _: &RunQuery,
    ) -> RepoResult<Vec<WorkflowRun>> {
        not_faked("recent_workflow_runs")
    }
    async fn workflow_run(&self, _: &RepoRef, _: u64) -> RepoResult<WorkflowRun> {
        not_faked("workflow_run")
    }
    async fn run_jobs(&self, _: &RepoRef, _: u64) -> RepoResult<Vec<RunJob>> {
        not_faked("run_jobs")
    }
    async fn job_log(&self, _: &RepoRef, _: u64) -> RepoResult<String> {
        not_faked("job_log")
    }
    async fn create_branch(&self, _: &RepoRef, _: &str, _: &str) -> RepoResult<()> {
        not_faked("create_branch")
    }
    async fn delete_branch(&self, _: &RepoRef, _: &str) -> RepoResult<()> {
        not_faked("delete_branch")
    }
    async fn put_file(&self, _: &RepoRef, _: &FileWrite<'_>) -> RepoResult<FileCommit> {
        not_faked("put_file")
    }
    async fn delete_file(
        &self,
        _: &RepoRef,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
    ) -> RepoResult<String> {
        not_faked("delete_file")
    }
    async fn create_pull(
        &self,
        _: &RepoRef,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
    ) -> RepoResult<OpenedPull> {
        not_faked("create_pull")
    }
    async fn merge_pull(
        &self,
        _: &RepoRef,
        _: u64,
        _: &str,
        _: Option<&str>,
    ) -> RepoResult<MergeOutcome> {
        not_faked("merge_pull")
    }
    async fn close_pull(&self, _: &RepoRef, _: u64) -> RepoResult<ClosedPull> {
        not_faked("close_pull")
    }
    async fn comment_pull(&self, _: &RepoRef, _: u64, _: &str) -> RepoResult<PostedComment> {
        not_faked("comment_pull")
    }
    async fn open_issues(&self, _: &RepoRef, _: &str) -> RepoResult<Vec<IssueFacts>> {
        not_faked("open_issues")
    }
    async fn issue(&self, _: &RepoRef, _: u64) -> RepoResult<IssueFacts> {
        not_faked("issue")
    }
    async fn comment_issue(&self, _: &RepoRef, _: u64, _: &str) -> RepoResult<PostedComment> {
        not_faked("comment_issue")
    }
    async fn dispatch_workflow(
        &self,
        _: &RepoRef,
        _: &str,
        _: &str,
        _: &BTreeMap<String, String>,
    ) -> RepoResult<()> {
        not_faked("dispatch_workflow")
    }
    async fn rerun_failed_jobs(&self, _: &RepoRef, _: u64) -> RepoResult<()> {
        not_faked("rerun_failed_jobs")
    }
    async fn poll_pause(&self) {}
}
