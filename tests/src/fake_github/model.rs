//! The fake GitHub's state: repositories as small git histories (commits holding whole
//! trees, branches and tags pointing at commits), pull requests, comments, workflow runs
//! with jobs and logs, issued installation tokens, and every call it answered.

use std::collections::{BTreeMap, BTreeSet};

use capsid_core::crypto::sha256_hex;
use capsid_core::time::Timestamp;

/// A commit: its whole tree.
#[derive(Clone, Debug)]
pub struct Commit {
    pub sha: String,
    pub parents: Vec<String>,
    pub tree: BTreeMap<String, Vec<u8>>,
    pub message: String,
    pub date: String,
}

/// A pull request.
#[derive(Clone, Debug)]
pub struct Pull {
    pub number: u64,
    pub title: String,
    pub head: String,
    pub head_sha: String,
    pub head_repo: String,
    pub base: String,
    pub body: String,
    pub state: String,
    pub merged: bool,
    pub commits: u64,
    pub changed_files: u64,
    pub updated_at: String,
    /// GitHub's refusal of a merge (status, message): conflicts, branch protection.
    pub merge_block: Option<(u16, String)>,
}

/// An issue (numbered from the same counter as pull requests, as GitHub numbers both).
#[derive(Clone, Debug)]
pub struct Issue {
    pub number: u64,
    pub id: u64,
    pub title: String,
    pub body: String,
    pub author: String,
    /// GitHub's `author_association` of the author.
    pub association: String,
    pub state: String,
    pub labels: Vec<String>,
    pub created_at: String,
}

/// A step of a job.
#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub conclusion: Option<String>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
}

/// A job of a run.
#[derive(Clone, Debug)]
pub struct Job {
    pub id: u64,
    pub name: String,
    pub conclusion: Option<String>,
    pub steps: Vec<Step>,
    pub log: String,
}

/// A workflow run.
#[derive(Clone, Debug)]
pub struct Run {
    pub id: u64,
    pub name: String,
    pub path: String,
    pub head_sha: String,
    pub head_branch: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub event: String,
    pub created_at: String,
    pub jobs: Vec<Job>,
}

/// One repository.
#[derive(Clone, Debug, Default)]
pub struct Repo {
    pub full_name: String,
    pub default_branch: String,
    pub commits: BTreeMap<String, Commit>,
    pub branches: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    pub pulls: BTreeMap<u64, Pull>,
    pub issues: BTreeMap<u64, Issue>,
    pub comments: BTreeMap<u64, Vec<(u64, String, String, String)>>,
    pub runs: Vec<Run>,
    /// Workflow file → (accepts workflow_dispatch, a dispatch starts a run).
    pub workflows: BTreeMap<String, (bool, bool)>,
    pub check_runs: BTreeMap<String, Vec<(String, Option<String>)>>,
    pub reruns: Vec<u64>,
    /// Merges asked through the API: (number, merge_method, the `sha` it had to match).
    pub merge_requests: Vec<(u64, String, Option<String>)>,
    /// Accepted `workflow_dispatch` requests: (workflow file, ref, inputs), in order.
    pub dispatches: Vec<(String, String, serde_json::Value)>,
    /// A bare git repository whose branches the fake takes on when a pull request names a
    /// head it lacks ([`crate::fake_github::FakeGitHub::mirror_branches_from`]).
    pub mirror: Option<std::path::PathBuf>,
}

/// An installation token the fake handed out.
#[derive(Clone, Debug)]
pub struct Issued {
    pub token: String,
    pub repos: Vec<String>,
    pub expires_at: Timestamp,
    pub revoked: bool,
}

/// One request the fake answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Path and query.
    pub path: String,
    /// `jwt`, `token`, `none` or `bad` (refused credentials).
    pub auth: String,
}

/// A canned answer for matching requests, used `remaining` times.
#[derive(Clone, Debug)]
pub struct Fault {
    pub method: String,
    pub path_contains: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub remaining: u32,
}

