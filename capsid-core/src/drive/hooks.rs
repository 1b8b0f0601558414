//! Claude Code's hook protocol as Capsid answers it. A hook reads one JSON event on stdin
//! (`session_id`, `cwd`, `hook_event_name`, and per event `tool_name`/`tool_input` or
//! `stop_hook_active` or `message`) and answers with JSON on stdout or nothing. `Stop` on a
//! failing suite answers `{"decision":"block","reason":...}`; `PreToolUse` refuses with
//! `hookSpecificOutput.permissionDecision: "deny"`, and defers `AskUserQuestion` so a headless
//! session stops instead of guessing. Every other command passes untouched (no output).

use serde::Deserialize;
use serde_json::{Value, json};

use super::command::{Gated, classify, hook_bypass, inside, places, resolve_path};
use super::{REASON_MAX, tail};
use crate::checkmarks::QUESTION_MAX;

/// One hook event, as Claude Code sends it (unknown fields ignored).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct HookInput {
    /// The session.
    pub session_id: Option<String>,
    /// The session's working directory.
    pub cwd: Option<String>,
    /// `Stop`, `PreToolUse`, `SessionEnd`, `Notification`, ...
    pub hook_event_name: Option<String>,
    /// PreToolUse: the tool.
    pub tool_name: Option<String>,
    /// PreToolUse: its input.
    pub tool_input: Option<Value>,
    /// Stop: whether the turn already continues because of a Stop hook.
    pub stop_hook_active: Option<bool>,
    /// Notification: the text.
    pub message: Option<String>,
    /// Notification: the title.
    pub title: Option<String>,
    /// Notification: its kind.
    pub notification_type: Option<String>,
    /// SessionEnd: why.
    pub reason: Option<String>,
}

impl HookInput {
    /// Parses a hook's stdin.
    pub fn parse(stdin: &str) -> Result<HookInput, String> {
        serde_json::from_str(stdin).map_err(|e| {
            format!("the hook's standard input is not a Claude Code hook event (JSON): {e}")
        })
    }
}

/// The branches a push or merge must not reach without a standing approval, when the
/// namespace sets none: main, master and the remote's default.
pub fn protected_branches(default_branch: Option<&str>) -> Vec<String> {
    protected_branches_of(None, default_branch)
}

/// The branches a push or merge must not reach without a standing approval: the namespace's
/// setting (`setting`, its runner setting `protected_branches`) and the remote's default
/// branch, which is always protected; with no setting, main, master and the default.
pub fn protected_branches_of(
    setting: Option<&[String]>,
    default_branch: Option<&str>,
) -> Vec<String> {
    let mut out = match setting {
        Some(names) => names.to_vec(),
        None => vec!["main".to_owned(), "master".to_owned()],
    };
    if let Some(d) = default_branch.map(str::trim).filter(|d| !d.is_empty())
        && !out.iter().any(|b| b == d)
    {
        out.push(d.to_owned());
    }
    out
}

/// The namespace's protected branches as its runner setting spells them (comma separated,
/// short or full names), checked by git's ref-name rules, or the refusal naming the field.
pub fn parse_protected_branches(text: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let short = name.strip_prefix("refs/heads/").unwrap_or(name);
        if let Some(why) = super::push_policy::ref_format_error(short) {
            return Err(format!(
                "protected_branches: {name:?} is not a branch name: it {why}"
            ));
        }
        if !out.iter().any(|b| b == short) {
            out.push(short.to_owned());
        }
    }
    if out.is_empty() {
        return Err("protected_branches: names no branch (give them comma separated, e.g. \"main,release\"; an empty value clears the setting)".into());
    }
    Ok(out)
}

/// What the worktree's branches are, as the hook read them from git.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Branches {
    /// The checked-out branch (`None`: detached or unreadable).
    pub current: Option<String>,
    /// The repository's default branch.
    pub default: Option<String>,
    /// The worktree's root (the project folder the agent works in), when known: a git command
    /// run after leaving it is refused, since another checkout has none of this one's hooks.
    pub root: Option<String>,
    /// The namespace's protected branches, when its runner settings name them (`None`: main,
    /// master and the default).
    pub protected: Option<Vec<String>>,
}

