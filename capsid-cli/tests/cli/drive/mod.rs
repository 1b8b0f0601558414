//! `capsid drive` end to end, on SQLite and on Postgres: the real server and driver binaries,
//! real git projects, and a fake agent script that behaves as Claude Code's headless mode and
//! hook protocol do (it runs the hooks the driver installs). A job is done with evidence the
//! driver measured when the tests pass, failed with the failing tail when they do not, a push
//! the build check fails is denied by the hook, a question blocks the job until it is
//! answered over /api and resumed in the same worktree, an unresolvable credential stops the
//! driver before any claim, and two namespaces driven at once share nothing. A session none of
//! the driver's hooks reported from, or one that rewired the worktree's `core.hooksPath`, fails
//! its job whatever it committed.

mod approval;
mod bounds;
mod boxed_pr;
mod claude;
mod claude_boxed;
mod claude_rehearse;
mod deploy;
mod pipeline;
mod roles;
mod runtimes;
mod support;

/// This module, as [`on_both_stores`] names the module of its own cases.
use crate::drive as here;
use bounds::{dispatch_is_bounded_in_depth_and_breadth, runner_settings_come_from_the_namespace};
use serde_json::json;
use support::{Store, World, git_out, said};

/// Each case on SQLite (in module `$sqlite`) and on Postgres (`$postgres`), in the world
/// `$start(store, case)` makes (`None`: it says why the case did not run); the case is the
/// function `super::<$module>$case` of that world.
macro_rules! on_both_stores {
    ($sqlite:ident, $postgres:ident, $start:path, $module:ident; $($case:ident),+ $(,)?) => {
        mod $sqlite {
            $(#[test]
            fn $case() {
                if let Some(w) = $start(super::Store::Sqlite, stringify!($case)) {
                    super::$module::$case(&w);
                    w.finish();
                }
            })+
        }
        mod $postgres {
            $(#[test]
            fn $case() {
                if let Some(w) = $start(super::Store::Postgres, stringify!($case)) {
                    super::$module::$case(&w);
                    w.finish();
                }
            })+
        }
    };
}

// The real-CLI suite: each scenario is written once (`claude.rs`, `claude_boxed.rs`) and runs
// with the real Claude Code and, where the scenario is not Claude Code's alone, the real Codex.
on_both_stores!(claude_sqlite, claude_postgres, super::World::start_claude, claude;

    the_default_agent_edits_commits_checkpoints_and_is_done_on_the_drivers_tests,
    red_tests_fail_the_job_whatever_the_agent_says,
    a_run_whose_changes_were_all_refused_fails_naming_them,
    the_agent_cannot_grade_itself_and_holds_no_driver_key,
    a_question_reaches_a_person_and_the_answer_reaches_the_same_session,
    a_question_through_the_agents_own_checkpoint_blocks_the_job,
    an_agents_own_blocked_words_never_become_the_command_a_person_runs,
    a_push_to_main_blocks_with_the_command_and_two_questions_never_overwrite,
    shell_wrapped_redirected_and_elsewhere_pushes_never_move_main,
    the_gates_run_at_the_root_after_the_agent_cds_into_a_subfolder,
    settings_that_do_not_parse_are_refused_before_the_claim,
    tmux_with_a_server_already_running_works_and_ps_shows_no_secret,
    a_push_around_the_gates_or_a_moved_local_main_is_never_done,
    the_recorded_cost_is_the_model_doors_count_whatever_the_agent_prints,
    a_job_over_its_cap_blocks_and_a_raise_resumes_the_same_session,
    a_boxed_job_sees_none_of_the_hosts_secrets_and_ships_through_the_gateway,
    a_boxed_push_to_main_is_refused_at_the_gateway_however_spelled,
    a_boxed_push_to_main_a_person_approves_goes_through_on_resume,
    a_boxed_jobs_tests_run_in_a_fresh_box_of_their_own,
    a_boxed_agents_four_attacks_leave_main_untouched_and_the_verdict_right,
    a_boxed_job_a_person_fails_stops_its_box_within_seconds,
    a_boxed_question_resumes_the_same_session_in_the_same_clone,
    a_boxed_job_runs_in_tmux_and_its_box_ends_with_the_session,
    a_rehearsal_runs_the_whole_loop_without_a_model_account,
);

