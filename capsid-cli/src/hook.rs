//! `capsid hook`: Claude Code's hooks as Capsid runs them. Each reads one hook event (JSON)
//! on stdin and answers on stdout as the protocol says (`capsid_core::drive::hooks` decides
//! what); each records what it saw in the agent's checkmark when `CAPSID_MCP_URL`,
//! `CAPSID_KEY` and `CAPSID_NAMESPACE` say where, and gates all the same when it cannot. A push
//! to a protected branch or a merge passes only when the server says a different agent's
//! approval stands for the head (`approval.rs`); when it cannot say, the hook denies.

mod approval;
mod permission_prompt;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use capsid_core::drive::gate::{self, GateRun, MiseTasks};
use capsid_core::drive::hooks::{
    Branches, HookInput, PrePlan, StandingApproval, StopTurn, plan_pre_tool_use,
    plan_pre_tool_use_approved, pre_tool_use, stop_block, stop_turn,
};
use capsid_core::drive::runner::RunnerSettings;
use capsid_core::drive::settings::merge_hooks;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::drive::mcp::Mcp;
use crate::drive::proc::{current_branch, remote_default_branch, shell};

/// `capsid hook`.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Stop: run the test command; on failure keep the turn going with what failed.
    Stop(GateArgs),
    /// PreToolUse: gate pushes on tests then the build check, deny protected pushes and
    /// merges, defer AskUserQuestion.
    PreToolUse(GateArgs),
    /// SessionEnd: record the final checkpoint.
    SessionEnd,
    /// SessionStart: report to the driver that Capsid's hooks run in this session.
    SessionStart,
    /// Git's pre-push hook (installed by `capsid drive` and `capsid hook install`): reads the
    /// refs git will update on stdin; refuses a protected ref without a different agent's
    /// approval of the exact commit, and any push whose tests or build check fail.
    PrePush {
        /// The remote's name, as git passes it.
        remote: Option<String>,
        /// The remote's URL, as git passes it.
        url: Option<String>,
        #[command(flatten)]
        gates: GateArgs,
    },
    /// A stdio MCP server with one tool, `permission_prompt`, for Claude Code's
    /// `--permission-prompt-tool` in a driven run: it refuses what would need a person at the
    /// keyboard (and makes Claude Code offer AskUserQuestion, which reaches a person).
    PermissionPrompt,
    /// Notification: forward Claude Code's notification to the webhook (through the server).
    Notification,
    /// Write these hooks into DIR/.claude/settings.json, merged with what is there, and
    /// git's pre-push hook into the repository's hooks folder.
    Install {
        /// The project folder (default: the current one).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// The commands a gate runs (the driver passes the ones it resolved).
#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// The test command (default: the project's `mise run test`).
    #[arg(long, env = "CAPSID_TEST_COMMAND")]
    pub test_command: Option<String>,
    /// The build check (default: `mise run build-image` when defined, else skipped).
    #[arg(long, env = "CAPSID_BUILD_COMMAND")]
    pub build_command: Option<String>,
}

