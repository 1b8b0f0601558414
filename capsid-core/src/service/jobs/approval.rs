//! `jobs` action `approval`: whether a review verdict by an agent other than the caller
//! stands for one head commit in a namespace (`crate::jobs::approval` decides). `capsid hook
//! pre-tool-use` asks it before letting a push to a protected branch or a merge through; it
//! reads only, so the one scope check asks the read grant on the namespace.

use super::answer::VerdictRecorded;
use super::{ApprovalAnswer, JobsAction, JobsAnswer, JobsArgs, JobsCx, refuse};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::jobs::approval::{HEAD_REVIEWS_MAX, Standing, head_sha_problem, standing_approval};
use crate::jobs::review::Verdict;
use crate::ports::{AuditEntry, NewReview};
use crate::repos::{resolve_repo, stored_repos};
use crate::service::{Area, require_namespace};

impl JobsCx<'_> {
    pub(crate) async fn approval(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        let act = JobsAction::Approval;
        let Some(ns) = &a.namespace else {
            return Err(Error::Invalid(
                "jobs approval: namespace is required (the namespace whose review verdicts count)"
                    .into(),
            ));
        };
        if let Some(number) = a.pull_request {
            return self
                .merge_approval(
                    caller,
                    ns.as_str(),
                    a.repo.as_ref().map(|r| r.as_str()),
                    number,
                )
                .await;
        }
        let Some(head) = &a.head_sha else {
            return Err(Error::Invalid(
                "jobs approval: head_sha is required (the full commit sha, as `git rev-parse HEAD` prints it)".into(),
            ));
        };
        if let Some(problem) = head_sha_problem(head.as_str()) {
            return Err(Error::Invalid(format!("jobs approval: head_sha {problem}")));
        }
        let head = head.as_str().to_ascii_lowercase();
        require_namespace(self.namespaces, ns.as_str()).await?;
        let recorded = self
            .reviews
            .head_reviews(ns.as_str(), &head, HEAD_REVIEWS_MAX)
            .await?;
        // A run credential asks on behalf of its driver: the driver's own approval never counts.
        let actor = caller.holder_actor();
        let mut out = ApprovalAnswer::new(act, ns.as_str(), actor.clone());
        out.caller_kind = caller.agent_kind().map(crate::caller::AgentKind::name);
        match standing_approval(&actor, ns.as_str(), &head, &recorded) {
            Standing::Approved(r) => {
                out.reason = format!(
                    "{} approved head {} on {}#{} ({})",
                    r.reviewer, head, r.repo, r.number, r.created_at
                );
                out.approve(&r);
            }
            Standing::None(why) => out.reason = why,
        }
        out.head_sha = Some(head);
        Ok(JobsAnswer::Approval(out))
    }
}

impl JobsCx<'_> {
    /// Whether a merge of pull request `number` of `repo` (default the namespace's primary
    /// repository; it must be one the namespace maps) is approved: GitHub says which commit
    /// the pull request's head is now, and another agent's newest verdict on exactly that
    /// commit, recorded on that pull request of that repository, must be an approval. An
    /// unreadable GitHub refuses, saying so.
    async fn merge_approval(
        &self,
        caller: &Caller,
        ns: &str,
        repo: Option<&str>,
        number: u64,
    ) -> Result<JobsAnswer> {
        let act = JobsAction::Approval;
        require_namespace(self.namespaces, ns).await?;
        let actor = caller.holder_actor();
        let mut out = ApprovalAnswer::new(act, ns, actor.clone());
        out.caller_kind = caller.agent_kind().map(crate::caller::AgentKind::name);
        out.pull_request = Some(number);
        let row = self.namespaces.namespace(ns).await?;
        let list = stored_repos(ns, row.as_ref().and_then(|r| r.repos.as_deref()))
            .map_err(Error::Invalid)?;
        let target = match resolve_repo(ns, &list, repo) {
            Ok(t) => t,
            Err(why) => {
                out.reason = format!(
                    "the merge's repository is not one namespace {ns} maps ({why}), so no approval in it can stand."
                );
                return Ok(JobsAnswer::Approval(out));
            }
        };
        let full = format!("{}/{}", target.owner, target.name);
        out.repo = Some(full.clone());
        let Some(host) = self.repo_host.as_ref() else {
            out.reason = format!(
                "the GitHub App is not configured, so the current head of {full}#{number} cannot be read and the merge is refused."
            );
            return Ok(JobsAnswer::Approval(out));
        };
        let facts = match host.pull_request(&target, number).await {
            Ok(f) => f,
            Err(e) => {
                out.reason = format!(
                    "GitHub could not be read for {full}#{number} ({e}), so its current head is unknown and the merge is refused."
                );
                return Ok(JobsAnswer::Approval(out));
            }
        };
        let head = facts.head_sha.to_ascii_lowercase();
        out.head_sha = Some(head.clone());
        let recorded = self
            .reviews
            .head_reviews(ns, &head, HEAD_REVIEWS_MAX)
            .await?;
        let on_this_pull: Vec<_> = recorded
            .iter()
            .filter(|r| r.repo.eq_ignore_ascii_case(&full) && r.number == number)
            .cloned()
            .collect();
        match standing_approval(&actor, ns, &head, &on_this_pull) {
            Standing::Approved(r) => {
                out.reason = format!(
                    "{} approved {full}#{number} at its current head {head} ({})",
                    r.reviewer, r.created_at
                );
                out.approve(&r);
            }
            Standing::None(why) => {
                let elsewhere = recorded
                    .iter()
                    .find(|r| !(r.repo.eq_ignore_ascii_case(&full) && r.number == number));
                out.reason = match elsewhere {
                    Some(r) => format!(
                        "{full}#{number}'s current head is {head}; the verdict on that commit is on {}#{}, not on this pull request. {why}",
                        r.repo, r.number
                    ),
                    None => format!("{full}#{number}'s current head is {head}: {why}"),
                };
            }
        }
        Ok(JobsAnswer::Approval(out))
    }
}

