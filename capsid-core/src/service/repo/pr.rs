//! `manage_pr` and `delete_branch` (reference 2.3): merging (with `can_merge`), closing and
//! commenting (with `can_comment_pr`; a minted agent's verdict is recorded, `review.rs`) on
//! pull requests with the head-branch cleanup rules,
//! and deleting branches with the refusals that protect the default branch, the improve
//! loop's branches and branches with open pull requests.

use super::RepoCx;
use super::answer::{BranchDeleted, HeadCleanup, ManagePrAnswer, PrClosed, PrCommented, PrMerged};

use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::jobs::approval::{
    HEAD_REVIEWS_MAX, Standing, job_of_branch, standing_approval_excluding,
};
use crate::jobs::pipeline::{MERGE_REFUSED_ACTION, approve_command};
use crate::ports::RepoHostError;
use crate::service::repo::args::{DeleteBranchArgs, ManagePrArgs, PrAction};
use crate::service::repo::{IMPROVE_BRANCH_PREFIX, Target, check_positive, check_ref, host_error};
use crate::service::{Area, Confirmer};

fn cleanup(branch: Option<&str>, deleted: bool, note: Option<String>) -> HeadCleanup {
    HeadCleanup {
        head_branch: branch.map(str::to_owned),
        head_branch_deleted: deleted,
        head_branch_note: note,
    }
}