/// The mise tasks of the project at `dir`.
pub fn mise_tasks(dir: &Path) -> MiseTasks {
    ["mise.toml", ".mise.toml"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .fold(MiseTasks::default(), |acc, text| {
            acc.union(MiseTasks::read(&text))
        })
}

/// Where the hook records, from the driver's environment.
struct Recorder {
    mcp: Mcp,
    namespace: String,
    job_id: Option<String>,
    agent: Option<String>,
}

impl Recorder {
    fn from_env() -> Option<Recorder> {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
        let key = var("CAPSID_RUN_CREDENTIAL").or_else(|| var("CAPSID_KEY"))?;
        let mcp = Mcp::new(&var("CAPSID_MCP_URL")?, &key).ok()?;
        Some(Recorder {
            mcp,
            namespace: var("CAPSID_NAMESPACE")?,
            job_id: var("CAPSID_JOB_ID"),
            agent: var("CAPSID_AGENT"),
        })
    }

    /// The current checkmark, when the agent's name is known.
    async fn mark(&self) -> Option<Value> {
        let agent = self.agent.as_ref()?;
        let got = self
            .mcp
            .ok(
                "checkmarks",
                json!({"action": "get", "namespace": self.namespace, "agent": agent}),
            )
            .await
            .ok()?;
        Some(got.get("checkmark").unwrap_or(&got).clone())
    }

    /// The current checkmark's status and question, when the agent's name is known.
    async fn current(&self) -> Option<(String, Option<String>)> {
        let c = self.mark().await?;
        Some((
            c["status"].as_str()?.to_owned(),
            c["open_question"].as_str().map(str::to_owned),
        ))
    }

    /// Records a checkpoint; a failure is reported on stderr and never changes the gate.
    async fn checkpoint(&self, mut args: Value, session: Option<&str>) {
        args["namespace"] = json!(self.namespace);
        if let Some(j) = &self.job_id {
            args["job_id"] = json!(j);
        }
        if let Some(s) = session {
            args["session_id"] = json!(s);
        }
        if let Err(e) = self.mcp.ok("checkpoint", args).await {
            eprintln!("capsid hook: could not record the checkpoint ({e:#}); the gate still holds");
        }
    }
}

fn read_event() -> Result<HookInput> {
    let mut stdin = String::new();
    std::io::stdin()
        .take(1 << 20)
        .read_to_string(&mut stdin)
        .context("reading the hook event from stdin")?;
    HookInput::parse(&stdin).map_err(anyhow::Error::msg)
}

fn cwd_of(input: &HookInput) -> PathBuf {
    input
        .cwd
        .as_ref()
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."))
}

fn print(v: &Value) {
    println!("{v}");
}

/// Refuses the tool call with `reason`, and tells the driver which command was refused (a
/// `denied` line beside the hooks' report: Codex prints no list of refused calls).
fn deny(input: &HookInput, reason: &str) {
    print(&pre_tool_use("deny", reason));
    if let Some(cmd) = input
        .tool_input
        .as_ref()
        .and_then(|i| i.get("command"))
        .and_then(Value::as_str)
    {
        report_line(&capsid_core::drive::judge::denied_line(cmd));
    }
}

/// Tells the driver that Capsid's hooks run in this session: a line in `$CAPSID_RUN_DIR/
/// hooks-ran` (the driver takes no verdict from a session none of its hooks reported from).
fn report_ran(event: &str, session: Option<&str>) {
    report_line(&format!("{event} {}", session.unwrap_or("-")));
}

/// Appends `line` to `$CAPSID_RUN_DIR/hooks-ran`, when the driver names the folder.
fn report_line(line: &str) {
    let Some(dir) = std::env::var_os("CAPSID_RUN_DIR") else {
        return;
    };
    let path = PathBuf::from(dir).join("hooks-ran");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        use std::io::Write as _;
        let _ = writeln!(f, "{line}");
    }
}

/// The project folder the gates run in, whatever the agent's current folder: Claude Code's
/// `CLAUDE_PROJECT_DIR`, the driver's `CAPSID_WORKTREE`, else the top of the git checkout the
/// event's folder is in, else that folder.
async fn project_root(input: &HookInput) -> PathBuf {
    for var in ["CLAUDE_PROJECT_DIR", "CAPSID_WORKTREE"] {
        if let Some(d) = std::env::var_os(var).map(PathBuf::from)
            && d.is_dir()
        {
            return d;
        }
    }
    let cwd = cwd_of(input);
    match crate::drive::proc::git(&cwd, &["rev-parse", "--show-toplevel"]).await {
        Ok(top) => PathBuf::from(top),
        Err(_) => cwd,
    }
}

