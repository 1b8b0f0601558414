//! Making an attempt (reference 8.2, 8.3): in `api` mode the tick asks the model (the
//! `ModelClient` port) for one change, records its estimated cost on the run, and either flags
//! it (a protected path, an answer that is not a proposal, or the monitor model's reading of
//! the change, each recorded too: reverted regardless of score) or
//! pushes it to the branch `improve/<attempt>`, writes the archive document before any score
//! exists, opens the pull request the seat reviews and dispatches the scorer. In `subscription`
//! mode the driver pushes the branch itself and reports it with `improve_run` action `attempt`;
//! only the holder of the namespace's driver lease may. Either way the attempt is added and
//! dispatched through the `RunStore` as keyed updates.

use serde_json::json;

use super::ImproveCx;
use super::night::{Closing, loop_audit, step_audits};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::improve::machine::{
    AttemptEvent, AttemptStatus, RunEvent, RunStatus, archive_path, attempt, attempt_branch,
    attempt_id, run,
};
use crate::improve::models::{Stage, estimate_usd};
use crate::improve::monitor::{
    MONITOR_MAX_TOKENS, MonitorVerdict, MonitoredFile, monitor_prompt, read_monitor_answer,
};
use crate::improve::night::{
    ATTEMPT_MAX_TOKENS, AttemptBrief, Proposal, SCORE_WORKFLOW, attempt_prompt, parse_proposal,
    protected_hits,
};
use crate::improve::roster::RunCondition;
use crate::improve::workflows::ScoreDispatch;
use crate::ports::{
    Advance, Advanced, AttemptRow, AttemptUpdate, Change, Contents, DocumentWrite, FileWrite,
    ModelMessage, ModelRequest, ModelRole, NewAttempt, RepoHost, RepoHostError, RepoRef, RunRow,
    RunUpdate, WriteGuard,
};
use crate::service::Area as _;
use crate::service::improve::score::SCORES_PATH;
use crate::time::Timestamp;

/// The most tree paths an attempt prompt lists.
const PROMPT_TREE_PATHS: usize = 400;

/// What one attempt is: its id, branch, what it changes and the commit it scores.
struct Made {
    id: String,
    branch: String,
    summary: String,
    head_sha: Option<String>,
    /// Why the monitor flagged it (a flagged attempt is never dispatched).
    flagged: Option<String>,
    /// The skill the attempt followed, as its driver reported it.
    skill: Option<String>,
}