/// What a `PreToolUse` event asks of the hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrePlan {
    /// Not gated: print nothing.
    Pass,
    /// `AskUserQuestion`: record the question, then defer.
    Defer {
        /// The question(s), as one text.
        question: String,
    },
    /// Refused (a protected branch, a merge): the reason, and the command a human runs
    /// instead.
    Deny {
        /// Why, for the agent.
        reason: String,
        /// What a human must run.
        command: String,
        /// Whether a different agent's approval standing for the current head would let it
        /// through ([`plan_pre_tool_use_approved`]); a push of every branch, or of no known
        /// branch, is refused either way.
        approvable: bool,
    },
    /// A push: run the tests, then the build check, and deny on the first failure.
    RunGates,
    /// A merge of pull request `number` (`gh pr merge`, a `gh api` merge): it passes only when
    /// the server says another agent's approval stands for the pull request's current head on
    /// GitHub, on that pull request of that repository (`jobs` action `approval` with
    /// `pull_request`).
    Merge {
        /// The pull request.
        number: u64,
        /// The repository the command names, if it names one.
        repo: Option<String>,
        /// What a human runs instead.
        command: String,
    },
}

/// Reads the question(s) of an `AskUserQuestion` input into one bounded text.
pub fn question_text(tool_input: Option<&Value>) -> String {
    let mut parts = Vec::new();
    if let Some(qs) = tool_input
        .and_then(|i| i.get("questions"))
        .and_then(Value::as_array)
    {
        for q in qs {
            let Some(text) = q.get("question").and_then(Value::as_str) else {
                continue;
            };
            let options: Vec<&str> = q
                .get("options")
                .and_then(Value::as_array)
                .map(|o| {
                    o.iter()
                        .filter_map(|x| x.get("label").and_then(Value::as_str).or(x.as_str()))
                        .collect()
                })
                .unwrap_or_default();
            if options.is_empty() {
                parts.push(text.trim().to_owned());
            } else {
                parts.push(format!("{} (options: {})", text.trim(), options.join("; ")));
            }
        }
    }
    if parts.is_empty()
        && let Some(q) = tool_input
            .and_then(|i| i.get("question"))
            .and_then(Value::as_str)
    {
        parts.push(q.trim().to_owned());
    }
    let text = if parts.is_empty() {
        "The agent asked a question without text (AskUserQuestion with no questions).".to_owned()
    } else {
        parts.join("\n")
    };
    text.chars().take(QUESTION_MAX).collect()
}

/// A different agent's approval standing for the current head, as the server reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandingApproval {
    /// The pull request whose head the verdict approved.
    pub pr: Option<u64>,
}

/// What the hook does with a `PreToolUse` event, knowing of no standing approval.
pub fn plan_pre_tool_use(input: &HookInput, branches: &Branches) -> PrePlan {
    plan_pre_tool_use_approved(input, branches, None)
}

/// What the hook does with a `PreToolUse` event when the server said whether a different
/// agent's approval stands for the current head (`approved`). An approval speaks for that one
/// commit: with one, a push of the head (`HEAD`, or the checked-out branch) to a protected
/// branch runs the gates like any push, and `gh pr merge` of the approved pull request (or of
/// the current branch's) passes. Without one, both are denied (`approvable: true`, so the hook
/// knows asking can help). A push of another branch or of every branch, a deletion, and
/// `git merge` into a protected branch bring in commits nobody approved and are refused
/// either way.
pub fn plan_pre_tool_use_approved(
    input: &HookInput,
    branches: &Branches,
    approved: Option<StandingApproval>,
) -> PrePlan {
    match input.tool_name.as_deref() {
        Some("AskUserQuestion") => PrePlan::Defer {
            question: question_text(input.tool_input.as_ref()),
        },
        Some("Bash") => {
            let Some(line) = input
                .tool_input
                .as_ref()
                .and_then(|i| i.get("command"))
                .and_then(Value::as_str)
            else {
                return PrePlan::Pass;
            };
            // Codex's edit (one `apply_patch` heredoc) is a file's content, as `Write` is.
            if super::patch::apply_patch_paths(line).is_some() {
                return PrePlan::Pass;
            }
            plan_bash(line, input.cwd.as_deref(), branches, approved)
        }
        _ => PrePlan::Pass,
    }
}

