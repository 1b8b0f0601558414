//! The repo write tools `write_repo_file`, `delete_repo_file`, `create_branch` and `open_pr`
//! (reference 2.3): content is written verbatim, through a new branch and a pull request by
//! default or to the default branch with `can_direct_write`; the workflow directory needs
//! the explicit opt-in; every flag comes from `repo_write_flags` at the one check.
//!
//! Pull-request mode never commits to the repository's default branch (as GitHub reports it)
//! nor to a protected branch name: that would be a direct write without `can_direct_write`.
//! A mutation that landed is audited even when a later step of the same call fails (the
//! commit is on GitHub whatever happens to the pull request).

use super::RepoCx;
use super::answer::{BranchCreated, FileChanged, PrOpened, PullOpened};
use crate::service::Area;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::guards::is_workflow_path;
use crate::ports::{Contents, FileWrite, RepoHostError};
use crate::service::Confirmer;
use crate::service::repo::args::{
    CreateBranchArgs, DeleteFileArgs, OpenPrArgs, WriteFileArgs, WriteMode,
};
use crate::service::repo::{Target, amend, check_path, check_ref, host_error};

/// A branch-name fragment from a path.
fn branch_slug(path: &str) -> String {
    let mut slug = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(40).collect();
    let slug = slug.trim_end_matches('-').to_owned();
    if slug.is_empty() { "file".into() } else { slug }
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The workflow directory is code CI runs with the repository's secrets: refused without
/// the explicit opt-in (which itself needs `can_write_workflows`).
pub(crate) fn workflow_write_refusal(tool: &str, path: &str, allow: bool) -> Result<()> {
    if allow || !is_workflow_path(path) {
        return Ok(());
    }
    Err(Error::Forbidden(format!(
        "{tool} refuses: {path} is under .github/workflows/, and a workflow is code CI executes with this repo's secrets in scope, not ordinary file content. Pass allow_workflow_write: true to write it anyway (needs can_write_workflows; audit-logged)."
    )))
}

/// Branch names a pull-request-mode change never commits to, besides the repository's
/// default branch.
pub const PROTECTED_BRANCHES: [&str; 2] = ["main", "master"];

/// Why a pull-request-mode change may not commit to `branch` of a repository whose default
/// branch is `default_branch`: it is that default branch or a protected branch name.
pub(crate) fn pr_branch_refusal(tool: &str, branch: &str, default_branch: &str) -> Result<()> {
    let what = if branch == default_branch {
        "the repository's default branch"
    } else if PROTECTED_BRANCHES.contains(&branch) {
        "a protected branch"
    } else {
        return Ok(());
    };
    Err(Error::Forbidden(format!(
        "{tool} refuses: branch {branch} is {what}, and mode \"pr\" commits to a work branch and opens a pull request a human reviews. Name another branch (or none, for a fresh one), or pass mode: \"direct\" to commit to {default_branch} (needs can_direct_write)."
    )))
}

/// How a file change lands, decided before anything is written.
struct Plan<'a> {
    tool: &'static str,
    namespace: &'a str,
    selector: Option<&'a str>,
    path: &'a str,
    message: &'a str,
    mode: WriteMode,
    branch: Option<&'a str>,
    allow_workflow_write: bool,
}

/// Where the change went.
struct Landed {
    target: Target,
    branch: String,
    default_branch: String,
    /// The sha a work branch still to be cut starts from (pr mode with no branch named: the
    /// file is read on the default branch first, so a doomed call cuts nothing).
    cut_from: Option<String>,
    /// Whether this call created the work branch (a mutation already on GitHub).
    created_branch: bool,
    /// The commit, once made (a mutation already on GitHub, audited even when a later step
    /// fails).
    commit_sha: Option<String>,
}

/// What a file change's steps landed after the commit.
struct Committed {
    /// The commit.
    commit_sha: String,
    /// Direct `write_repo_file`: the file's new blob sha.
    file_sha: Option<Option<String>>,
    /// pr mode: the pull request.
    pr: Option<PullOpened>,
}

