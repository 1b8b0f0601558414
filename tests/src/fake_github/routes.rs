//! The fake's repository endpoints: repository facts, contents (read, write, delete), trees,
//! blobs, refs, branches, tags, commits, comparisons, pull requests and their comments, in
//! GitHub's JSON shapes. Workflow endpoints are in `actions.rs`.

use std::collections::BTreeMap;

use axum::http::Method;
use axum::response::Response;
use base64::Engine;
use capsid_core::time::Timestamp;
use serde_json::{Value, json};

use super::auth::{message, reply};
use super::model::{Issue, Pull, Repo, State, blob_sha, diff};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn q<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn commit_json(repo: &Repo, sha: &str, with_files: bool) -> Value {
    let Some(c) = repo.commits.get(sha) else {
        return Value::Null;
    };
    let mut v = json!({"sha": c.sha, "parents": c.parents.iter().map(|p| json!({"sha": p})).collect::<Vec<_>>(),
        "commit": {"message": c.message, "author": {"name": "Capsid Test", "date": c.date},
                   "committer": {"name": "GitHub", "date": c.date}}});
    if with_files {
        let empty = BTreeMap::new();
        let parent = c
            .parents
            .first()
            .and_then(|p| repo.commits.get(p))
            .map_or(&empty, |p| &p.tree);
        v["files"] = files_json(parent, &c.tree);
    }
    v
}

fn files_json(old: &BTreeMap<String, Vec<u8>>, new: &BTreeMap<String, Vec<u8>>) -> Value {
    Value::Array(
        diff(old, new)
            .into_iter()
            .map(|(path, status, add, del, patch)| {
                json!({"filename": path, "status": status, "additions": add, "deletions": del,
                       "changes": add + del, "patch": patch})
            })
            .collect(),
    )
}

pub fn pull_json(full: &str, p: &Pull) -> Value {
    json!({"number": p.number, "title": p.title, "state": p.state, "merged": p.merged,
           "merged_at": if p.merged { json!(p.updated_at) } else { Value::Null },
           "body": p.body, "commits": p.commits, "changed_files": p.changed_files,
           "html_url": format!("https://github.com/{full}/pull/{}", p.number), "updated_at": p.updated_at,
           "head": {"ref": p.head, "sha": p.head_sha,
                    // GitHub names no repository for the head of a deleted fork.
                    "repo": if p.head_repo.is_empty() { Value::Null } else { json!({"full_name": p.head_repo}) }},
           "base": {"ref": p.base, "repo": {"full_name": full}}})
}

/// The children of directory `dir` in `tree`.
fn listing(tree: &BTreeMap<String, Vec<u8>>, dir: &str) -> Option<Vec<Value>> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut seen = BTreeMap::new();
    for (path, bytes) in tree {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            Some((sub, _)) => {
                seen.entry(format!("{prefix}{sub}")).or_insert_with(
                    || json!({"type": "dir", "size": 0, "sha": blob_sha(sub.as_bytes())}),
                );
            }
            None => {
                seen.insert(
                    path.clone(),
                    json!({"type": "file", "size": bytes.len(), "sha": blob_sha(bytes)}),
                );
            }
        }
    }
    if seen.is_empty() && !dir.is_empty() {
        return None;
    }
    Some(
        seen.into_iter()
            .map(|(path, mut v)| {
                v["name"] = json!(path.rsplit('/').next().unwrap_or(&path));
                v["path"] = json!(path);
                v
            })
            .collect(),
    )
}