fn plan_bash(
    line: &str,
    cwd: Option<&str>,
    branches: &Branches,
    approved: Option<StandingApproval>,
) -> PrePlan {
    let human = match cwd {
        Some(dir) => format!("cd {} && {line}", shell_quote(dir)),
        None => line.to_owned(),
    };
    let refuse_outright = |why: String| PrePlan::Deny {
        reason: format!(
            "{why}, and Capsid's gates must see every push and merge, so this command is refused. Run git from the worktree without it; a step only a human may take is left for a human: `{human}`."
        ),
        command: human.clone(),
        approvable: false,
    };
    if let Some(why) = hook_bypass(line) {
        return refuse_outright(why);
    }
    let gated = classify(line);
    let mentions_git = super::command::simple_commands(line)
        .iter()
        .flatten()
        .any(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            base == "git" || base == "gh"
        });
    if let (Some(root), true) = (branches.root.as_deref(), mentions_git || !gated.is_empty()) {
        let here = cwd.unwrap_or(root);
        let (dirs, unknown) = places(line);
        if unknown {
            return refuse_outright(
                "This command moves to a folder its text does not name (`cd` alone, `cd -`, `~` or a variable) and runs git there".into(),
            );
        }
        if let Some(outside) = dirs
            .iter()
            .map(|d| resolve_path(here, d))
            .find(|d| !inside(root, d))
        {
            return refuse_outright(format!(
                "This command runs git in {outside}, outside the worktree {root}"
            ));
        }
    }
    if gated.is_empty() {
        return PrePlan::Pass;
    }
    let protected =
        protected_branches_of(branches.protected.as_deref(), branches.default.as_deref());
    let is_protected = |b: &str| protected.iter().any(|p| p == b);
    let deny = |why: String| PrePlan::Deny {
        reason: format!(
            "{why} It needs a different agent's approval of the current head, and none stands; push to a feature branch and open a pull request instead, or stop and leave this for a human: `{human}`."
        ),
        command: human.clone(),
        approvable: true,
    };
    let refuse = |why: String| PrePlan::Deny {
        reason: format!(
            "{why} No approval lets this through (an approval speaks for one commit, the current head); push named branches instead, or stop and leave this for a human: `{human}`."
        ),
        command: human.clone(),
        approvable: false,
    };
    let is_head = |src: &str| src == "HEAD" || branches.current.as_deref() == Some(src);
    let merges_alone: Result<(), ()> =
        if gated.len() > 1 && gated.iter().any(|g| matches!(g, Gated::PrMerge { .. })) {
            Err(())
        } else {
            Ok(())
        };
    let _ = approved.map(|a| a.pr);
    let mut pushes = false;
    for g in gated {
        match g {
            Gated::Unreadable { why } => {
                return refuse(format!("The hook cannot read this push or merge: {why}."));
            }
            Gated::PrMerge { number, repo } => {
                if merges_alone.is_err() {
                    return refuse(
                        "A merge shares this command with another push or merge; run a merge alone, so its approval can be checked.".into(),
                    );
                }
                let Some(number) = number else {
                    return refuse(
                        "This merge names no pull request number, so its approval cannot be checked against the pull request's head on GitHub; name it (`gh pr merge <number>`).".into(),
                    );
                };
                return PrePlan::Merge {
                    number,
                    repo,
                    command: human.clone(),
                };
            }
            Gated::GitMerge => {
                if let Some(current) = branches.current.as_deref().filter(|c| is_protected(c)) {
                    return refuse(format!(
                        "`git merge` here merges other commits into {current}, a protected branch; an approval speaks for the current head, not for what a merge brings in, so merge the pull request (`gh pr merge`) once another agent approved its head."
                    ));
                }
            }
            Gated::Push {
                branches: named,
                sources,
                every_branch,
            } => {
                pushes = true;
                if every_branch {
                    return refuse("This push sends every branch, protected ones included.".into());
                }
                // (destination, source): a push naming no refspec sends the current branch.
                let targets: Vec<(&str, &str)> = if named.is_empty() {
                    branches
                        .current
                        .as_deref()
                        .map(|c| (c, "HEAD"))
                        .into_iter()
                        .collect()
                } else {
                    named
                        .iter()
                        .map(String::as_str)
                        .zip(sources.iter().map(String::as_str))
                        .collect()
                };
                if targets.is_empty() {
                    return refuse("This push names no branch and the worktree has none checked out, so where it lands is unknown.".into());
                }
                for (b, src) in targets.iter().filter(|(b, _)| is_protected(b)) {
                    if src.is_empty() {
                        return refuse(format!("This push deletes {b}, a protected branch."));
                    }
                    if !is_head(src) {
                        return refuse(format!(
                            "This pushes {src}, not the current head, to {b}, a protected branch."
                        ));
                    }
                    if approved.is_none() {
                        return deny(format!("This pushes to {b}, a protected branch."));
                    }
                }
            }
        }
    }
    if pushes {
        PrePlan::RunGates
    } else {
        PrePlan::Pass
    }
}

