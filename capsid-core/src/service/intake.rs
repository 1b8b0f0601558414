//! The intake task (issue 37): by the signed intake policy (`capsid/policy/intake.md`, the
//! autonomy policies' envelope: unsigned, edited after signing, unparseable or disabled takes
//! in nothing), reads the open issues carrying the policy's label in every repository the
//! named namespaces map, and makes each (by an admitted author) one signed job:
//!
//! 1. the issue is recorded with the job's id chosen then (`IntakeStore::record_intake`, keyed
//!    on repository and number: a second tick or replica finds it recorded);
//! 2. the job is posted under that id as the `intake` caller (scoped to `jobs.post` in the
//!    policy's namespaces), so two posts for one issue are one job (the id conflicts);
//! 3. the issue is told the job's id, once (a keyed change, then the comment);
//! 4. an edit of the issue body afterwards is noted once per new body, the job unchanged;
//! 5. the loop closes (`intake::follow_up`): a done job's pull request is commented on the
//!    issue; an issue closed or unlabelled while its job is still queued fails the job.
//!
//! Every step writes an audit row whose actor is `intake`, in the same unit of work as the
//! change it records. Namespaces the policy does not name are never read.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Value, json};

use super::autonomy::PolicyState;
use super::jobs::{JobsArgs, JobsCx, job_audit, mirror_fn};
use super::{Area, Service, ServiceConfig};
use crate::caller::Caller;
use crate::error::Result;
use crate::ids::new_job_id;
use crate::intake::follow::issue_now;
use crate::intake::issue::{done_comment, posted_comment, pr_comment};
use crate::intake::{
    FollowUp, INTAKE_ACTOR, INTAKE_POLICY_PATH, IntakePolicy, IssueNow, body_digest, follow_up,
    issue_job_body, issue_job_title, parse_intake_policy,
};
use crate::jobs::state::{JobEvent, step};
use crate::jobs::{JobStatus, job_doc_path};
use crate::ports::{
    AuditEntry, Change, IntakeChange, IntakeIssueRow, IssueFacts, JobPatch, JobTransition,
    NewIntakeIssue, RepoHost, RepoHostError, RepoRef,
};
use crate::repos::stored_repos;
use crate::scope::{Grant, Need, check_scope};
use crate::time::Timestamp;

/// How many recorded issues one pass follows up at most.
const OPEN_SCAN: usize = 500;
const MAX_NOTES: usize = 20;

/// An issue and its job, as a report lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IssueJob {
    /// `owner/name`, lower-cased.
    pub repo: String,
    /// The issue's number.
    pub number: u64,
    /// Its job.
    pub job: String,
    /// What happened, when there is more to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What one intake pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IntakeReport {
    /// When.
    pub at: String,
    /// The policy as the pass found it.
    pub policy: PolicyState,
    /// The label it looked for.
    pub label: Option<String>,
    /// Open labelled issues seen.
    pub seen: usize,
    /// Jobs posted.
    pub posted: Vec<IssueJob>,
    /// Issues whose job was not posted in this pass because an open job holds its title
    /// (another tick's post still committing, or a job posted by hand): looked at again next
    /// pass.
    pub deferred: Vec<IssueJob>,
    /// Issues told their job's id.
    pub commented: Vec<IssueJob>,
    /// Issue bodies edited after their job was posted (noted; the job unchanged).
    pub edited: Vec<IssueJob>,
    /// Queued jobs failed because their issue closed or lost the label.
    pub failed: Vec<IssueJob>,
    /// Loops closed (a finished job reported on its issue).
    pub closed: Vec<IssueJob>,
    /// Issues left out (an author the policy does not admit).
    pub skipped: Vec<String>,
    /// What could not be read or done.
    pub notes: Vec<String>,
}

impl IntakeReport {
    fn note(&mut self, text: impl Into<String>) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text.into().chars().take(300).collect());
        }
    }
}

fn issue_job(row: &IntakeIssueRow, detail: Option<String>) -> IssueJob {
    IssueJob {
        repo: row.repo.clone(),
        number: row.number,
        job: row.job_id.clone(),
        detail,
    }
}

