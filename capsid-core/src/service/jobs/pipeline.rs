//! The pipeline's hand-offs (issue 55, item 6; the rules are [`crate::jobs::pipeline`]'s): a
//! junior's job done with a pull request of a repository its namespace maps gets a senior
//! review job, and an approval of a junior's pull request gets a deploy job, each posted by the
//! `pipeline` caller through `post` as a child of the junior's job (signed, capped by its role,
//! bounded and audited like any dispatch: a hand-off past the namespace's bounds is refused and
//! recorded as `job-dispatch-refused`). A hand-off never undoes what triggered it: the
//! completion or the verdict stands whatever becomes of it.

use serde_json::json;

use super::{JobsArgs, JobsCx};
use crate::caller::Caller;
use crate::error::Result;
use crate::ids::new_job_id;
use crate::jobs::Job;
use crate::jobs::approval::job_of_branch;
use crate::jobs::pipeline::{
    Handoff, RunMerge, deploy_handoff, hands_on, review_handoff, run_merges,
};
use crate::jobs::pr_url::evidence_pr;
use crate::ports::{AuditFilter, PullRequestFacts};
use crate::scope::{Grant, Need, check_scope};

/// The newest audit rows of a run read for its merges (a deploy run merges once or a few times).
const RUN_MERGE_ROWS: usize = 200;

impl JobsCx<'_> {
    /// After `job` completed with `result_ref`: its senior review, when it is a junior's and
    /// the reference is a pull request of a repository in `mapped`.
    pub(super) async fn hand_off_review(
        &self,
        job: &Job,
        result_ref: Option<&str>,
        mapped: &[String],
    ) -> Result<()> {
        if !hands_on(
            self.roles()
                .of_job(&job.namespace, job.role.as_deref())
                .await?
                .as_ref(),
        ) {
            return Ok(());
        }
        let Some((url, pr)) = result_ref.and_then(|r| Some((r, evidence_pr(r)?))) else {
            return Ok(());
        };
        let repo = pr.full_repo();
        if !mapped.iter().any(|m| m.eq_ignore_ascii_case(&repo)) {
            return Ok(());
        }
        let head = self.pull_head(&pr).await.ok();
        let handoff = review_handoff(&repo, pr.number, url, head.as_deref(), &job.id);
        // A review is always another agent's: the junior's own driver may not claim it.
        let author: Vec<String> = job.claimed_by.iter().cloned().collect();
        self.post_handoff(job, handoff, &author).await
    }

    /// After `reviewer` approved `repo`'s pull request `facts` in `namespace`: its deploy, when
    /// the pull request is a junior job's (its head branch `capsid/<job>`) of that namespace.
    pub(super) async fn hand_off_deploy(
        &self,
        namespace: &str,
        repo: &str,
        facts: &PullRequestFacts,
        reviewer: &str,
    ) -> Result<()> {
        let Some(author_id) = job_of_branch(&facts.head_ref) else {
            return Ok(());
        };
        let Some(author) = self.jobs.job(author_id).await? else {
            return Ok(());
        };
        if author.namespace != namespace
            || !hands_on(
                self.roles()
                    .of_job(namespace, author.role.as_deref())
                    .await?
                    .as_ref(),
            )
        {
            return Ok(());
        }
        let handoff = deploy_handoff(
            repo,
            facts.number,
            &facts.head_sha.to_ascii_lowercase(),
            reviewer,
            &author.id,
        );
        // The reviewer's driver may not merge: its approval would not count for its own
        // merge (the gate wants an approval by an agent other than the merger).
        self.post_handoff(&author, handoff, &[reviewer.to_owned()])
            .await
    }

    /// The merges the run holding `job` made or was refused, when `job` is a deploy's (a role
    /// that ships a merge) and held; `None` otherwise.
    pub(super) async fn run_merges(&self, job: &Job) -> Result<Option<Vec<RunMerge>>> {
        let merges_by_role = self
            .roles()
            .of_job(&job.namespace, job.role.as_deref())
            .await?
            .is_some_and(|r| r.merges());
        let Some(holder) = job.claimed_by.as_deref().filter(|_| merges_by_role) else {
            return Ok(None);
        };
        let run_actor = format!("{holder}/run:{}", job.id);
        let filter = AuditFilter {
            namespace: Some(job.namespace.clone()),
            actor: Some(run_actor.clone()),
        };
        let rows = self.audit_log.recent_audit(&filter, RUN_MERGE_ROWS).await?;
        Ok(Some(run_merges(&rows, &run_actor)))
    }

    /// Posts `handoff` as a child of `parent`, by the pipeline, not claimable by the actors in
    /// `not_by`. A refusal (the bounds, which `post` records; an open job holding the title, a
    /// second hand-off of one pull request) leaves the trigger as it is; so does a job of that
    /// title waiting at a gate (blocked jobs do not hold their title, and resuming it must
    /// not meet a second hand-off of the same pull request).
    async fn post_handoff(&self, parent: &Job, handoff: Handoff, not_by: &[String]) -> Result<()> {
        let blocked = crate::ports::JobFilter {
            namespace: Some(parent.namespace.clone()),
            status: Some(crate::jobs::JobStatus::Blocked),
        };
        if self
            .jobs
            .jobs(&blocked, crate::jobs::JOBS_ROWS_MAX)
            .await?
            .iter()
            .any(|j| j.title == handoff.title)
        {
            return Ok(());
        }
        let caller = Caller::pipeline(&parent.namespace);
        let need = Need {
            tool: "jobs",
            action: Some("post"),
            namespace: Some(&parent.namespace),
            repo: None,
            grant: Some(Grant::Write),
            flags: Vec::new(),
        };
        if check_scope(&caller.scopes, &need).is_err() {
            return Ok(());
        }
        let args = json!({"action": "post", "namespace": parent.namespace,
                          "title": handoff.title, "body": handoff.body,
                          "role": handoff.role, "parent": parent.id});
        let Ok(args) = serde_json::from_value::<JobsArgs>(args) else {
            return Ok(());
        };
        self.post_job_by(&caller, args, new_job_id(self.entropy), Some(not_by))
            .await?;
        Ok(())
    }
}