/// `'text'` for a POSIX shell.
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@,".contains(c))
    {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// How many turn ends in a row the Stop hook refuses on failing tests before it lets the turn
/// end: Codex has no ceiling of its own on consecutive Stop blocks, and a model that cannot
/// make the tests pass would otherwise loop until its budget ends. The driver's own test gate
/// then fails the job with the failing tail.
pub const STOP_BLOCKS_MAX: u32 = 5;

/// What the Stop hook does with a turn's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopTurn {
    /// The tests pass: the turn ends (and the count of blocks starts again).
    Pass,
    /// The tests fail: the turn goes on with what failed.
    Block,
    /// The tests still fail after [`STOP_BLOCKS_MAX`] blocks in a row: the turn ends, and the
    /// verdict is the driver's.
    GiveUp,
}

/// The Stop hook's decision, from whether the tests passed and how many turn ends in a row it
/// already refused in this session.
pub fn stop_turn(tests_passed: bool, blocked_before: u32) -> StopTurn {
    if tests_passed {
        StopTurn::Pass
    } else if blocked_before >= STOP_BLOCKS_MAX {
        StopTurn::GiveUp
    } else {
        StopTurn::Block
    }
}

/// `Stop`'s refusal: the turn goes on with `reason` fed back to the model.
pub fn stop_block(reason: &str) -> Value {
    json!({ "decision": "block", "reason": tail(reason, REASON_MAX) })
}

/// The answer to a replayed `AskUserQuestion`: when a person answered `answered` (the
/// question as [`question_text`] reads it) with `answer`, the resumed session's replay of that
/// same call is allowed with the answer filled in (`updatedInput.answers`, one entry per
/// question), so the model reads it as the tool's result; any other question is `None` and is
/// deferred to a person like the first.
pub fn answered_question(
    tool_input: Option<&Value>,
    answered: &str,
    answer: &str,
) -> Option<Value> {
    if question_text(tool_input).trim() != answered.trim() {
        return None;
    }
    let mut updated = tool_input.cloned().unwrap_or_else(|| json!({}));
    let mut answers = serde_json::Map::new();
    for q in updated["questions"].as_array().into_iter().flatten() {
        if let Some(text) = q["question"].as_str() {
            answers.insert(text.to_owned(), json!(answer));
        }
    }
    if answers.is_empty() {
        return None;
    }
    updated["answers"] = Value::Object(answers);
    Some(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "A person answered this question; Capsid passes the answer on.",
            "updatedInput": updated,
        }
    }))
}

