//! One claimed job, run, in three phases: `prepare` (the job's terms from the claim, its place:
//! the box's clone or a worktree, the role's skill, the gates' settings), `session` (the agent
//! behind the run's doors, to its end) and `judge` (what the driver measured, its own test gate
//! and build check in a fresh box, the verdict, the pull request, and the job closed with
//! them); this module keeps what they share (the run's saved state, the server's answers, the
//! checkpoint at each step and the job's close).

use std::path::Path;

use anyhow::{Context, Result};
use capsid_core::checkmarks::AgentStatus;
use capsid_core::drive::credential::remote_host;
use capsid_core::drive::stream::SessionReport;
use capsid_core::drive::verdict::{Close, GitFacts, HookState, pr_url_in, tests_added};
use capsid_core::jobs::pipeline::RunMerge;
use serde_json::{Value, json};

use super::mcp::base_url;
use super::model_door::Metered;
use super::proc::{git, shell};
use super::{Claimed, EXIT_DONE, EXIT_GATED, Ready, boxed, worktree};

mod judge;
mod prepare;
mod session;

/// What the driver keeps of a run between its stops, in the run's folder: the session to
/// resume and, when the session stopped on `AskUserQuestion`, that question (its replay is
/// then answered with the person's answer instead of being asked again).
#[derive(Clone, Debug, Default)]
struct RunState {
    session_id: Option<String>,
    asked: Option<String>,
    /// The commit the job's branch started from (what "shipped" is counted against, whatever
    /// happens to the default branch meanwhile).
    base_sha: Option<String>,
}

impl RunState {
    fn path(dir: &Path) -> std::path::PathBuf {
        dir.join("state.json")
    }
    fn load(dir: &Path) -> RunState {
        let v: Value = std::fs::read_to_string(RunState::path(dir))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let text = |k: &str| v[k].as_str().map(str::to_owned);
        RunState {
            session_id: text("session_id"),
            asked: text("asked"),
            base_sha: text("base_sha"),
        }
    }
    fn save(&self, dir: &Path) {
        let v =
            json!({"session_id": self.session_id, "asked": self.asked, "base_sha": self.base_sha});
        let _ = std::fs::write(RunState::path(dir), v.to_string());
    }
}

/// Runs `job` (claimed by this driver, with the run credential the server issued for this
/// claim) to its end, in three phases: [`prepare`] (the place, the skill, the gates' settings),
/// [`session`] (the agent behind its doors) and [`judge`] (the driver's own gates and the
/// verdict); the process exit code.
pub(crate) async fn run_job(r: &Ready, claimed: Claimed) -> Result<u8> {
    let mut prepared = prepare::prepare(r, claimed).await?;
    let session = session::session(r, &mut prepared).await?;
    judge::judge(r, prepared, session).await
}

/// The record of a run without a box (`--unboxed`), in the job's outcome.
const UNBOXED: &str = "Unboxed (--unboxed): the agent ran as the driver's own user, with the host's files, git config and network.";

/// Keeps a file the driver changed in the worktree out of the agent's commits.
async fn hide_path(wt: &Path, rel: &str) {
    if git(wt, &["ls-files", "--error-unmatch", rel]).await.is_ok() {
        let _ = git(wt, &["update-index", "--skip-worktree", rel]).await;
    } else if let Ok(common) = git(wt, &["rev-parse", "--git-common-dir"]).await {
        let common = Path::new(&common);
        let exclude = if common.is_absolute() {
            common.join("info").join("exclude")
        } else {
            wt.join(common).join("info").join("exclude")
        };
        let text = std::fs::read_to_string(&exclude).unwrap_or_default();
        let line = format!("/{rel}");
        if !text.lines().any(|l| l.trim() == line) {
            let _ = std::fs::write(&exclude, format!("{text}{line}\n"));
        }
    }
}

/// The driver's checkmark, when it belongs to this job, and the last test verdict its hooks
/// recorded there (`pass`, `fail`).
/// The merges this job's run made or was refused, as the server recorded them (the `merges`
/// of `jobs get`, a deploy's): what its verdict is decided on, never the agent's word.
async fn run_merges(r: &Ready, id: &str) -> Result<Vec<RunMerge>> {
    #[derive(serde::Deserialize)]
    struct Got {
        #[serde(default)]
        merges: Option<Vec<RunMerge>>,
    }
    let got = r
        .mcp
        .ok(
            "jobs",
            json!({"action": "get", "id": id, "namespace": r.namespace}),
        )
        .await?;
    let got: Got = serde_json::from_value(got)
        .context("the server's answer to jobs get has merges this driver cannot read")?;
    Ok(got.merges.unwrap_or_default())
}