/// Everything the fake knows.
#[derive(Debug, Default)]
pub struct State {
    pub repos: BTreeMap<String, Repo>,
    /// Owner → installation id.
    pub installations: BTreeMap<String, u64>,
    pub issued: Vec<Issued>,
    pub token_ttl_ms: i64,
    pub calls: Vec<Call>,
    pub faults: Vec<Fault>,
    /// Why credentials were refused, in order.
    pub refusals: Vec<String>,
    /// Repositories whose every installation token is refused (401).
    pub refuse_tokens_for: BTreeSet<String>,
    pub next_id: u64,
}

impl State {
    /// A fresh id (run ids, job ids, PR numbers, comment ids).
    pub fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// The sha of a blob's content.
pub fn blob_sha(bytes: &[u8]) -> String {
    sha256_hex(bytes)[..40].to_owned()
}

impl Repo {
    /// Takes on `branch` from the mirror (its tree at the tip, as one commit on the default
    /// branch's head), when the fake lacks it and the mirror has it; whether it did.
    pub fn take_branch_from_mirror(&mut self, branch: &str, date: &str) -> bool {
        if self.branches.contains_key(branch) {
            return false;
        }
        let Some(git_dir) = self.mirror.clone() else {
            return false;
        };
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .arg("--git-dir")
                .arg(&git_dir)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| o.stdout)
        };
        let at = format!("refs/heads/{branch}");
        let Some(listed) = git(&["ls-tree", "-r", "-z", "--name-only", &at]) else {
            return false;
        };
        let mut tree = BTreeMap::new();
        for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let path = String::from_utf8_lossy(path).into_owned();
            let Some(content) = git(&["show", &format!("{at}:{path}")]) else {
                return false;
            };
            tree.insert(path, content);
        }
        let message = git(&["log", "-1", "--format=%s", &at])
            .map(|m| String::from_utf8_lossy(&m).trim().to_owned())
            .unwrap_or_else(|| branch.to_owned());
        let parent = self.branches[&self.default_branch].clone();
        let sha = self.commit(vec![parent], tree, &message, date);
        self.move_branch(branch, &sha);
        true
    }

    /// The commit a branch, tag, sha or unique sha prefix names.
    pub fn resolve(&self, name: &str) -> Option<String> {
        if let Some(sha) = self.branches.get(name).or_else(|| self.tags.get(name)) {
            return Some(sha.clone());
        }
        if self.commits.contains_key(name) {
            return Some(name.to_owned());
        }
        let hits: Vec<&String> = self
            .commits
            .keys()
            .filter(|s| name.len() >= 7 && s.starts_with(name))
            .collect();
        (hits.len() == 1).then(|| hits[0].clone())
    }

    /// Adds a commit on top of `parent` with `tree`.
    pub fn commit(
        &mut self,
        parents: Vec<String>,
        tree: BTreeMap<String, Vec<u8>>,
        message: &str,
        date: &str,
    ) -> String {
        let seed = format!("{parents:?}{tree:?}{message}{}", self.commits.len());
        let sha = sha256_hex(seed)[..40].to_owned();
        self.commits.insert(
            sha.clone(),
            Commit {
                sha: sha.clone(),
                parents,
                tree,
                message: message.to_owned(),
                date: date.to_owned(),
            },
        );
        sha
    }

    /// Points `branch` at `sha`; an open pull request whose head is `branch` follows it, as
    /// GitHub's does when a commit is pushed to its head.
    pub fn move_branch(&mut self, branch: &str, sha: &str) {
        self.branches.insert(branch.to_owned(), sha.to_owned());
        for pull in self.pulls.values_mut() {
            if pull.head == branch && pull.state == "open" {
                pull.head_sha = sha.to_owned();
            }
        }
    }

    /// Every commit reachable from `sha`.
    pub fn ancestors(&self, sha: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![sha.to_owned()];
        while let Some(s) = todo.pop() {
            if let Some(c) = self.commits.get(&s)
                && seen.insert(s.clone())
            {
                todo.extend(c.parents.iter().cloned());
            }
        }
        seen
    }

    /// Commits reachable from `sha`, newest first (first-parent order, then the rest).
    pub fn history(&self, sha: &str) -> Vec<&Commit> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut todo = vec![sha.to_owned()];
        while let Some(s) = todo.pop() {
            if !seen.insert(s.clone()) {
                continue;
            }
            if let Some(c) = self.commits.get(&s) {
                out.push(c);
                for p in c.parents.iter().rev() {
                    todo.push(p.clone());
                }
            }
        }
        out
    }
}