/// A `PreToolUse` decision (`deny`, `defer`, ...) with its reason.
pub fn pre_tool_use(decision: &str, reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": tail(reason, REASON_MAX),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(cmd: &str) -> HookInput {
        HookInput::parse(
            &json!({
                "session_id": "s1", "cwd": "/w/t", "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": cmd, "description": "d"}
            })
            .to_string(),
        )
        .expect("parse")
    }

    fn on(branch: &str) -> Branches {
        Branches {
            current: Some(branch.into()),
            default: Some("trunk".into()),
            root: None,
            protected: None,
        }
    }

    #[test]
    fn pushes_run_the_gates_and_protected_targets_are_denied() {
        assert_eq!(
            plan_pre_tool_use(&bash("git push origin topic"), &on("topic")),
            PrePlan::RunGates
        );
        assert_eq!(
            plan_pre_tool_use(&bash("git push"), &on("capsid/job_1")),
            PrePlan::RunGates
        );
        assert_eq!(
            plan_pre_tool_use(&bash("cargo fmt"), &on("main")),
            PrePlan::Pass
        );
        for (cmd, branch) in [
            ("git push", "main"),
            ("git push origin HEAD:master", "topic"),
            ("git push origin trunk", "topic"),
            ("git push --all", "topic"),
            ("git merge topic", "trunk"),
        ] {
            let PrePlan::Deny {
                reason,
                command,
                approvable,
            } = plan_pre_tool_use(&bash(cmd), &on(branch))
            else {
                panic!("{cmd} on {branch} is not denied");
            };
            assert!(reason.contains("approval"), "{reason}");
            assert_eq!(command, format!("cd /w/t && {cmd}"));
            // Only a push of the head and a pull request's merge can be approved: pushing
            // another local branch, every branch, or merging into a protected branch brings
            // in commits no approval of the head covers.
            let can = !matches!(
                cmd,
                "git push --all" | "git push origin trunk" | "git merge topic"
            );
            assert_eq!(approvable, can, "{cmd}");
        }
        assert_eq!(
            plan_pre_tool_use(&bash("git merge main"), &on("topic")),
            PrePlan::Pass
        );
        // A merge is the server's to judge against the pull request's head on GitHub.
        assert_eq!(
            plan_pre_tool_use(&bash("gh pr merge 4"), &on("topic")),
            PrePlan::Merge {
                number: 4,
                repo: None,
                command: "cd /w/t && gh pr merge 4".into()
            }
        );
    }

    #[test]
    fn a_standing_approval_lets_protected_pushes_through_and_merges_go_to_the_server() {
        let on_pr = |pr| Some(StandingApproval { pr });
        let approved = |cmd: &str, branch: &str| {
            plan_pre_tool_use_approved(&bash(cmd), &on(branch), on_pr(Some(4)))
        };
        // A protected push of the head still runs the gates.
        assert_eq!(approved("git push", "main"), PrePlan::RunGates);
        assert_eq!(approved("git push origin main", "main"), PrePlan::RunGates);
        assert_eq!(
            approved("git push origin HEAD:master", "topic"),
            PrePlan::RunGates
        );
        assert_eq!(
            approved("git push origin topic:master", "topic"),
            PrePlan::RunGates
        );
        // A merge names its pull request (and repository) for the server, approval or not.
        for (cmd, number, repo) in [
            ("gh pr merge 4 --squash", 4, None),
            ("gh pr merge 5", 5, None),
            ("gh pr merge -t ship-it 7", 7, None),
            ("gh pr merge -R o/secret 4", 4, Some("o/secret")),
            ("gh api -X PUT repos/o/r/pulls/12/merge", 12, Some("o/r")),
        ] {
            assert!(
                matches!(approved(cmd, "topic"), PrePlan::Merge { number: n, repo: r, .. } if n == number && r.as_deref() == repo),
                "{cmd}"
            );
        }
        // An approval of one commit never covers every branch, an unknown one, another
        // local branch, a deletion, what `git merge` brings in, a merge naming no pull
        // request, or a merge sharing its command with a push.
        for (cmd, branch) in [
            ("git push --all", "topic"),
            ("gh pr merge 4; git push --mirror", "topic"),
            ("gh pr merge 4 && git push origin HEAD:trunk", "topic"),
            ("gh pr merge", "topic"),
            ("git push origin trunk", "topic"),
            ("git push origin other:main", "topic"),
            ("git push origin :main", "topic"),
            ("git merge topic", "trunk"),
        ] {
            assert!(
                matches!(
                    approved(cmd, branch),
                    PrePlan::Deny {
                        approvable: false,
                        ..
                    }
                ),
                "{cmd}"
            );
        }
        let detached = Branches {
            current: None,
            default: Some("trunk".into()),
            root: None,
            protected: None,
        };
        assert!(matches!(
            plan_pre_tool_use_approved(&bash("git push origin"), &detached, on_pr(Some(4))),
            PrePlan::Deny {
                approvable: false,
                ..
            }
        ));
    }

    #[test]
    fn ask_user_question_defers_with_the_question() {
        let input = HookInput::parse(
            &json!({
                "session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse",
                "tool_name": "AskUserQuestion",
                "tool_input": {"questions": [{"question": "Postgres or SQLite?", "header": "Store",
                  "options": [{"label": "Postgres", "description": "shared"}, {"label": "SQLite", "description": "local"}],
                  "multiSelect": false}]}
            })
            .to_string(),
        )
        .expect("parse");
        assert_eq!(
            plan_pre_tool_use(&input, &Branches::default()),
            PrePlan::Defer {
                question: "Postgres or SQLite? (options: Postgres; SQLite)".into()
            }
        );
        assert!(HookInput::parse("not json").is_err());
    }

    #[test]
    fn an_answered_question_is_allowed_with_its_answer_and_another_is_not() {
        let input = json!({"questions": [{"question": "Which store?", "header": "Store",
            "options": [{"label": "PG", "description": "p"}], "multiSelect": false}]});
        let asked = question_text(Some(&input));
        let out = answered_question(Some(&input), &asked, "SQLite please").expect("answered");
        let h = &out["hookSpecificOutput"];
        assert_eq!(h["permissionDecision"], "allow");
        assert_eq!(
            h["updatedInput"]["answers"]["Which store?"],
            "SQLite please"
        );
        assert_eq!(h["updatedInput"]["questions"], input["questions"]);
        let other = json!({"questions": [{"question": "Which port?"}]});
        assert_eq!(answered_question(Some(&other), &asked, "x"), None);
        assert_eq!(answered_question(None, &asked, "x"), None);
    }

    #[test]
    fn bypasses_wrappers_and_other_checkouts_are_refused() {
        let rooted = Branches {
            current: Some("capsid/job_1".into()),
            default: Some("main".into()),
            root: Some("/w/t".into()),
            protected: None,
        };
        for cmd in [
            "sh -c 'git push origin HEAD:main'",
            "bash -c \"git push origin HEAD:main\"",
            "eval 'git push origin HEAD:main'",
            "timeout 60 git push origin HEAD:main",
            "nice git push origin HEAD:main",
            "echo HEAD:main | xargs git push origin",
            "git -c remote.origin.push=HEAD:refs/heads/main push origin",
            "git -c alias.p=push p origin HEAD:main",
            "git send-pack origin HEAD:main",
            "git config remote.origin.push HEAD:refs/heads/main",
            "git push --no-verify origin topic",
            "git -c core.hooksPath=/dev/null push origin topic",
            "git push origin HEAD:heads/main",
            "git push origin HEAD:refs/heads/main",
            "B=main; git push origin HEAD:$B",
            "git push origin HEAD:$(echo main)",
            "gh api graphql -f query='mutation { mergePullRequest(input: {}) { clientMutationId } }'",
            "git -C /elsewhere push origin topic",
            "cd /elsewhere && git push origin topic",
            "cd .. && git push origin topic",
            "cd && git status",
            "GIT_DIR=/x/.git git push origin topic",
            // git takes a prefix of a long option; the shell drops quotes; `eval` and `sh -c`
            // run a line of their own; a computed `git config` could name any key.
            "git push --no-veri origin topic",
            "git push --no-verif",
            "git config core.hooks''Path /dev/null",
            "eval \"git config core.hooks''Path /dev/null\"",
            "sh -c \"git push --no-veri origin topic\"",
            "git config $(printf core.hooks%sath P) /dev/null",
            "printf 'core.hooks%sath' P | xargs git config",
            "git config include.path /tmp/evil.gitconfig",
        ] {
            assert!(
                matches!(plan_pre_tool_use(&bash(cmd), &rooted), PrePlan::Deny { .. }),
                "{cmd} is not denied"
            );
        }
        for cmd in [
            "cd sub && git push origin capsid/job_1",
            "git -C sub status",
            "cd /tmp && ls",
            "git push origin capsid/job_1",
            "git config user.name T",
            "git push --verbose origin capsid/job_1",
        ] {
            assert!(
                !matches!(plan_pre_tool_use(&bash(cmd), &rooted), PrePlan::Deny { .. }),
                "{cmd} is denied"
            );
        }
        // `-t <subject>` is the merge's subject, not its pull request.
        assert_eq!(
            classify("gh pr merge -t ship-it 7"),
            vec![Gated::PrMerge {
                number: Some(7),
                repo: None
            }]
        );
        assert_eq!(
            classify("gh pr merge --subject 12 --body x 9"),
            vec![Gated::PrMerge {
                number: Some(9),
                repo: None
            }]
        );
    }

    #[test]
    fn outputs_have_claude_codes_shapes() {
        assert_eq!(
            stop_block("tests failed"),
            json!({"decision": "block", "reason": "tests failed"})
        );
        assert_eq!(
            pre_tool_use("deny", "no"),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        assert_eq!(shell_quote("/a b/it's"), "'/a b/it'\\''s'");
        assert_eq!(protected_branches(Some("main")), vec!["main", "master"]);
        let release = ["release".to_owned()];
        assert_eq!(
            protected_branches_of(Some(&release), Some("trunk")),
            vec!["release", "trunk"],
            "the setting replaces main and master; the default stays protected"
        );
    }

    #[test]
    fn the_namespaces_protected_branches_decide_which_pushes_a_hook_refuses() {
        let push = |target: &str, protected: Option<Vec<String>>| {
            let input = HookInput {
                cwd: Some("/w".into()),
                tool_name: Some("Bash".into()),
                tool_input: Some(json!({"command": format!("git push origin HEAD:{target}")})),
                ..HookInput::default()
            };
            let branches = Branches {
                current: Some("capsid/j".into()),
                default: Some("main".into()),
                root: Some("/w".into()),
                protected,
            };
            matches!(plan_pre_tool_use(&input, &branches), PrePlan::Deny { .. })
        };
        assert!(!push("release", None));
        assert!(push("master", None));
        let release = Some(vec!["release".to_owned()]);
        assert!(push("release", release.clone()));
        assert!(
            !push("master", release.clone()),
            "master is no longer protected"
        );
        assert!(push("main", release), "the default branch always is");
    }

    #[test]
    fn the_stop_gate_blocks_red_turns_up_to_its_ceiling() {
        assert_eq!(stop_turn(true, 0), StopTurn::Pass);
        assert_eq!(stop_turn(true, STOP_BLOCKS_MAX + 3), StopTurn::Pass);
        assert_eq!(stop_turn(false, 0), StopTurn::Block);
        assert_eq!(stop_turn(false, STOP_BLOCKS_MAX - 1), StopTurn::Block);
        assert_eq!(stop_turn(false, STOP_BLOCKS_MAX), StopTurn::GiveUp);
        assert_eq!(stop_turn(false, STOP_BLOCKS_MAX + 1), StopTurn::GiveUp);
    }

    #[test]
    fn an_apply_patch_edit_is_not_read_as_a_push_but_a_command_after_it_is() {
        let b = on("feature");
        let patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: x.sh\n+git -c core.hooksPath=/dev/null push origin HEAD:main\n*** End Patch\nPATCH";
        assert_eq!(plan_pre_tool_use(&bash(patch), &b), PrePlan::Pass);
        let then_push = format!("{patch}\ngit push origin HEAD:trunk");
        assert!(matches!(
            plan_pre_tool_use(&bash(&then_push), &b),
            PrePlan::Deny { .. }
        ));
    }
}