/// A repository endpoint.
#[allow(clippy::too_many_arguments)]
pub fn repo(
    st: &mut State,
    url: &str,
    full: &str,
    method: &Method,
    rest: &[&str],
    query: &[(String, String)],
    body: &Value,
    now: Timestamp,
) -> Response {
    let fresh = st.id();
    let Some(repo) = st.repos.get_mut(full) else {
        return message(404, "Not Found");
    };
    let date = now.to_string();
    let m = method.as_str();
    match (m, rest) {
        ("GET", []) => reply(
            200,
            json!({"full_name": full, "name": full.split('/').nth(1),
            "default_branch": repo.default_branch, "private": true}),
        ),
        ("GET", ["contents", path @ ..]) => {
            let at = q(query, "ref").unwrap_or(&repo.default_branch).to_owned();
            let Some(sha) = repo.resolve(&at) else {
                return message(404, &format!("No commit found for the ref {at}"));
            };
            let tree = &repo.commits[&sha].tree;
            let path = path.join("/");
            if let Some(bytes) = tree.get(&path) {
                return reply(
                    200,
                    json!({"type": "file", "encoding": "base64", "path": path,
                    "name": path.rsplit('/').next(), "size": bytes.len(), "sha": blob_sha(bytes),
                    "content": b64(bytes).as_bytes().chunks(60).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join("\n")}),
                );
            }
            match listing(tree, &path) {
                Some(entries) => reply(200, Value::Array(entries)),
                None => message(404, "Not Found"),
            }
        }
        ("PUT" | "DELETE", ["contents", path @ ..]) => {
            let path = path.join("/");
            let branch = body["branch"]
                .as_str()
                .unwrap_or(&repo.default_branch)
                .to_owned();
            let Some(head) = repo.branches.get(&branch).cloned() else {
                return message(404, &format!("Branch {branch} not found"));
            };
            let mut tree = repo.commits[&head].tree.clone();
            let current = tree.get(&path).map(|b| blob_sha(b));
            let given = body["sha"].as_str();
            match (m, &current, given) {
                ("DELETE", None, _) => return message(404, "Not Found"),
                (_, Some(cur), Some(g)) if cur != g => {
                    return message(409, &format!("{path} does not match {g}"));
                }
                ("PUT", Some(_), None) => {
                    return message(422, "Invalid request.\n\n\"sha\" wasn't supplied.");
                }
                _ => {}
            }
            let content = if m == "PUT" {
                let text = body["content"].as_str().unwrap_or_default();
                let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(text) else {
                    return message(422, "content is not valid Base64");
                };
                tree.insert(path.clone(), bytes.clone());
                Some(bytes)
            } else {
                tree.remove(&path);
                None
            };
            let msg = body["message"].as_str().unwrap_or_default();
            let sha = repo.commit(vec![head], tree, msg, &date);
            repo.move_branch(&branch, &sha);
            let content = content.map(|b| json!({"path": path, "sha": blob_sha(&b)}));
            reply(
                if m == "PUT" && current.is_none() {
                    201
                } else {
                    200
                },
                json!({"content": content, "commit": {"sha": sha, "message": msg}}),
            )
        }
        ("GET", ["git", "trees", at]) => {
            let Some(sha) = repo.resolve(at) else {
                return message(404, "Not Found");
            };
            let tree = &repo.commits[&sha].tree;
            let mut items: Vec<Value> = Vec::new();
            let mut dirs = std::collections::BTreeSet::new();
            for (path, bytes) in tree {
                let mut acc = String::new();
                for part in path
                    .split('/')
                    .collect::<Vec<_>>()
                    .iter()
                    .rev()
                    .skip(1)
                    .rev()
                {
                    acc = if acc.is_empty() {
                        (*part).to_owned()
                    } else {
                        format!("{acc}/{part}")
                    };
                    dirs.insert(acc.clone());
                }
                items.push(json!({"path": path, "type": "blob", "sha": blob_sha(bytes), "size": bytes.len(), "mode": "100644"}));
            }
            items.extend(dirs.into_iter().map(|d| json!({"path": d, "type": "tree", "sha": blob_sha(d.as_bytes()), "mode": "040000"})));
            reply(200, json!({"sha": sha, "tree": items, "truncated": false}))
        }
        ("GET", ["git", "blobs", sha]) => {
            let found = repo
                .commits
                .values()
                .flat_map(|c| c.tree.values())
                .find(|b| blob_sha(b) == *sha);
            match found {
                Some(bytes) => reply(
                    200,
                    json!({"sha": sha, "size": bytes.len(), "encoding": "base64", "content": b64(bytes)}),
                ),
                None => message(404, "Not Found"),
            }
        }
        ("POST", ["git", "refs"]) => {
            let name = body["ref"]
                .as_str()
                .unwrap_or_default()
                .strip_prefix("refs/heads/")
                .unwrap_or_default()
                .to_owned();
            let sha = body["sha"].as_str().unwrap_or_default().to_owned();
            if repo.branches.contains_key(&name) {
                return message(422, "Reference already exists");
            }
            if name.is_empty() || !repo.commits.contains_key(&sha) {
                return message(422, "Object does not exist");
            }
            repo.branches.insert(name.clone(), sha.clone());
            reply(
                201,
                json!({"ref": format!("refs/heads/{name}"), "object": {"sha": sha, "type": "commit"}}),
            )
        }
        ("DELETE", ["git", "refs", "heads", branch @ ..]) => {
            match repo.branches.remove(&branch.join("/")) {
                Some(_) => reply(204, Value::Null),
                None => message(422, "Reference does not exist"),
            }
        }
        ("GET", [kind @ ("branches" | "tags")]) => {
            let map = if *kind == "branches" {
                &repo.branches
            } else {
                &repo.tags
            };
            reply(
                200,
                Value::Array(
                    map.iter()
                        .map(|(n, s)| json!({"name": n, "commit": {"sha": s}}))
                        .collect(),
                ),
            )
        }
        ("GET", ["commits"]) => {
            let at = q(query, "sha").unwrap_or(&repo.default_branch).to_owned();
            let per_page = q(query, "per_page")
                .and_then(|p| p.parse().ok())
                .unwrap_or(30usize);
            let Some(sha) = repo.resolve(&at) else {
                return message(404, "Not Found");
            };
            let list: Vec<Value> = repo
                .history(&sha)
                .iter()
                .take(per_page)
                .map(|c| commit_json(repo, &c.sha, false))
                .collect();
            reply(200, Value::Array(list))
        }
        ("GET", ["commits", at]) => match repo.resolve(at) {
            Some(sha) => reply(200, commit_json(repo, &sha, true)),
            None => message(422, &format!("No commit found for SHA: {at}")),
        },
        ("GET", ["commits", at, "check-runs"]) => {
            let runs = repo.check_runs.get(*at).cloned().unwrap_or_default();
            reply(
                200,
                json!({"total_count": runs.len(), "check_runs": runs.iter().map(|(s, c)| json!({"name": "ci", "status": s, "conclusion": c})).collect::<Vec<_>>()}),
            )
        }
        ("GET", ["compare", spec @ ..]) => {
            let spec = spec.join("/");
            let Some((b, h)) = spec.split_once("...") else {
                return message(404, "Not Found");
            };
            let (Some(bs), Some(hs)) = (repo.resolve(b), repo.resolve(h)) else {
                return message(404, "Not Found");
            };
            let (ba, ha) = (repo.ancestors(&bs), repo.ancestors(&hs));
            let ahead: Vec<Value> = repo
                .history(&hs)
                .iter()
                .rev()
                .filter(|c| !ba.contains(&c.sha))
                .map(|c| commit_json(repo, &c.sha, false))
                .collect();
            let behind = ba.difference(&ha).count();
            let status = match (ahead.len(), behind) {
                (0, 0) => "identical",
                (_, 0) => "ahead",
                (0, _) => "behind",
                _ => "diverged",
            };
            reply(
                200,
                json!({"status": status, "ahead_by": ahead.len(), "behind_by": behind, "total_commits": ahead.len(),
                              "commits": ahead, "files": files_json(&repo.commits[&bs].tree, &repo.commits[&hs].tree)}),
            )
        }
        ("GET", ["pulls"]) => {
            let head = q(query, "head").map(|h| h.split_once(':').map_or(h, |(_, b)| b).to_owned());
            let list: Vec<Value> = repo
                .pulls
                .values()
                .filter(|p| q(query, "state") != Some("open") || p.state == "open")
                .filter(|p| head.as_ref().is_none_or(|h| &p.head == h))
                .map(|p| pull_json(full, p))
                .collect();
            reply(200, Value::Array(list))
        }
        ("POST", ["pulls"]) => {
            let (head, base) = (
                body["head"].as_str().unwrap_or_default(),
                body["base"].as_str().unwrap_or_default(),
            );
            repo.take_branch_from_mirror(head, &date);
            let (Some(hs), Some(bs)) = (
                repo.branches.get(head).cloned(),
                repo.branches.get(base).cloned(),
            ) else {
                return message(422, "Validation Failed: head or base does not exist");
            };
            if repo
                .pulls
                .values()
                .any(|p| p.state == "open" && p.head == head)
            {
                return message(422, &format!("A pull request already exists for {head}."));
            }
            let ba = repo.ancestors(&bs);
            let commits = repo.ancestors(&hs).difference(&ba).count() as u64;
            if commits == 0 {
                return message(
                    422,
                    &format!("Validation Failed: No commits between {base} and {head}"),
                );
            }
            let changed = diff(&repo.commits[&bs].tree, &repo.commits[&hs].tree).len() as u64;
            let number = fresh;
            let pull = Pull {
                number,
                title: body["title"].as_str().unwrap_or_default().into(),
                head: head.into(),
                head_sha: hs,
                head_repo: full.into(),
                base: base.into(),
                body: body["body"].as_str().unwrap_or_default().into(),
                state: "open".into(),
                merged: false,
                commits,
                changed_files: changed,
                updated_at: date,
                merge_block: None,
            };
            let out = pull_json(full, &pull);
            repo.pulls.insert(number, pull);
            reply(201, out)
        }
        (_, ["pulls", n, tail @ ..]) => {
            let Some(number) = n.parse::<u64>().ok().filter(|n| repo.pulls.contains_key(n)) else {
                return message(404, "Not Found");
            };
            pull_route(repo, full, m, number, tail, body, &date)
        }
        ("GET", ["issues"]) => {
            // GitHub's listing holds pull requests too (marked `pull_request`), open ones by
            // default; `labels` names labels every item must carry.
            let state = q(query, "state").unwrap_or("open");
            let wanted: Vec<String> = q(query, "labels")
                .map(|l| l.split(',').map(|x| x.trim().to_lowercase()).collect())
                .unwrap_or_default();
            let mut list: Vec<Value> = repo
                .issues
                .values()
                .filter(|i| state == "all" || i.state == state)
                .filter(|i| {
                    wanted
                        .iter()
                        .all(|w| i.labels.iter().any(|l| l.to_lowercase() == *w))
                })
                .map(|i| issue_json(full, i))
                .collect();
            if wanted.is_empty() {
                list.extend(
                    repo.pulls
                        .values()
                        .filter(|p| state == "all" || p.state == state)
                        .map(|p| {
                            json!({"number": p.number, "id": p.number * 1000, "title": p.title,
                                   "body": p.body, "state": p.state, "user": {"login": "capsid-test[bot]"},
                                   "labels": [], "pull_request": {"url": format!("https://api.github.com/repos/{full}/pulls/{}", p.number)},
                                   "html_url": format!("https://github.com/{full}/pull/{}", p.number)})
                        }),
                );
            }
            // Pages as GitHub serves them: `per_page` (default 30, at most 100) items of page
            // `page` (from 1), oldest first.
            list.sort_by_key(|i| i["number"].as_u64().unwrap_or(0));
            let per_page = q(query, "per_page")
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(30)
                .clamp(1, 100);
            let page = q(query, "page")
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(1)
                .max(1);
            let list: Vec<Value> = list
                .into_iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .collect();
            reply(200, Value::Array(list))
        }
        ("GET", ["issues", n]) => match n.parse::<u64>().ok().and_then(|n| repo.issues.get(&n)) {
            Some(i) => reply(200, issue_json(full, i)),
            None => message(404, "Not Found"),
        },
        ("GET", ["issues", n, "comments"]) => {
            let list = repo
                .comments
                .get(&n.parse().unwrap_or(0))
                .cloned()
                .unwrap_or_default();
            reply(200, Value::Array(list.iter().map(|(id, login, body, at)| json!({"id": id, "user": {"login": login}, "body": body, "created_at": at})).collect()))
        }
        ("POST", ["issues", n, "comments"]) => {
            let Some(number) = n
                .parse::<u64>()
                .ok()
                .filter(|n| repo.pulls.contains_key(n) || repo.issues.contains_key(n))
            else {
                return message(404, "Not Found");
            };
            let text = body["body"].as_str().unwrap_or_default().to_owned();
            repo.comments.entry(number).or_default().push((
                fresh,
                "capsid-test[bot]".into(),
                text.clone(),
                date,
            ));
            reply(
                201,
                json!({"id": fresh, "body": text, "html_url": format!("https://github.com/{full}/pull/{number}#issuecomment-{fresh}")}),
            )
        }
        (_, ["actions", tail @ ..]) => {
            super::actions::route(repo, url, m, tail, query, body, fresh, &date)
        }
        _ => message(404, "Not Found"),
    }
}