/// The namespace's deploy command, run once the server recorded this run's merge through the
/// gate (which wanted another agent's standing approval of the head: the deploy is a gate of
/// the same kind, never the agent's to run). It runs on this host in the project's own
/// checkout, never the agent's clone, with the merge in `CAPSID_DEPLOY_REPO`, `_PR` and
/// `_SHA`. `None`: no merge, or no deploy command.
async fn deploy_after_merge(
    r: &Ready,
    id: &str,
    merges: &[capsid_core::jobs::pipeline::RunMerge],
) -> Result<Option<capsid_core::drive::gate::GateRun>> {
    let Some(merged) = merges.iter().rev().find(|m| m.merged) else {
        return Ok(None);
    };
    let settings = super::namespace_runner(&r.mcp, &r.namespace).await?;
    let Some(command) = settings.deploy_command.as_deref() else {
        return Ok(None);
    };
    eprintln!(
        "capsid drive: {id}: {}#{} merged through the gate; running the namespace's deploy command `{command}` in {}",
        merged.repo,
        merged.number,
        r.root.display()
    );
    let envs = [
        ("CAPSID_DEPLOY_REPO".to_owned(), merged.repo.clone()),
        ("CAPSID_DEPLOY_PR".to_owned(), merged.number.to_string()),
        (
            "CAPSID_DEPLOY_SHA".to_owned(),
            merged.sha.clone().unwrap_or_default(),
        ),
        ("CAPSID_JOB_ID".to_owned(), id.to_owned()),
    ];
    let run = shell(command, &r.root, &envs).await;
    eprintln!(
        "capsid drive: {id}: the deploy command {}",
        match run.exit_code {
            Some(0) => "passed".to_owned(),
            Some(c) => format!("failed with exit code {c}"),
            None => "was killed or did not start".to_owned(),
        }
    );
    Ok(Some(run))
}

async fn hook_state(r: &Ready, agent: &str, id: &str) -> (Option<HookState>, Option<String>) {
    let Ok(got) = r
        .mcp
        .ok(
            "checkmarks",
            json!({"action": "get", "namespace": r.namespace, "agent": agent}),
        )
        .await
    else {
        return (None, None);
    };
    let c = &got["checkmark"];
    if c["job_id"].as_str() != Some(id) {
        return (None, None);
    }
    let tests = c["tests_status"]
        .as_str()
        .filter(|t| matches!(*t, "pass" | "fail"))
        .map(str::to_owned);
    let state = c["status"]
        .as_str()
        .and_then(AgentStatus::parse)
        .map(|status| HookState {
            status,
            question: c["open_question"].as_str().map(str::to_owned),
            // The checkmark is written with the run credential the agent holds: its words.
            from_gate: false,
        });
    (state, tests)
}

/// Commits, files and tests from the branch point to `head` in `wt`, and the PR the agent
/// printed.
async fn git_facts(
    wt: &Path,
    base: &str,
    head: &str,
    report: Option<&SessionReport>,
    stdout: &str,
) -> GitFacts {
    let range = format!("{base}...{head}");
    let commits = git(wt, &["rev-list", "--count", &format!("{base}..{head}")])
        .await
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let files = git(wt, &["diff", "--name-only", &range])
        .await
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count() as u64)
        .unwrap_or(0);
    let diff = git(wt, &["diff", &range]).await.unwrap_or_default();
    let pr = report
        .and_then(|r| r.result.as_deref())
        .and_then(pr_url_in)
        .or_else(|| pr_url_in(stdout));
    // A bare mirror has no work tree: what it holds is committed.
    let clean_tree = head != "HEAD"
        || git(wt, &["status", "--porcelain"])
            .await
            .is_ok_and(|t| t.trim().is_empty());
    GitFacts {
        commits,
        files_changed: files,
        tests_added: tests_added(&diff),
        pr,
        clean_tree,
        unshipped_commits: 0,
    }
}

/// A push the run made: the job's branch on `origin` at the worktree's head.
struct Pushed {
    sha: String,
    host: Option<String>,
    github: bool,
}

