//! The fake's Actions endpoints: workflow runs (listed newest first, filtered by branch or
//! head sha), their jobs and steps, job logs behind a redirect, re-runs, and
//! `workflow_dispatch` (refused with GitHub's 422 for a workflow without the trigger).

use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::auth::{message, reply};
use super::model::{Repo, Run, State};

fn q<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A run as GitHub shows it.
pub fn run_json(full: &str, r: &Run) -> Value {
    json!({"id": r.id, "name": r.name, "path": r.path, "head_sha": r.head_sha, "head_branch": r.head_branch,
           "status": r.status, "conclusion": r.conclusion, "event": r.event, "created_at": r.created_at,
           "html_url": format!("https://github.com/{full}/actions/runs/{}", r.id)})
}

/// `/repos/{owner}/{repo}/actions/...`.
#[allow(clippy::too_many_arguments)]
pub fn route(
    repo: &mut Repo,
    url: &str,
    m: &str,
    tail: &[&str],
    query: &[(String, String)],
    body: &Value,
    fresh: u64,
    date: &str,
) -> Response {
    let full = repo_name(repo);
    let run_of = |id: &str| id.parse::<u64>().ok();
    match (m, tail) {
        ("GET", ["runs"]) => {
            let per_page = q(query, "per_page")
                .and_then(|p| p.parse().ok())
                .unwrap_or(30usize);
            let mut runs: Vec<&Run> = repo
                .runs
                .iter()
                .filter(|r| q(query, "branch").is_none_or(|b| r.head_branch == b))
                .filter(|r| q(query, "head_sha").is_none_or(|s| r.head_sha == s))
                .collect();
            runs.sort_by_key(|r| std::cmp::Reverse(r.id));
            let total = runs.len();
            let list: Vec<Value> = runs
                .iter()
                .take(per_page)
                .map(|r| run_json(&full, r))
                .collect();
            reply(200, json!({"total_count": total, "workflow_runs": list}))
        }
        ("GET", ["runs", id]) => match repo.runs.iter().find(|r| Some(r.id) == run_of(id)) {
            Some(r) => reply(200, run_json(&full, r)),
            None => message(404, "Not Found"),
        },
        ("GET", ["runs", id, "jobs"]) => {
            match repo.runs.iter().find(|r| Some(r.id) == run_of(id)) {
                Some(r) => reply(
                    200,
                    json!({"total_count": r.jobs.len(), "jobs": r.jobs.iter().map(|j| json!({
                "id": j.id, "name": j.name, "conclusion": j.conclusion, "status": "completed",
                "steps": j.steps.iter().map(|s| json!({"name": s.name, "conclusion": s.conclusion,
                    "started_at": s.started_at, "completed_at": s.completed_at})).collect::<Vec<_>>()})).collect::<Vec<_>>()}),
                ),
                None => message(404, "Not Found"),
            }
        }
        ("POST", ["runs", id, "rerun-failed-jobs"]) => {
            match run_of(id).filter(|id| repo.runs.iter().any(|r| r.id == *id)) {
                Some(id) => {
                    repo.reruns.push(id);
                    reply(201, json!({}))
                }
                None => message(404, "Not Found"),
            }
        }
        ("GET", ["jobs", id, "logs"]) => {
            let known = repo
                .runs
                .iter()
                .flat_map(|r| &r.jobs)
                .any(|j| Some(j.id) == run_of(id));
            if !known {
                return message(404, "Not Found");
            }
            let mut response = axum::http::StatusCode::FOUND.into_response();
            if let Ok(v) = format!("{url}/_logs/{id}").parse() {
                response.headers_mut().insert(LOCATION, v);
            }
            response
        }
        ("POST", ["workflows", file, "dispatches"]) => {
            let Some((dispatchable, starts)) = repo.workflows.get(*file).copied() else {
                return message(404, "Not Found");
            };
            if !dispatchable {
                return message(422, "Workflow does not have 'workflow_dispatch' trigger");
            }
            let at = body["ref"].as_str().unwrap_or_default().to_owned();
            let Some(sha) = repo.resolve(&at) else {
                return message(422, &format!("No ref found for: {at}"));
            };
            repo.dispatches
                .push(((*file).to_owned(), at.clone(), body["inputs"].clone()));
            if starts {
                repo.runs.push(Run {
                    id: fresh,
                    name: file.trim_end_matches(".yml").to_owned(),
                    path: format!(".github/workflows/{file}"),
                    head_sha: sha,
                    head_branch: at,
                    status: "queued".into(),
                    conclusion: None,
                    event: "workflow_dispatch".into(),
                    created_at: date.to_owned(),
                    jobs: Vec::new(),
                });
            }
            reply(204, Value::Null)
        }
        _ => message(404, "Not Found"),
    }
}

fn repo_name(repo: &Repo) -> String {
    repo.full_name.clone()
}

/// `GET /_logs/{job}`: the download a log redirect points at (no credentials).
pub fn log_download(st: &State, rest: &[&str]) -> Response {
    let id = rest.first().and_then(|i| i.parse::<u64>().ok());
    let log = st
        .repos
        .values()
        .flat_map(|r| &r.runs)
        .flat_map(|r| &r.jobs)
        .find(|j| Some(j.id) == id)
        .map(|j| j.log.clone());
    match log {
        Some(text) => (axum::http::StatusCode::OK, text).into_response(),
        None => message(404, "Not Found"),
    }
}
