//! The port's reads: pull requests, checks, runs, comments, contents, trees, refs, commits
//! and comparisons, each one GitHub request (or a few) with its JSON reduced by `wire`.

use capsid_core::ports::{
    CheckRun, CommitDetail, CommitSummary, Comparison, Contents, FileBlob, GitTree, IssueComment,
    IssueFacts, PullRequestFacts, PullSummary, RefHead, RepoFacts, RepoHostError, RepoRef, RunJob,
    RunQuery, TreeEntry, WorkflowRun,
};
use http::Method;
use serde_json::Value;

use crate::GitHubApp;
use crate::tokens::{seg, segs};
use crate::transport::{Reply, classify};
use crate::wire::{self, items};

/// `/repos/{owner}/{name}`.
pub fn base(repo: &RepoRef) -> Result<String, RepoHostError> {
    Ok(format!("/repos/{}/{}", seg(&repo.owner)?, seg(&repo.name)?))
}

/// Issues asked for per page of a listing (GitHub's largest page).
const ISSUES_PER_PAGE: usize = 100;

/// The most pages of labelled issues one pass reads (a thousand issues).
const ISSUE_PAGES_MAX: usize = 10;

impl GitHubApp {
    /// A request on `repo`, classified.
    pub(crate) async fn send(
        &self,
        repo: &RepoRef,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Reply, RepoHostError> {
        let inner = &self.inner;
        let reply = inner
            .tokens
            .call(&inner.http, repo, method, path, body, what)
            .await?;
        classify(reply, what)
    }

    /// `GET path` on `repo`, as JSON.
    pub(crate) async fn get(
        &self,
        repo: &RepoRef,
        path: &str,
        what: &str,
    ) -> Result<Value, RepoHostError> {
        self.send(repo, Method::GET, path, None, what)
            .await?
            .json(what)
    }

    pub(crate) async fn read_pull(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<PullRequestFacts, RepoHostError> {
        let what = format!("read pull request #{number} of {repo}");
        let v = self
            .get(repo, &format!("{}/pulls/{number}", base(repo)?), &what)
            .await?;
        Ok(wire::pull_facts(&v))
    }

    pub(crate) async fn read_pull_files(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<Vec<String>, RepoHostError> {
        let what = format!("list the files of pull request #{number} of {repo}");
        let path = format!("{}/pulls/{number}/files?per_page=100", base(repo)?);
        let v = self.get(repo, &path, &what).await?;
        Ok(items(&v)
            .iter()
            .map(|f| wire::text(&f["filename"]))
            .collect())
    }

    pub(crate) async fn read_check_runs(
        &self,
        repo: &RepoRef,
        sha: &str,
    ) -> Result<Vec<CheckRun>, RepoHostError> {
        let what = format!("list check runs on {repo}@{sha}");
        let path = format!(
            "{}/commits/{}/check-runs?per_page=100",
            base(repo)?,
            seg(sha)?
        );
        let v = self.get(repo, &path, &what).await?;
        Ok(items(&v["check_runs"])
            .iter()
            .map(wire::check_run)
            .collect())
    }

    pub(crate) async fn read_runs(
        &self,
        repo: &RepoRef,
        query: &RunQuery,
    ) -> Result<Vec<WorkflowRun>, RepoHostError> {
        let mut path = format!(
            "{}/actions/runs?per_page={}",
            base(repo)?,
            query.per_page.clamp(1, 100)
        );
        if let Some(branch) = &query.branch {
            path.push_str(&format!("&branch={}", seg(branch)?));
        }
        if let Some(sha) = &query.head_sha {
            path.push_str(&format!("&head_sha={}", seg(sha)?));
        }
        let what = format!("list workflow runs of {repo}");
        let v = self.get(repo, &path, &what).await?;
        Ok(items(&v["workflow_runs"])
            .iter()
            .map(wire::workflow_run)
            .collect())
    }

    pub(crate) async fn read_run(
        &self,
        repo: &RepoRef,
        id: u64,
    ) -> Result<WorkflowRun, RepoHostError> {
        let what = format!("read workflow run {id} of {repo}");
        let v = self
            .get(repo, &format!("{}/actions/runs/{id}", base(repo)?), &what)
            .await?;
        Ok(wire::workflow_run(&v))
    }

    pub(crate) async fn read_run_jobs(
        &self,
        repo: &RepoRef,
        id: u64,
    ) -> Result<Vec<RunJob>, RepoHostError> {
        let what = format!("list the jobs of workflow run {id} of {repo}");
        let path = format!("{}/actions/runs/{id}/jobs?per_page=100", base(repo)?);
        let v = self.get(repo, &path, &what).await?;
        Ok(items(&v["jobs"]).iter().map(wire::run_job).collect())
    }

    /// GitHub answers a log request with a redirect to a short-lived download URL, fetched
    /// without the token.
    pub(crate) async fn read_job_log(
        &self,
        repo: &RepoRef,
        id: u64,
    ) -> Result<String, RepoHostError> {
        let what = format!("read the log of job {id} of {repo}");
        let path = format!("{}/actions/jobs/{id}/logs", base(repo)?);
        let inner = &self.inner;
        let reply = inner
            .tokens
            .call(&inner.http, repo, Method::GET, &path, None, &what)
            .await?;
        let reply = if reply.status.is_redirection() {
            let location = reply
                .headers
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| {
                    RepoHostError::Failed(format!("{what}: a redirect without a location"))
                })?
                .to_owned();
            let target = if location.starts_with('/') {
                format!("{}{location}", inner.http.api_url())
            } else {
                location
            };
            inner
                .http
                .send(Method::GET, &target, None, None, &what)
                .await?
        } else {
            reply
        };
        let reply = classify(reply, &what)?;
        Ok(String::from_utf8_lossy(&reply.body).into_owned())
    }

    pub(crate) async fn read_issue_comments(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<Vec<IssueComment>, RepoHostError> {
        let what = format!("list the comments of #{number} of {repo}");
        let path = format!("{}/issues/{number}/comments?per_page=100", base(repo)?);
        let v = self.get(repo, &path, &what).await?;
        Ok(items(&v).iter().map(wire::issue_comment).collect())
    }

    pub(crate) async fn read_open_issues(
        &self,
        repo: &RepoRef,
        label: &str,
    ) -> Result<Vec<IssueFacts>, RepoHostError> {
        let what = format!("list the open issues labelled '{label}' of {repo}");
        // Every page, oldest first: a page shorter than asked for is the last (issue 53,
        // item 8: with one page read, issues past the first hundred never came in).
        let mut found = Vec::new();
        for page in 1..=ISSUE_PAGES_MAX {
            let path = format!(
                "{}/issues?state=open&labels={}&sort=created&direction=asc&per_page={ISSUES_PER_PAGE}&page={page}",
                base(repo)?,
                seg(label)?
            );
            let v = self.get(repo, &path, &what).await?;
            let listed = items(&v);
            found.extend(
                listed
                    .iter()
                    .filter(|i| !wire::is_pull(i))
                    .map(wire::issue_facts),
            );
            if listed.len() < ISSUES_PER_PAGE {
                break;
            }
        }
        Ok(found)
    }

    pub(crate) async fn read_issue(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<IssueFacts, RepoHostError> {
        let what = format!("read issue #{number} of {repo}");
        let v = self
            .get(repo, &format!("{}/issues/{number}", base(repo)?), &what)
            .await?;
        Ok(wire::issue_facts(&v))
    }

    pub(crate) async fn read_repository(&self, repo: &RepoRef) -> Result<RepoFacts, RepoHostError> {
        let what = format!("read repository {repo}");
        let v = self.get(repo, &base(repo)?, &what).await?;
        Ok(RepoFacts {
            full_name: wire::text(&v["full_name"]),
            default_branch: wire::text(&v["default_branch"]),
            private: v["private"].as_bool().unwrap_or(false),
        })
    }

    pub(crate) async fn read_contents(
        &self,
        repo: &RepoRef,
        path: &str,
        git_ref: Option<&str>,
    ) -> Result<Contents, RepoHostError> {
        let at = git_ref.map(|r| format!("@{r}")).unwrap_or_default();
        let what = format!(
            "read {}{at} in {repo}",
            if path.is_empty() { "/" } else { path }
        );
        let mut url = format!("{}/contents", base(repo)?);
        if !path.is_empty() {
            url.push('/');
            url.push_str(&segs(path)?);
        }
        if let Some(r) = git_ref {
            url.push_str(&format!("?ref={}", seg(r)?));
        }
        let v = self.get(repo, &url, &what).await?;
        if let Some(list) = v.as_array() {
            return Ok(Contents::Dir(
                list.iter()
                    .map(wire::tree_entry)
                    .collect::<Vec<TreeEntry>>(),
            ));
        }
        if v["type"] != "file" {
            return Ok(Contents::Other {
                kind: wire::text(&v["type"]),
            });
        }
        let sha = wire::text(&v["sha"]);
        // Files over a megabyte come without inline content: read the blob by sha.
        let bytes = match v["content"].as_str() {
            Some(c) if !c.is_empty() || v["size"].as_u64() == Some(0) => {
                wire::base64_bytes(&v["content"], &what)?
            }
            _ => self.read_blob(repo, &sha).await?,
        };
        Ok(Contents::File(FileBlob {
            path: wire::text(&v["path"]),
            size: v["size"].as_u64().unwrap_or(bytes.len() as u64),
            sha,
            bytes,
        }))
    }

    pub(crate) async fn read_tree(
        &self,
        repo: &RepoRef,
        git_ref: &str,
    ) -> Result<GitTree, RepoHostError> {
        let what = format!("read the tree of {repo}@{git_ref}");
        let path = format!("{}/git/trees/{}?recursive=1", base(repo)?, seg(git_ref)?);
        Ok(wire::git_tree(&self.get(repo, &path, &what).await?))
    }

    pub(crate) async fn read_blob(
        &self,
        repo: &RepoRef,
        sha: &str,
    ) -> Result<Vec<u8>, RepoHostError> {
        let what = format!("read blob {sha} of {repo}");
        let v = self
            .get(
                repo,
                &format!("{}/git/blobs/{}", base(repo)?, seg(sha)?),
                &what,
            )
            .await?;
        wire::base64_bytes(&v["content"], &what)
    }

    pub(crate) async fn read_refs(
        &self,
        repo: &RepoRef,
        kind: &str,
    ) -> Result<Vec<RefHead>, RepoHostError> {
        let what = format!("list the {kind} of {repo}");
        let v = self
            .get(repo, &format!("{}/{kind}?per_page=100", base(repo)?), &what)
            .await?;
        Ok(items(&v).iter().map(wire::ref_head).collect())
    }

    pub(crate) async fn read_open_pulls(
        &self,
        repo: &RepoRef,
        head: Option<&str>,
    ) -> Result<Vec<PullSummary>, RepoHostError> {
        let what = format!("list the open pull requests of {repo}");
        let mut path = format!("{}/pulls?state=open&per_page=100", base(repo)?);
        if let Some(branch) = head {
            path.push_str(&format!(
                "&head={}",
                seg(&format!("{}:{branch}", repo.owner))?
            ));
        }
        let v = self.get(repo, &path, &what).await?;
        Ok(items(&v).iter().map(wire::pull_summary).collect())
    }

    pub(crate) async fn read_commits(
        &self,
        repo: &RepoRef,
        git_ref: &str,
        limit: u32,
    ) -> Result<Vec<CommitSummary>, RepoHostError> {
        let what = format!("list the commits of {repo}@{git_ref}");
        let path = format!(
            "{}/commits?sha={}&per_page={}",
            base(repo)?,
            seg(git_ref)?,
            limit.clamp(1, 100)
        );
        let v = self.get(repo, &path, &what).await?;
        Ok(items(&v).iter().map(wire::commit_summary).collect())
    }

    pub(crate) async fn read_commit(
        &self,
        repo: &RepoRef,
        sha: &str,
    ) -> Result<CommitDetail, RepoHostError> {
        let what = format!("read commit {sha} of {repo}");
        let v = self
            .get(
                repo,
                &format!("{}/commits/{}", base(repo)?, seg(sha)?),
                &what,
            )
            .await?;
        Ok(wire::commit_detail(&v))
    }

    pub(crate) async fn read_compare(
        &self,
        repo: &RepoRef,
        from: &str,
        to: &str,
    ) -> Result<Comparison, RepoHostError> {
        let what = format!("compare {from}...{to} in {repo}");
        let path = format!("{}/compare/{}...{}", base(repo)?, seg(from)?, seg(to)?);
        Ok(wire::comparison(&self.get(repo, &path, &what).await?))
    }
}