on_both_stores!(codex_sqlite, codex_postgres, super::World::start_codex, claude;
    the_default_agent_edits_commits_checkpoints_and_is_done_on_the_drivers_tests,
    red_tests_fail_the_job_whatever_the_agent_says,
    the_agent_cannot_grade_itself_and_holds_no_driver_key,
    a_question_through_the_agents_own_checkpoint_blocks_the_job,
    an_agents_own_blocked_words_never_become_the_command_a_person_runs,
    a_push_to_main_blocks_with_the_command_and_two_questions_never_overwrite,
    shell_wrapped_redirected_and_elsewhere_pushes_never_move_main,
    a_push_around_the_gates_or_a_moved_local_main_is_never_done,
    the_recorded_cost_is_the_model_doors_count_whatever_the_agent_prints,
    a_job_over_its_cap_blocks_and_a_raise_resumes_the_same_session,
    a_boxed_job_sees_none_of_the_hosts_secrets_and_ships_through_the_gateway,
    a_boxed_push_to_main_is_refused_at_the_gateway_however_spelled,
    a_boxed_push_to_main_a_person_approves_goes_through_on_resume,
    a_boxed_jobs_tests_run_in_a_fresh_box_of_their_own,
    a_boxed_agents_four_attacks_leave_main_untouched_and_the_verdict_right,
    a_boxed_job_a_person_fails_stops_its_box_within_seconds,
    a_boxed_question_resumes_the_same_session_in_the_same_clone,
    tmux_with_a_server_already_running_works_and_ps_shows_no_secret,
    a_boxed_job_runs_in_tmux_and_its_box_ends_with_the_session,
);

// Roles (issue 55): each runtime loads the role's skill and the verdict follows the role.
on_both_stores!(roles_claude_sqlite, roles_claude_postgres, super::World::start_claude, roles;
    a_scout_reads_its_skill_pushes_nothing_and_a_quiet_run_is_done,
    a_job_that_ships_nothing_is_done_only_when_its_role_ships_nothing,
    the_protected_branch_setting_decides_what_the_gateway_holds,
    an_owners_role_reaches_the_agent_as_its_skill_and_on_its_model,
    a_push_outside_the_jobs_paths_is_refused_at_the_gateway,
);
on_both_stores!(roles_codex_sqlite, roles_codex_postgres, super::World::start_codex, roles;
    a_scout_reads_its_skill_pushes_nothing_and_a_quiet_run_is_done,
    a_job_that_ships_nothing_is_done_only_when_its_role_ships_nothing,
    the_protected_branch_setting_decides_what_the_gateway_holds,
    an_owners_role_reaches_the_agent_as_its_skill_and_on_its_model,
    a_push_outside_the_jobs_paths_is_refused_at_the_gateway,
);

// Cases that need both real CLIs on the driver's host.
on_both_stores!(both_clis_sqlite, both_clis_postgres, super::World::start_both, runtimes;
    one_driver_runs_a_codex_job_and_a_claude_code_job_side_by_side,
);

// Codex-only cases: what only its CLI does.
on_both_stores!(codex_only_sqlite, codex_only_postgres, super::World::start_codex, runtimes;
    a_codex_session_whose_hooks_did_not_run_is_never_done,
);