impl RepoCx<'_> {
    /// After a merge or close, deletes the head branch unless it is on a fork, is the base,
    /// is the default branch or belongs to the improve loop. Never fails the PR action, which
    /// already succeeded.
    async fn delete_head_branch(&self, t: &Target, number: u64) -> HeadCleanup {
        let pr = match t.host.pull_request(&t.repo, number).await {
            Ok(pr) => pr,
            Err(e) => {
                return cleanup(
                    None,
                    false,
                    Some(format!(
                        "could not read the PR to find its head branch ({e})"
                    )),
                );
            }
        };
        let branch = pr.head_ref.as_str();
        let full = t.full();
        let keep = |note: String| cleanup(Some(branch), false, Some(note));
        if let Some(head_repo) = pr
            .head_repo
            .as_deref()
            .filter(|h| !h.eq_ignore_ascii_case(&full))
        {
            return keep(format!(
                "head is on {head_repo}, not this repo, so it was left alone"
            ));
        }
        if pr.head_is_fork {
            return keep("head is on a fork, not this repo, so it was left alone".into());
        }
        // Fail closed: GitHub names no head repository when a fork was deleted, and a branch
        // of that name here would be someone else's.
        if pr.head_repo.is_none() {
            return keep(
                "the head's repository is unknown (a deleted fork?), so nothing was deleted".into(),
            );
        }
        if branch == pr.base_ref {
            return keep("head and base are the same branch, so nothing was deleted".into());
        }
        match t.host.repository(&t.repo).await {
            Ok(facts) if facts.default_branch == branch => {
                return keep("head is the default branch, which is never deleted".into());
            }
            Ok(_) => {}
            Err(e) => {
                return keep(format!(
                    "could not read the default branch ({e}), so nothing was deleted; the PR action itself succeeded"
                ));
            }
        }
        if branch.starts_with(IMPROVE_BRANCH_PREFIX) {
            return keep(format!(
                "head is under the improve loop's prefix ({IMPROVE_BRANCH_PREFIX}), which owns its own refs, so it was left alone"
            ));
        }
        match t.host.delete_branch(&t.repo, branch).await {
            Ok(()) => cleanup(Some(branch), true, None),
            Err(e) => keep(format!(
                "delete failed ({e}); the PR action itself succeeded"
            )),
        }
    }

    pub(crate) async fn manage_pr(
        &self,
        caller: &Caller,
        a: ManagePrArgs,
        _: &dyn Confirmer,
    ) -> Result<ManagePrAnswer> {
        const TOOL: &str = "manage_pr";
        let (ns, sel) = (a.namespace.as_str(), a.repo.as_ref().map(|r| r.as_str()));
        check_positive(TOOL, "number", Some(a.number))?;
        let body = a.body.as_ref().map(|b| b.as_str());
        if a.action == PrAction::Comment && body.is_none_or(|b| b.trim().is_empty()) {
            return Err(Error::Invalid(format!(
                "{TOOL}: action comment needs body, the comment's text"
            )));
        }
        let t = self.repo_target(caller, TOOL, ns, sel).await?;
        let err = |e| host_error(TOOL, e);
        let number = a.number;
        let pending = match (a.action, body) {
            (PrAction::Comment, Some(body)) => {
                self.pending_verdict(caller, &t, number, body).await?
            }
            _ => None,
        };
        let out = match a.action {
            PrAction::Merge => {
                // A driven run merges only with another agent's standing approval of the
                // pull request's current head: neither its own driver's nor its author's.
                if let Some(why) = self.run_merge_refusal(caller, ns, &t, number).await? {
                    return Err(Error::Forbidden(format!("{TOOL} refuses: {why}")));
                }
                let method = a.merge_method.unwrap_or_default();
                let merged = t
                    .host
                    .merge_pull(&t.repo, number, method.as_str(), None)
                    .await
                    .map_err(err)?;
                // A merge changes the base branch: every cached read of the repository may be
                // stale.
                self.repo_reads.invalidate(&t.repo);
                ManagePrAnswer::Merged(PrMerged {
                    repo: t.full(),
                    number,
                    action: "merge",
                    merge_method: method.as_str(),
                    merged: merged.merged,
                    sha: merged.sha,
                    message: merged.message,
                    head: self.delete_head_branch(&t, number).await,
                    audit_warning: None,
                })
            }
            PrAction::Close => {
                let closed = t.host.close_pull(&t.repo, number).await.map_err(err)?;
                self.repo_reads.invalidate(&t.repo);
                ManagePrAnswer::Closed(PrClosed {
                    repo: t.full(),
                    number: closed.number,
                    action: "close",
                    state: closed.state,
                    url: closed.url,
                    head: self.delete_head_branch(&t, number).await,
                    audit_warning: None,
                })
            }
            PrAction::Comment => {
                let posted = t
                    .host
                    .comment_pull(&t.repo, number, body.unwrap_or_default())
                    .await
                    .map_err(err)?;
                let out = PrCommented {
                    repo: t.full(),
                    number,
                    action: "comment",
                    comment_id: posted.id,
                    url: posted.url,
                    review: None,
                    review_warning: None,
                    audit_warning: None,
                };
                if let Some(pending) = pending {
                    return self
                        .record_verdict(caller, ns, &t, number, pending, out)
                        .await
                        .map(ManagePrAnswer::Commented);
                }
                self.repo_reads.invalidate(&t.repo);
                ManagePrAnswer::Commented(out)
            }
        };
        self.record_repo_mutation(caller, TOOL, ns, None, &t.repo, out)
            .await
    }

    pub(crate) async fn delete_branch(
        &self,
        caller: &Caller,
        a: DeleteBranchArgs,
        _: &dyn Confirmer,
    ) -> Result<BranchDeleted> {
        const TOOL: &str = "delete_branch";
        let (ns, sel) = (a.namespace.as_str(), a.repo.as_ref().map(|r| r.as_str()));
        let branch = a.branch.as_str();
        check_ref(TOOL, "branch", Some(branch))?;
        let force = a.force == Some(true);
        let t = self.repo_target(caller, TOOL, ns, sel).await?;
        let full = t.full();
        let default = self.default_branch(TOOL, &t).await?;
        // Checked before force is read: force never lifts this one.
        if branch == default {
            return Err(Error::Forbidden(format!(
                "{TOOL} refuses: {branch} is the default branch of {full}. force does not lift this refusal."
            )));
        }
        if !force {
            if branch.starts_with(IMPROVE_BRANCH_PREFIX) {
                return Err(Error::Forbidden(format!(
                    "{TOOL} refuses: {branch} is under the improve loop's branch prefix ({IMPROVE_BRANCH_PREFIX}), so it may be an attempt the loop still needs. Pass force: true to delete it anyway."
                )));
            }
            // Fail closed: a lookup that errors is not "no open pull requests".
            let open = t
                .host
                .open_pull_requests(&t.repo, Some(branch))
                .await
                .map_err(|e| {
                    Error::Unavailable(format!(
                        "{TOOL} refuses: could not verify open pull requests for {branch} on {full} ({e}), so the open-PR refusal cannot run. Retry, or pass force: true to delete without the check."
                    ))
                })?;
            if let Some(pr) = open.first() {
                return Err(Error::Forbidden(format!(
                    "{TOOL} refuses: {branch} has open pull request #{} ({}). Pass force: true to delete it anyway.",
                    pr.number, pr.url
                )));
            }
        }
        match t.host.delete_branch(&t.repo, branch).await {
            Ok(()) => {}
            Err(RepoHostError::NotFound(m) | RepoHostError::Rejected(m)) => {
                return Err(Error::NotFound(format!(
                    "{TOOL}: {branch} does not exist on {full} ({m})"
                )));
            }
            Err(e) => return Err(host_error(TOOL, e)),
        }
        let out = BranchDeleted {
            repo: full,
            branch: branch.to_owned(),
            deleted: true,
            forced: force,
            audit_warning: None,
        };
        self.record_repo_mutation(caller, TOOL, ns, None, &t.repo, out)
            .await
    }
}

