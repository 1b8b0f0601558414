//! `ci_status` and `ci_dispatch` (reference 2.3): recent workflow runs with the latest
//! failure's jobs and steps (its failing step's log only for write-grant callers), and
//! starting a workflow or re-running failed jobs, never the improve loop's scorer.

use super::RepoCx;
use super::answer::{
    CiDispatchAnswer, CiDispatched, CiRerun, CiStatusAnswer, FailedJob, FailedRun, RunFilter,
    RunRow,
};
use std::collections::BTreeMap;

use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::guards::SCORER_WORKFLOW;
use crate::ports::{RepoHostError, RunQuery, RunStep, WorkflowRun};
use crate::scope::Grant;
use crate::service::Confirmer;
use crate::service::repo::args::{CiDispatchArgs, CiStatusArgs};
use crate::service::repo::read::tail;
use crate::service::repo::{Target, check_path, check_positive, check_ref, host_error};
use crate::time::Timestamp;

/// Bytes of the failing step's log a write-grant caller gets, from its end.
pub const CI_LOG_BUDGET: usize = 64 * 1024;
/// How long `ci_dispatch` looks for the run it started, and how often.
pub const CI_DISPATCH_POLL_MS: u64 = 30_000;
/// See [`CI_DISPATCH_POLL_MS`]; the adapter's pause is this long in production.
pub const CI_DISPATCH_POLL_INTERVAL_MS: u64 = 3_000;
/// GitHub's own ceiling on `workflow_dispatch` inputs.
pub const CI_DISPATCH_MAX_INPUTS: usize = 10;
/// What makes a workflow a scorer whatever its file is called: it posts here.
const SCORE_PATH_MARKER: &str = "/improve/score";

