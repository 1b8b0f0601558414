//! `RepoHost` for [`GitHubApp`]: each port method is one of the adapter's reads or writes.

use std::collections::BTreeMap;

use async_trait::async_trait;
use capsid_core::ports::{
    CheckRun, ClosedPull, CommitDetail, CommitSummary, Comparison, Contents, FileCommit, FileWrite,
    GitTree, IssueComment, IssueFacts, MergeOutcome, OpenedPull, PostedComment, PullRequestFacts,
    PullSummary, RefHead, RepoFacts, RepoHost, RepoHostError, RepoRef, RepoResult, RunJob,
    RunQuery, WorkflowRun,
};

use crate::GitHubApp;

#[async_trait]
impl RepoHost for GitHubApp {
    async fn pull_request(&self, repo: &RepoRef, number: u64) -> RepoResult<PullRequestFacts> {
        self.read_pull(repo, number).await
    }
    async fn pull_request_files(&self, repo: &RepoRef, number: u64) -> RepoResult<Vec<String>> {
        self.read_pull_files(repo, number).await
    }
    async fn check_runs(&self, repo: &RepoRef, sha: &str) -> RepoResult<Vec<CheckRun>> {
        self.read_check_runs(repo, sha).await
    }
    async fn workflow_runs(&self, repo: &RepoRef, sha: &str) -> RepoResult<Vec<WorkflowRun>> {
        let query = RunQuery {
            branch: None,
            head_sha: Some(sha.to_owned()),
            per_page: 20,
        };
        self.read_runs(repo, &query).await
    }
    async fn issue_comments(&self, repo: &RepoRef, number: u64) -> RepoResult<Vec<IssueComment>> {
        self.read_issue_comments(repo, number).await
    }
    async fn open_issues(&self, repo: &RepoRef, label: &str) -> RepoResult<Vec<IssueFacts>> {
        self.read_open_issues(repo, label).await
    }
    async fn issue(&self, repo: &RepoRef, number: u64) -> RepoResult<IssueFacts> {
        self.read_issue(repo, number).await
    }
    async fn comment_issue(
        &self,
        repo: &RepoRef,
        number: u64,
        body: &str,
    ) -> RepoResult<PostedComment> {
        self.write_comment(repo, number, body).await
    }
    async fn file_text(
        &self,
        repo: &RepoRef,
        path: &str,
        git_ref: Option<&str>,
    ) -> RepoResult<String> {
        match self.read_contents(repo, path, git_ref).await? {
            Contents::File(f) => Ok(String::from_utf8_lossy(&f.bytes).into_owned()),
            _ => Err(RepoHostError::NotFound(format!(
                "{path} in {repo} is not a file"
            ))),
        }
    }
    async fn repository(&self, repo: &RepoRef) -> RepoResult<RepoFacts> {
        self.read_repository(repo).await
    }
    async fn contents(
        &self,
        repo: &RepoRef,
        path: &str,
        git_ref: Option<&str>,
    ) -> RepoResult<Contents> {
        self.read_contents(repo, path, git_ref).await
    }
    async fn tree(&self, repo: &RepoRef, git_ref: &str) -> RepoResult<GitTree> {
        self.read_tree(repo, git_ref).await
    }
    async fn blob(&self, repo: &RepoRef, sha: &str) -> RepoResult<Vec<u8>> {
        self.read_blob(repo, sha).await
    }
    async fn branches(&self, repo: &RepoRef) -> RepoResult<Vec<RefHead>> {
        self.read_refs(repo, "branches").await
    }
    async fn tags(&self, repo: &RepoRef) -> RepoResult<Vec<RefHead>> {
        self.read_refs(repo, "tags").await
    }
    async fn open_pull_requests(
        &self,
        repo: &RepoRef,
        head: Option<&str>,
    ) -> RepoResult<Vec<PullSummary>> {
        self.read_open_pulls(repo, head).await
    }
    async fn commits(
        &self,
        repo: &RepoRef,
        git_ref: &str,
        limit: u32,
    ) -> RepoResult<Vec<CommitSummary>> {
        self.read_commits(repo, git_ref, limit).await
    }
    async fn commit(&self, repo: &RepoRef, sha: &str) -> RepoResult<CommitDetail> {
        self.read_commit(repo, sha).await
    }
    async fn compare(&self, repo: &RepoRef, base: &str, head: &str) -> RepoResult<Comparison> {
        self.read_compare(repo, base, head).await
    }
    async fn recent_workflow_runs(
        &self,
        repo: &RepoRef,
        query: &RunQuery,
    ) -> RepoResult<Vec<WorkflowRun>> {
        self.read_runs(repo, query).await
    }
    async fn workflow_run(&self, repo: &RepoRef, run_id: u64) -> RepoResult<WorkflowRun> {
        self.read_run(repo, run_id).await
    }
    async fn run_jobs(&self, repo: &RepoRef, run_id: u64) -> RepoResult<Vec<RunJob>> {
        self.read_run_jobs(repo, run_id).await
    }
    async fn job_log(&self, repo: &RepoRef, job_id: u64) -> RepoResult<String> {
        self.read_job_log(repo, job_id).await
    }
    async fn create_branch(&self, repo: &RepoRef, branch: &str, sha: &str) -> RepoResult<()> {
        self.write_branch(repo, branch, sha).await
    }
    async fn delete_branch(&self, repo: &RepoRef, branch: &str) -> RepoResult<()> {
        self.remove_branch(repo, branch).await
    }
    async fn put_file(&self, repo: &RepoRef, write: &FileWrite<'_>) -> RepoResult<FileCommit> {
        self.write_file(repo, write).await
    }
    async fn delete_file(
        &self,
        repo: &RepoRef,
        path: &str,
        message: &str,
        sha: &str,
        branch: &str,
    ) -> RepoResult<String> {
        self.remove_file(repo, path, message, sha, branch).await
    }
    async fn create_pull(
        &self,
        repo: &RepoRef,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
    ) -> RepoResult<OpenedPull> {
        self.write_pull(repo, title, head, base, body).await
    }
    async fn merge_pull(
        &self,
        repo: &RepoRef,
        number: u64,
        method: &str,
        head: Option<&str>,
    ) -> RepoResult<MergeOutcome> {
        self.write_merge(repo, number, method, head).await
    }
    async fn close_pull(&self, repo: &RepoRef, number: u64) -> RepoResult<ClosedPull> {
        self.write_close(repo, number).await
    }
    async fn comment_pull(
        &self,
        repo: &RepoRef,
        number: u64,
        body: &str,
    ) -> RepoResult<PostedComment> {
        self.write_comment(repo, number, body).await
    }
    async fn dispatch_workflow(
        &self,
        repo: &RepoRef,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> RepoResult<()> {
        self.write_dispatch(repo, workflow, git_ref, inputs).await
    }
    async fn rerun_failed_jobs(&self, repo: &RepoRef, run_id: u64) -> RepoResult<()> {
        self.write_rerun(repo, run_id).await
    }
    async fn poll_pause(&self) {
        if !self.inner.poll_interval.is_zero() {
            tokio::time::sleep(self.inner.poll_interval).await;
        }
    }
}