on_both_stores!(sqlite, postgres, super::World::start, here;
    a_tmux_that_cannot_start_says_why,
    a_push_the_build_check_fails_is_denied_by_the_hook,
    a_session_none_of_the_hooks_reported_from_fails,
    a_session_that_rewires_the_worktrees_hooks_fails,
    an_unresolvable_credential_stops_before_any_claim,
    a_key_that_is_not_a_drivers_stops_before_any_claim,
    a_box_that_cannot_work_stops_before_any_claim,
    two_namespaces_at_once_share_no_worktree_or_checkmark,
    runner_settings_come_from_the_namespace,
    dispatch_is_bounded_in_depth_and_breadth,
    max_parallel_runs_one_job_per_key_side_by_side,
    the_portfolio_names_each_namespaces_queue_and_which_needs_a_driver,
);

/// `capsid jobs list --all` (issue 56, item 10): one line per namespace with its queued,
/// claimed and blocked jobs and its drivers; a namespace with work and no live driver is
/// named as needing one. `--namespace` lists that namespace's jobs.
fn the_portfolio_names_each_namespaces_queue_and_which_needs_a_driver(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    w.cli(&["namespaces", "register", "lonely", "--repo", "you/lonely"]);
    w.cli(&["namespaces", "register", "quiet", "--repo", "you/quiet"]);
    let first = w.post("demo", "First widget", "Widget work. MODE=pass");
    w.post("demo", "Second widget", "Widget work. MODE=pass");
    w.post("lonely", "Orphan", "Nobody drives this.");
    let out = w.drive_once("demo", &key, &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let listed: serde_json::Value =
        serde_json::from_str(&w.cli(&["jobs", "list", "--all", "--json"])).expect("JSON");
    let row = |ns: &str| {
        listed["namespaces"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["namespace"] == ns))
            .cloned()
            .unwrap_or_else(|| panic!("no row for {ns}: {listed}"))
    };
    let demo = row("demo");
    assert_eq!(
        (&demo["queued"], &demo["claimed"], &demo["blocked"]),
        (&json!(1), &json!(0), &json!(0)),
        "{demo}"
    );
    assert_eq!(demo["drivers"], json!(["demo-driver"]), "{demo}");
    assert_eq!(demo["needs_driver"], json!(false), "{demo}");
    let lonely = row("lonely");
    assert_eq!(lonely["queued"], json!(1), "{lonely}");
    assert_eq!(lonely["needs_driver"], json!(true), "{lonely}");
    let quiet = row("quiet");
    assert_eq!(
        quiet["needs_driver"],
        json!(false),
        "nothing waits: {quiet}"
    );
    let text = w.cli(&["jobs", "list", "--all"]);
    let line = |ns: &str| {
        text.lines()
            .find(|l| l.starts_with(ns))
            .unwrap_or_else(|| panic!("no line for {ns}: {text}"))
            .to_owned()
    };
    assert!(line("lonely").contains("NEEDS A DRIVER"), "{text}");
    assert!(line("demo").contains("drivers: demo-driver"), "{text}");
    // A revoked driver drives nothing.
    w.cli(&["agents", "revoke", "--name", "demo-driver"]);
    let text = w.cli(&["jobs", "list", "--all"]);
    assert!(line_of(&text, "demo").contains("NEEDS A DRIVER"), "{text}");
    let jobs = w.cli(&["jobs", "list", "--namespace", "demo"]);
    assert!(jobs.contains(&first) && jobs.contains("done"), "{jobs}");
    let neither = w.cli_output(&["jobs", "list"]);
    assert_eq!(neither.status.code(), Some(2), "{}", said(&neither));
}

fn line_of(text: &str, prefix: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line for {prefix}: {text}"))
        .to_owned()
}

