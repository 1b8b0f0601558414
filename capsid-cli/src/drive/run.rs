//! One claimed job, run: the worktree, the agent (`agent.rs`), the driver's own test gate
//! and build check, git's facts, and the job closed with them (complete, fail or block) with
//! a checkpoint at each step.

use std::path::Path;

use anyhow::{Context, Result};
use capsid_core::checkmarks::AgentStatus;
use capsid_core::drive::credential::remote_host;
use capsid_core::drive::hooks::Branches;
use capsid_core::drive::stream::{SessionReport, read_report};
use capsid_core::drive::verdict::{
    self, Close, GitFacts, HookState, RunFacts, human_gate_in, pr_url_in, tests_added,
};
use capsid_core::jobs::signature::split_signed;
use serde_json::{Value, json};

use super::agent::{
    agent_command_line, agent_env, mise_install, run_agent, run_files, with_heartbeat,
};
use super::mcp::base_url;
use super::model_door::{self, Metered};
use super::proc::{default_branch, git, shell};
use super::{EXIT_DONE, EXIT_GATED, Ready, Resume, githook, preflight, worktree};

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
/// claim) to its end; the process exit code.
pub(crate) async fn run_job(
    r: &Ready,
    job: &Value,
    resume: Option<Resume>,
    credential: Option<&str>,
) -> Result<u8> {
    let id = job["id"]
        .as_str()
        .context("the claimed job has no id")?
        .to_owned();
    let agent = job["claimed_by"]
        .as_str()
        .and_then(|a| a.strip_prefix("agent:"))
        .context("the job is not held by a minted agent; drive with an agent key")?
        .to_owned();
    let credential = credential.context(
        "the server issued no run credential with the claim (a server older than this driver?); the agent is never given the driver's key, so the run stops here",
    )?;
    let stored = job["body"].as_str().unwrap_or("");
    let body = split_signed(stored).map_or(stored, |p| p.body).to_owned();
    let base = default_branch(&r.root).await?;
    let files = run_files(r, &id)?;
    let mut state = RunState::load(&files.dir);
    let base_sha = match &state.base_sha {
        Some(sha) => sha.clone(),
        None => {
            git(
                &r.root,
                &["rev-parse", "--verify", &format!("{base}^{{commit}}")],
            )
            .await?
        }
    };
    state.base_sha = Some(base_sha.clone());
    state.save(&files.dir);
    let wt = worktree::ensure(&r.root, &id, &base_sha).await?;
    eprintln!("capsid drive: {id} in {}", wt.display());
    mise_install(&wt).await;
    // The project's settings cannot switch Capsid's hooks off.
    for file in preflight::strip_disable_all_hooks(&wt).map_err(anyhow::Error::msg)? {
        let rel = file
            .strip_prefix(&wt)
            .unwrap_or(&file)
            .display()
            .to_string();
        hide_path(&wt, &rel).await;
        eprintln!(
            "capsid drive: removed \"disableAllHooks\" from {} in the job's worktree: Capsid's gates stay on",
            file.display()
        );
    }
    let mut gate_settings = vec![
        ("CAPSID_MCP_URL".to_owned(), super::mcp::mcp_url(&r.url)),
        ("CAPSID_NAMESPACE".to_owned(), r.namespace.clone()),
        ("CAPSID_DEFAULT_BRANCH".to_owned(), base.clone()),
        ("CAPSID_TEST_COMMAND".to_owned(), r.tests.command.clone()),
        ("CAPSID_RUN_DIR".to_owned(), files.dir.display().to_string()),
    ];
    if let Some(b) = &r.build {
        gate_settings.push(("CAPSID_BUILD_COMMAND".to_owned(), b.command.clone()));
    }
    let githooks = githook::install_for_worktree(&r.root, &wt, &gate_settings).await?;
    let protected_before = githook::protected_refs(&r.root, &base).await;
    checkpoint(
        r,
        &id,
        json!({
            "status": "working",
            "where_it_stopped": if resume.is_some() { format!("resumed {id} with the answer in {}", wt.display()) } else { format!("claimed {id}; the agent starts in {}", wt.display()) },
            "summary": format!("{} {id}: {}", if resume.is_some() { "resumed" } else { "claimed" }, job["title"].as_str().unwrap_or("")),
        }),
    )
    .await?;

    let mut envs = agent_env(r, &id, &agent, &wt, credential).await;
    envs.push(("CAPSID_DEFAULT_BRANCH".to_owned(), base.clone()));
    envs.push(("CAPSID_RUN_DIR".to_owned(), files.dir.display().to_string()));
    let (command, input) = match &resume {
        Some(res) => {
            let session = state.session_id.clone().or_else(|| res.session_id.clone());
            let command = agent_command_line(r, &files, session.as_deref());
            match (&state.asked, session) {
                // The replayed AskUserQuestion is answered by the PreToolUse hook.
                (Some(question), Some(_)) => {
                    envs.push(("CAPSID_ANSWER".to_owned(), res.answer.clone()));
                    envs.push(("CAPSID_ANSWERED_QUESTION".to_owned(), question.clone()));
                    (command, String::new())
                }
                (_, Some(_)) => (command, res.answer.clone()),
                // No session to resume: the job starts over, with the answer after its body.
                (_, None) => (
                    agent_command_line(r, &files, None),
                    format!(
                        "{body}\n\nA person answered your earlier question: {}",
                        res.answer
                    ),
                ),
            }
        }
        None => (agent_command_line(r, &files, None), body),
    };
    // The agent's model calls go through the run's metered door; what it costs is counted
    // there, never read from what the agent prints.
    let door = model_door::open(&r.model).await?;
    envs.extend(door.env());
    let run = with_heartbeat(
        r,
        &id,
        run_agent(r, &agent, &id, &wt, &command, &input, &envs),
    )
    .await;
    let metered = door.close();
    let run = run?;
    let report = read_report(&run.stdout);

    // Whether Capsid's own gates stood through the session.
    let hooks_ran = std::fs::metadata(&files.hooks_report).is_ok_and(|m| m.len() > 0);
    let protected_after = githook::protected_refs(&r.root, &base).await;
    let approved_pushes = std::fs::read_to_string(&files.hooks_report).unwrap_or_default();
    let moved = githook::moved(&protected_before, &protected_after).filter(|_| {
        // A push the pre-push gate let through with an approval is reported by it.
        !protected_after
            .iter()
            .filter(|p| !protected_before.contains(p))
            .all(|(r, sha)| {
                let r = r.strip_prefix("origin ").unwrap_or(r);
                approved_pushes.contains(&format!("approved {r} {sha}"))
            })
    });
    let tampered = match githook::changed(&wt, &githooks).await {
        Some(why) => Some(why),
        None if moved.is_some() => Some(format!(
            "a protected branch moved during the run outside the gates ({}); a person must look at it",
            moved.unwrap_or_default()
        )),
        None if !hooks_ran => Some(
            "none of Capsid's hooks reported during the session (Claude Code did not run them: a setting switched them off, or the agent command does not load `--settings`)".to_owned(),
        ),
        None => None,
    };

    // What the hooks left for this job, and any step the session was refused that only a
    // human may take.
    let branches = Branches {
        current: super::proc::current_branch(&wt).await,
        default: Some(base.clone()),
        root: Some(wt.display().to_string()),
    };
    let recorded = hook_state(r, &agent, &id).await;
    let mut hooks = recorded.clone();
    if let Some(cmd) = human_gate_in(report.as_ref(), &wt.display().to_string(), &branches) {
        hooks = Some(HookState {
            status: AgentStatus::Blocked,
            question: Some(cmd),
        });
    }
    let facts = git_facts(&wt, &base_sha, report.as_ref(), &run.stdout).await;
    let resume_command = resume_hint(r, &agent);
    let mut run_facts = RunFacts {
        agent_exit: run.exit,
        report: report.as_ref(),
        hooks: hooks.as_ref(),
        tests: None,
        build: None,
        git: &facts,
        resume_command: &resume_command,
        gates_tampered: tampered.as_deref(),
    };
    let (tests, build) = if verdict::before_gates(&run_facts).is_some() {
        (None, None)
    } else {
        let t = shell(&r.tests.command, &wt, &[]).await;
        let b = match (&r.build, t.passed()) {
            (Some(b), true) => Some(shell(&b.command, &wt, &[]).await),
            _ => None,
        };
        (Some(t), b)
    };
    run_facts.tests = tests.as_ref();
    run_facts.build = build.as_ref();
    let mut close = verdict::close(&run_facts);
    // A call the cap refused stops the run: whatever the agent did after, the job waits on a
    // person to raise its cap (the door's own record, not the agent's word).
    if let (Some(gate), Close::Complete { .. } | Close::Fail { .. }) =
        (metered.budget_gate(), &close)
    {
        close = Close::Block {
            reason: gate,
            command: format!("{resume_command} --max-cost-usd <a higher cap>"),
            question: true,
        };
    }
    // Keep the session for a resume, and whether it stopped on AskUserQuestion.
    if let Some(sid) = report.as_ref().and_then(|r| r.session_id.clone()) {
        state.session_id = Some(sid);
    }
    state.asked = report.as_ref().and_then(|r| r.deferred_question.clone());
    state.save(&files.dir);
    let push = pushed(&wt, &id).await;
    let gates = Gates {
        tests: tests
            .as_ref()
            .map(|t| if t.passed() { "pass" } else { "fail" }),
        build: match (&tests, &build) {
            (Some(t), None) if t.passed() => Some("skipped"),
            (_, Some(b)) => Some(if b.passed() { "pass" } else { "fail" }),
            _ => None,
        },
    };
    finish(
        r,
        &id,
        &wt,
        &close,
        Measured {
            report: report.as_ref(),
            recorded: recorded.as_ref(),
            gates,
            push,
            metered: &metered,
        },
    )
    .await
}

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