impl ImproveCx<'_> {
    /// The default branch of `repo` and its head commit.
    pub(crate) async fn default_head(
        &self,
        host: &dyn RepoHost,
        repo: &RepoRef,
    ) -> std::result::Result<(String, String), RepoHostError> {
        let facts = host.repository(repo).await?;
        let head = host
            .branches(repo)
            .await?
            .into_iter()
            .find(|b| b.name == facts.default_branch)
            .ok_or_else(|| {
                RepoHostError::NotFound(format!("{repo}: branch {}", facts.default_branch))
            })?;
        Ok((facts.default_branch, head.sha))
    }

    /// Deletes an attempt's branch and closes its pull request, best effort: a branch already
    /// gone is fine, and the run's finish tries again.
    pub(crate) async fn discard_branch(&self, ns: &str, branch: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let (Some(host), Ok(Some(repo))) = (&self.repo_host, self.loop_repo(ns).await) else {
            return problems;
        };
        if branch.is_empty() {
            return problems;
        }
        if let Ok(pulls) = host.open_pull_requests(&repo, Some(branch)).await {
            for p in pulls.iter().filter(|p| p.head_ref == branch) {
                if let Err(e) = host.close_pull(&repo, p.number).await {
                    problems.push(format!("closing #{}: {e}", p.number));
                }
            }
        }
        match host.delete_branch(&repo, branch).await {
            Ok(()) | Err(RepoHostError::NotFound(_)) | Err(RepoHostError::Rejected(_)) => {}
            Err(e) => problems.push(format!("deleting {branch}: {e}")),
        }
        problems
    }

    /// Dispatches an attempt that was added but not yet dispatched (a tick stopped between
    /// the two updates), or flags it when it carries no commit to score.
    pub(crate) async fn dispatch_pending(&self, run: &RunRow, now: Timestamp) -> Result<String> {
        let attempts = self.runs.attempts(&run.id).await?;
        let Some(a) = attempts.iter().find(|a| a.status == AttemptStatus::Pending) else {
            return Ok("an attempt is outstanding but none is pending".into());
        };
        match a.head_sha.clone() {
            Some(sha) => self.dispatch(run, a, &sha, now).await,
            None => self.flag(run, a, "the attempt was never pushed", now).await,
        }
    }

    /// Records the verdict `flagged` on `a` (pending) and moves the run through judging.
    async fn flag(
        &self,
        run: &RunRow,
        a: &AttemptRow,
        why: &str,
        now: Timestamp,
    ) -> Result<String> {
        let closing = Closing {
            event: AttemptEvent::Flag,
            run_event: RunEvent::Flag,
            reason: format!("flagged by the monitor: {why}"),
            flag_reason: Some(why.to_owned()),
            params: json!({"run": run.id, "attempt": a.id, "reason": why}),
        };
        self.close_attempt(run, a, closing, now).await
    }

    /// Dispatches the scorer on `a`'s branch and moves both to awaiting-score.
    async fn dispatch(
        &self,
        run: &RunRow,
        a: &AttemptRow,
        head: &str,
        now: Timestamp,
    ) -> Result<String> {
        let branch = a.branch.clone().unwrap_or_else(|| attempt_branch(&a.id));
        if let (Some(host), Some(repo)) = (&self.repo_host, self.loop_repo(&run.namespace).await?) {
            let inputs = ScoreDispatch {
                namespace: &run.namespace,
                run_id: &run.id,
                attempt_id: &a.id,
                head_sha: head,
            }
            .inputs();
            if let Err(e) = host
                .dispatch_workflow(&repo, SCORE_WORKFLOW, &branch, &inputs)
                .await
            {
                return Ok(format!(
                    "dispatching {SCORE_WORKFLOW} on {branch} failed ({e}); the next tick tries again"
                ));
            }
        }
        let a_step = attempt::step(a.status, AttemptEvent::Dispatch)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let r_step =
            run::step(run.status, RunEvent::Dispatch).map_err(|e| Error::Invalid(e.to_string()))?;
        let Some(mut update) = RunUpdate::walk(&run.id, &[r_step], now) else {
            return Ok("nothing to do".into());
        };
        update.tally_before = Some(run.tally);
        update.current_attempt = Change::Set(a.id.clone());
        let mut attempt_update = AttemptUpdate::step(&a.id, a_step);
        attempt_update.head_sha = Change::Set(head.to_owned());
        attempt_update.dispatched_at = Some(now);
        let mut audits = vec![loop_audit(
            a_step.audit_action(),
            &run.namespace,
            a.diff_ref.as_deref(),
            json!({"run": run.id, "attempt": a.id, "branch": branch, "head_sha": head, "workflow": SCORE_WORKFLOW}),
            now,
        )];
        audits.extend(step_audits(run, &[r_step], None, now));
        let advance = Advance {
            attempt: Some(attempt_update),
            run: Some(update),
            audits,
            ..Advance::default()
        };
        Ok(match self.runs.advance(advance).await? {
            Advanced::Applied => format!("{} dispatched at {head}", a.id),
            Advanced::Lost => "another writer moved the run first".into(),
        })
    }

    /// Adds the run's next attempt (pending, with the archive document written first), then
    /// flags or dispatches it. Returns the attempt's row.
    async fn add_and_dispatch(&self, run: &RunRow, made: Made, now: Timestamp) -> Result<String> {
        let mut tally = run.tally;
        tally
            .add_attempt()
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let archive = archive_path(&run.id, &made.id);
        let body = format!(
            "# {id}\n\n- run: {run}\n- branch: {branch}\n- base: {base}\n- head: {head}\n- condition: {cond}\n\n## Change\n{summary}\n{flag}",
            id = made.id,
            run = run.id,
            branch = made.branch,
            base = run.base_sha.as_deref().unwrap_or("unknown"),
            head = made.head_sha.as_deref().unwrap_or("not pushed"),
            cond = run.condition,
            summary = made.summary,
            flag = made
                .flagged
                .as_deref()
                .map(|f| format!("\n## Flagged\n{f}\n"))
                .unwrap_or_default(),
        );
        let write = DocumentWrite {
            namespace: run.namespace.clone(),
            path: archive.clone(),
            title: Some(format!("Attempt {}", made.id)),
            body: Some(body),
            doc_type: Some("source".into()),
            status: None,
            tags: None,
            links: None,
            at: now,
        };
        let doc_audit = loop_audit(
            "improve-archive",
            &run.namespace,
            Some(&archive),
            json!({"run": run.id, "attempt": made.id}),
            now,
        );
        self.docs
            .write_document(write, WriteGuard::Upsert, vec![doc_audit])
            .await?;
        let mut update = RunUpdate::within(&run.id, RunStatus::Attempting, now);
        update.tally_before = Some(run.tally);
        update.tally = Some(tally);
        update.current_attempt = Change::Set(made.id.clone());
        let new = NewAttempt {
            id: made.id.clone(),
            namespace: run.namespace.clone(),
            run_id: run.id.clone(),
            change_summary: Some(made.summary.clone()),
            diff_ref: Some(archive.clone()),
            branch: made.branch.clone(),
            base_sha: run.base_sha.clone(),
            lineage_parent: None,
            skill_id: made.skill.clone(),
            ts: now,
        };
        let audit = loop_audit(
            "improve-attempt-added",
            &run.namespace,
            Some(&archive),
            json!({"run": run.id, "attempt": made.id, "branch": made.branch, "summary": made.summary}),
            now,
        );
        if self.runs.add_attempt(new, update, audit).await? == Advanced::Lost {
            return Ok("another writer moved the run first".into());
        }
        let Some(run) = self.runs.run(&run.id).await? else {
            return Ok("the run vanished".into());
        };
        let Some(row) = self.runs.attempt(&made.id).await? else {
            return Ok("the attempt vanished".into());
        };
        match (&made.flagged, &made.head_sha) {
            (Some(why), _) => self.flag(&run, &row, why, now).await,
            (None, Some(head)) => self.dispatch(&run, &row, head, now).await,
            (None, None) => {
                self.flag(&run, &row, "the attempt was never pushed", now)
                    .await
            }
        }
    }

    /// `api` mode: asks the model for the next attempt and makes it.
    pub(crate) async fn make_attempt(&self, run: &RunRow, now: Timestamp) -> Result<String> {
        let (Some(model), Some(host)) = (&self.model, &self.repo_host) else {
            return Ok("api mode needs the model API and the GitHub App; the run waits".into());
        };
        let Some(repo) = self.loop_repo(&run.namespace).await? else {
            return Ok(format!(
                "{} maps no repository; the run waits",
                run.namespace
            ));
        };
        let (default_branch, default_sha) = match self.default_head(host.as_ref(), &repo).await {
            Ok(h) => h,
            Err(e) => {
                return Ok(format!(
                    "reading {repo} failed ({e}); the next tick tries again"
                ));
            }
        };
        let base = run.base_sha.clone().unwrap_or(default_sha);
        let scores = self
            .docs
            .document(&run.namespace, SCORES_PATH)
            .await?
            .and_then(|d| d.body)
            .unwrap_or_default();
        let condition = RunCondition::parse(&run.condition).unwrap_or(RunCondition::Full);
        let history: Vec<String> = if condition.uses_memory() {
            self.runs
                .attempts(&run.id)
                .await?
                .iter()
                .map(|a| {
                    format!(
                        "{} {}: {} ({})",
                        a.id,
                        a.status,
                        a.change_summary.as_deref().unwrap_or(""),
                        a.reason.as_deref().unwrap_or("")
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        let tree: Vec<String> = match host.tree(&repo, &base).await {
            Ok(t) => t
                .items
                .into_iter()
                .filter(|i| i.kind == "blob")
                .map(|i| i.path)
                .take(PROMPT_TREE_PATHS)
                .collect(),
            Err(_) => Vec::new(),
        };
        let (system, user) = attempt_prompt(&AttemptBrief {
            namespace: &run.namespace,
            repo: &repo.to_string(),
            base_sha: &base,
            scores_md: &scores,
            history: &history,
            tree: &tree,
        });
        let model_name = self.stage_model(Stage::Attempt, now).await?;
        let request = ModelRequest {
            model: model_name.clone(),
            system: Some(system),
            messages: vec![ModelMessage {
                role: ModelRole::User,
                content: user,
            }],
            max_tokens: ATTEMPT_MAX_TOKENS,
        };
        let reply = match model.complete(request).await {
            Ok(r) => r,
            Err(e) => {
                return Ok(format!(
                    "the model call failed ({e}); the next tick tries again"
                ));
            }
        };
        let cost = estimate_usd(&model_name, reply.usage);
        let mut spend = RunUpdate::within(&run.id, RunStatus::Attempting, now);
        spend.tally_before = Some(run.tally);
        spend.add_cost_usd = cost;
        let spent = Advance {
            run: Some(spend),
            audits: vec![loop_audit(
                "improve-model-call",
                &run.namespace,
                None,
                json!({"run": run.id, "stage": "attempt", "model": model_name,
                       "input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens,
                       "cost_usd": cost}),
                now,
            )],
            ..Advance::default()
        };
        if self.runs.advance(spent).await? == Advanced::Lost {
            return Ok("another writer moved the run first".into());
        }
        let Some(run) = self.runs.run(&run.id).await? else {
            return Ok("the run vanished".into());
        };
        let number = run.tally.attempts + 1;
        let id = attempt_id(&run.id, number).map_err(|e| Error::Invalid(e.to_string()))?;
        let branch = attempt_branch(&id);
        let proposal = match parse_proposal(&reply.text) {
            Ok(p) => p,
            Err(why) => {
                let made = Made {
                    id,
                    branch,
                    summary: "the model's answer was not a proposal".into(),
                    head_sha: None,
                    flagged: Some(why),
                    skill: None,
                };
                return self.add_and_dispatch(&run, made, now).await;
            }
        };
        let hits = protected_hits(proposal.files.iter().map(|f| f.path.as_str()));
        if !hits.is_empty() {
            let made = Made {
                id,
                branch,
                summary: proposal.summary,
                head_sha: None,
                flagged: Some(format!("protected paths: {}", hits.join("; "))),
                skill: None,
            };
            return self.add_and_dispatch(&run, made, now).await;
        }
        // The model half of the monitor reads what the guard passed, before anything is pushed.
        let (run, verdict) = match self
            .monitor_reads(&run, host.as_ref(), &repo, &base, &proposal, now)
            .await?
        {
            Ok(read) => read,
            Err(why) => return Ok(why),
        };
        if let MonitorVerdict::Flag(why) = verdict {
            let made = Made {
                id,
                branch,
                summary: proposal.summary,
                head_sha: None,
                flagged: Some(why),
                skill: None,
            };
            return self.add_and_dispatch(&run, made, now).await;
        }
        let head = match self
            .push_attempt(
                host.as_ref(),
                &repo,
                &branch,
                &base,
                &default_branch,
                &id,
                &proposal,
            )
            .await
        {
            Ok(head) => head,
            Err(e) => {
                let _ = host.delete_branch(&repo, &branch).await;
                return Ok(format!(
                    "pushing {branch} failed ({e}); the next tick tries again"
                ));
            }
        };
        let made = Made {
            id,
            branch,
            summary: proposal.summary,
            head_sha: Some(head),
            flagged: None,
            skill: None,
        };
        self.add_and_dispatch(&run, made, now).await
    }

    /// Asks the monitor model (`Stage::Monitor`) whether `proposal` games the score, reading
    /// each file before (on `base`) and after, and records the call's cost on the run. The
    /// run as it stands after the record and the verdict, or what the tick reports instead
    /// (the call failed: the next tick asks for a new attempt; another writer moved the run).
    async fn monitor_reads(
        &self,
        run: &RunRow,
        host: &dyn RepoHost,
        repo: &RepoRef,
        base: &str,
        proposal: &Proposal,
        now: Timestamp,
    ) -> Result<std::result::Result<(RunRow, MonitorVerdict), String>> {
        let Some(model) = &self.model else {
            return Ok(Err("api mode needs the model API; the run waits".into()));
        };
        let mut before = Vec::with_capacity(proposal.files.len());
        for f in &proposal.files {
            before.push(host.file_text(repo, &f.path, Some(base)).await.ok());
        }
        let files: Vec<MonitoredFile<'_>> = proposal
            .files
            .iter()
            .zip(&before)
            .map(|(f, b)| MonitoredFile {
                path: &f.path,
                before: b.as_deref(),
                after: &f.content,
            })
            .collect();
        let (system, user) = monitor_prompt(&proposal.summary, &files);
        let model_name = self.stage_model(Stage::Monitor, now).await?;
        let request = ModelRequest {
            model: model_name.clone(),
            system: Some(system),
            messages: vec![ModelMessage {
                role: ModelRole::User,
                content: user,
            }],
            max_tokens: MONITOR_MAX_TOKENS,
        };
        let reply = match model.complete(request).await {
            Ok(r) => r,
            Err(e) => {
                return Ok(Err(format!(
                    "the monitor model's call failed ({e}); the attempt is dropped and the next tick asks for another"
                )));
            }
        };
        let cost = estimate_usd(&model_name, reply.usage);
        let mut spend = RunUpdate::within(&run.id, RunStatus::Attempting, now);
        spend.tally_before = Some(run.tally);
        spend.add_cost_usd = cost;
        let verdict = read_monitor_answer(&reply.text);
        let flagged = matches!(verdict, MonitorVerdict::Flag(_));
        let spent = Advance {
            run: Some(spend),
            audits: vec![loop_audit(
                "improve-model-call",
                &run.namespace,
                None,
                json!({"run": run.id, "stage": Stage::Monitor.name(), "model": model_name,
                       "input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens,
                       "cost_usd": cost, "flagged": flagged}),
                now,
            )],
            ..Advance::default()
        };
        if self.runs.advance(spent).await? == Advanced::Lost {
            return Ok(Err("another writer moved the run first".into()));
        }
        Ok(match self.runs.run(&run.id).await? {
            Some(run) => Ok((run, verdict)),
            None => Err("the run vanished".into()),
        })
    }

    /// Pushes the proposal to `branch` (from `base`) and opens its pull request; the head.
    #[allow(clippy::too_many_arguments)]
    async fn push_attempt(
        &self,
        host: &dyn RepoHost,
        repo: &RepoRef,
        branch: &str,
        base: &str,
        default_branch: &str,
        id: &str,
        proposal: &Proposal,
    ) -> std::result::Result<String, RepoHostError> {
        match host.create_branch(repo, branch, base).await {
            Ok(()) | Err(RepoHostError::Rejected(_)) => {}
            Err(e) => return Err(e),
        }
        let mut head = base.to_owned();
        let message = format!("improve: {} ({id})", proposal.summary);
        for f in &proposal.files {
            let sha = match host.contents(repo, &f.path, Some(branch)).await {
                Ok(Contents::File(blob)) => Some(blob.sha),
                Ok(_) => {
                    return Err(RepoHostError::Rejected(format!("{} is not a file", f.path)));
                }
                Err(RepoHostError::NotFound(_)) => None,
                Err(e) => return Err(e),
            };
            let commit = host
                .put_file(
                    repo,
                    &FileWrite {
                        path: &f.path,
                        content: &f.content,
                        message: &message,
                        branch,
                        sha: sha.as_deref(),
                    },
                )
                .await?;
            head = commit.commit_sha;
        }
        let open = host.open_pull_requests(repo, Some(branch)).await?;
        if !open.iter().any(|p| p.head_ref == branch) {
            let body = format!(
                "An attempt of the self-improvement loop ({id}).\n\n{}\n\nThe scorer decides keep or revert; nothing merges without a human (or the auto-merge policy).",
                proposal.summary
            );
            host.create_pull(
                repo,
                &format!("improve: {}", proposal.summary),
                branch,
                default_branch,
                &body,
            )
            .await?;
        }
        Ok(head)
    }

    /// `improve_run` action `attempt` (subscription mode): the driver holding the lease reports
    /// the attempt it pushed to `improve/<attempt>`; the diff is checked against the protected
    /// paths, and the attempt is added and dispatched (or flagged).
    pub(crate) async fn report_attempt(
        &self,
        caller: &Caller,
        a: &super::RunArgs,
    ) -> Result<super::ImproveRunAnswer> {
        let ns = a.namespace.as_ref().map(|n| n.as_str());
        let head_sha = a.head_sha.as_ref().map(|h| h.as_str());
        let summary = a.summary.as_ref().map(|s| s.as_str());
        let skill = a.skill.as_ref().map(|s| s.as_str());
        let name = "attempt";
        let refuse = |why: String| Ok(super::refuse(name, why));
        let now = self.now();
        let Some(ns) = ns else {
            return refuse("attempt needs a namespace".into());
        };
        let Some(head) =
            head_sha.filter(|h| h.len() >= 7 && h.chars().all(|c| c.is_ascii_hexdigit()))
        else {
            return refuse(
                "attempt needs head_sha, the commit pushed (hex, at least 7 characters)".into(),
            );
        };
        if let Some(why) = self.not_the_driver(caller, ns, name, now).await? {
            return refuse(why);
        }
        let Some(mut run) = self.runs.live_run(ns).await? else {
            return refuse(format!("{ns} has no live run tonight"));
        };
        // The skill the session followed, if it names one: it must be a skill that may be
        // offered in the namespace, and a revert of the attempt leaves it a failure note.
        if let Some(id) = skill {
            let usable = self.skills.skill(id).await?.filter(|s| {
                s.status != crate::skills::SkillStatus::Retired.name()
                    && (s.source_namespace == ns
                        || crate::skills::offer::namespaces_admit(s.namespaces.as_deref(), ns))
            });
            if usable.is_none() {
                return refuse(format!(
                    "skill {id} is not a live or candidate skill that {ns} may use"
                ));
            }
        }
        // Every check comes before anything is written; an opening run begins only then.
        let ready = matches!(run.status, RunStatus::Opening | RunStatus::Attempting);
        if !ready || run.tally.outstanding() > 0 {
            return refuse(format!(
                "run {} is {} and not ready for an attempt",
                run.id, run.status
            ));
        }
        if let Some(stop) = run.tally.stop_reason() {
            return refuse(format!("run {}: {stop}", run.id));
        }
        // The protected-path guard reads the attempt's diff, so it needs the repository.
        let (Some(host), Some(repo), Some(base)) = (
            &self.repo_host,
            self.loop_repo(ns).await?,
            run.base_sha.as_deref(),
        ) else {
            return refuse(format!(
                "attempt needs the GitHub App and {ns}'s repository, to check the attempt's diff against the protected paths"
            ));
        };
        let mut flagged = None;
        match host.compare(&repo, base, head).await {
            Ok(cmp) => {
                let hits = protected_hits(cmp.files.iter().map(|f| f.path.as_str()));
                if !hits.is_empty() {
                    flagged = Some(format!("protected paths: {}", hits.join("; ")));
                }
            }
            Err(e) => return refuse(format!("comparing {base}...{head} on {repo} failed: {e}")),
        }
        if run.status == RunStatus::Opening {
            self.walk_run(&run, &[RunEvent::Begin], None, now).await?;
            run = match self.runs.run(&run.id).await? {
                Some(r) => r,
                None => return refuse("the run vanished".into()),
            };
        }
        let id = attempt_id(&run.id, run.tally.attempts + 1)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let branch = attempt_branch(&id);
        let made = Made {
            id: id.clone(),
            branch: branch.clone(),
            summary: summary
                .unwrap_or("an attempt by the subscription driver")
                .to_owned(),
            head_sha: Some(head.to_owned()),
            flagged,
            skill: skill.map(str::to_owned),
        };
        let did = self.add_and_dispatch(&run, made, now).await?;
        let row = self.runs.attempt(&id).await?;
        Ok(super::AttemptReported {
            ok: true,
            action: name,
            namespace: ns.to_owned(),
            run: run.id,
            attempt: id,
            branch,
            status: row.map(|r| r.status.as_str()),
            did,
        }
        .into())
    }
}