/// An audit row of the intake about `row`'s issue.
fn audit(row: &IntakeIssueRow, action: &str, mut params: Value, at: Timestamp) -> AuditEntry {
    params["repo"] = json!(row.repo);
    params["number"] = json!(row.number);
    params["job_id"] = json!(row.job_id);
    AuditEntry {
        actor: INTAKE_ACTOR.to_owned(),
        action: action.to_owned(),
        namespace: Some(row.namespace.clone()),
        path: Some(job_doc_path(&row.job_id)),
        params,
        at,
    }
}

/// The new issues a pass has taken in, in all and per author (lower-cased login): the
/// policy's `jobs_per_pass` and `jobs_per_author` bound them.
#[derive(Debug, Default)]
struct TakenThisPass {
    total: u32,
    per_author: BTreeMap<String, u32>,
}

impl TakenThisPass {
    /// Why one more new issue of `author` is over a cap, if it is.
    fn over(&self, policy: &IntakePolicy, author: &str) -> Option<String> {
        if self.total >= policy.jobs_per_pass {
            return Some(format!(
                "this pass took in {} new issues already (the policy's jobs_per_pass)",
                self.total
            ));
        }
        let by = self
            .per_author
            .get(&author.to_ascii_lowercase())
            .copied()
            .unwrap_or(0);
        (by >= policy.jobs_per_author).then(|| {
            format!("this pass took in {by} new issues of @{author} already (the policy's jobs_per_author)")
        })
    }

    fn count(&mut self, author: &str) {
        self.total += 1;
        *self
            .per_author
            .entry(author.to_ascii_lowercase())
            .or_default() += 1;
    }
}

/// What the follow-ups know of this pass's listings.
struct Listed {
    /// Open labelled issues seen, by (repository, number).
    issues: BTreeSet<(String, u64)>,
    /// Repositories whose listing was read.
    repos: BTreeMap<String, RepoRef>,
}

/// What the intake reaches: documents (its policy), the audit log (the policy's signing and
/// every step), namespaces (their repositories), the queue, the intake's records, the jobs
/// area (to post as the intake), GitHub, the signing secret, ids and the clock.
#[derive(Clone, Copy)]
pub struct IntakeCx<'a> {
    /// Documents.
    pub docs: &'a dyn crate::ports::DocumentStore,
    /// The audit log.
    pub audit_log: &'a dyn crate::ports::AuditLog,
    /// Namespaces and their repositories.
    pub namespaces: &'a dyn crate::ports::NamespaceStore,
    /// The queue.
    pub jobs: &'a dyn crate::ports::JobStore,
    /// Which issue became which job.
    pub intake: &'a dyn crate::ports::IntakeStore,
    /// The jobs area: a job is posted through its `post`.
    pub posting: JobsCx<'a>,
    /// GitHub, when configured.
    pub repo_host: &'a Option<std::sync::Arc<dyn RepoHost>>,
    /// The signing secret.
    pub config: &'a ServiceConfig,
    /// Ids.
    pub entropy: &'a dyn crate::ids::Entropy,
    /// Now.
    pub clock: &'a dyn crate::time::Clock,
}

impl Area for IntakeCx<'_> {
    fn clock(&self) -> &dyn crate::time::Clock {
        self.clock
    }
}

impl Service {
    /// One intake pass (what the `intake` task runs, without the scheduler's turn: tests race
    /// two of them over one store).
    pub async fn intake_pass(&self) -> Result<IntakeReport> {
        self.intake().pass().await
    }
}

