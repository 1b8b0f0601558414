//! What a test arranges on the fake GitHub before calling tools, and what it reads back:
//! repositories with files, branches, commits, pull requests, comments, workflow runs,
//! injected faults, revoked or refused tokens.

use std::collections::BTreeMap;

use capsid_core::time::Clock;

use super::FakeGitHub;
use super::model::{Fault, Issue, Job, Pull, Repo, Run, Step};

/// A step of a job, for [`FakeGitHub::add_run`].
pub fn step(name: &str, conclusion: &str, started_at: &str, completed_at: &str) -> Step {
    Step {
        name: name.into(),
        conclusion: Some(conclusion.into()),
        started_at: Some(started_at.into()),
        completed_at: Some(completed_at.into()),
    }
}

/// A job, for [`FakeGitHub::add_run`] (its id is assigned there).
pub fn job(name: &str, conclusion: &str, steps: Vec<Step>, log: &str) -> Job {
    Job {
        id: 0,
        name: name.into(),
        conclusion: Some(conclusion.into()),
        steps,
        log: log.into(),
    }
}

impl FakeGitHub {
    fn with_repo<T>(&self, full: &str, f: impl FnOnce(&mut Repo) -> T) -> T {
        let mut st = self.shared.lock();
        let repo = st
            .repos
            .get_mut(full)
            .unwrap_or_else(|| panic!("the fake has no repository {full}"));
        f(repo)
    }

    fn now(&self) -> String {
        self.clock.now().to_string()
    }

    /// Adds `full` (the App installed for its owner) with `files` on its default branch
    /// `main`.
    pub fn add_repo(&self, full: &str, files: &[(&str, &str)]) {
        let date = self.now();
        let mut st = self.shared.lock();
        let owner = full.split('/').next().unwrap_or_default().to_owned();
        let id = 1000 + st.installations.len() as u64;
        st.installations.entry(owner).or_insert(id);
        let mut repo = Repo {
            full_name: full.into(),
            default_branch: "main".into(),
            ..Repo::default()
        };
        let tree: BTreeMap<String, Vec<u8>> = files
            .iter()
            .map(|(p, c)| ((*p).to_owned(), c.as_bytes().to_vec()))
            .collect();
        let sha = repo.commit(Vec::new(), tree, "Initial commit", &date);
        repo.branches.insert("main".into(), sha);
        st.repos.insert(full.into(), repo);
    }

    /// Makes `branch` (cut from the current default branch's head) the default branch of
    /// `full`.
    pub fn set_default_branch(&self, full: &str, branch: &str) {
        self.with_repo(full, |repo| {
            let head = repo.branches[&repo.default_branch].clone();
            repo.branches.insert(branch.to_owned(), head);
            repo.default_branch = branch.to_owned();
        });
    }

    /// Commits `files` (`None` deletes) on `branch` (cut from the default branch when
    /// missing); returns the commit.
    pub fn commit(
        &self,
        full: &str,
        branch: &str,
        files: &[(&str, Option<&str>)],
        message: &str,
    ) -> String {
        let date = self.now();
        self.with_repo(full, |repo| {
            let parent = repo
                .branches
                .get(branch)
                .or_else(|| repo.branches.get(&repo.default_branch))
                .cloned()
                .unwrap_or_default();
            let mut tree = repo.commits[&parent].tree.clone();
            for (path, content) in files {
                match content {
                    Some(c) => tree.insert((*path).to_owned(), c.as_bytes().to_vec()),
                    None => tree.remove(*path),
                };
            }
            let sha = repo.commit(vec![parent], tree, message, &date);
            repo.move_branch(branch, &sha);
            sha
        })
    }

    /// Makes the fake take on, from the bare git repository `git_dir`, a branch a pull request
    /// of `full` names when the fake lacks it (as GitHub has a branch pushed to it): its tree at
    /// the tip becomes one commit on the default branch's head, under the fake's own sha. The
    /// fake speaks REST, not git; this stands in for the push reaching it.
    pub fn mirror_branches_from(&self, full: &str, git_dir: &std::path::Path) {
        self.with_repo(full, |repo| repo.mirror = Some(git_dir.to_owned()));
    }