/// The driver's checkmark, when it belongs to this job.
async fn hook_state(r: &Ready, agent: &str, id: &str) -> Option<HookState> {
    let got = r
        .mcp
        .ok(
            "checkmarks",
            json!({"action": "get", "namespace": r.namespace, "agent": agent}),
        )
        .await
        .ok()?;
    let c = &got["checkmark"];
    if c["job_id"].as_str() != Some(id) {
        return None;
    }
    Some(HookState {
        status: AgentStatus::parse(c["status"].as_str()?)?,
        question: c["open_question"].as_str().map(str::to_owned),
    })
}

/// Commits, files and tests since the branch point, and the PR the agent printed.
async fn git_facts(
    wt: &Path,
    base: &str,
    report: Option<&SessionReport>,
    stdout: &str,
) -> GitFacts {
    let range = format!("{base}...HEAD");
    let commits = git(wt, &["rev-list", "--count", &format!("{base}..HEAD")])
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
    let clean_tree = git(wt, &["status", "--porcelain"])
        .await
        .is_ok_and(|t| t.trim().is_empty());
    GitFacts {
        commits,
        files_changed: files,
        tests_added: tests_added(&diff),
        pr,
        clean_tree,
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
        "curl -s {}/api/projects/{}/agents/{agent}/answer -H \"Authorization: Bearer $CAPSID_KEY\" -H 'Content-Type: application/json' -d '{{\"answer\": \"<your answer>\", \"resume\": true}}' && capsid drive --once --namespace {}",
        base_url(&r.url),
        r.namespace,
        r.namespace
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
}

/// What the driver's own gates said, as checkpoint fields (`None`: not run).
struct Gates {
    tests: Option<&'static str>,
    build: Option<&'static str>,
}

/// What the session cost and took, for the job's outcome: the door's count (with the agent's
/// own figure when it differs), the turns and the time the agent reported.
fn session_cost(metered: &Metered, rep: Option<&SessionReport>) -> String {
    let mut s = metered.line(rep.and_then(|r| r.cost_usd));
    if let Some(t) = rep.and_then(|r| r.turns) {
        s.push_str(&format!(" {t} turn(s)"));
        if let Some(ms) = rep.and_then(|r| r.duration_ms) {
            s.push_str(&format!(", {:.1} s", ms as f64 / 1000.0));
        }
        s.push('.');
    }
    s
}

/// The session's counted cost (what the namespace's budget sums), with what the agent reported
/// beside it, and its turns and time, as outcome evidence.
fn measured_cost(metered: &Metered, rep: Option<&SessionReport>) -> serde_json::Map<String, Value> {
    let mut m = metered.evidence(rep.and_then(|r| r.cost_usd));
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
    let cost = Some(session_cost(metered, report));
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
            if let Err(e) = worktree::remove(&r.root, wt).await {
                eprintln!("capsid drive: {e:#}");
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
