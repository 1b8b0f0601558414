//! `jobs` action `approval`: whether a review verdict by an agent other than the caller
//! stands for one head commit in a namespace (`crate::jobs::approval` decides). `capsid hook
//! pre-tool-use` asks it before letting a push to a protected branch or a merge through; it
//! reads only, so the one scope check asks the read grant on the namespace.

use super::{ApprovalAnswer, JobsAction, JobsAnswer, JobsArgs, JobsCx};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::jobs::approval::{HEAD_REVIEWS_MAX, Standing, head_sha_problem, standing_approval};
use crate::repos::{resolve_repo, stored_repos};
use crate::service::require_namespace;

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