impl JobsCx<'_> {
    /// `approve` / `reject`: records `verdict` by the caller (a run credential's driver) on
    /// pull request `pull_request` of `repo` (default the namespace's primary), bound to the
    /// head the caller was shown (`head_sha`), which must still be the pull request's head on
    /// GitHub: a verdict on a head that moved is refused, and the new head named. The verdict is
    /// recorded with its audit row in one transaction; it counts for a merge only when its
    /// reviewer is neither the pull request's author nor its merger.
    pub(crate) async fn verdict(
        &self,
        caller: &Caller,
        a: JobsArgs,
        verdict: Verdict,
    ) -> Result<JobsAnswer> {
        let act = if verdict == Verdict::Approve {
            JobsAction::Approve
        } else {
            JobsAction::Reject
        };
        let name = act.name();
        let (Some(ns), Some(number), Some(shown)) = (&a.namespace, a.pull_request, &a.head_sha)
        else {
            return Err(Error::Invalid(format!(
                "jobs {name}: namespace, pull_request and head_sha are required (the pull request's number, and the full head commit sha you reviewed)"
            )));
        };
        if let Some(problem) = head_sha_problem(shown.as_str()) {
            return Err(Error::Invalid(format!("jobs {name}: head_sha {problem}")));
        }
        let shown = shown.as_str().to_ascii_lowercase();
        let ns = ns.as_str();
        require_namespace(self.namespaces, ns).await?;
        let row = self.namespaces.namespace(ns).await?;
        let list = stored_repos(ns, row.as_ref().and_then(|r| r.repos.as_deref()))
            .map_err(Error::Invalid)?;
        let target = resolve_repo(ns, &list, a.repo.as_ref().map(|r| r.as_str()))
            .map_err(|why| Error::Invalid(format!("jobs {name}: repo: {why}")))?;
        let full = format!("{}/{}", target.owner, target.name);
        let Some(host) = self.repo_host.as_ref() else {
            return Ok(refuse(
                act,
                format!(
                    "the GitHub App is not configured, so the head of {full}#{number} cannot be read and no verdict was recorded."
                ),
            ));
        };
        let facts = match host.pull_request(&target, number).await {
            Ok(f) => f,
            Err(e) => {
                return Ok(refuse(
                    act,
                    format!(
                        "GitHub could not be read for {full}#{number} ({e}), so its head is unknown and no verdict was recorded."
                    ),
                ));
            }
        };
        let head = facts.head_sha.to_ascii_lowercase();
        if head != shown {
            return Ok(refuse(
                act,
                format!(
                    "{full}#{number}'s head moved: it is {head} now, not {shown} as you were shown; review the new head and give it as head_sha. Nothing was recorded."
                ),
            ));
        }
        let reviewer = caller.holder_actor();
        let said = a
            .body
            .as_ref()
            .map(|b| b.as_str().to_owned())
            .unwrap_or_default();
        let now = self.now();
        let review = NewReview {
            repo: full.to_ascii_lowercase(),
            number,
            namespace: ns.to_owned(),
            reviewer: reviewer.clone(),
            verdict,
            said,
            head_sha: head.clone(),
            comment_url: format!("capsid:jobs.{name}"),
            at: now,
        };
        let audit = AuditEntry {
            actor: caller.actor(),
            action: format!("job-verdict-{name}"),
            namespace: Some(ns.to_owned()),
            path: None,
            params: serde_json::json!({"repo": full, "number": number, "head_sha": head, "verdict": verdict.as_str()}),
            at: now,
        };
        self.reviews.record_review(review, audit).await?;
        // An approval of a junior's pull request: the pipeline posts its deploy.
        if verdict == Verdict::Approve {
            self.hand_off_deploy(ns, &full, &facts, &reviewer).await?;
        }
        let note = match verdict {
            Verdict::Approve => format!(
                "{reviewer} approved {full}#{number} at {head}: a merge of exactly this head by an agent other than its author and {reviewer} counts it."
            ),
            _ => format!(
                "{reviewer} asked for changes on {full}#{number} at {head}: no approval of this head by {reviewer} stands."
            ),
        };
        Ok(JobsAnswer::Verdict(VerdictRecorded {
            ok: true,
            action: name,
            namespace: ns.to_owned(),
            verdict: verdict.as_str(),
            reviewer,
            repo: full,
            number,
            head_sha: head,
            note,
        }))
    }
}