impl IntakeCx<'_> {
    /// Loads the intake policy: missing, unsigned, edited after signing, unparseable (the note
    /// names the field) or disabled is no policy, with the note saying which.
    pub(crate) async fn intake_policy(&self) -> Result<(PolicyState, Option<IntakePolicy>)> {
        let mut state = PolicyState::default();
        let Some(body) = crate::service::autonomy::signed_policy_body(
            self.docs,
            self.audit_log,
            self.config,
            INTAKE_POLICY_PATH,
            "the intake policy",
            "no issue becomes a job",
            &mut state,
        )
        .await?
        else {
            return Ok((state, None));
        };
        let policy = match parse_intake_policy(&body) {
            Ok(p) => p,
            Err(e) => {
                state.note = Some(format!("{e}; it authorizes nothing"));
                return Ok((state, None));
            }
        };
        state.enabled = policy.enabled;
        state.version = Some(policy.version.clone());
        state.namespaces = policy.namespaces.clone();
        if !policy.enabled {
            state.note = Some(format!(
                "the intake policy (version {}) is disabled: no issue becomes a job",
                policy.version
            ));
            return Ok((state, None));
        }
        Ok((state, Some(policy)))
    }

    /// One intake pass.
    pub(crate) async fn pass(&self) -> Result<IntakeReport> {
        let now = self.now();
        let mut report = IntakeReport {
            at: now.to_string(),
            ..IntakeReport::default()
        };
        let (state, policy) = self.intake_policy().await?;
        report.policy = state;
        let Some(policy) = policy else {
            return Ok(report);
        };
        report.label = Some(policy.label.clone());
        let Some(host) = self.repo_host.clone() else {
            report.note("the GitHub App is not configured: no issue can be read");
            return Ok(report);
        };
        let caller = Caller::intake(&policy.namespaces);
        let mut listed = Listed {
            issues: BTreeSet::new(),
            repos: BTreeMap::new(),
        };
        let mut taken = TakenThisPass::default();
        for ns in &policy.namespaces {
            let Some(row) = self.namespaces.namespace(ns).await? else {
                report.note(format!("{ns}: not a registered namespace"));
                continue;
            };
            let entries = match stored_repos(ns, row.repos.as_deref()) {
                Ok(list) if !list.is_empty() => list,
                Ok(_) => {
                    report.note(format!("{ns}: maps no repository"));
                    continue;
                }
                Err(e) => {
                    report.note(format!("{ns}: {e}"));
                    continue;
                }
            };
            for entry in entries {
                let Some(repo) = RepoRef::parse(&entry.repo) else {
                    report.note(format!("{ns}: '{}' is not owner/name", entry.repo));
                    continue;
                };
                let key = entry.repo.to_ascii_lowercase();
                let issues = match host.open_issues(&repo, &policy.label).await {
                    Ok(issues) => issues,
                    Err(e) => {
                        report.note(format!("{ns}: {repo}: {e}"));
                        continue;
                    }
                };
                listed.repos.insert(key.clone(), repo.clone());
                for issue in issues {
                    report.seen += 1;
                    if !policy.admits(&issue.author, &issue.association) {
                        report.skipped.push(format!(
                            "{key}#{}: {}",
                            issue.number,
                            policy.refusal(&issue.author, &issue.association)
                        ));
                        continue;
                    }
                    listed.issues.insert((key.clone(), issue.number));
                    if let Err(e) = self
                        .take_in(
                            &*host,
                            &caller,
                            &policy,
                            ns,
                            &repo,
                            &key,
                            &issue,
                            &mut taken,
                            &mut report,
                        )
                        .await
                    {
                        report.note(format!("{key}#{}: {e}", issue.number));
                    }
                }
            }
        }
        for row in self.intake.open_intake(OPEN_SCAN).await? {
            if !policy.names(&row.namespace) {
                continue;
            }
            if let Err(e) = self
                .follow(&*host, &policy, &row, &listed, &mut report)
                .await
            {
                report.note(format!("{}#{}: {e}", row.repo, row.number));
            }
        }
        Ok(report)
    }

    /// An open labelled issue: recorded (once, within the pass's caps), its job posted (once), the issue told the job's
    /// id (once), an edit of its body noted (once per body).
    #[allow(clippy::too_many_arguments)]
    async fn take_in(
        &self,
        host: &dyn RepoHost,
        caller: &Caller,
        policy: &IntakePolicy,
        ns: &str,
        repo: &RepoRef,
        key: &str,
        issue: &IssueFacts,
        taken: &mut TakenThisPass,
        report: &mut IntakeReport,
    ) -> Result<()> {
        let now = self.now();
        let digest = body_digest(&issue.body);
        let row = match self.intake.intake_issue(key, issue.number).await? {
            Some(row) => row,
            None => {
                if let Some(why) = taken.over(policy, &issue.author) {
                    report.skipped.push(format!(
                        "{key}#{}: left for a later pass: {why}",
                        issue.number
                    ));
                    return Ok(());
                }
                taken.count(&issue.author);
                let job_id = new_job_id(self.entropy);
                let new = NewIntakeIssue {
                    repo: key.to_owned(),
                    number: issue.number,
                    issue_id: issue.id,
                    namespace: ns.to_owned(),
                    job_id: job_id.clone(),
                    body_sha256: digest.clone(),
                    at: now,
                };
                let taken = AuditEntry {
                    actor: INTAKE_ACTOR.to_owned(),
                    action: "intake-taken".to_owned(),
                    namespace: Some(ns.to_owned()),
                    path: Some(job_doc_path(&job_id)),
                    params: json!({"repo": key, "number": issue.number, "issue_id": issue.id,
                                   "job_id": job_id, "author": issue.author, "url": issue.url,
                                   "body_sha256": digest, "policy_version": policy.version}),
                    at: now,
                };
                // Lost to another tick: its record stands, with its job id.
                self.intake.record_intake(new, taken).await?;
                match self.intake.intake_issue(key, issue.number).await? {
                    Some(row) => row,
                    None => return Ok(()),
                }
            }
        };
        if row.namespace != ns || row.closed_at.is_some() {
            return Ok(());
        }
        if self.jobs.job(&row.job_id).await?.is_none()
            && !self
                .post_issue_job(caller, policy, &row, issue, report)
                .await?
        {
            return Ok(());
        }
        if row.commented_at.is_none() {
            self.tell_issue(host, repo, &row, report).await?;
        }
        if digest != row.noted_sha256 {
            let noted = audit(
                &row,
                "intake-issue-edited",
                json!({"posted_sha256": row.body_sha256, "edited_sha256": digest,
                       "job": "unchanged: the signed job keeps the text it was posted with"}),
                now,
            );
            let change = IntakeChange::Noted {
                sha256: digest.clone(),
            };
            if self
                .intake
                .update_intake(&row.repo, row.number, change, now, Some(noted))
                .await?
            {
                report.edited.push(issue_job(&row, None));
            }
        }
        Ok(())
    }

    /// Posts `row`'s job under its recorded id as the intake; whether the job exists now.
    async fn post_issue_job(
        &self,
        caller: &Caller,
        policy: &IntakePolicy,
        row: &IntakeIssueRow,
        issue: &IssueFacts,
        report: &mut IntakeReport,
    ) -> Result<bool> {
        let need = Need {
            tool: "jobs",
            action: Some("post"),
            namespace: Some(&row.namespace),
            repo: None,
            grant: Some(Grant::Write),
            flags: Vec::new(),
        };
        if let Err(refusal) = check_scope(&caller.scopes, &need) {
            report.note(format!(
                "{}#{}: not posted: {refusal}",
                row.repo, row.number
            ));
            return Ok(false);
        }
        let args = json!({"action": "post", "namespace": row.namespace,
                          "title": issue_job_title(&row.repo, issue),
                          "body": issue_job_body(&row.repo, issue, &policy.version)});
        let args: JobsArgs = match serde_json::from_value(args) {
            Ok(a) => a,
            Err(e) => {
                report.note(format!("{}#{}: not posted: {e}", row.repo, row.number));
                return Ok(false);
            }
        };
        let answer = self
            .posting
            .post_job_as(caller, args, row.job_id.clone())
            .await?;
        let answer = crate::service::to_json(answer)?;
        if answer["ok"] == json!(true) {
            report.posted.push(issue_job(row, None));
            return Ok(true);
        }
        // Another tick posted it under the same id first: one job either way.
        if self.jobs.job(&row.job_id).await?.is_some() {
            return Ok(true);
        }
        let refusal = answer["refusal"].as_str().unwrap_or("refused");
        // The title names the issue: an open job holding it is another tick's post of this
        // issue still committing (or a job someone posted by hand under that title). Nothing
        // was posted; the next pass looks again.
        if refusal.contains("already has an open job titled") {
            report
                .deferred
                .push(issue_job(row, Some(refusal.to_owned())));
            return Ok(false);
        }
        report.note(format!(
            "{}#{}: not posted: {}",
            row.repo, row.number, refusal
        ));
        Ok(false)
    }

    /// Tells the issue its job's id: the keyed change first (so one tick comments), then the
    /// comment; a failed comment undoes the change, so a later pass tries again.
    async fn tell_issue(
        &self,
        host: &dyn RepoHost,
        repo: &RepoRef,
        row: &IntakeIssueRow,
        report: &mut IntakeReport,
    ) -> Result<()> {
        let now = self.now();
        let told = audit(row, "intake-commented", json!({"said": "job id"}), now);
        if !self
            .intake
            .update_intake(
                &row.repo,
                row.number,
                IntakeChange::Commented,
                now,
                Some(told),
            )
            .await?
        {
            return Ok(());
        }
        match host
            .comment_issue(
                repo,
                row.number,
                &posted_comment(&row.job_id, &row.namespace),
            )
            .await
        {
            Ok(c) => report.commented.push(issue_job(row, Some(c.url))),
            Err(e) => {
                let failed = audit(
                    row,
                    "intake-comment-failed",
                    json!({"error": e.to_string()}),
                    now,
                );
                self.intake
                    .update_intake(
                        &row.repo,
                        row.number,
                        IntakeChange::Uncommented,
                        now,
                        Some(failed),
                    )
                    .await?;
                report.note(format!("{}#{}: comment failed: {e}", row.repo, row.number));
            }
        }
        Ok(())
    }

    /// One recorded issue whose loop is open: the job's state and the issue's decide.
    async fn follow(
        &self,
        host: &dyn RepoHost,
        policy: &IntakePolicy,
        row: &IntakeIssueRow,
        listed: &Listed,
        report: &mut IntakeReport,
    ) -> Result<()> {
        let now = self.now();
        let is_listed = listed.issues.contains(&(row.repo.clone(), row.number));
        let read_repo = listed.repos.get(&row.repo);
        let Some(job) = self.jobs.job(&row.job_id).await? else {
            // Recorded, never posted, and the issue is gone from the listing: nothing to post.
            if !is_listed && read_repo.is_some() {
                let outcome = "no job was posted: the issue is no longer open with the label";
                self.close_loop(row, outcome, json!({"outcome": outcome}), report)
                    .await?;
            }
            return Ok(());
        };
        let issue = match (job.status, is_listed, read_repo) {
            (JobStatus::Queued, true, _) => Some(IssueNow::OpenLabelled),
            (JobStatus::Queued, false, Some(repo)) => match host.issue(repo, row.number).await {
                Ok(i) => Some(issue_now(i.open, &i.labels, &policy.label)),
                Err(RepoHostError::NotFound(_)) => Some(IssueNow::Gone),
                Err(e) => {
                    report.note(format!("{}#{}: {e}", row.repo, row.number));
                    None
                }
            },
            _ => None,
        };
        let repo = read_repo
            .cloned()
            .or_else(|| RepoRef::parse(&row.repo))
            .ok_or_else(|| crate::error::Error::Invalid(format!("{}: not owner/name", row.repo)))?;
        let pr = match job.status {
            JobStatus::Done => self.job_pr(host, &repo, &job, report).await,
            _ => None,
        };
        match follow_up(
            job.status,
            job.result_ref.as_deref(),
            pr.as_deref(),
            issue,
            &row.repo,
            row.number,
            &policy.label,
        ) {
            FollowUp::Wait => {}
            FollowUp::FailJob(reason) => {
                let step = step(JobStatus::Queued, JobEvent::AdminFail)?;
                let t = JobTransition {
                    id: job.id.clone(),
                    expected: Some(job.clone()),
                    step,
                    holder: None,
                    corrections: None,
                    patch: JobPatch {
                        result_summary: Change::Set(reason.clone()),
                        ..JobPatch::default()
                    },
                    at: now,
                    audit: job_audit(
                        INTAKE_ACTOR,
                        step.audit_action(),
                        &job,
                        json!({"reason": reason, "repo": row.repo, "number": row.number,
                               "from": "queued"}),
                        now,
                    ),
                    outcome: None,
                    mirror: mirror_fn(now),
                };
                // Claimed meanwhile: the keyed update does not apply, and the claim stands.
                if self.jobs.transition_job(t).await?.is_some() {
                    report.failed.push(issue_job(row, Some(reason.clone())));
                    let outcome = format!("job failed: {reason}");
                    self.close_loop(row, &outcome, json!({"outcome": outcome}), report)
                        .await?;
                }
            }
            FollowUp::CommentPr(url) => {
                let text = pr_comment(&row.job_id, &url);
                let params = json!({"outcome": "done", "pr": url});
                self.close_with_comment(host, &repo, row, &text, params, report)
                    .await?;
            }
            FollowUp::CommentDone(result) => {
                let text = done_comment(&row.job_id, result.as_deref());
                let params = json!({"outcome": "done", "result": result});
                self.close_with_comment(host, &repo, row, &text, params, report)
                    .await?;
            }
            FollowUp::Ended(why) => {
                self.close_loop(row, &why, json!({"outcome": why}), report)
                    .await?;
            }
        }
        Ok(())
    }

    /// The pull request GitHub knows for `job`'s branch (`capsid/<job>`) in `repo`: the one the
    /// job's result names when GitHub says that pull request comes from the job's branch of
    /// this repository (merged or not), else an open one from that branch. Never a URL on the
    /// job's word alone: `None` when GitHub shows none (or cannot be read, which is noted).
    async fn job_pr(
        &self,
        host: &dyn RepoHost,
        repo: &RepoRef,
        job: &crate::jobs::Job,
        report: &mut IntakeReport,
    ) -> Option<String> {
        let branch = crate::intake::follow::job_branch(&job.id);
        let named = job
            .result_ref
            .as_deref()
            .and_then(crate::jobs::pr_url::review_pr)
            .filter(|p| p.full_repo().eq_ignore_ascii_case(&repo.to_string()));
        if let Some(p) = named {
            match host.pull_request(repo, p.number).await {
                Ok(facts) if facts.head_ref == branch && !facts.head_is_fork => {
                    return job.result_ref.as_deref().map(|r| r.trim().to_owned());
                }
                Ok(_) => {}
                Err(e) => report.note(format!("{repo}: pull request #{}: {e}", p.number)),
            }
        }
        match host.open_pull_requests(repo, Some(&branch)).await {
            Ok(open) => open
                .into_iter()
                .find(|p| p.head_ref == branch)
                .map(|p| p.url),
            Err(e) => {
                report.note(format!("{repo}: pull requests from {branch}: {e}"));
                None
            }
        }
    }

    /// Closes `row`'s loop (keyed: once) with an `intake-closed` row; whether this tick did.
    async fn close_loop(
        &self,
        row: &IntakeIssueRow,
        outcome: &str,
        params: Value,
        report: &mut IntakeReport,
    ) -> Result<bool> {
        let now = self.now();
        let change = IntakeChange::Closed {
            outcome: outcome.to_owned(),
        };
        let closed = audit(row, "intake-closed", params, now);
        let done = self
            .intake
            .update_intake(&row.repo, row.number, change, now, Some(closed))
            .await?;
        if done {
            report.closed.push(issue_job(row, Some(outcome.to_owned())));
        }
        Ok(done)
    }

    /// Closes the loop, then says how on the issue; a failed comment reopens it for a later
    /// pass.
    async fn close_with_comment(
        &self,
        host: &dyn RepoHost,
        repo: &RepoRef,
        row: &IntakeIssueRow,
        text: &str,
        params: Value,
        report: &mut IntakeReport,
    ) -> Result<()> {
        let outcome = params["pr"]
            .as_str()
            .map_or_else(|| "done".to_owned(), |pr| format!("done: {pr}"));
        if !self.close_loop(row, &outcome, params, report).await? {
            return Ok(());
        }
        if let Err(e) = host.comment_issue(repo, row.number, text).await {
            let now = self.now();
            let failed = audit(
                row,
                "intake-comment-failed",
                json!({"error": e.to_string()}),
                now,
            );
            self.intake
                .update_intake(
                    &row.repo,
                    row.number,
                    IntakeChange::Reopened,
                    now,
                    Some(failed),
                )
                .await?;
            report.closed.pop();
            report.note(format!("{}#{}: comment failed: {e}", row.repo, row.number));
        }
        Ok(())
    }
}
