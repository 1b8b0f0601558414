//! The repo write tools `write_repo_file`, `delete_repo_file`, `create_branch` and `open_pr`
//! (reference 2.3): content is written verbatim, through a new branch and a pull request by
//! default or to the default branch with `can_direct_write`; the workflow directory needs
//! the explicit opt-in; every flag comes from `repo_write_flags` at the one check.

use super::RepoCx;
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
use crate::service::repo::{Target, check_path, check_ref, host_error};

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
}

impl RepoCx<'_> {
    /// The checks every file change passes after the flags (asked at `gate_call`): arguments,
    /// the workflow opt-in (all before any GitHub call), then the mapped repository; then the work
    /// branch is cut in pr mode.
    async fn prepare_change(&self, p: &Plan<'_>) -> Result<Landed> {
        check_path(p.tool, "path", Some(p.path))?;
        check_ref(p.tool, "branch", p.branch)?;
        workflow_write_refusal(p.tool, p.path, p.allow_workflow_write)?;
        let target = self.repo_target(p.tool, p.namespace, p.selector).await?;
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
        if p.mode == WriteMode::Pr {
            let head = target
                .host
                .commit(&target.repo, &default_branch)
                .await
                .map_err(err)?;
            match target
                .host
                .create_branch(&target.repo, &branch, &head.commit.sha)
                .await
            {
                // A branch that already exists is fine: the caller named one to add to.
                Ok(()) | Err(RepoHostError::Rejected(_)) => {}
                Err(e) => return Err(err(e)),
            }
        }
        Ok(Landed {
            target,
            branch,
            default_branch,
        })
    }

    /// Opens the pull request of a pr-mode change.
    async fn open_change_pr(&self, p: &Plan<'_>, landed: &Landed, body: &str) -> Result<Value> {
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
            .map_err(|e| {
                host_error(
                    p.tool,
                    match e {
                        RepoHostError::Rejected(m) => RepoHostError::Rejected(format!(
                            "the commit landed on branch {} but the pull request could not be opened: {m}",
                            landed.branch
                        )),
                        other => other,
                    },
                )
            })?;
        Ok(json!({"number": pr.number, "url": pr.url}))
    }

    pub(crate) async fn write_repo_file(
        &self,
        caller: &Caller,
        a: WriteFileArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
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
        let landed = self.prepare_change(&plan).await?;
        let (t, err) = (&landed.target, |e| host_error(plan.tool, e));
        let existing = match t
            .host
            .contents(&t.repo, plan.path, Some(&landed.branch))
            .await
        {
            Ok(Contents::File(f)) => Some(f.sha),
            Ok(_) => {
                return Err(Error::Invalid(format!(
                    "{}: {} is a directory on {}@{}, not a file",
                    plan.tool,
                    plan.path,
                    t.full(),
                    landed.branch
                )));
            }
            Err(RepoHostError::NotFound(_)) => None,
            Err(e) => return Err(err(e)),
        };
        let commit = t
            .host
            .put_file(
                &t.repo,
                &FileWrite {
                    path: plan.path,
                    content: a.content.as_str(),
                    message: plan.message,
                    branch: &landed.branch,
                    sha: existing.as_deref(),
                },
            )
            .await
            .map_err(err)?;
        self.repo_reads.invalidate(&t.repo);
        let mut out = json!({"repo": t.full(), "mode": plan.mode.as_str(), "branch": landed.branch,
                             "path": plan.path, "commitSha": commit.commit_sha});
        if plan.mode == WriteMode::Direct {
            out["fileSha"] = json!(commit.file_sha);
        } else {
            let body = format!("Automated change to `{}` via Capsid.", plan.path);
            out["pr"] = self.open_change_pr(&plan, &landed, &body).await?;
        }
        if plan.allow_workflow_write {
            out["allow_workflow_write"] = json!(true);
        }
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

    pub(crate) async fn delete_repo_file(
        &self,
        caller: &Caller,
        a: DeleteFileArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
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
        let landed = self.prepare_change(&plan).await?;
        let (t, err) = (&landed.target, |e| host_error(plan.tool, e));
        // GitHub's delete needs the current blob, so a missing file is an error, not a no-op.
        let sha = match t
            .host
            .contents(&t.repo, plan.path, Some(&landed.branch))
            .await
        {
            Ok(Contents::File(f)) => f.sha,
            Ok(_) => {
                return Err(Error::Invalid(format!(
                    "{}: {} is not a file on {}@{}",
                    plan.tool,
                    plan.path,
                    t.full(),
                    landed.branch
                )));
            }
            Err(RepoHostError::NotFound(_)) => {
                return Err(Error::NotFound(format!(
                    "{}: {} does not exist on {}@{}",
                    plan.tool,
                    plan.path,
                    t.full(),
                    landed.branch
                )));
            }
            Err(e) => return Err(err(e)),
        };
        let commit = t
            .host
            .delete_file(&t.repo, plan.path, plan.message, &sha, &landed.branch)
            .await
            .map_err(err)?;
        self.repo_reads.invalidate(&t.repo);
        let mut out = json!({"repo": t.full(), "mode": plan.mode.as_str(), "branch": landed.branch,
                             "path": plan.path, "commitSha": commit});
        if plan.mode == WriteMode::Pr {
            let body = format!("Delete `{}` via Capsid.", plan.path);
            out["pr"] = self.open_change_pr(&plan, &landed, &body).await?;
        }
        if plan.allow_workflow_write {
            out["allow_workflow_write"] = json!(true);
        }
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

    pub(crate) async fn create_branch(
        &self,
        caller: &Caller,
        a: CreateBranchArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        const TOOL: &str = "create_branch";
        let (ns, sel) = (a.namespace.as_str(), a.repo.as_ref().map(|r| r.as_str()));
        let branch = a.branch.as_str();
        check_ref(TOOL, "branch", Some(branch))?;
        let from = a.from.as_ref().map(|f| f.as_str());
        check_ref(TOOL, "from", from)?;
        let t = self.repo_target(TOOL, ns, sel).await?;
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
        let out = json!({"repo": t.full(), "branch": branch, "from": base, "sha": sha});
        self.record_repo_mutation(caller, TOOL, ns, None, &t.repo, out)
            .await
    }

    pub(crate) async fn open_pr(
        &self,
        caller: &Caller,
        a: OpenPrArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        const TOOL: &str = "open_pr";
        let (ns, sel) = (a.namespace.as_str(), a.repo.as_ref().map(|r| r.as_str()));
        let head = a.head.as_str();
        check_ref(TOOL, "head", Some(head))?;
        let base = a.base.as_ref().map(|b| b.as_str());
        check_ref(TOOL, "base", base)?;
        if a.title.as_str().trim().is_empty() {
            return Err(Error::Invalid(format!("{TOOL}: title is empty")));
        }
        let t = self.repo_target(TOOL, ns, sel).await?;
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
        let out = json!({"repo": t.full(), "number": pr.number, "url": pr.url, "head": head, "base": base});
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
    fn workflows_need_the_opt_in() {
        assert!(workflow_write_refusal("t", ".github/workflows/ci.yml", false).is_err());
        assert!(workflow_write_refusal("t", ".github/workflows/ci.yml", true).is_ok());
        assert!(workflow_write_refusal("t", ".github/CODEOWNERS", false).is_ok());
        assert!(workflow_write_refusal("t", "src/a.rs", false).is_ok());
    }
}
