//! The port's mutations: branches, file commits, pull requests, comments, workflow dispatches
//! and re-runs, each one GitHub request whose refusal comes back as the port's error.

use std::collections::BTreeMap;

use base64::Engine;
use capsid_core::ports::{
    ClosedPull, FileCommit, FileWrite, MergeOutcome, OpenedPull, PostedComment, RepoHostError,
    RepoRef,
};
use http::Method;
use serde_json::{Value, json};

use crate::GitHubApp;
use crate::reads::base;
use crate::tokens::{seg, segs};
use crate::wire::text;

impl GitHubApp {
    async fn send_json(
        &self,
        repo: &RepoRef,
        method: Method,
        path: &str,
        body: &Value,
        what: &str,
    ) -> Result<Value, RepoHostError> {
        let reply = self.send(repo, method, path, Some(body), what).await?;
        if reply.body.is_empty() {
            return Ok(Value::Null);
        }
        reply.json(what)
    }

    pub(crate) async fn write_branch(
        &self,
        repo: &RepoRef,
        branch: &str,
        sha: &str,
    ) -> Result<(), RepoHostError> {
        let what = format!("create branch {branch} at {sha} in {repo}");
        let body = json!({"ref": format!("refs/heads/{branch}"), "sha": sha});
        self.send_json(
            repo,
            Method::POST,
            &format!("{}/git/refs", base(repo)?),
            &body,
            &what,
        )
        .await
        .map(|_| ())
    }

    pub(crate) async fn remove_branch(
        &self,
        repo: &RepoRef,
        branch: &str,
    ) -> Result<(), RepoHostError> {
        let what = format!("delete branch {branch} of {repo}");
        let path = format!("{}/git/refs/heads/{}", base(repo)?, segs(branch)?);
        self.send(repo, Method::DELETE, &path, None, &what)
            .await
            .map(|_| ())
    }

    pub(crate) async fn write_file(
        &self,
        repo: &RepoRef,
        w: &FileWrite<'_>,
    ) -> Result<FileCommit, RepoHostError> {
        let what = format!("commit {} to {repo}@{}", w.path, w.branch);
        let mut body = json!({
            "message": w.message,
            "content": base64::engine::general_purpose::STANDARD.encode(w.content.as_bytes()),
            "branch": w.branch,
        });
        if let Some(sha) = w.sha {
            body["sha"] = json!(sha);
        }
        let path = format!("{}/contents/{}", base(repo)?, segs(w.path)?);
        let v = self
            .send_json(repo, Method::PUT, &path, &body, &what)
            .await?;
        Ok(FileCommit {
            commit_sha: text(&v["commit"]["sha"]),
            file_sha: v["content"]["sha"].as_str().map(str::to_owned),
        })
    }

    pub(crate) async fn remove_file(
        &self,
        repo: &RepoRef,
        path: &str,
        message: &str,
        sha: &str,
        branch: &str,
    ) -> Result<String, RepoHostError> {
        let what = format!("delete {path} from {repo}@{branch}");
        let body = json!({"message": message, "sha": sha, "branch": branch});
        let url = format!("{}/contents/{}", base(repo)?, segs(path)?);
        let v = self
            .send_json(repo, Method::DELETE, &url, &body, &what)
            .await?;
        Ok(text(&v["commit"]["sha"]))
    }

    pub(crate) async fn write_pull(
        &self,
        repo: &RepoRef,
        title: &str,
        head: &str,
        base_ref: &str,
        body: &str,
    ) -> Result<OpenedPull, RepoHostError> {
        let what = format!("open a pull request {head} -> {base_ref} in {repo}");
        let payload = json!({"title": title, "head": head, "base": base_ref, "body": body});
        let v = self
            .send_json(
                repo,
                Method::POST,
                &format!("{}/pulls", base(repo)?),
                &payload,
                &what,
            )
            .await?;
        Ok(OpenedPull {
            number: v["number"].as_u64().unwrap_or(0),
            url: text(&v["html_url"]),
        })
    }

    pub(crate) async fn write_merge(
        &self,
        repo: &RepoRef,
        number: u64,
        method: &str,
        head: Option<&str>,
    ) -> Result<MergeOutcome, RepoHostError> {
        let what = format!("merge pull request #{number} of {repo}");
        let path = format!("{}/pulls/{number}/merge", base(repo)?);
        let mut body = json!({"merge_method": method});
        if let Some(sha) = head {
            body["sha"] = json!(sha);
        }
        let v = self
            .send_json(repo, Method::PUT, &path, &body, &what)
            .await?;
        Ok(MergeOutcome {
            merged: v["merged"].as_bool().unwrap_or(false),
            sha: text(&v["sha"]),
            message: text(&v["message"]),
        })
    }

    pub(crate) async fn write_close(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<ClosedPull, RepoHostError> {
        let what = format!("close pull request #{number} of {repo}");
        let path = format!("{}/pulls/{number}", base(repo)?);
        let v = self
            .send_json(
                repo,
                Method::PATCH,
                &path,
                &json!({"state": "closed"}),
                &what,
            )
            .await?;
        Ok(ClosedPull {
            number: v["number"].as_u64().unwrap_or(number),
            state: text(&v["state"]),
            url: text(&v["html_url"]),
        })
    }

    pub(crate) async fn write_comment(
        &self,
        repo: &RepoRef,
        number: u64,
        body: &str,
    ) -> Result<PostedComment, RepoHostError> {
        let what = format!("comment on #{number} of {repo}");
        let path = format!("{}/issues/{number}/comments", base(repo)?);
        let v = self
            .send_json(repo, Method::POST, &path, &json!({"body": body}), &what)
            .await?;
        Ok(PostedComment {
            id: v["id"].as_u64().unwrap_or(0),
            url: text(&v["html_url"]),
        })
    }

    pub(crate) async fn write_dispatch(
        &self,
        repo: &RepoRef,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<(), RepoHostError> {
        let what = format!("dispatch workflow {workflow} on {repo}@{git_ref}");
        let path = format!(
            "{}/actions/workflows/{}/dispatches",
            base(repo)?,
            seg(workflow)?
        );
        let body = json!({"ref": git_ref, "inputs": inputs});
        self.send_json(repo, Method::POST, &path, &body, &what)
            .await
            .map(|_| ())
    }

    pub(crate) async fn write_rerun(
        &self,
        repo: &RepoRef,
        run_id: u64,
    ) -> Result<(), RepoHostError> {
        let what = format!("re-run the failed jobs of run {run_id} of {repo}");
        let path = format!("{}/actions/runs/{run_id}/rerun-failed-jobs", base(repo)?);
        self.send(repo, Method::POST, &path, None, &what)
            .await
            .map(|_| ())
    }
}