fn is_sha_shaped(value: &str) -> bool {
    (7..=40).contains(&value.len()) && value.chars().all(|c| c.is_ascii_hexdigit())
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// The failing step's lines, found by its timestamp window (Actions labels groups by
/// command, not by step name), cut to [`CI_LOG_BUDGET`] from the end; otherwise the end of
/// the whole job log, saying so.
pub fn failing_step_log(log: &str, step: Option<&RunStep>) -> (String, String) {
    let name = step.map(|s| s.name.as_str());
    let window = step.and_then(|s| {
        let from = Timestamp::parse(s.started_at.as_deref()?)?;
        let to = Timestamp::parse(s.completed_at.as_deref()?)?;
        Some((from, to))
    });
    if let Some((from, to)) = window {
        let lines: Vec<&str> = log
            .split('\n')
            .filter(|line| {
                let stamp = line.split(' ').next().unwrap_or_default();
                stamp.ends_with('Z')
                    && Timestamp::parse(stamp).is_some_and(|at| at >= from && at <= to)
            })
            .collect();
        if !lines.is_empty() {
            let joined = lines.join("\n");
            let name = name.unwrap_or_default();
            let (kept, cut) = tail(&joined, CI_LOG_BUDGET);
            let how = if cut {
                format!(
                    "failing step \"{name}\" by timestamp window, last {CI_LOG_BUDGET} bytes of it"
                )
            } else {
                format!(
                    "failing step \"{name}\" by timestamp window, whole ({} bytes)",
                    joined.len()
                )
            };
            return (kept.to_owned(), how);
        }
    }
    let (kept, _) = tail(log, CI_LOG_BUDGET);
    let how = match name {
        Some(n) => format!(
            "step \"{n}\" had no usable timestamp window, so this is the last {CI_LOG_BUDGET} bytes of the whole job, cleanup included"
        ),
        None => format!(
            "no failing step was named, so this is the last {CI_LOG_BUDGET} bytes of the whole job, cleanup included"
        ),
    };
    (kept.to_owned(), how)
}

fn run_row(r: &WorkflowRun) -> RunRow {
    RunRow {
        name: r.name.clone(),
        head_sha: short(&r.head_sha).to_owned(),
        status: r.status.clone(),
        conclusion: r.conclusion.clone(),
        event: r.event.clone(),
        created_at: r.created_at.clone(),
        url: r.url.clone(),
    }
}

/// What a read-only caller is told instead of the log.
const LOG_WITHHELD: &str =
    "read-only key: run metadata only. A write-grant key returns the failing step's log.";

impl RepoCx<'_> {
    pub(crate) async fn ci_status(
        &self,
        caller: &Caller,
        a: CiStatusArgs,
        _: &dyn Confirmer,
    ) -> Result<CiStatusAnswer> {
        const TOOL: &str = "ci_status";
        let git_ref = a.git_ref.as_ref().map(|r| r.as_str());
        check_ref(TOOL, "ref", git_ref)?;
        check_positive(TOOL, "limit", a.limit.map(u64::from))?;
        check_positive(TOOL, "run_id", a.run_id)?;
        let limit = a.limit.map_or(10, |l| l.min(20));
        let log_tail = caller.scopes.has_grant(Grant::Write);
        let sel = a.repo.as_ref().map(|r| r.as_str());
        let t = self
            .repo_target(caller, TOOL, a.namespace.as_str(), sel)
            .await?;
        let full = t.full();
        let (runs, filter) = if let Some(id) = a.run_id {
            let run = t
                .host
                .workflow_run(&t.repo, id)
                .await
                .map_err(|e| match e {
                    RepoHostError::NotFound(_) => {
                        Error::NotFound(format!("{TOOL}: run {id} does not exist on {full}"))
                    }
                    other => host_error(TOOL, other),
                })?;
            (vec![run], Some(RunFilter::Run { run_id: id }))
        } else {
            let mut query = RunQuery {
                per_page: limit,
                ..RunQuery::default()
            };
            match git_ref {
                Some(r) if is_sha_shaped(r) => {
                    // GitHub matches head_sha exactly: a short sha must be expanded first.
                    let sha = if r.len() < 40 {
                        t.host.commit(&t.repo, r).await.map(|c| c.commit.sha).map_err(|e| {
                            Error::NotFound(format!(
                                "{TOOL}: {r} does not resolve to a commit on {full} ({e}), so runs cannot be filtered by it"
                            ))
                        })?
                    } else {
                        r.to_owned()
                    };
                    query.head_sha = Some(sha);
                }
                Some(r) => query.branch = Some(r.to_owned()),
                None => {}
            }
            let runs = t
                .host
                .recent_workflow_runs(&t.repo, &query)
                .await
                .map_err(|e| match e {
                    RepoHostError::Forbidden(m) => Error::Forbidden(format!(
                        "{TOOL}: the GitHub App lacks Actions: Read on {full}; add that permission in the App settings and accept the installation prompt, then retry ({m})"
                    )),
                    other => host_error(TOOL, other),
                })?;
            (
                runs,
                git_ref.map(|r| RunFilter::Ref {
                    git_ref: r.to_owned(),
                }),
            )
        };
        let mut out = CiStatusAnswer {
            repo: full,
            runs: runs.iter().map(run_row).collect(),
            filter,
            failed_run: None,
        };
        if let Some(failed) = runs
            .iter()
            .find(|r| r.conclusion.as_deref() == Some("failure"))
        {
            out.failed_run = Some(self.failed_run(&t, failed, log_tail).await);
        }
        Ok(out)
    }

    /// The latest failed run's failing jobs and steps; every degraded path is named.
    async fn failed_run(&self, t: &Target, failed: &WorkflowRun, log_tail: bool) -> FailedRun {
        let mut out = FailedRun {
            name: failed.name.clone(),
            head_sha: short(&failed.head_sha).to_owned(),
            url: failed.url.clone(),
            jobs_unavailable: None,
            jobs: None,
            log_tail_unavailable: None,
            log_tail_withheld: None,
            failing_job: None,
            failing_step: None,
            log_region: None,
            log: None,
        };
        let jobs = match t.host.run_jobs(&t.repo, failed.id).await {
            Ok(jobs) => jobs,
            Err(e) => {
                out.jobs_unavailable = Some(e.to_string());
                return out;
            }
        };
        let failing: Vec<_> = jobs
            .iter()
            .filter(|j| j.conclusion.as_deref() == Some("failure"))
            .collect();
        out.jobs = Some(
            failing
                .iter()
                .map(|j| FailedJob {
                    name: j.name.clone(),
                    failed_steps: j
                        .steps
                        .iter()
                        .filter(|s| s.conclusion.as_deref() == Some("failure"))
                        .map(|s| s.name.clone())
                        .collect(),
                })
                .collect(),
        );
        let Some(first) = failing.first() else {
            if log_tail {
                out.log_tail_unavailable = Some(
                    "the run is marked failed but no job in it is, so there is no job log to read"
                        .into(),
                );
            } else {
                out.log_tail_withheld = Some(LOG_WITHHELD.into());
            }
            return out;
        };
        if !log_tail {
            out.log_tail_withheld = Some(LOG_WITHHELD.into());
            return out;
        }
        match t.host.job_log(&t.repo, first.id).await {
            Ok(log) => {
                let step = first
                    .steps
                    .iter()
                    .find(|s| s.conclusion.as_deref() == Some("failure"));
                let (text, how) = failing_step_log(&log, step);
                out.failing_job = Some(first.name.clone());
                out.failing_step = Some(step.map(|s| s.name.clone()));
                out.log_region = Some(how);
                out.log = Some(text);
            }
            Err(e) => out.log_tail_unavailable = Some(e.to_string()),
        }
        out
    }

    pub(crate) async fn ci_dispatch(
        &self,
        caller: &Caller,
        a: CiDispatchArgs,
        _: &dyn Confirmer,
    ) -> Result<CiDispatchAnswer> {
        const TOOL: &str = "ci_dispatch";
        let ns = a.namespace.as_str();
        let sel = a.repo.as_ref().map(|r| r.as_str());
        let git_ref = a.git_ref.as_ref().map(|r| r.as_str());
        check_ref(TOOL, "ref", git_ref)?;
        check_positive(TOOL, "run_id", a.run_id)?;
        let workflow = a.workflow.as_ref().map(|w| w.as_str());
        check_path(TOOL, "workflow", workflow)?;
        if workflow.is_some() && a.run_id.is_some() {
            return Err(Error::Invalid(format!(
                "{TOOL}: pass workflow and ref to start a run, or run_id to rerun one, not both"
            )));
        }
        if a.run_id.is_none() && (workflow.is_none() || git_ref.is_none()) {
            return Err(Error::Invalid(format!(
                "{TOOL}: workflow and ref are both required to start a run (or pass run_id alone to rerun its failed jobs)"
            )));
        }
        let inputs: BTreeMap<String, String> = a
            .inputs
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.0.clone()))
            .collect();
        if inputs.len() > CI_DISPATCH_MAX_INPUTS {
            return Err(Error::Invalid(format!(
                "{TOOL}: inputs has {} entries; at most {CI_DISPATCH_MAX_INPUTS} workflow inputs (GitHub's own workflow_dispatch ceiling)",
                inputs.len()
            )));
        }
        if let Some(bad) = inputs
            .keys()
            .find(|k| k.is_empty() || crate::paths::js_len(k) > crate::docs::bounds::GIT_REF)
        {
            return Err(Error::Invalid(format!(
                "{TOOL}: inputs key {bad:?} must be 1 to {} characters",
                crate::docs::bounds::GIT_REF
            )));
        }
        // The scorer signs what it measured: a hand dispatch could mint a signed report for an
        // arbitrary ref. Refused by shape and by name before any GitHub call.
        let basename = workflow.map(|w| w.rsplit('/').next().unwrap_or(w));
        if let Some(base) = basename {
            let shaped = base.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && matches!(ext, "yml" | "yaml")
                    && stem
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            });
            if !shaped {
                return Err(Error::Invalid(format!(
                    "{TOOL} refuses: {base:?} is not a workflow file name. Pass the file name (for example ci.yml); a numeric workflow id names the same file by another route and is refused."
                )));
            }
            if base.eq_ignore_ascii_case(SCORER_WORKFLOW) {
                return Err(Error::Forbidden(format!(
                    "{TOOL} refuses: {SCORER_WORKFLOW} is the improve loop's scorer, and a hand dispatch of it can mint a signed score report for an arbitrary ref. The loop dispatches it itself."
                )));
            }
        }
        let t = self.repo_target(caller, TOOL, ns, sel).await?;
        let full = t.full();
        if let Some(base) = basename {
            // A scorer under another name still posts to the score endpoint. A read failure
            // is not a verdict: the checks above hold without it.
            let path = format!(".github/workflows/{base}");
            if let Ok(text) = t.host.file_text(&t.repo, &path, None).await
                && text.contains(SCORE_PATH_MARKER)
            {
                return Err(Error::Forbidden(format!(
                    "{TOOL} refuses: {base} on {full} posts to {SCORE_PATH_MARKER}, which makes it a scorer whatever it is called."
                )));
            }
        }
        let result = match (a.run_id, basename, git_ref) {
            (Some(id), _, _) => CiDispatchAnswer::Rerun(self.rerun(&t, id).await?),
            (None, Some(base), Some(git_ref)) => {
                CiDispatchAnswer::Dispatch(self.dispatch(&t, base, git_ref, &inputs).await?)
            }
            _ => return Err(Error::Invalid(format!("{TOOL}: nothing to do"))),
        };
        self.record_repo_mutation(caller, TOOL, ns, None, &t.repo, result)
            .await
    }

    async fn rerun(&self, t: &Target, id: u64) -> Result<CiRerun> {
        const TOOL: &str = "ci_dispatch";
        let full = t.full();
        // A rerun re-executes a run: rerunning the scorer would re-sign against its ref.
        if let Ok(run) = t.host.workflow_run(&t.repo, id).await
            && run
                .path
                .rsplit('/')
                .next()
                .is_some_and(|b| b.eq_ignore_ascii_case(SCORER_WORKFLOW))
        {
            return Err(Error::Forbidden(format!(
                "{TOOL} refuses: run {id} on {full} is a {SCORER_WORKFLOW} run, and rerunning it re-executes the signing step against that run's ref."
            )));
        }
        t.host
            .rerun_failed_jobs(&t.repo, id)
            .await
            .map_err(|e| host_error(TOOL, e))?;
        Ok(CiRerun {
            repo: full,
            mode: "rerun",
            run_id: id,
            rerun_requested: true,
            audit_warning: None,
        })
    }

    async fn dispatch(
        &self,
        t: &Target,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<CiDispatched> {
        const TOOL: &str = "ci_dispatch";
        let full = t.full();
        let query = RunQuery {
            branch: Some(git_ref.to_owned()),
            head_sha: None,
            per_page: 5,
        };
        let err = |e| host_error(TOOL, e);
        let before: Vec<u64> = t
            .host
            .recent_workflow_runs(&t.repo, &query)
            .await
            .map_err(err)?
            .iter()
            .map(|r| r.id)
            .collect();
        match t
            .host
            .dispatch_workflow(&t.repo, workflow, git_ref, inputs)
            .await
        {
            Ok(()) => {}
            Err(RepoHostError::Rejected(m)) if m.to_lowercase().contains("workflow_dispatch") => {
                return Err(Error::Conflict(format!(
                    "{TOOL} refuses: {workflow} has no workflow_dispatch trigger on {full}, so it cannot be started by hand. Add \"on: workflow_dispatch:\" to it, or trigger it the way it is configured. GitHub said: {m}"
                )));
            }
            Err(e) => return Err(err(e)),
        }
        // 204 means accepted, not started: look for the run that was not there before.
        let polls_allowed = CI_DISPATCH_POLL_MS / CI_DISPATCH_POLL_INTERVAL_MS;
        let mut out = CiDispatched {
            repo: full,
            mode: "dispatch",
            workflow: workflow.to_owned(),
            git_ref: git_ref.to_owned(),
            dispatched: true,
            run_id: None,
            status: None,
            url: None,
            polls: 0,
            note: None,
            audit_warning: None,
        };
        while out.polls < polls_allowed {
            t.host.poll_pause().await;
            out.polls += 1;
            let runs = t.host.recent_workflow_runs(&t.repo, &query).await;
            if let Some(run) = runs.iter().flatten().find(|r| !before.contains(&r.id)) {
                out.run_id = Some(run.id);
                out.status = Some(run.status.clone());
                out.url = Some(run.url.clone());
                return Ok(out);
            }
        }
        out.note = Some(format!(
            "dispatch was accepted, but no new run appeared for {git_ref} within {}s. It may still start; check ci_status with this ref.",
            CI_DISPATCH_POLL_MS / 1000
        ));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failing_steps_window_is_cut_from_the_log() {
        let log = "2026-11-30T10:00:00.0000000Z setup\n\
                   2026-11-30T10:00:05.1234567Z cargo test\n\
                   2026-11-30T10:00:06.0000000Z error: 1 failed\n\
                   2026-11-30T10:00:09.0000000Z cleanup";
        let step = RunStep {
            name: "Test".into(),
            conclusion: Some("failure".into()),
            started_at: Some("2026-11-30T10:00:05Z".into()),
            completed_at: Some("2026-11-30T10:00:07Z".into()),
        };
        let (text, how) = failing_step_log(log, Some(&step));
        assert_eq!(
            text,
            "2026-11-30T10:00:05.1234567Z cargo test\n2026-11-30T10:00:06.0000000Z error: 1 failed"
        );
        assert!(how.contains("timestamp window"), "{how}");
        let (text, how) = failing_step_log(log, None);
        assert_eq!(text, log);
        assert!(how.contains("whole job"), "{how}");
    }

    #[test]
    fn sha_shapes() {
        assert!(is_sha_shaped("abc1234"));
        assert!(!is_sha_shaped("main"));
        assert!(!is_sha_shaped("abc12"));
    }
}