/// An issue in GitHub's JSON shape.
pub fn issue_json(full: &str, i: &Issue) -> Value {
    json!({"number": i.number, "id": i.id, "title": i.title, "body": i.body, "state": i.state,
           "user": {"login": i.author}, "author_association": i.association, "created_at": i.created_at,
           "labels": i.labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
           "html_url": format!("https://github.com/{full}/issues/{}", i.number)})
}

fn pull_route(
    repo: &mut Repo,
    full: &str,
    m: &str,
    number: u64,
    tail: &[&str],
    body: &Value,
    date: &str,
) -> Response {
    match (m, tail) {
        ("GET", []) => reply(200, pull_json(full, &repo.pulls[&number])),
        ("GET", ["files"]) => {
            let p = &repo.pulls[&number];
            let base = repo.branches.get(&p.base).and_then(|s| repo.commits.get(s));
            match (base, repo.commits.get(&p.head_sha)) {
                (Some(b), Some(h)) => reply(200, files_json(&b.tree, &h.tree)),
                _ => reply(200, json!([])),
            }
        }
        ("PATCH", []) => {
            let p = repo.pulls.get_mut(&number).map(|p| {
                if body["state"] == "closed" {
                    p.state = "closed".into();
                }
                p.clone()
            });
            p.map_or_else(
                || message(404, "Not Found"),
                |p| reply(200, pull_json(full, &p)),
            )
        }
        ("PUT", ["merge"]) => {
            let p = repo.pulls[&number].clone();
            let method = body["merge_method"].as_str().unwrap_or("merge").to_owned();
            let sha = body["sha"].as_str().map(str::to_owned);
            repo.merge_requests.push((number, method, sha.clone()));
            if p.state != "open" {
                return message(405, "Pull Request is not mergeable");
            }
            if let Some((status, why)) = &p.merge_block {
                return message(*status, why);
            }
            if sha.as_ref().is_some_and(|s| *s != p.head_sha) {
                return message(
                    409,
                    "Head branch was modified. Review and try the merge again.",
                );
            }
            let (Some(base_sha), Some(head)) = (
                repo.branches.get(&p.base).cloned(),
                repo.commits.get(&p.head_sha).cloned(),
            ) else {
                return message(405, "Pull Request is not mergeable");
            };
            let msg = format!(
                "Merge pull request #{number} ({})",
                body["merge_method"].as_str().unwrap_or("merge")
            );
            let sha = repo.commit(vec![base_sha, head.sha.clone()], head.tree, &msg, date);
            repo.branches.insert(p.base.clone(), sha.clone());
            if let Some(pull) = repo.pulls.get_mut(&number) {
                pull.state = "closed".into();
                pull.merged = true;
            }
            reply(
                200,
                json!({"sha": sha, "merged": true, "message": "Pull Request successfully merged"}),
            )
        }
        _ => message(404, "Not Found"),
    }
}
