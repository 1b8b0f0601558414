//! GitHub's JSON, reduced to the port's values. Missing fields read as empty rather than
//! failing the call: GitHub omits what does not apply.

use base64::Engine;
use capsid_core::ports::{
    CheckRun, CommitDetail, CommitSummary, Comparison, FileChange, GitTree, GitTreeItem,
    IssueComment, IssueFacts, PullRequestFacts, PullSummary, RefHead, RepoHostError, RunJob,
    RunStep, TreeEntry, WorkflowRun,
};
use serde_json::Value;

pub fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn opt_text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The items of a JSON array (nothing when it is not one).
pub fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// GitHub's base64 (wrapped in newlines) decoded.
pub fn base64_bytes(v: &Value, what: &str) -> Result<Vec<u8>, RepoHostError> {
    let clean: String = v
        .as_str()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(clean)
        .map_err(|e| {
            RepoHostError::Failed(format!(
                "{what}: GitHub sent content that is not base64 ({e})"
            ))
        })
}

pub fn pull_facts(v: &Value) -> PullRequestFacts {
    let head_repo = opt_text(&v["head"]["repo"]["full_name"]);
    let base_repo = opt_text(&v["base"]["repo"]["full_name"]);
    PullRequestFacts {
        number: num(&v["number"]),
        merged: v["merged"].as_bool().unwrap_or(false) || v["merged_at"].is_string(),
        open: v["state"] == "open",
        commits: num(&v["commits"]),
        changed_files: num(&v["changed_files"]),
        head_ref: text(&v["head"]["ref"]),
        head_sha: text(&v["head"]["sha"]),
        head_is_fork: matches!((&head_repo, &base_repo), (Some(h), Some(b)) if !h.eq_ignore_ascii_case(b)),
        head_repo,
        base_ref: text(&v["base"]["ref"]),
        body: text(&v["body"]),
    }
}

pub fn pull_summary(v: &Value) -> PullSummary {
    PullSummary {
        number: num(&v["number"]),
        title: text(&v["title"]),
        head_ref: text(&v["head"]["ref"]),
        base_ref: text(&v["base"]["ref"]),
        updated_at: text(&v["updated_at"]),
        url: text(&v["html_url"]),
    }
}

pub fn check_run(v: &Value) -> CheckRun {
    CheckRun {
        status: text(&v["status"]),
        conclusion: opt_text(&v["conclusion"]),
    }
}

pub fn workflow_run(v: &Value) -> WorkflowRun {
    WorkflowRun {
        id: num(&v["id"]),
        name: text(&v["name"]),
        status: text(&v["status"]),
        conclusion: opt_text(&v["conclusion"]),
        head_sha: text(&v["head_sha"]),
        head_branch: opt_text(&v["head_branch"]),
        event: text(&v["event"]),
        created_at: text(&v["created_at"]),
        url: text(&v["html_url"]),
        path: text(&v["path"]),
    }
}

pub fn run_job(v: &Value) -> RunJob {
    RunJob {
        id: num(&v["id"]),
        name: text(&v["name"]),
        conclusion: opt_text(&v["conclusion"]),
        steps: items(&v["steps"])
            .iter()
            .map(|s| RunStep {
                name: text(&s["name"]),
                conclusion: opt_text(&s["conclusion"]),
                started_at: opt_text(&s["started_at"]),
                completed_at: opt_text(&s["completed_at"]),
            })
            .collect(),
    }
}

pub fn issue_comment(v: &Value) -> IssueComment {
    IssueComment {
        login: text(&v["user"]["login"]),
        body: text(&v["body"]),
        created_at: text(&v["created_at"]),
    }
}

/// Whether an item of GitHub's issue listing is a pull request (the listing returns both).
pub fn is_pull(v: &Value) -> bool {
    v.get("pull_request").is_some_and(|p| !p.is_null())
}

pub fn issue_facts(v: &Value) -> IssueFacts {
    IssueFacts {
        number: num(&v["number"]),
        id: num(&v["id"]),
        title: text(&v["title"]),
        body: text(&v["body"]),
        author: text(&v["user"]["login"]),
        association: text(&v["author_association"]).to_ascii_uppercase(),
        open: v["state"] == "open",
        labels: items(&v["labels"])
            .iter()
            .map(|l| {
                l["name"]
                    .as_str()
                    .or(l.as_str())
                    .unwrap_or_default()
                    .to_owned()
            })
            .filter(|l| !l.is_empty())
            .collect(),
        url: text(&v["html_url"]),
    }
}

pub fn tree_entry(v: &Value) -> TreeEntry {
    TreeEntry {
        path: text(&v["path"]),
        kind: text(&v["type"]),
        size: num(&v["size"]),
        sha: text(&v["sha"]),
    }
}

pub fn git_tree(v: &Value) -> GitTree {
    GitTree {
        items: items(&v["tree"])
            .iter()
            .map(|i| GitTreeItem {
                path: text(&i["path"]),
                kind: text(&i["type"]),
                sha: text(&i["sha"]),
                size: i["size"].as_u64(),
            })
            .collect(),
        truncated: v["truncated"].as_bool().unwrap_or(false),
    }
}

pub fn ref_head(v: &Value) -> RefHead {
    RefHead {
        name: text(&v["name"]),
        sha: text(&v["commit"]["sha"]),
    }
}

pub fn commit_summary(v: &Value) -> CommitSummary {
    CommitSummary {
        sha: text(&v["sha"]),
        author: text(&v["commit"]["author"]["name"]),
        date: text(&v["commit"]["author"]["date"]),
        committed_date: text(&v["commit"]["committer"]["date"]),
        message: text(&v["commit"]["message"]),
    }
}

pub fn file_changes(v: &Value) -> Vec<FileChange> {
    items(v)
        .iter()
        .map(|f| FileChange {
            path: text(&f["filename"]),
            status: text(&f["status"]),
            additions: num(&f["additions"]),
            deletions: num(&f["deletions"]),
            patch: opt_text(&f["patch"]),
        })
        .collect()
}

pub fn commit_detail(v: &Value) -> CommitDetail {
    CommitDetail {
        commit: commit_summary(v),
        parents: items(&v["parents"])
            .iter()
            .map(|p| text(&p["sha"]))
            .collect(),
        files: file_changes(&v["files"]),
    }
}

pub fn comparison(v: &Value) -> Comparison {
    Comparison {
        status: text(&v["status"]),
        ahead_by: num(&v["ahead_by"]),
        behind_by: num(&v["behind_by"]),
        total_commits: num(&v["total_commits"]),
        commits: items(&v["commits"]).iter().map(commit_summary).collect(),
        files: file_changes(&v["files"]),
    }
}