fn max_parallel_runs_one_job_per_key_side_by_side(w: &World) {
    let first = w.namespace_with_driver("demo");
    let second = w.mint_driver("demo-driver-2", "demo");
    let root = w.project("demo");
    // On disjoint paths: a job without paths leases the whole repository and runs alone.
    let a = w.post_on(
        "demo",
        "Alpha widgets",
        "Alpha work. MODE=pass",
        &["alpha/**"],
    );
    let b = w.post_on("demo", "Beta widgets", "Beta work. MODE=pass", &["beta/**"]);
    let keys = w.dir.path().join("keys");
    std::fs::create_dir_all(&keys).expect("keys folder");
    std::fs::write(keys.join("1.key"), &first).expect("key 1");
    std::fs::write(keys.join("2.key"), &second).expect("key 2");

    let one_key = w
        .drive("demo", &first, &root, &["--max-parallel", "2"])
        .output()
        .expect("run");
    assert_eq!(one_key.status.code(), Some(2), "{}", said(&one_key));
    assert!(
        String::from_utf8_lossy(&one_key.stderr).contains("needs 2 driver keys"),
        "{}",
        said(&one_key)
    );

    let k1 = keys.join("1.key").display().to_string();
    let k2 = keys.join("2.key").display().to_string();
    let out = w
        .drive(
            "demo",
            &first,
            &root,
            &["--max-parallel", "2", "--key-file", &k1, "--key-file", &k2],
        )
        .env_remove("CAPSID_KEY")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let mut holders = Vec::new();
    for id in [&a, &b] {
        let job = w.job("demo", id);
        assert_eq!(job["status"], json!("done"), "{job}");
        holders.push(job["claimed_by"].as_str().unwrap_or("").to_owned());
        let fake = w.fake_said("demo");
        let wt = root.join(".capsid/worktrees").join(id);
        assert!(
            fake.contains(&format!("job={id} ns=demo cwd={}", wt.display())),
            "{fake}"
        );
    }
    holders.sort();
    assert_eq!(
        holders,
        vec!["agent:demo-driver", "agent:demo-driver-2"],
        "one job per key"
    );
}

fn a_push_the_build_check_fails_is_denied_by_the_hook(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post(
        "demo",
        "Ship a Dockerfile",
        "Add a Dockerfile and push. MODE=push",
    );
    let out = w.drive_once("demo", &key, &root, &[]);
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));

    let fake = w.fake_said("demo");
    let line = fake
        .lines()
        .find(|l| l.starts_with("pre-tool-use: "))
        .expect("the hook ran");
    let answer: serde_json::Value =
        serde_json::from_str(&line["pre-tool-use: ".len()..]).expect("JSON");
    let out_spec = &answer["hookSpecificOutput"];
    assert_eq!(out_spec["hookEventName"], json!("PreToolUse"));
    assert_eq!(out_spec["permissionDecision"], json!("deny"));
    let why = out_spec["permissionDecisionReason"].as_str().unwrap_or("");
    assert!(
        why.contains("The build check failed: `sh build.sh`"),
        "{why}"
    );
    assert!(why.contains("COPY failed"), "{why}");

    let origin = w.dir.path().join("demo-origin.git");
    let remote = git_out(&origin, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(remote, "refs/heads/main", "nothing left for the remote");

    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("failed"), "{job}");
    assert!(
        job["result_summary"]
            .as_str()
            .unwrap_or("")
            .contains("The build check failed"),
        "{job}"
    );
    let mark = w.checkmark("demo", "demo-driver");
    assert_eq!(mark["build_status"], json!("fail"), "{mark}");
}

/// An agent command that ran none of Capsid's hooks (Claude Code with the hooks switched off,
/// or a command that does not load `--settings`): whatever it committed, with the driver's own
/// tests green, the job fails saying no hook reported.
fn a_session_none_of_the_hooks_reported_from_fails(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post("demo", "Widgets", "Two sizes. MODE=nohooks");
    let out = w.drive_once("demo", &key, &root, &[]);
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    assert!(w.fake_said("demo").contains("no hooks run"), "the mode ran");
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("failed"), "{job}");
    let summary = job["result_summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("Capsid's gates cannot vouch for this run")
            && summary.contains("none of Capsid's hooks reported during the session"),
        "{job}"
    );
}