/// Whether `origin` holds the job's branch at the worktree's head (the agent pushed it).
async fn pushed(wt: &Path, id: &str) -> Option<Pushed> {
    let head = git(wt, &["rev-parse", "HEAD"]).await.ok()?;
    let remote = git(
        wt,
        &["ls-remote", "origin", &format!("refs/heads/capsid/{id}")],
    )
    .await
    .ok()?;
    let sha = remote.split_whitespace().next()?;
    if sha != head {
        return None;
    }
    let host = git(wt, &["remote", "get-url", "origin"])
        .await
        .ok()
        .and_then(|u| remote_host(&u));
    Some(Pushed {
        github: host.as_deref() == Some("github.com"),
        sha: head,
        host,
    })
}

/// The command a human runs to answer a paused agent and resume it.
fn resume_hint(r: &Ready, agent: &str) -> String {
    format!(
        "curl -s {}/api/projects/{}/agents/{agent}/answer -H \"Authorization: Bearer $CAPSID_KEY\" -H 'Content-Type: application/json' -d '{{\"answer\": \"<your answer>\", \"resume\": true}}' && capsid drive --once --namespace {}{}",
        base_url(&r.url),
        r.namespace,
        r.namespace,
        if r.boxed.is_some() { "" } else { " --unboxed" }
    )
}

/// Records a checkpoint of this job.
async fn checkpoint(r: &Ready, id: &str, mut args: Value) -> Result<Value> {
    args["namespace"] = json!(r.namespace);
    args["job_id"] = json!(id);
    r.mcp.ok("checkpoint", args).await
}

/// What the driver measured, for the closing checkpoint.
struct Measured<'a> {
    report: Option<&'a SessionReport>,
    /// The checkmark as the server holds it (not as the driver inferred it).
    recorded: Option<&'a HookState>,
    gates: Gates,
    push: Option<Pushed>,
    /// What the model door counted.
    metered: &'a Metered,
    /// A boxed run's doors in one sentence.
    doors_line: Option<String>,
    /// A boxed run's folder (removed when the job is done).
    boxed_base: Option<std::path::PathBuf>,
}

/// What the driver's own gates said, as checkpoint fields (`None`: not run).
struct Gates {
    tests: Option<&'static str>,
    build: Option<&'static str>,
}

/// What the session cost and took, for the job's outcome: the door's count (with the agent's
/// own figure when it differs), the turns and the time the agent reported.
fn session_cost(metered: &Metered, rep: Option<&SessionReport>, runtime: &str) -> String {
    let mut s = metered.line(rep.and_then(|r| r.cost_usd));
    if let Some(t) = rep.and_then(|r| r.turns) {
        s.push_str(&format!(" {t} turn(s) of {runtime}"));
        if let Some(ms) = rep.and_then(|r| r.duration_ms) {
            s.push_str(&format!(", {:.1} s", ms as f64 / 1000.0));
        }
        s.push('.');
    }
    s
}

/// The session's counted cost (what the namespace's budget sums), its turns and time, as
/// outcome evidence.
fn measured_cost(metered: &Metered, rep: Option<&SessionReport>) -> serde_json::Map<String, Value> {
    let mut m = metered.evidence();
    if let Some(t) = rep.and_then(|r| r.turns) {
        m.insert("turns".into(), json!(t));
    }
    if let Some(ms) = rep.and_then(|r| r.duration_ms) {
        m.insert("duration_ms".into(), json!(ms));
    }
    m
}

