//! The third phase of a run: the driver's own measurements and gates, and the verdict.

use anyhow::Result;
use capsid_core::drive::credential::remote_host;
use capsid_core::drive::hooks::Branches;
use capsid_core::drive::judge;
use capsid_core::drive::verdict::{self, Close, RunFacts, human_gate_in};
use serde_json::json;

use super::super::proc::{git, shell};
use super::super::{Ready, boxed, doors, githook, pr};
use super::prepare::Prepared;
use super::session::Session;
use super::{
    Gates, Measured, Pushed, UNBOXED, deploy_after_merge, finish, git_facts, hook_state, pushed,
    resume_hint, run_merges,
};

/// The third phase: what the driver measured, its own gates, the verdict, the PR, and the job
/// closed with them.
pub(super) async fn judge(r: &Ready, p: Prepared, s: Session) -> Result<u8> {
    let Prepared {
        job,
        id,
        agent,
        role,
        base,
        base_sha,
        protected,
        files,
        mut state,
        place,
        wt,
        githooks,
        agent_files,
        protected_before,
        ..
    } = p;
    let Session {
        run,
        report,
        metered,
        mut seen,
        command,
    } = s;
    let role = role.as_ref();
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
            None => super::super::proc::current_branch(&wt).await,
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