/// Runs one hook.
pub async fn run(cmd: HookCommand) -> Result<ExitCode> {
    match &cmd {
        HookCommand::Install { dir } => {
            let dir = match dir {
                Some(d) => d.clone(),
                None => std::env::current_dir().context("the current folder")?,
            };
            return install_all(&dir).await;
        }
        HookCommand::PrePush {
            remote,
            url: _,
            gates,
        } => {
            report_ran("pre-push", None);
            let recorder = Recorder::from_env();
            return pre_push(
                remote.as_deref().unwrap_or("origin"),
                gates,
                recorder.as_ref(),
            )
            .await;
        }
        HookCommand::PermissionPrompt => return permission_prompt::serve().await,
        _ => {}
    }
    let input = read_event()?;
    let recorder = Recorder::from_env();
    let session = input.session_id.clone();
    match cmd {
        HookCommand::Stop(g) => {
            report_ran("stop", session.as_deref());
            stop(&input, &g, recorder.as_ref(), session.as_deref()).await
        }
        HookCommand::PreToolUse(g) => {
            report_ran("pre-tool-use", session.as_deref());
            pre_tool(&input, &g, recorder.as_ref(), session.as_deref()).await
        }
        HookCommand::SessionStart => {
            report_ran("session-start", session.as_deref());
            Ok(ExitCode::SUCCESS)
        }
        HookCommand::SessionEnd => {
            report_ran("session-end", session.as_deref());
            if let Some(r) = &recorder {
                // A question, a human gate or a done checkmark already says where the agent
                // stopped; a working one gets its final checkpoint.
                let mark = r.mark().await;
                let status = mark.as_ref().and_then(|m| m["status"].as_str());
                if status.is_none_or(|s| s == "working") {
                    let mut args = json!({
                        "status": "working",
                        "where_it_stopped": format!("the session ended ({})", input.reason.as_deref().unwrap_or("other")),
                        "summary": "session end",
                    });
                    // The last verdicts of the session's gates stay on the checkmark.
                    for field in ["tests_status", "build_status"] {
                        if let Some(v) = mark
                            .as_ref()
                            .and_then(|m| m[field].as_str())
                            .filter(|v| matches!(*v, "pass" | "fail"))
                        {
                            args[field] = json!(v);
                        }
                    }
                    r.checkpoint(args, session.as_deref()).await;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        HookCommand::Notification => {
            forward_notification(&input).await;
            Ok(ExitCode::SUCCESS)
        }
        HookCommand::Install { .. }
        | HookCommand::PrePush { .. }
        | HookCommand::PermissionPrompt => Ok(ExitCode::SUCCESS),
    }
}

/// `capsid hook install`: Claude Code's hooks into `dir/.claude/settings.json`, git's
/// pre-push hook into the repository, and no setting left that switches the hooks off.
async fn install_all(dir: &Path) -> Result<ExitCode> {
    if !dir.is_dir() {
        eprintln!(
            "capsid hook install: --dir {} is not a folder that exists; nothing was written (give the project's folder)",
            dir.display()
        );
        return Ok(ExitCode::from(2));
    }
    let path = install(dir)?;
    println!("wrote Capsid's hooks into {}", path.display());
    let has_tests = std::env::var("CAPSID_TEST_COMMAND").is_ok_and(|c| !c.trim().is_empty())
        || mise_tasks(dir).test;
    if !has_tests {
        eprintln!(
            "capsid hook install: warning: no test command found here, so the Stop hook has no test gate to run (it says so once per session and lets the turn end). Set one: CAPSID_TEST_COMMAND in the agent's environment, [tasks.test] in {}/mise.toml, or the namespace's (capsid namespaces update <ns> --test-command ...)",
            dir.display()
        );
    }
    for file in crate::drive::preflight::strip_disable_all_hooks(dir).map_err(anyhow::Error::msg)? {
        eprintln!(
            "capsid hook install: warning: {} set \"disableAllHooks\", which switches every hook off; it was removed, so Capsid's gates run",
            file.display()
        );
    }
    match crate::drive::githook::install_in_repository(dir).await? {
        Some(hook) => println!("wrote git's pre-push gate into {}", hook.display()),
        None => eprintln!(
            "capsid hook install: {} is not in a git repository, so no git pre-push gate was installed",
            dir.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the hooks into `dir/.claude/settings.json`; the file's path.
pub fn install(dir: &Path) -> Result<PathBuf> {
    let program = std::env::current_exe().context("finding the capsid binary's own path")?;
    let folder = dir.join(".claude");
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let path = folder.join("settings.json");
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(
            serde_json::from_str::<Value>(&text)
                .with_context(|| format!("{} is not JSON; fix it by hand first", path.display()))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let merged = merge_hooks(existing.as_ref(), &program.display().to_string())
        .map_err(anyhow::Error::msg)?;
    let text = serde_json::to_string_pretty(&merged).context("rendering settings.json")?;
    std::fs::write(&path, format!("{text}\n"))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The namespace's runner settings, when the hook knows its server and namespace.
async fn stored_runner(recorder: Option<&Recorder>) -> RunnerSettings {
    match recorder {
        Some(r) => crate::drive::namespace_runner(&r.mcp, &r.namespace)
            .await
            .unwrap_or_default(),
        None => RunnerSettings::default(),
    }
}

/// The namespace's runner settings, asked of the server only when a flag does not already
/// give both gate commands.
async fn gate_settings(g: &GateArgs, recorder: Option<&Recorder>) -> RunnerSettings {
    if g.test_command.is_some() && g.build_command.is_some() {
        RunnerSettings::default()
    } else {
        stored_runner(recorder).await
    }
}

async fn run_tests(
    dir: &Path,
    g: &GateArgs,
    stored: &RunnerSettings,
) -> std::result::Result<GateRun, String> {
    let cmd = gate::test_command(
        g.test_command.as_deref(),
        stored.test_command.as_deref(),
        mise_tasks(dir),
    )?;
    Ok(shell(&cmd.command, dir, &[]).await)
}

/// What the Stop hook says, once per session, when it finds no test command.
const NO_TEST_COMMAND: &str = "Capsid's Stop hook found no test command, so this turn ended without a test gate. Set one: CAPSID_TEST_COMMAND in the agent's environment, [tasks.test] in the project's mise.toml, or the namespace's (capsid namespaces update <ns> --test-command ...). Said once per session.";

/// Whether `what` has not been said yet in `session` (and it is now marked said): a marker in
/// the temporary folder, named by the session id's safe characters.
fn say_once(what: &str, session: Option<&str>) -> bool {
    let id = file_safe(session);
    let marker = std::env::temp_dir().join(format!("capsid-said-{what}-{id}"));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
        .is_ok()
}

async fn stop(
    input: &HookInput,
    g: &GateArgs,
    recorder: Option<&Recorder>,
    session: Option<&str>,
) -> Result<ExitCode> {
    let dir = project_root(input).await;
    let stored = if g.test_command.is_some() {
        RunnerSettings::default()
    } else {
        stored_runner(recorder).await
    };
    let tests = match run_tests(&dir, g, &stored).await {
        Ok(t) => t,
        Err(_) => {
            // Nothing to gate on: the turn ends, and the person hears why once per session
            // (blocking every turn end would only repeat it). A driven run never gets here:
            // `capsid drive` refuses to start without a test command.
            if say_once("no-test-command", input.session_id.as_deref()) {
                print(&json!({"systemMessage": NO_TEST_COMMAND}));
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    if let Some(r) = recorder {
        let (status, question) = match r.current().await {
            // A question or a human gate stays open until somebody answers it.
            Some((s, q)) if (s == "paused_for_input" || s == "blocked") && q.is_some() => (s, q),
            _ => ("working".to_owned(), None),
        };
        let mut args = json!({
            "status": status,
            "tests_status": if tests.passed() { "pass" } else { "fail" },
            "where_it_stopped": if tests.passed() { "a turn ended with the tests passing" } else { "a turn ended on failing tests; the agent continues" },
        });
        if let Some(q) = question {
            args["question"] = json!(q);
        }
        r.checkpoint(args, session).await;
    }
    let marker = blocks_marker(session);
    let before = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        .unwrap_or(0);
    match stop_turn(tests.passed(), before) {
        StopTurn::Pass => {
            let _ = std::fs::remove_file(&marker);
        }
        StopTurn::Block => {
            let _ = std::fs::write(&marker, (before + 1).to_string());
            print(&stop_block(&format!(
                "{}\nFix the failing tests before ending the turn.",
                tests.failure("The test gate")
            )));
        }
        StopTurn::GiveUp => {
            // Stop's answer is `block` or nothing (Codex refuses anything else): the turn ends,
            // and the driver's own test gate fails the job with the tail.
            eprintln!(
                "capsid hook: the tests still fail after {before} turn ends in a row were refused; this one ends, and the driver's test gate decides the job"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A session id's safe characters, to name a file by.
fn file_safe(session: Option<&str>) -> String {
    session
        .unwrap_or("no-session")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(80)
        .collect()
}

/// Where the Stop hook counts the turn ends it refused in a row in `session`: the run's folder
/// when the driver gives one, else the temporary folder.
fn blocks_marker(session: Option<&str>) -> PathBuf {
    let id = file_safe(session);
    let dir = std::env::var_os("CAPSID_RUN_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    dir.join(format!("capsid-stop-blocks-{id}"))
}

async fn pre_tool(
    input: &HookInput,
    g: &GateArgs,
    recorder: Option<&Recorder>,
    session: Option<&str>,
) -> Result<ExitCode> {
    let dir = project_root(input).await;
    // A question a person already answered is answered again on its replay (a resumed
    // session repeats the deferred call), instead of being deferred a second time.
    if input.tool_name.as_deref() == Some("AskUserQuestion")
        && let (Ok(asked), Ok(answer)) = (
            std::env::var("CAPSID_ANSWERED_QUESTION"),
            std::env::var("CAPSID_ANSWER"),
        )
        && let Some(out) =
            capsid_core::drive::hooks::answered_question(input.tool_input.as_ref(), &asked, &answer)
    {
        print(&out);
        return Ok(ExitCode::SUCCESS);
    }
    // The job's lease (issue 51): an edit outside it is refused before it happens (the git
    // gateway refuses a push that changes one either way).
    if let Some(lease) = std::env::var(capsid_core::drive::lease_edits::LEASE_ENV)
        .ok()
        .and_then(|text| serde_json::from_str::<Vec<String>>(&text).ok())
        && let Some(why) = capsid_core::drive::lease_edits::edit_outside_lease(
            input,
            &dir.display().to_string(),
            &lease,
        )
    {
        deny(input, &why);
        return Ok(ExitCode::SUCCESS);
    }
    // The driver says which branch the job's branch came from; a worktree's own checkout
    // is never mistaken for the default branch. Branches are read at the project root, not
    // in the folder the agent moved to.
    let default = match std::env::var("CAPSID_DEFAULT_BRANCH") {
        Ok(b) if !b.trim().is_empty() => Some(b.trim().to_owned()),
        _ => remote_default_branch(&dir).await,
    };
    // A command that may push or merge is judged against the namespace's protected branches,
    // as the server keeps them (the agent's environment does not name them).
    let may_move_refs = input.tool_name.as_deref() == Some("Bash")
        && input
            .tool_input
            .as_ref()
            .and_then(|t| t["command"].as_str())
            .is_some_and(|c| c.contains("push") || c.contains("merge"));
    let protected = match may_move_refs {
        true => stored_runner(recorder).await.protected_branches(),
        false => None,
    };
    let branches = Branches {
        current: current_branch(&dir).await,
        default,
        root: Some(dir.display().to_string()),
        protected,
    };
    let mut plan = plan_pre_tool_use(input, &branches);
    // In a boxed run the git gateway sees the refs every push updates and the box has no other
    // checkout and no way to GitHub: the shell-reading refusals of pushes, merges and hook
    // bypasses are not needed, and a push to a protected branch is held at the gateway, whose
    // refusal the agent reads as `remote:` lines.
    if std::env::var("CAPSID_PUSH_GATE").as_deref() == Ok("gateway")
        && input.tool_name.as_deref() == Some("Bash")
        && matches!(plan, PrePlan::Deny { .. } | PrePlan::Merge { .. })
    {
        plan = PrePlan::Pass;
    }
    if let PrePlan::Deny {
        reason,
        approvable: true,
        ..
    } = &plan
    {
        plan = match approval::standing(recorder, &dir).await {
            approval::Approval::Stands(by, pr) => {
                let plan =
                    plan_pre_tool_use_approved(input, &branches, Some(StandingApproval { pr }));
                if !matches!(plan, PrePlan::Deny { .. }) {
                    // Claude Code shows a passing hook's stderr in its transcript only.
                    eprintln!("capsid hook: a standing approval lets this through: {by}");
                }
                plan
            }
            approval::Approval::Missing(why) => {
                deny(input, &format!("{reason}\n{why}"));
                return Ok(ExitCode::SUCCESS);
            }
        };
    }
    match plan {
        PrePlan::Pass => {}
        PrePlan::Deny { reason, .. } => deny(input, &reason),
        PrePlan::Merge {
            number,
            repo,
            command,
        } => {
            let repo = match repo {
                Some(r) => Some(r),
                None => approval::origin_repo(&dir).await,
            };
            match approval::merge_standing(recorder, number, repo.as_deref()).await {
                approval::Approval::Stands(by, _) => {
                    eprintln!("capsid hook: a standing approval lets this merge through: {by}");
                }
                approval::Approval::Missing(why) => deny(
                    input,
                    &format!(
                        "This merges pull request #{number} into a protected branch, and it needs a different agent's approval of the pull request's current head on GitHub. {why} Leave it for a human: `{command}`."
                    ),
                ),
            }
        }
        PrePlan::Defer { question } => {
            if let Some(r) = recorder {
                r.checkpoint(
                    json!({
                        "status": "paused_for_input",
                        "question": question,
                        "where_it_stopped": "asked a question (AskUserQuestion) and stopped for the answer",
                    }),
                    session,
                )
                .await;
            }
            print(&pre_tool_use(
                "defer",
                "Capsid recorded the question for a human; the session stops here and is resumed with the answer.",
            ));
        }
        PrePlan::RunGates => {
            let stored = gate_settings(g, recorder).await;
            let tests = match run_tests(&dir, g, &stored).await {
                Ok(t) => t,
                Err(refusal) => {
                    print(&pre_tool_use("deny", &refusal));
                    return Ok(ExitCode::SUCCESS);
                }
            };
            let build = if tests.passed() {
                match gate::build_command(
                    g.build_command.as_deref(),
                    stored.build_command.as_deref(),
                    mise_tasks(&dir),
                ) {
                    Some(b) => Some(shell(&b.command, &dir, &[]).await),
                    None => None,
                }
            } else {
                None
            };
            if let Some(r) = recorder {
                let mut args = json!({
                    "status": "working",
                    "tests_status": if tests.passed() { "pass" } else { "fail" },
                    "where_it_stopped": "about to push",
                });
                if tests.passed() {
                    args["build_status"] = json!(match &build {
                        Some(b) if b.passed() => "pass",
                        Some(_) => "fail",
                        None => "skipped",
                    });
                }
                r.checkpoint(args, session).await;
            }
            if !tests.passed() {
                print(&pre_tool_use(
                    "deny",
                    &format!(
                        "{}\nThe push was refused: fix the tests first.",
                        tests.failure("The test gate")
                    ),
                ));
            } else if let Some(b) = build.filter(|b| !b.passed()) {
                print(&pre_tool_use(
                    "deny",
                    &format!(
                        "{}\nThe push was refused: a push the local build check already fails would fail CI.",
                        b.failure("The build check")
                    ),
                ));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Git's pre-push hook: every ref git will update (read from stdin, `<local ref> <local sha>
/// <remote ref> <remote sha>`), whatever command line launched the push. A protected branch
/// (`main`, `master`, the remote's default) moves only to a commit a different agent's
/// approval stands for, and is never deleted; every push runs the tests then the build check
/// at the repository's top. Exit 1 refuses the push; the reason goes to stderr, naming the ref.
async fn pre_push(remote: &str, g: &GateArgs, recorder: Option<&Recorder>) -> Result<ExitCode> {
    let mut refs = String::new();
    std::io::stdin()
        .take(1 << 20)
        .read_to_string(&mut refs)
        .context("reading the refs git pushes")?;
    let refuse = |why: String| {
        eprintln!("capsid pre-push: refused: {why}");
        Ok(ExitCode::FAILURE)
    };
    let dir = match crate::drive::proc::git(Path::new("."), &["rev-parse", "--show-toplevel"]).await
    {
        Ok(top) => PathBuf::from(top),
        Err(_) => std::env::current_dir().context("the current folder")?,
    };
    let default = match std::env::var("CAPSID_DEFAULT_BRANCH") {
        Ok(b) if !b.trim().is_empty() => Some(b.trim().to_owned()),
        _ => crate::drive::proc::git(
            &dir,
            &[
                "symbolic-ref",
                "--short",
                &format!("refs/remotes/{remote}/HEAD"),
            ],
        )
        .await
        .ok()
        .and_then(|h| h.split_once('/').map(|(_, b)| b.to_owned())),
    };
    let protected = capsid_core::drive::hooks::protected_branches_of(
        stored_runner(recorder)
            .await
            .protected_branches()
            .as_deref(),
        default.as_deref(),
    );
    let mut updates = 0usize;
    for line in refs.lines().filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [_local_ref, local_sha, remote_ref, _remote_sha] = parts[..] else {
            return refuse(format!(
                "git handed the hook a line it cannot read ({line:?}), so the push is refused"
            ));
        };
        let deletes = local_sha.bytes().all(|b| b == b'0');
        if !deletes {
            updates += 1;
        }
        let Some(branch) = remote_ref.strip_prefix("refs/heads/") else {
            continue;
        };
        if !protected.iter().any(|p| p == branch) {
            continue;
        }
        if deletes {
            return refuse(format!(
                "this push deletes {remote_ref} on {remote}, a protected branch; only a human may do that"
            ));
        }
        match approval::standing_for(recorder, local_sha).await {
            approval::Approval::Stands(by, _) => {
                eprintln!("capsid pre-push: {remote_ref} may move to {local_sha}: {by}");
                report_ran(&format!("approved {remote_ref} {local_sha}"), None);
            }
            approval::Approval::Missing(why) => {
                return refuse(format!(
                    "this push updates {remote_ref} on {remote}, a protected branch, to {local_sha}, and it needs a different agent's approval of exactly that commit. {why} Push a feature branch and open a pull request instead, or leave this for a human."
                ));
            }
        }
    }
    if updates == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    let stored = gate_settings(g, recorder).await;
    let tests = match run_tests(&dir, g, &stored).await {
        Ok(t) => t,
        Err(refusal) => return refuse(refusal),
    };
    if !tests.passed() {
        return refuse(format!(
            "{}\nThe push was refused: fix the tests first.",
            tests.failure("The test gate")
        ));
    }
    if let Some(b) = gate::build_command(
        g.build_command.as_deref(),
        stored.build_command.as_deref(),
        mise_tasks(&dir),
    ) {
        let build = shell(&b.command, &dir, &[]).await;
        if !build.passed() {
            return refuse(format!(
                "{}\nThe push was refused: a push the local build check already fails would fail CI.",
                build.failure("The build check")
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Posts Claude Code's notification to `CAPSID_WEBHOOK_URL` (the generic webhook the server
/// posts to), when it is set.
async fn forward_notification(input: &HookInput) {
    let Ok(url) = std::env::var("CAPSID_WEBHOOK_URL") else {
        return;
    };
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
    let body = json!({
        "event": "agent-notification",
        "namespace": var("CAPSID_NAMESPACE"),
        "job_id": var("CAPSID_JOB_ID"),
        "agent": var("CAPSID_AGENT"),
        "session_id": input.session_id,
        "title": input.title,
        "message": input.message,
        "notification_type": input.notification_type,
    });
    let client = reqwest::Client::new();
    if let Err(e) = client.post(&url).json(&body).send().await {
        eprintln!("capsid hook notification: could not reach the webhook: {e}");
    }
}
