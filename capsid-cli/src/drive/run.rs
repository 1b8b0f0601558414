//! One claimed job, run: the worktree, the agent (`agent.rs`), the driver's own test gate
//! and build check, git's facts, and the job closed with them (complete, fail or block) with
//! a checkpoint at each step.

use std::path::Path;

use anyhow::{Context, Result};
use capsid_core::checkmarks::AgentStatus;
use capsid_core::drive::credential::remote_host;
use capsid_core::drive::hooks::Branches;
use capsid_core::drive::judge;
use capsid_core::drive::push_policy::approvals_in_command;
use capsid_core::drive::stream::SessionReport;
use capsid_core::drive::verdict::{
    self, Close, GitFacts, HookState, RunFacts, human_gate_in, pr_url_in, tests_added,
};
use capsid_core::jobs::block::command_from_summary;
use capsid_core::jobs::pipeline::RunMerge;
use capsid_core::jobs::signature::split_signed;
use serde_json::{Value, json};

use super::agent::{
    agent_command_line, agent_env, mise_install, run_agent, run_files, with_heartbeat,
};
use super::mcp::base_url;
use super::model_door::{self, Metered};
use super::proc::{default_branch, git, shell};
use super::{
    Claimed, EXIT_DONE, EXIT_GATED, Ready, boxed, doors, githook, pr, preflight, worktree,
};

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
pub(crate) async fn run_job(r: &Ready, claimed: Claimed) -> Result<u8> {
    let Claimed {
        job,
        resume,
        credential,
        max_cost_usd,
        spent_usd,
        role,
    } = claimed;
    let credential = credential.as_deref();
    let id = job.id.clone();
    // The run's cap: the job's (as the server answered it) or the driver's, whichever is less,
    // less what the job's earlier sessions spent; each call goes to the job's ledger.
    let ledger = model_door::ServerLedger {
        mcp: r.mcp.clone(),
        namespace: r.namespace.clone(),
        job: id.clone(),
    };
    let model = r.model.for_job(max_cost_usd, spent_usd, Some(ledger));
    let agent = job
        .claimed_by
        .as_deref()
        .and_then(|a| a.strip_prefix("agent:"))
        .context("the job is not held by a minted agent; drive with an agent key")?
        .to_owned();
    let credential = credential.context(
        "the server issued no run credential with the claim (a server older than this driver?); the agent is never given the driver's key, so the run stops here",
    )?;
    // The job's role as the server defines it for the namespace (the name is the signed
    // envelope's; what it ships, may do and says is the server's definition, never the name).
    if let (Some(name), None) = (job.role.as_deref(), role.as_ref()) {
        anyhow::bail!(
            "the job names the role {name}, which namespace {} does not define now (no signed capsid/policy/roles/{}/{name}.md, or a server older than this driver); sign the role's document, or post the job with a role that exists",
            r.namespace,
            r.namespace
        );
    }
    let role = role.as_ref();
    let stored = job.body.as_str();
    let body = split_signed(stored).map_or(stored, |p| p.body);
    let body = match role {
        Some(role) => format!("{}{body}", role.preamble()),
        None => body.to_owned(),
    };
    // A person who resumed a job the gateway held a push for approved exactly those updates
    // (the command the job blocked on, as the server keeps it): the resumed run's gateway
    // lets the same push through.
    let approvals = match &resume {
        Some(_) => job
            .result_summary
            .as_deref()
            .and_then(command_from_summary)
            .map(approvals_in_command)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let base = default_branch(&r.root).await?;
    // The branches only a person moves: the namespace's setting as the server keeps it now,
    // and the default branch.
    let protected = capsid_core::drive::hooks::protected_branches_of(
        super::namespace_runner(&r.mcp, &r.namespace)
            .await?
            .protected_branches()
            .as_deref(),
        Some(&base),
    );
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
    // Boxed: the job's own clone of the namespace's mirror; else a worktree of the checkout.
    let place = match &r.boxed {
        Some(b) => Some(boxed::place(r, b, &id, &base_sha, resume.is_some()).await?),
        None => None,
    };
    let wt = match &place {
        Some(p) => p.clone.clone(),
        None => worktree::ensure(&r.root, &id, &base_sha).await?,
    };
    eprintln!(
        "capsid drive: {id} in {} (runtime {})",
        wt.display(),
        r.runtime.name()
    );
    // A resumed boxed job's clone holds what the agent wrote: the driver runs nothing in it
    // on the host (git reads its config, mise its files, and either can be told to run a
    // program), and a fresh one holds only the project's own commit.
    let host_may_touch = place.is_none() || resume.is_none();
    if place.is_none() {
        // The box cannot see what mise installs on the host.
        mise_install(&wt).await;
    }
    // The project's settings cannot switch Capsid's hooks off.
    let stripped = if host_may_touch {
        preflight::strip_disable_all_hooks(&wt).map_err(anyhow::Error::msg)?
    } else {
        Vec::new()
    };
    for file in stripped {
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
    // The role's instructions, as a skill the CLI loads from the project (kept out of the
    // agent's commits). A resumed boxed clone has it already, and the host writes nothing there.
    if let (Some(role), true) = (role, host_may_touch) {
        let rel = format!(
            "{}/{}/SKILL.md",
            r.runtime.kind().skills_dir(),
            role.skill_name()
        );
        let path = wt.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, role.skill_md())
            .with_context(|| format!("writing the {} skill to {}", role.name, path.display()))?;
        hide_path(&wt, &rel).await;
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
    // A boxed run's push gate is the gateway; git's own hooks are the worktree's.
    let githooks = match &place {
        Some(_) => None,
        None => Some(githook::install_for_worktree(&r.root, &wt, &gate_settings).await?),
    };
    // The agent's run files: in the box's HOME for a boxed run (the run folder is not there).
    let agent_files = match &place {
        Some(p) => r
            .runtime
            .write_files(p.run_dir.clone(), &boxed::inside_mcp_url(r))?,
        None => run_files(r, &id)?,
    };
    let protected_before = githook::protected_refs(&r.root, &protected).await;
    checkpoint(
        r,
        &id,
        json!({
            "status": "working",
            "where_it_stopped": if resume.is_some() { format!("resumed {id} with the answer in {} ({})", wt.display(), r.runtime.name()) } else { format!("claimed {id}; the agent ({}) starts in {}", r.runtime.name(), wt.display()) },
            "summary": format!("{} {id}: {}", if resume.is_some() { "resumed" } else { "claimed" }, job.title),
        }),
    )
    .await?;

    let mut envs = agent_env(r, &id, &agent, &wt, credential).await;
    envs.push(("CAPSID_DEFAULT_BRANCH".to_owned(), base.clone()));
    envs.push((
        "CAPSID_RUN_DIR".to_owned(),
        agent_files.dir.display().to_string(),
    ));
    envs.extend(r.runtime.files_env(&agent_files));
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
            let command = agent_command_line(r, &agent_files, session.as_deref(), role_model);
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
                    agent_command_line(r, &agent_files, None, role_model),
                    format!(
                        "{body}\n\nA person answered your earlier question: {}",
                        res.answer
                    ),
                ),
            }
        }
        None => (agent_command_line(r, &agent_files, None, role_model), body),
    };
    // The agent's model calls go through the run's metered door; what it costs is counted
    // there, never read from what the agent prints.
    let (run, metered, mut seen) = match (&r.boxed, &place) {
        (Some(settings), Some(p)) => {
            let doors = boxed::open(r, &model, &id, p, approvals.clone(), role, &protected).await?;
            envs.extend(doors.model.env(r.runtime));
            let run = with_heartbeat(
                r,
                &id,
                boxed::run(r, settings, &agent, &id, p, &command, &input, &envs),
            )
            .await;
            // The box is gone: close every door before anything is read.
            let seen = doors.close().await;
            (run, seen.metered.clone(), Some(seen))
        }
        _ => {
            let door = model_door::open(&model).await?;
            envs.extend(door.env(r.runtime));
            let run = with_heartbeat(
                r,
                &id,
                run_agent(r, &agent, &id, &wt, &command, &input, &envs),
            )
            .await;
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

    // Whether Capsid's own gates stood through the session.
    let hooks_ran = judge::agent_hooks_reported(
        &std::fs::read_to_string(&agent_files.hooks_report).unwrap_or_default(),
    );
    let protected_after = githook::protected_refs(&r.root, &protected).await;
    // What a person approved and a gate let through: the gateway's own log in a boxed run;
    // the worktree's pre-push gate's report otherwise (a file the unboxed agent can write,
    // which is why `--unboxed` is on every such job's record).
    let approved = match &seen {
        Some(seen) => boxed::approved(&seen.pushes),
        None => judge::approved_lines(
            &std::fs::read_to_string(&agent_files.hooks_report).unwrap_or_default(),
        ),
    };
    let moved = judge::unapproved_moves(&protected_before, &protected_after, &approved);
    let rewired = match &githooks {
        Some(g) => githook::changed(&wt, g).await,
        None => None,
    };
    let tampered =
        judge::gates_tampered(rewired.as_deref(), moved.as_deref(), hooks_ran).map(|why| {
            match r.runtime.hooks_hint(&command).filter(|_| !hooks_ran) {
                Some(hint) => format!("{why}. {hint}"),
                None => why,
            }
        });

    // What the hooks left for this job, and any step the session was refused that only a
    // human may take.
    let branches = Branches {
        current: match &place {
            // The clone is the agent's: its branch is the job's, never read there.
            Some(_) => Some(format!("capsid/{id}")),
            None => super::proc::current_branch(&wt).await,
        },
        default: Some(base.clone()),
        root: Some(wt.display().to_string()),
        protected: Some(protected.clone()),
    };
    let (recorded, last_tests) = hook_state(r, &agent, &id).await;
    // A boxed run: what was pushed is the gateway's record, and an update it held for a
    // person (a push to a protected branch) is the exact question the job blocks on.
    let pushed_head = seen.as_ref().and_then(|s| boxed::pushed_head(&s.pushes));
    let held = seen
        .as_ref()
        .map(|s| boxed::held(&s.pushes))
        .unwrap_or_default();
    // A refused human gate read from the session's report is the agent's stdout, which a
    // boxed agent (or a child of it) can write: in a boxed run the gateway's held updates are
    // the only gate a command comes from.
    let human_gate = match &place {
        Some(_) => None,
        None => human_gate_in(report.as_ref(), &wt.display().to_string(), &branches),
    };
    let hooks = judge::hook_state(recorded.clone(), human_gate, &held);
    let mut verified = boxed::Verified::default();
    let facts = match (&place, &r.boxed) {
        // What shipped is read from the mirror (written only through the gateway), never the
        // clone: nothing pushed is nothing shipped, and what the clone holds (read in a box)
        // only says whether the agent left work it never pushed.
        (Some(p), Some(settings)) => {
            let head = pushed_head.as_deref().unwrap_or(&base_sha);
            let mut f = git_facts(&p.mirror, &base_sha, head, report.as_ref(), &run.stdout).await;
            // A PR URL the agent printed is its word (it reaches no forge from its box): the
            // driver opens the job's PR itself once the run has shipped and passed.
            f.pr = None;
            if pushed_head.is_none() {
                match boxed::clone_state(r, settings, p, &base_sha, &mut verified).await {
                    Some((commits, clean)) => {
                        f.unshipped_commits = commits;
                        f.clean_tree = clean;
                    }
                    None => f.clean_tree = false,
                }
            }
            f
        }
        _ => git_facts(&wt, &base_sha, "HEAD", report.as_ref(), &run.stdout).await,
    };
    let resume_command = resume_hint(r, &agent);
    let merges = match role {
        Some(role) if role.merges() => run_merges(r, &id).await?,
        _ => Vec::new(),
    };
    let deployed = deploy_after_merge(r, &id, &merges).await?;
    let mut run_facts = RunFacts {
        agent_exit: run.exit,
        report: report.as_ref(),
        hooks: hooks.as_ref(),
        tests: None,
        build: None,
        git: &facts,
        resume_command: &resume_command,
        gates_tampered: tampered.as_deref(),
        role,
        last_tests: last_tests.as_deref(),
        merges: &merges,
        deploy: deployed.as_ref(),
    };
    let (tests, build) = if verdict::before_gates(&run_facts).is_some() {
        (None, None)
    } else {
        match (&place, &r.boxed) {
            // A boxed run's tests run on a fresh checkout of the pushed head (the job's base
            // when nothing was pushed), in a fresh box of their own.
            (Some(p), Some(settings)) => {
                let head = pushed_head.as_deref().unwrap_or(&base_sha);
                let at = boxed::checkout(p, head).await?;
                let t = boxed::verify(r, settings, p, &at, &r.tests.command, &mut verified).await?;
                let b = match (&r.build, t.passed()) {
                    (Some(b), true) => {
                        Some(boxed::verify(r, settings, p, &at, &b.command, &mut verified).await?)
                    }
                    _ => None,
                };
                (Some(t), b)
            }
            _ => {
                let t = shell(&r.tests.command, &wt, &[]).await;
                let b = match (&r.build, t.passed()) {
                    (Some(b), true) => Some(shell(&b.command, &wt, &[]).await),
                    _ => None,
                };
                (Some(t), b)
            }
        }
    };
    // The test box's door is one of the job's doors: its connections are on the record too.
    if let Some(s) = seen.as_mut() {
        s.connections.extend(verified.connections);
        s.attempts.extend(verified.attempts);
    }
    run_facts.tests = tests.as_ref();
    run_facts.build = build.as_ref();
    // A call the cap refused stops the run (the model door's own record, not the agent's word).
    let mut close = verdict::at_budget(
        verdict::close(&run_facts),
        metered.budget_gate(&id),
        &resume_command,
    );
    // A boxed run that shipped and passed: the driver opens its PR through the server's GitHub
    // App, and the server verifies it as the job's evidence.
    if let (
        Some(_),
        Some(_),
        Close::Complete {
            summary,
            evidence,
            scout: false,
        },
    ) = (&place, &pushed_head, &mut close)
        && !r.rehearsal
    {
        match pr::open(r, &id, &job.title, &base, summary).await {
            Ok(url) => {
                eprintln!("capsid drive: {id}: opened {url}");
                evidence["prs"] = json!([url]);
            }
            Err(why) => {
                eprintln!("capsid drive: {id}: no pull request opened: {why}");
                summary.push_str(&format!(" No pull request was opened: {why}"));
            }
        }
    }
    // Keep the session for a resume, and whether it stopped on AskUserQuestion.
    if let Some(sid) = report.as_ref().and_then(|r| r.session_id.clone()) {
        state.session_id = Some(sid);
    }
    state.asked = report.as_ref().and_then(|r| r.deferred_question.clone());
    state.save(&files.dir);
    let push = match (&place, pushed_head) {
        (Some(_), Some(sha)) => {
            let host = git(&r.root, &["remote", "get-url", "origin"])
                .await
                .ok()
                .and_then(|u| remote_host(&u));
            Some(Pushed {
                github: host.as_deref() == Some("github.com"),
                sha,
                host,
            })
        }
        (Some(_), None) => None,
        (None, _) => pushed(&wt, &id).await,
    };
    // What the doors saw goes on the job's record before it closes (the holder writes it).
    let door_records = seen.as_ref().map(|s| doors::records(s, &doors::run_id()));
    if let Some(records) = door_records.as_deref().filter(|r| !r.is_empty()) {
        doors::send(r, &id, records).await;
    }
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
            doors_line: Some(
                door_records
                    .as_deref()
                    .map_or_else(|| UNBOXED.to_owned(), doors::line),
            ),
            boxed_base: place.as_ref().map(|p| p.base.clone()),
        },
    )
    .await
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