/// The files that differ between two trees: (path, status, additions, deletions, patch).
pub fn diff(
    old: &BTreeMap<String, Vec<u8>>,
    new: &BTreeMap<String, Vec<u8>>,
) -> Vec<(String, String, u64, u64, String)> {
    let lines = |b: &[u8]| String::from_utf8_lossy(b).lines().count() as u64;
    let mut out = Vec::new();
    for (path, bytes) in new {
        match old.get(path) {
            None => out.push((
                path.clone(),
                "added".into(),
                lines(bytes),
                0,
                format!("@@ -0,0 +1 @@\n+{}", String::from_utf8_lossy(bytes)),
            )),
            Some(before) if before != bytes => out.push((
                path.clone(),
                "modified".into(),
                lines(bytes),
                lines(before),
                format!(
                    "@@ -1 +1 @@\n-{}\n+{}",
                    String::from_utf8_lossy(before),
                    String::from_utf8_lossy(bytes)
                ),
            )),
            Some(_) => {}
        }
    }
    for (path, before) in old {
        if !new.contains_key(path) {
            out.push((
                path.clone(),
                "removed".into(),
                0,
                lines(before),
                format!("@@ -1 +0,0 @@\n-{}", String::from_utf8_lossy(before)),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    #[test]
    fn a_branch_the_fake_lacks_is_taken_on_from_the_mirror_once() {
        let dir = tempfile::tempdir().expect("a folder");
        let (work, bare) = (dir.path().join("work"), dir.path().join("origin.git"));
        std::fs::create_dir_all(&work).expect("work");
        git(
            dir.path(),
            &["init", "-q", "--bare", "-b", "main", "origin.git"],
        );
        git(&work, &["init", "-q", "-b", "topic"]);
        std::fs::create_dir_all(work.join("specs")).expect("specs");
        std::fs::write(work.join("specs/a.md"), "# A\n").expect("a file");
        git(&work, &["add", "."]);
        git(
            &work,
            &[
                "-c",
                "user.name=T",
                "-c",
                "user.email=t@x",
                "commit",
                "-qm",
                "Spec A",
            ],
        );
        git(&work, &["push", "-q", &bare.display().to_string(), "topic"]);

        let mut repo = Repo {
            default_branch: "main".into(),
            ..Repo::default()
        };
        let root = repo.commit(Vec::new(), BTreeMap::new(), "Initial", "now");
        repo.branches.insert("main".into(), root.clone());
        assert!(
            !repo.take_branch_from_mirror("topic", "now"),
            "no mirror yet"
        );
        repo.mirror = Some(bare);
        assert!(
            !repo.take_branch_from_mirror("nope", "now"),
            "not in the mirror"
        );
        assert!(repo.take_branch_from_mirror("topic", "now"));
        let head = repo.branches["topic"].clone();
        let commit = &repo.commits[&head];
        assert_eq!(
            commit.tree.get("specs/a.md").map(Vec::as_slice),
            Some(&b"# A\n"[..])
        );
        assert_eq!(commit.message, "Spec A");
        assert_eq!(commit.parents, vec![root]);
        assert!(!repo.take_branch_from_mirror("topic", "now"), "once");
        assert_eq!(repo.branches["topic"], head);
    }
}