impl Landed {
    /// The ref the file is read at before the change: the work branch, or the default branch
    /// it is still to be cut from.
    fn read_ref(&self) -> &str {
        if self.cut_from.is_some() {
            &self.default_branch
        } else {
            &self.branch
        }
    }
}

impl RepoCx<'_> {
    /// The checks every file change passes after the flags (asked at `gate_call`): arguments,
    /// the workflow opt-in (all before any GitHub call), then the mapped repository and its
    /// default branch, which pr mode never commits to; a branch the caller named is cut now
    /// (or found to exist), a fresh one by [`RepoCx::cut_fresh_branch`] once the file was read.
    async fn prepare_change(&self, caller: &Caller, p: &Plan<'_>) -> Result<Landed> {
        check_path(p.tool, "path", Some(p.path))?;
        check_ref(p.tool, "branch", p.branch)?;
        workflow_write_refusal(p.tool, p.path, p.allow_workflow_write)?;
        let target = self
            .repo_target(caller, p.tool, p.namespace, p.selector)
            .await?;
        let default_branch = self.default_branch(p.tool, &target).await?;
        let err = |e| host_error(p.tool, e);
        let branch = match (p.mode, p.branch) {
            (WriteMode::Direct, b) => b.unwrap_or(&default_branch).to_owned(),
            (WriteMode::Pr, Some(b)) => b.to_owned(),
            (WriteMode::Pr, None) => {
                let prefix = if p.tool == "delete_repo_file" {
                    "capsid/rm-"
                } else {
                    "capsid/"
                };
                let stamp = u64::try_from(self.now().as_millis()).unwrap_or(0);
                format!("{prefix}{}-{}", branch_slug(p.path), base36(stamp))
            }
        };
        let mut landed = Landed {
            target,
            branch,
            default_branch,
            cut_from: None,
            created_branch: false,
            commit_sha: None,
        };
        if p.mode == WriteMode::Pr {
            pr_branch_refusal(p.tool, &landed.branch, &landed.default_branch)?;
            let t = &landed.target;
            let head = t
                .host
                .commit(&t.repo, &landed.default_branch)
                .await
                .map_err(err)?;
            landed.cut_from = Some(head.commit.sha);
            if p.branch.is_some() {
                self.cut_fresh_branch(p, &mut landed).await?;
            }
        }
        Ok(landed)
    }

    /// Cuts the work branch when it is still to be cut. One that already exists is fine: the
    /// caller named it to add to.
    async fn cut_fresh_branch(&self, p: &Plan<'_>, landed: &mut Landed) -> Result<()> {
        let Some(sha) = landed.cut_from.take() else {
            return Ok(());
        };
        let t = &landed.target;
        match t.host.create_branch(&t.repo, &landed.branch, &sha).await {
            Ok(()) => landed.created_branch = true,
            Err(RepoHostError::Rejected(_)) => {}
            Err(e) => return Err(host_error(p.tool, e)),
        }
        Ok(())
    }

    /// Opens the pull request of a pr-mode change.
    async fn open_change_pr(
        &self,
        p: &Plan<'_>,
        landed: &Landed,
        body: &str,
    ) -> Result<PullOpened> {
        let fallback = if p.tool == "delete_repo_file" {
            format!("Delete {}", p.path)
        } else {
            format!("Update {}", p.path)
        };
        let title = p.message.lines().next().filter(|l| !l.trim().is_empty());
        let pr = landed
            .target
            .host
            .create_pull(
                &landed.target.repo,
                title.unwrap_or(&fallback),
                &landed.branch,
                &landed.default_branch,
                body,
            )
            .await
            .map_err(|e| match e {
                RepoHostError::Rejected(m) => host_error(
                    p.tool,
                    RepoHostError::Rejected(format!(
                        "the commit landed on branch {} but the pull request could not be opened: {m}",
                        landed.branch
                    )),
                ),
                other => amend(
                    host_error(p.tool, other),
                    &format!(
                        "(the commit landed on branch {}; the pull request could not be opened)",
                        landed.branch
                    ),
                ),
            })?;
        Ok(PullOpened {
            number: pr.number,
            url: pr.url,
        })
    }

    pub(crate) async fn write_repo_file(
        &self,
        caller: &Caller,
        a: WriteFileArgs,
        _: &dyn Confirmer,
    ) -> Result<FileChanged> {
        let plan = Plan {
            tool: "write_repo_file",
            namespace: a.namespace.as_str(),
            selector: a.repo.as_ref().map(|r| r.as_str()),
            path: a.path.as_str(),
            message: a.message.as_str(),
            mode: a.mode.unwrap_or_default(),
            branch: a.branch.as_ref().map(|b| b.as_str()),
            allow_workflow_write: a.allow_workflow_write == Some(true),
        };
        let mut landed = self.prepare_change(caller, &plan).await?;
        let steps = self
            .write_steps(&plan, &mut landed, a.content.as_str())
            .await;
        self.finish_change(caller, &plan, &landed, steps).await
    }

    /// `write_repo_file` after the branch: the commit (kept in `landed` as it lands), then
    /// (pr mode) the pull request.
    async fn write_steps(
        &self,
        plan: &Plan<'_>,
        landed: &mut Landed,
        content: &str,
    ) -> Result<Committed> {
        let err = |e| host_error(plan.tool, e);
        let t = &landed.target;
        let existing = match t
            .host
            .contents(&t.repo, plan.path, Some(landed.read_ref()))
            .await
        {
            Ok(Contents::File(f)) => Some(f.sha),
            Ok(_) => {
                return Err(Error::Invalid(format!(
                    "{}: {} is a directory on {}@{}, not a file",
                    plan.tool,
                    plan.path,
                    t.full(),
                    landed.read_ref()
                )));
            }
            Err(RepoHostError::NotFound(_)) => None,
            Err(e) => return Err(err(e)),
        };
        self.cut_fresh_branch(plan, landed).await?;
        let t = &landed.target;
        let commit = t
            .host
            .put_file(
                &t.repo,
                &FileWrite {
                    path: plan.path,
                    content,
                    message: plan.message,
                    branch: &landed.branch,
                    sha: existing.as_deref(),
                },
            )
            .await
            .map_err(err)?;
        self.repo_reads.invalidate(&t.repo);
        landed.commit_sha = Some(commit.commit_sha.clone());
        let mut done = Committed {
            commit_sha: commit.commit_sha,
            file_sha: None,
            pr: None,
        };
        if plan.mode == WriteMode::Direct {
            done.file_sha = Some(commit.file_sha);
        } else {
            let body = format!("Automated change to `{}` via Capsid.", plan.path);
            done.pr = Some(self.open_change_pr(plan, landed, &body).await?);
        }
        Ok(done)
    }

    /// Audits a file change: the whole result when every step succeeded; what landed and the
    /// step that failed when a later step failed after a mutation reached GitHub (the error
    /// then goes back to the caller, with the audit row written); nothing when nothing landed.
    async fn finish_change(
        &self,
        caller: &Caller,
        plan: &Plan<'_>,
        landed: &Landed,
        steps: Result<Committed>,
    ) -> Result<FileChanged> {
        let t = &landed.target;
        match steps {
            Ok(done) => {
                let out = FileChanged {
                    repo: t.full(),
                    mode: plan.mode.as_str(),
                    branch: landed.branch.clone(),
                    path: plan.path.to_owned(),
                    commit_sha: done.commit_sha,
                    file_sha: done.file_sha,
                    pr: done.pr,
                    allow_workflow_write: plan.allow_workflow_write.then_some(true),
                    audit_warning: None,
                };
                self.record_repo_mutation(
                    caller,
                    plan.tool,
                    plan.namespace,
                    Some(plan.path),
                    &t.repo,
                    out,
                )
                .await
            }
            Err(e) if landed.created_branch || landed.commit_sha.is_some() => {
                self.repo_reads.invalidate(&t.repo);
                let mut out = json!({"repo": t.full(), "mode": plan.mode.as_str(),
                                     "branch": landed.branch, "path": plan.path});
                if let Some(sha) = &landed.commit_sha {
                    out["commitSha"] = json!(sha);
                }
                out["created_branch"] = json!(landed.created_branch);
                out["error"] = json!(e.to_string());
                let recorded = self
                    .record_repo_mutation(
                        caller,
                        plan.tool,
                        plan.namespace,
                        Some(plan.path),
                        &t.repo,
                        out,
                    )
                    .await?;
                Err(
                    match recorded.get("audit_warning").and_then(Value::as_str) {
                        Some(warning) => amend(e, warning),
                        None => e,
                    },
                )
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn delete_repo_file(
        &self,
        caller: &Caller,
        a: DeleteFileArgs,
        _: &dyn Confirmer,
    ) -> Result<FileChanged> {
        let plan = Plan {
            tool: "delete_repo_file",
            namespace: a.namespace.as_str(),
            selector: a.repo.as_ref().map(|r| r.as_str()),
            path: a.path.as_str(),
            message: a.message.as_str(),
            mode: a.mode.unwrap_or_default(),
            branch: a.branch.as_ref().map(|b| b.as_str()),
            allow_workflow_write: a.allow_workflow_write == Some(true),
        };
        let mut landed = self.prepare_change(caller, &plan).await?;
        let steps = self.delete_steps(&plan, &mut landed).await;
        self.finish_change(caller, &plan, &landed, steps).await
    }

    /// `delete_repo_file` after the branch: the deleting commit (kept in `landed` as it
    /// lands), then (pr mode) the pull request.
    async fn delete_steps(&self, plan: &Plan<'_>, landed: &mut Landed) -> Result<Committed> {
        let err = |e| host_error(plan.tool, e);
        let t = &landed.target;
        // GitHub's delete needs the current blob, so a missing file is an error, not a no-op.
        let sha = match t
            .host
            .contents(&t.repo, plan.path, Some(landed.read_ref()))
            .await
        {
            Ok(Contents::File(f)) => f.sha,
            Ok(_) => {
                return Err(Error::Invalid(format!(
                    "{}: {} is not a file on {}@{}",
                    plan.tool,
                    plan.path,
                    t.full(),
                    landed.read_ref()
                )));
            }
            Err(RepoHostError::NotFound(_)) => {
                return Err(Error::NotFound(format!(
                    "{}: {} does not exist on {}@{}",
                    plan.tool,
                    plan.path,
                    t.full(),
                    landed.read_ref()
                )));
            }
            Err(e) => return Err(err(e)),
        };
        self.cut_fresh_branch(plan, landed).await?;
        let t = &landed.target;
        let commit = t
            .host
            .delete_file(&t.repo, plan.path, plan.message, &sha, &landed.branch)
            .await
            .map_err(err)?;
        self.repo_reads.invalidate(&t.repo);
        landed.commit_sha = Some(commit.clone());
        let mut done = Committed {
            commit_sha: commit,
            file_sha: None,
            pr: None,
        };
        if plan.mode == WriteMode::Pr {
            let body = format!("Delete `{}` via Capsid.", plan.path);
            done.pr = Some(self.open_change_pr(plan, landed, &body).await?);
        }
        Ok(done)
    }

    pub(crate) async fn create_branch(
        &self,
        caller: &Caller,
        a: CreateBranchArgs,
        _: &dyn Confirmer,
    ) -> Result<BranchCreated> {
        const TOOL: &str = "create_branch";
        let (ns, sel) = (a.namespace.as_str(), a.repo.as_ref().map(|r| r.as_str()));
        let branch = a.branch.as_str();
        check_ref(TOOL, "branch", Some(branch))?;
        let from = a.from.as_ref().map(|f| f.as_str());
        check_ref(TOOL, "from", from)?;
        let t = self.repo_target(caller, TOOL, ns, sel).await?;
        let base = match from {
            Some(f) => f.to_owned(),
            None => self.default_branch(TOOL, &t).await?,
        };
        let sha = match t.host.commit(&t.repo, &base).await {
            Ok(c) => c.commit.sha,
            Err(RepoHostError::NotFound(_)) => {
                return Err(Error::NotFound(format!(
                    "{TOOL}: {base} does not resolve to a commit on {}",
                    t.full()
                )));
            }
            Err(e) => return Err(host_error(TOOL, e)),
        };
        match t.host.create_branch(&t.repo, branch, &sha).await {
            Ok(()) => {}
            Err(RepoHostError::Rejected(m)) => {
                return Err(Error::Conflict(format!(
                    "{TOOL}: {branch} could not be created on {} (it may already exist): {m}",
                    t.full()
                )));
            }
            Err(e) => return Err(host_error(TOOL, e)),
        }
        let out = BranchCreated {
            repo: t.full(),
            branch: branch.to_owned(),
            from: base,
            sha,
            audit_warning: None,
        };
        self.record_repo_mutation(caller, TOOL, ns, None, &t.repo, out)
            .await
    }

    pub(crate) async fn open_pr(
        &self,
        caller: &Caller,
        a: OpenPrArgs,
        _: &dyn Confirmer,
    ) -> Result<PrOpened> {
        const TOOL: &str = "open_pr";
        let (ns, sel) = (a.namespace.as_str(), a.repo.as_ref().map(|r| r.as_str()));
        let head = a.head.as_str();
        check_ref(TOOL, "head", Some(head))?;
        let base = a.base.as_ref().map(|b| b.as_str());
        check_ref(TOOL, "base", base)?;
        if a.title.as_str().trim().is_empty() {
            return Err(Error::Invalid(format!("{TOOL}: title is empty")));
        }
        let t = self.repo_target(caller, TOOL, ns, sel).await?;
        let base = match base {
            Some(b) => b.to_owned(),
            None => self.default_branch(TOOL, &t).await?,
        };
        let body = a.body.as_ref().map(|b| b.as_str()).unwrap_or_default();
        let pr = t
            .host
            .create_pull(&t.repo, a.title.as_str(), head, &base, body)
            .await
            .map_err(|e| host_error(TOOL, e))?;
        let out = PrOpened {
            repo: t.full(),
            number: pr.number,
            url: pr.url,
            head: head.to_owned(),
            base,
            audit_warning: None,
        };
        self.record_repo_mutation(caller, TOOL, ns, None, &t.repo, out)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_branch_names() {
        assert_eq!(branch_slug("src/lib.rs"), "src-lib-rs");
        assert_eq!(branch_slug("///"), "file");
        assert!(branch_slug(&"a/".repeat(60)).len() <= 40);
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }

    #[test]
    fn pr_mode_never_targets_the_default_or_a_protected_branch() {
        for (branch, default) in [
            ("main", "main"),
            ("trunk", "trunk"),
            ("master", "trunk"),
            ("main", "trunk"),
        ] {
            let err = pr_branch_refusal("write_repo_file", branch, default).unwrap_err();
            assert!(
                err.to_string().contains("can_direct_write")
                    && err.to_string().contains("mode: \"direct\""),
                "{branch} on {default}: {err}"
            );
        }
        for (branch, default) in [
            ("feature/x", "main"),
            ("main-2", "main"),
            ("capsid/x", "trunk"),
        ] {
            assert!(pr_branch_refusal("t", branch, default).is_ok(), "{branch}");
        }
    }

    #[test]
    fn workflows_need_the_opt_in() {
        assert!(workflow_write_refusal("t", ".github/workflows/ci.yml", false).is_err());
        assert!(workflow_write_refusal("t", ".github/workflows/ci.yml", true).is_ok());
        assert!(workflow_write_refusal("t", ".github/CODEOWNERS", false).is_ok());
        assert!(workflow_write_refusal("t", "src/a.rs", false).is_ok());
    }
}