    /// Adds a tag at `at` (a branch or sha).
    pub fn tag(&self, full: &str, name: &str, at: &str) {
        self.with_repo(full, |repo| {
            let sha = repo.resolve(at).expect("tag target");
            repo.tags.insert(name.into(), sha);
        });
    }

    /// Opens a pull request `head` → `base`; returns its number.
    pub fn open_pull(&self, full: &str, head: &str, base: &str, title: &str, body: &str) -> u64 {
        let number = self.shared.lock().id();
        self.open_pull_numbered(full, number, head, base, title, body)
    }

    /// [`FakeGitHub::open_pull`] with the number given: GitHub numbers pull requests per
    /// repository, so two repositories may each have a `#number`.
    pub fn open_pull_numbered(
        &self,
        full: &str,
        number: u64,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> u64 {
        let date = self.now();
        self.with_repo(full, |repo| {
            let hs = repo.branches[head].clone();
            let bs = repo.branches[base].clone();
            let ba = repo.ancestors(&bs);
            let commits = repo.ancestors(&hs).difference(&ba).count() as u64;
            let changed =
                super::model::diff(&repo.commits[&bs].tree, &repo.commits[&hs].tree).len() as u64;
            repo.pulls.insert(
                number,
                Pull {
                    number,
                    title: title.into(),
                    head: head.into(),
                    head_sha: hs,
                    head_repo: full.into(),
                    base: base.into(),
                    body: body.into(),
                    state: "open".into(),
                    merged: false,
                    commits,
                    changed_files: changed,
                    updated_at: date,
                    merge_block: None,
                },
            );
        });
        number
    }

    /// Points pull request `number`'s head at `sha`, a commit made outside the fake (a local
    /// clone whose `HEAD` a hook reads), so a verdict posted now is pinned to it.
    pub fn set_pull_head(&self, full: &str, number: u64, sha: &str) {
        self.with_repo(full, |repo| {
            let pull = repo
                .pulls
                .get_mut(&number)
                .unwrap_or_else(|| panic!("the fake has no pull request {full}#{number}"));
            pull.head_sha = sha.to_owned();
        });
    }

    /// Marks a pull request merged (its head merged into its base).
    pub fn merge(&self, full: &str, number: u64) {
        let date = self.now();
        self.with_repo(full, |repo| {
            let p = repo.pulls[&number].clone();
            let base = repo.branches[&p.base].clone();
            let tree = repo.commits[&p.head_sha].tree.clone();
            let sha = repo.commit(vec![base, p.head_sha.clone()], tree, "merge", &date);
            repo.branches.insert(p.base.clone(), sha);
            let pull = repo.pulls.get_mut(&number).expect("pull");
            pull.state = "closed".into();
            pull.merged = true;
        });
    }

    /// Makes a pull request's head look like it lives on a fork (`""`: a fork since deleted,
    /// whose repository GitHub no longer names).
    pub fn fork_head(&self, full: &str, number: u64, fork: &str) {
        self.with_repo(full, |repo| {
            if let Some(p) = repo.pulls.get_mut(&number) {
                p.head_repo = fork.into();
            }
        });
    }

    /// Opens an issue by `author` (a member of the repository's organisation) with `labels`;
    /// returns its number.
    pub fn open_issue(
        &self,
        full: &str,
        title: &str,
        body: &str,
        author: &str,
        labels: &[&str],
    ) -> u64 {
        self.open_issue_as(full, title, body, author, "MEMBER", labels)
    }

    /// [`FakeGitHub::open_issue`] by an author GitHub relates to the repository as
    /// `association` (`OWNER`, `MEMBER`, `COLLABORATOR`, `CONTRIBUTOR`, `NONE`, ...).
    pub fn open_issue_as(
        &self,
        full: &str,
        title: &str,
        body: &str,
        author: &str,
        association: &str,
        labels: &[&str],
    ) -> u64 {
        let date = self.now();
        let number = self.shared.lock().id();
        self.with_repo(full, |repo| {
            repo.issues.insert(
                number,
                Issue {
                    number,
                    id: 900_000 + number,
                    title: title.into(),
                    body: body.into(),
                    author: author.into(),
                    association: association.into(),
                    state: "open".into(),
                    labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                    created_at: date,
                },
            );
        });
        number
    }

    fn with_issue(&self, full: &str, number: u64, f: impl FnOnce(&mut Issue)) {
        self.with_repo(full, |repo| {
            f(repo
                .issues
                .get_mut(&number)
                .unwrap_or_else(|| panic!("the fake has no issue {full}#{number}")));
        });
    }

    /// Closes (or reopens) an issue.
    pub fn set_issue_state(&self, full: &str, number: u64, state: &str) {
        self.with_issue(full, number, |i| i.state = state.into());
    }

    /// Replaces an issue's labels.
    pub fn set_issue_labels(&self, full: &str, number: u64, labels: &[&str]) {
        self.with_issue(full, number, |i| {
            i.labels = labels.iter().map(|l| (*l).to_owned()).collect();
        });
    }

    /// Edits an issue's body.
    pub fn edit_issue_body(&self, full: &str, number: u64, body: &str) {
        self.with_issue(full, number, |i| i.body = body.into());
    }

    /// Deletes an issue (GitHub then answers 404 for it).
    pub fn delete_issue(&self, full: &str, number: u64) {
        self.with_repo(full, |repo| {
            repo.issues.remove(&number);
        });
    }

    /// A conversation comment on a pull request.
    pub fn comment(&self, full: &str, number: u64, login: &str, body: &str, created_at: &str) {
        let id = self.shared.lock().id();
        self.with_repo(full, |repo| {
            repo.comments.entry(number).or_default().push((
                id,
                login.into(),
                body.into(),
                created_at.into(),
            ));
        });
    }

    /// A completed workflow run on `branch`'s head (or on `sha` when it is a commit); its
    /// jobs get fresh ids. Returns the run id and the job ids.
    pub fn add_run(
        &self,
        full: &str,
        workflow: &str,
        at: &str,
        conclusion: Option<&str>,
        jobs: Vec<Job>,
    ) -> (u64, Vec<u64>) {
        let date = self.now();
        let mut st = self.shared.lock();
        let id = st.id();
        let jobs: Vec<Job> = jobs
            .into_iter()
            .map(|mut j| {
                j.id = st.id();
                j
            })
            .collect();
        let job_ids = jobs.iter().map(|j| j.id).collect();
        let repo = st.repos.get_mut(full).expect("repo");
        let sha = repo.resolve(at).expect("run target");
        let branch = if repo.branches.contains_key(at) {
            at.to_owned()
        } else {
            repo.default_branch.clone()
        };
        repo.runs.push(Run {
            id,
            name: workflow.trim_end_matches(".yml").into(),
            path: format!(".github/workflows/{workflow}"),
            head_sha: sha,
            head_branch: branch,
            status: if conclusion.is_some() {
                "completed"
            } else {
                "in_progress"
            }
            .into(),
            conclusion: conclusion.map(str::to_owned),
            event: "push".into(),
            created_at: date,
            jobs,
        });
        (id, job_ids)
    }

    /// A workflow file the repository has: whether it accepts `workflow_dispatch`, and
    /// whether a dispatch starts a run.
    pub fn workflow(&self, full: &str, file: &str, dispatchable: bool, starts_run: bool) {
        self.with_repo(full, |repo| {
            repo.workflows
                .insert(file.into(), (dispatchable, starts_run));
        });
    }

    /// Answers the next `times` requests matching `method` and `path_contains` with `status`.
    pub fn fault(
        &self,
        method: &str,
        path_contains: &str,
        status: u16,
        headers: &[(&str, &str)],
        body: &str,
        times: u32,
    ) {
        self.shared.lock().faults.push(Fault {
            method: method.into(),
            path_contains: path_contains.into(),
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            body: body.into(),
            remaining: times,
        });
    }

    /// Revokes every installation token handed out so far.
    pub fn revoke_tokens(&self) {
        for t in &mut self.shared.lock().issued {
            t.revoked = true;
        }
    }

    /// Refuses every installation token for `full` from now on.
    pub fn refuse_tokens(&self, full: &str) {
        self.shared.lock().refuse_tokens_for.insert(full.into());
    }

    /// Text of `path` on `branch`, if present.
    pub fn file(&self, full: &str, branch: &str, path: &str) -> Option<String> {
        self.with_repo(full, |repo| {
            let sha = repo.branches.get(branch)?;
            repo.commits[sha]
                .tree
                .get(path)
                .map(|b| String::from_utf8_lossy(b).into_owned())
        })
    }

    /// The commit `branch` points at.
    pub fn branch_head(&self, full: &str, branch: &str) -> Option<String> {
        self.with_repo(full, |repo| repo.branches.get(branch).cloned())
    }

    /// Branch names.
    pub fn branch_names(&self, full: &str) -> Vec<String> {
        self.with_repo(full, |repo| repo.branches.keys().cloned().collect())
    }

    /// Every pull request of `full` as `(number, state, head)`, by number.
    pub fn pulls(&self, full: &str) -> Vec<(u64, String, String)> {
        self.with_repo(full, |repo| {
            repo.pulls
                .values()
                .map(|p| (p.number, p.state.clone(), p.head.clone()))
                .collect()
        })
    }

    /// A pull request's `(state, merged, head, title)`.
    pub fn pull(&self, full: &str, number: u64) -> Option<(String, bool, String, String)> {
        self.with_repo(full, |repo| {
            repo.pulls
                .get(&number)
                .map(|p| (p.state.clone(), p.merged, p.head.clone(), p.title.clone()))
        })
    }

    /// The comments on a pull request, as text.
    pub fn comment_texts(&self, full: &str, number: u64) -> Vec<String> {
        self.with_repo(full, |repo| {
            repo.comments
                .get(&number)
                .map(|c| c.iter().map(|(_, _, b, _)| b.clone()).collect())
                .unwrap_or_default()
        })
    }

    /// Runs re-run through the API.
    pub fn reruns(&self, full: &str) -> Vec<u64> {
        self.with_repo(full, |repo| repo.reruns.clone())
    }

    /// Accepted workflow dispatches of `full`, as `(workflow file, ref, inputs)`, in order.
    pub fn dispatches(&self, full: &str) -> Vec<(String, String, serde_json::Value)> {
        self.with_repo(full, |repo| repo.dispatches.clone())
    }

    /// Runs of `full`, as `(id, event, head_branch)`.
    pub fn runs(&self, full: &str) -> Vec<(u64, String, String)> {
        self.with_repo(full, |repo| {
            repo.runs
                .iter()
                .map(|r| (r.id, r.event.clone(), r.head_branch.clone()))
                .collect()
        })
    }

    /// Makes GitHub refuse merging a pull request with `status` and `message` (405 for a
    /// conflict or branch protection, 409 for a moved head), as its API answers.
    pub fn block_merge(&self, full: &str, number: u64, status: u16, message: &str) {
        self.with_repo(full, |repo| {
            if let Some(p) = repo.pulls.get_mut(&number) {
                p.merge_block = Some((status, message.to_owned()));
            }
        });
    }

    /// Merges asked through the API: (number, merge_method, the head sha it had to match).
    pub fn merge_requests(&self, full: &str) -> Vec<(u64, String, Option<String>)> {
        self.with_repo(full, |repo| repo.merge_requests.clone())
    }

    /// Check runs on a commit.
    pub fn check_runs(&self, full: &str, sha: &str, runs: &[(&str, Option<&str>)]) {
        self.with_repo(full, |repo| {
            repo.check_runs.insert(
                sha.into(),
                runs.iter()
                    .map(|(s, c)| ((*s).into(), c.map(str::to_owned)))
                    .collect(),
            );
        });
    }

    /// How long new installation tokens live.
    pub fn token_ttl(&self, ms: i64) {
        self.shared.lock().token_ttl_ms = ms;
    }
}