/// An agent that points its worktree's `core.hooksPath` elsewhere (so git's pre-push gate
/// would not run), then works and runs its hooks as usual: the job fails naming
/// `core.hooksPath`.
fn a_session_that_rewires_the_worktrees_hooks_fails(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post("demo", "Widgets", "Two sizes. MODE=rewire");
    let out = w.drive_once("demo", &key, &root, &[]);
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    let fake = w.fake_said("demo");
    assert!(
        fake.contains("rewired core.hooksPath"),
        "the mode ran: {fake}"
    );
    assert!(fake.contains("stop: "), "its hooks ran: {fake}");
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("failed"), "{job}");
    let summary = job["result_summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("Capsid's gates cannot vouch for this run")
            && summary.contains("core.hooksPath is /tmp/x instead of"),
        "{job}"
    );
}

/// `--tmux` where tmux cannot start its server says what tmux said (issue 53, item 5), and
/// the job fails with it rather than waiting out its lease.
fn a_tmux_that_cannot_start_says_why(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post("demo", "In tmux", "Work. MODE=pass");
    // A TMUX_TMPDIR that is a file: tmux cannot make its socket folder there.
    let not_a_folder = w.dir.path().join("tmux-tmpdir-is-a-file");
    std::fs::write(&not_a_folder, "x").expect("a file");
    let out = w
        .drive("demo", &key, &root, &["--tmux"])
        .env("TMUX_TMPDIR", &not_a_folder)
        .env_remove("TMUX")
        .output()
        .expect("run capsid drive");
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tmux could not start session") && err.contains("tmux said:"),
        "{}",
        said(&out)
    );
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("failed"), "{job}");
}

fn a_box_that_cannot_work_stops_before_any_claim(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post("demo", "Boxed", "Boxed work. MODE=pass");
    let boxes = w.dir.path().join("boxes").display().to_string();
    // No origin for the gateway to forward to.
    git_out(&root, &["remote", "remove", "origin"]);
    let out = w.drive_once("demo", &key, &root, &["--box", "--box-dir", &boxes]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no `origin` remote"),
        "{}",
        said(&out)
    );
    // The box is the default: where bubblewrap cannot run, the driver refuses unless told
    // --unboxed (here a PATH with git and a shell but no bwrap).
    git_out(
        &root,
        &[
            "remote",
            "add",
            "origin",
            "https://example.invalid/demo.git",
        ],
    );
    let bin = w.dir.path().join("no-bwrap");
    std::fs::create_dir_all(&bin).expect("a PATH folder");
    for tool in ["git", "sh", "env", "cat", "mkdir", "rm"] {
        if let Some(found) = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| std::path::Path::new(d).join(tool))
            .find(|p| p.exists())
        {
            let _ = std::os::unix::fs::symlink(found, bin.join(tool));
        }
    }
    let out = w
        .drive("demo", &key, &root, &["--box-dir", &boxes, "--box"])
        .env("PATH", &bin)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("box cannot start here") && err.contains("--unboxed"),
        "{}",
        said(&out)
    );
    let out = w
        .command()
        .args(["drive", "--once", "--namespace", "demo", "--url", &w.url])
        .arg("--root-dir")
        .arg(&root)
        .args(["--test-command", "sh test.sh", "--box-dir", &boxes])
        .args(["--agent-command", "sh -c true"])
        .env("CAPSID_KEY", &key)
        .env("PATH", &bin)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "the default is the box: {}",
        said(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--unboxed"),
        "{}",
        said(&out)
    );
    assert_eq!(
        w.job("demo", &id)["status"],
        json!("queued"),
        "nothing was claimed"
    );
}

fn an_unresolvable_credential_stops_before_any_claim(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post("demo", "Needs the forge", "Open a PR. MODE=pass");
    let mut drive = w.drive(
        "demo",
        &key,
        &root,
        &["--credential-ref", "env:CAPSID_TEST_NO_SUCH_TOKEN"],
    );
    drive.env_remove("CAPSID_TEST_NO_SUCH_TOKEN");
    let out = drive.output().expect("run capsid drive");
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("env:CAPSID_TEST_NO_SUCH_TOKEN did not resolve"),
        "{err}"
    );

    let out = w.drive_once(
        "demo",
        &key,
        &root,
        &["--credential-ref", "ghp_0123456789abcdef"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a reference"),
        "{}",
        said(&out)
    );

    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("queued"), "{job}");
    assert_eq!(job["claimed_by"], json!(null));
    assert_eq!(w.fake_said("demo"), "", "no agent ran");
    let log = w.server_log();
    let driver_jobs_calls = log
        .lines()
        .filter(|l| l.contains("agent:demo-driver") && l.contains("tool=\"jobs\""))
        .count();
    assert_eq!(driver_jobs_calls, 0, "the driver never called jobs: {log}");
}