/// Closes the job as `close` says, with the checkpoint that goes with it.
async fn finish(
    r: &Ready,
    id: &str,
    wt: &Path,
    close: &Close,
    measured: Measured<'_>,
) -> Result<u8> {
    let Measured {
        report,
        recorded,
        gates,
        push,
        metered,
        doors_line,
        boxed_base,
    } = measured;
    let mut session = json!({});
    if let Some(p) = push {
        session["push_sha"] = json!(p.sha);
        if !p.github {
            session["decisions"] = json!(format!(
                "pushed {} to {}, which is not GitHub: its CI verdict stays pending (Capsid reads CI through the GitHub App)",
                p.sha,
                p.host.as_deref().unwrap_or("a local remote")
            ));
        }
    }
    if let Some(t) = gates.tests {
        session["tests_status"] = json!(t);
    }
    if let Some(b) = gates.build {
        session["build_status"] = json!(b);
    }
    if let Some(rep) = report {
        if let Some(s) = &rep.session_id {
            session["session_id"] = json!(s);
        }
        if let Some(t) = rep.turns {
            session["turns"] = json!(t);
        }
    }
    session["cost_usd"] = json!(metered.spent.dollars());
    if let Close::Complete { scout: true, .. } = close {
        session["tests_status"] = json!("skipped");
        session["clean_tree"] = json!(true);
    }
    let merge = |mut v: Value| {
        if let (Some(o), Some(s)) = (v.as_object_mut(), session.as_object()) {
            o.extend(s.clone());
        }
        v
    };
    let cost = Some(match &doors_line {
        Some(d) => format!("{} {d}", session_cost(metered, report, r.runtime.name())),
        None => session_cost(metered, report, r.runtime.name()),
    });
    match close {
        Close::Complete {
            summary, evidence, ..
        } => {
            let summary = &match &cost {
                Some(c) => format!("{summary} {c}")
                    .chars()
                    .take(1000)
                    .collect::<String>(),
                None => summary.clone(),
            };

            let mut evidence = evidence.clone();
            if let Some(e) = evidence.as_object_mut() {
                e.extend(measured_cost(metered, report));
            }
            let mut args = json!({"action": "complete", "id": id, "namespace": r.namespace, "result_summary": summary, "evidence": evidence});
            if let Some(pr) = evidence["prs"][0].as_str() {
                args["result_ref"] = json!(pr);
            }
            let done = r.mcp.call("jobs", args).await?;
            if let super::mcp::Answer::Refused(why) = done {
                // The claim is not left to run out: the job fails with the server's reason.
                eprintln!("capsid drive: the server refused to complete {id}: {why}");
                let reason: String =
                    format!("the tests pass, but the server refused to complete the job: {why}")
                        .chars()
                        .take(1000)
                        .collect();
                r.mcp
                    .ok(
                        "jobs",
                        json!({"action": "fail", "id": id, "namespace": r.namespace, "reason": reason}),
                    )
                    .await?;
                worktree::keep_failed(&r.root, id);
                checkpoint(
                    r,
                    id,
                    merge(json!({"status": "working", "where_it_stopped": reason})),
                )
                .await?;
                println!("{id} failed: {reason}");
                return Ok(EXIT_GATED);
            }
            checkpoint(
                r,
                id,
                merge(json!({
                    "status": "done",
                    "where_it_stopped": "done: the driver's test gate passed",
                    "summary": summary,
                })),
            )
            .await?;
            match &boxed_base {
                Some(base) => boxed::remove(base),
                None => {
                    if let Err(e) = worktree::remove(&r.root, wt).await {
                        eprintln!("capsid drive: {e:#}");
                    }
                }
            }
            println!("{id} done: {summary}");
        }
        Close::Fail { reason } => {
            let reason = &match &cost {
                Some(c) => {
                    let keep = 1000usize.saturating_sub(c.chars().count() + 1);
                    format!("{} {c}", reason.chars().take(keep).collect::<String>())
                }
                None => reason.clone(),
            };
            let evidence = measured_cost(metered, report);
            r.mcp
                .ok(
                    "jobs",
                    json!({"action": "fail", "id": id, "namespace": r.namespace, "reason": reason, "evidence": evidence}),
                )
                .await?;
            worktree::keep_failed(&r.root, id);
            checkpoint(
                r,
                id,
                merge(json!({
                    "status": "working",
                    "where_it_stopped": format!("the job failed; its worktree is kept for a day at {}", wt.display()),
                    "summary": reason,
                })),
            )
            .await?;
            println!("{id} failed: {reason}");
        }
        Close::Block {
            reason,
            command,
            question,
        } => {
            let already = recorded.is_some_and(|h| {
                h.status
                    == if *question {
                        AgentStatus::PausedForInput
                    } else {
                        AgentStatus::Blocked
                    }
                    && h.question.is_some()
            });
            let status = if *question {
                "paused_for_input"
            } else {
                "blocked"
            };
            let asked = if *question {
                reason
                    .strip_prefix("The agent asked: ")
                    .unwrap_or(reason)
                    .to_owned()
            } else {
                command.clone()
            };
            // The hook recorded the question (and fired the webhook) when it could; the
            // driver records it when the hook could not, and always keeps the session.
            if !already {
                checkpoint(
                    r,
                    id,
                    merge(json!({
                        "status": status,
                        "question": asked,
                        "where_it_stopped": if *question { "waiting on an answer" } else { "waiting on a human gate" },
                    })),
                )
                .await?;
            }
            let mut args =
                json!({"action": "block", "id": id, "namespace": r.namespace, "reason": reason});
            if !command.is_empty() {
                args["command"] = json!(command);
            }
            r.mcp.ok("jobs", args).await?;
            println!("{id} blocked: {reason}\n  next: {command}");
        }
    }
    Ok(match close {
        Close::Complete { .. } => EXIT_DONE,
        Close::Fail { .. } | Close::Block { .. } => EXIT_GATED,
    })
}
