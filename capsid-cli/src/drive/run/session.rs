//! The second phase of a run: the agent's session behind the run's doors.

use anyhow::Result;
use capsid_core::drive::judge;
use capsid_core::drive::stream::SessionReport;

use super::super::agent::{AgentRun, agent_command_line, agent_env, run_agent, with_heartbeat};
use super::super::model_door::{self, Metered};
use super::super::{Ready, boxed};
use super::prepare::Prepared;

/// What the session left: the agent's exit and output, its report, what the doors saw.
pub(super) struct Session {
    /// The agent process's exit and output.
    pub run: AgentRun,
    /// Its session report, when its output was one.
    pub report: Option<SessionReport>,
    /// What the model door counted.
    pub metered: Metered,
    /// What the box's doors saw (`None`: unboxed).
    pub seen: Option<boxed::Seen>,
    /// The command line the agent was started with.
    pub command: String,
}

/// The second phase: the agent's session, in its box (or worktree) behind the run's doors,
/// to its end.
/// The path lease the run's gateway enforces on every push (issue 51): what the server says the
/// job's claim leased, against the commit its branch started from; none for a lease of the
/// whole repository (or none at all). The gateway's hook asks this binary (`capsid door
/// check-push-paths`).
fn path_lease(
    job: &capsid_core::jobs::Job,
    base_sha: &str,
) -> Result<Option<capsid_box::gateway::paths::PathLease>> {
    use capsid_core::jobs::paths::Lease;
    let Some(leased) = job.leased.as_deref() else {
        return Ok(None);
    };
    if matches!(Lease::of_leased(leased), Lease::Whole) {
        return Ok(None);
    }
    let program = anyhow::Context::context(
        std::env::current_exe(),
        "finding the capsid binary's own path",
    )?;
    Ok(Some(capsid_box::gateway::paths::PathLease {
        base: base_sha.to_owned(),
        patterns: leased.to_vec(),
        checker: vec![program.into_os_string(), "door".into()],
    }))
}

pub(super) async fn session(r: &Ready, p: &mut Prepared) -> Result<Session> {
    let lease = path_lease(&p.job, &p.base_sha)?;
    let Prepared {
        id,
        agent,
        credential,
        role,
        body,
        resume,
        approvals,
        base,
        protected,
        state,
        place,
        wt,
        agent_files,
        model,
        ..
    } = p;
    let (id, agent, wt) = (&*id, &*agent, &*wt);
    let role = role.as_ref();
    let resume = resume.take();
    let body = std::mem::take(body);
    let mut envs = agent_env(r, id, agent, wt, credential).await;
    envs.push(("CAPSID_DEFAULT_BRANCH".to_owned(), base.clone()));
    // The hook's early warning of an edit outside the job's lease (the gateway is the rule).
    if let Some(l) = &lease {
        envs.push((
            capsid_core::drive::lease_edits::LEASE_ENV.to_owned(),
            serde_json::json!(l.patterns).to_string(),
        ));
    }
    envs.push((
        "CAPSID_RUN_DIR".to_owned(),
        agent_files.dir.display().to_string(),
    ));
    envs.extend(r.runtime.files_env(agent_files));
    if place.is_some() {
        // In the box: Capsid through its door; no project credential (the gateway holds it).
        envs.retain(|(k, _)| k != "CAPSID_CREDENTIAL" && !k.starts_with("GIT_CONFIG_"));
        envs.push(("CAPSID_PUSH_GATE".to_owned(), "gateway".to_owned()));
        for (k, v) in envs.iter_mut() {
            if k == "CAPSID_MCP_URL" {
                *v = boxed::inside_mcp_url(r);
            }
        }
    }
    // The resumed session is told what the approval lets through; the person's words follow.
    let resume = resume.map(|mut res| {
        if !approvals.is_empty() {
            let approved: Vec<String> = approvals
                .iter()
                .map(|a| format!("{} to {}", a.refname, a.sha))
                .collect();
            res.answer = format!(
                "A person approved the push the git gateway held ({}): push the same commit again and the gateway lets it through. {}",
                approved.join("; "),
                res.answer
            );
        }
        res
    });
    // The role's model, unless the operator's agent arguments choose one.
    let role_model = role.and_then(|r| r.model.as_deref());
    if let (Some(m), Some(role)) = (role_model, role) {
        eprintln!(
            "capsid drive: {id}: the {} role asks for model {m}",
            role.name
        );
    }
    let (command, input) = match &resume {
        Some(res) => {
            let session = state.session_id.clone().or_else(|| res.session_id.clone());
            let command = agent_command_line(r, agent_files, session.as_deref(), role_model);
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
                    agent_command_line(r, agent_files, None, role_model),
                    format!(
                        "{body}\n\nA person answered your earlier question: {}",
                        res.answer
                    ),
                ),
            }
        }
        None => (agent_command_line(r, agent_files, None, role_model), body),
    };
    // The agent's model calls go through the run's metered door; what it costs is counted
    // there, never read from what the agent prints.
    let (run, metered, seen) = match (&r.boxed, &*place) {
        (Some(settings), Some(p)) => {
            let gate = boxed::GateTerms {
                approvals: approvals.clone(),
                role,
                protected,
                lease,
            };
            let doors = boxed::open(r, model, id, p, gate).await?;
            envs.extend(doors.model.env(r.runtime));
            let run = with_heartbeat(
                r,
                id,
                boxed::run(r, settings, agent, id, p, &command, &input, &envs),
            )
            .await;
            // The box is gone: close every door before anything is read.
            let seen = doors.close().await;
            (run, seen.metered.clone(), Some(seen))
        }
        _ => {
            let door = model_door::open(model).await?;
            envs.extend(door.env(r.runtime));
            let run =
                with_heartbeat(r, id, run_agent(r, agent, id, wt, &command, &input, &envs)).await;
            (run, door.close().await, None)
        }
    };
    let run = run?;
    let mut report = r.runtime.report(&run.stdout);
    // The commands the hooks refused, where the CLI does not list them itself (Codex).
    if let Some(rep) = report.as_mut()
        && rep.denied_commands.is_empty()
    {
        rep.denied_commands = judge::denied_lines(
            &std::fs::read_to_string(&agent_files.hooks_report).unwrap_or_default(),
        );
    }
    Ok(Session {
        run,
        report,
        metered,
        seen,
        command,
    })
}