impl RepoCx<'_> {
    /// Why a run credential may not merge pull request `number` now (`None`: it may, or the
    /// caller is not a run). The pull request's head is read from GitHub; an approval counts
    /// only when its reviewer is neither the merging run's driver nor the pull request's author
    /// (the holder of the driven job its `capsid/<job>` branch names), and only for exactly
    /// that head.
    async fn run_merge_refusal(
        &self,
        caller: &Caller,
        ns: &str,
        t: &Target,
        number: u64,
    ) -> Result<Option<String>> {
        if caller.run_job().is_none() {
            return Ok(None);
        }
        let facts = t
            .host
            .pull_request(&t.repo, number)
            .await
            .map_err(|e| host_error("manage_pr", e))?;
        let head = facts.head_sha.to_ascii_lowercase();
        let merger = caller.holder_actor();
        let author = match job_of_branch(&facts.head_ref) {
            Some(id) => self.jobs.job(id).await?.and_then(|j| j.claimed_by),
            None => None,
        };
        let mut excluded = vec![merger.as_str()];
        if let Some(a) = author.as_deref() {
            excluded.push(a);
        }
        let full = t.full();
        let recorded: Vec<_> = self
            .reviews
            .head_reviews(ns, &head, HEAD_REVIEWS_MAX)
            .await?
            .into_iter()
            .filter(|r| r.repo.eq_ignore_ascii_case(&full) && r.number == number)
            .collect();
        let why = match standing_approval_excluding(&excluded, ns, &head, &recorded) {
            Standing::Approved(_) => return Ok(None),
            Standing::None(why) => format!(
                "{full}#{number} is not merged: a driven run merges only with a standing approval of its current head by an agent other than its author{} and the merging run's driver ({merger}); {why}",
                author
                    .as_deref()
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default()
            ),
        };
        // Recorded on the run's job: the deploy run's verdict blocks on the gate's own refusal
        // and the approval that lets it through, never on what the agent says of it.
        let job_id = caller.run_job().unwrap_or_default();
        let entry = crate::ports::AuditEntry {
            actor: caller.actor(),
            action: MERGE_REFUSED_ACTION.into(),
            namespace: Some(ns.to_owned()),
            path: Some(crate::jobs::job_doc_path(job_id)),
            params: serde_json::json!({
                "job_id": job_id, "repo": full, "number": number, "head_sha": head,
                "refusal": why, "approve_command": approve_command(ns, &full, number, &head),
            }),
            at: self.now(),
        };
        self.audit_log.append_audit(entry).await?;
        Ok(Some(why))
    }
}