/// Issue 53, item 14: the tour's session key left in `CAPSID_KEY` does not drive; the driver
/// names whose key it is, its kind, and how to drive with the key file instead.
fn a_key_that_is_not_a_drivers_stops_before_any_claim(w: &World) {
    let _driver = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let id = w.post("demo", "Widgets", "Make widgets. MODE=pass");
    let minted = w.cli_json(&[
        "agents",
        "mint",
        "--name",
        "me",
        "--kind",
        "session",
        "--namespaces",
        "*",
        "--grants",
        "read,write",
        "--json",
    ]);
    let session = minted["key"].as_str().expect("a key");
    let out = w.drive_once("demo", session, &root, &[]);
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the key in CAPSID_KEY is agent:me's, a session key")
            && err.contains("capsid agents mint --kind driver")
            && err.contains("unset CAPSID_KEY"),
        "{}",
        said(&out)
    );
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("queued"), "{job}");
    assert_eq!(job["claimed_by"], json!(null));
    assert_eq!(w.fake_said("demo"), "", "no agent ran");
}

fn two_namespaces_at_once_share_no_worktree_or_checkmark(w: &World) {
    let alpha_key = w.namespace_with_driver("alpha");
    let beta_key = w.namespace_with_driver("beta");
    let alpha_root = w.project("alpha");
    let beta_root = w.project("beta");
    let a = w.post("alpha", "Alpha widgets", "Alpha work. MODE=pass");
    let b = w.post("beta", "Beta widgets", "Beta work. MODE=pass");
    let alpha = w
        .drive("alpha", &alpha_key, &alpha_root, &[])
        .spawn()
        .expect("drive alpha");
    let beta = w
        .drive("beta", &beta_key, &beta_root, &[])
        .spawn()
        .expect("drive beta");
    let alpha = alpha.wait_with_output().expect("alpha ends");
    let beta = beta.wait_with_output().expect("beta ends");
    assert_eq!(alpha.status.code(), Some(0), "{}", said(&alpha));
    assert_eq!(beta.status.code(), Some(0), "{}", said(&beta));

    for (ns, root, id, other_id) in [("alpha", &alpha_root, &a, &b), ("beta", &beta_root, &b, &a)] {
        assert_eq!(w.job(ns, id)["status"], json!("done"));
        let fake = w.fake_said(ns);
        let wt = root.join(".capsid/worktrees").join(id);
        assert!(
            fake.contains(&format!("job={id} ns={ns} cwd={}", wt.display())),
            "{fake}"
        );
        assert!(
            !fake.contains(other_id.as_str()),
            "{ns} never saw the other job: {fake}"
        );
        let listed = w.tool(
            &w.human,
            "checkmarks",
            json!({"action": "list", "namespace": ns}),
        );
        let agents: Vec<&str> = listed["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .filter_map(|c| c["agent"].as_str())
            .collect();
        assert_eq!(agents, vec![format!("{ns}-driver").as_str()], "{listed}");
        assert_eq!(listed["agents"][0]["job_id"], json!(id));
        let log = git_out(root, &["log", "--all", "--format=%s"]);
        assert!(log.contains("Widgets in two sizes"), "{log}");
    }
    let alpha_branches = git_out(&alpha_root, &["branch", "--format=%(refname:short)"]);
    assert!(!alpha_branches.contains(b.as_str()), "{alpha_branches}");
}
