//! The box with the real bubblewrap: what is absent, what is writable, what the environment
//! is, and that no process outlives the box.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Fixture, marker, processes_with, require_bwrap, within};
use capsid_box::sandbox::{BoxStdio, Unavailable, check, probe_path};
use capsid_core::drive::box_plan::{BoxRefusal, Exposure};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

async fn run(
    bwrap: &capsid_box::sandbox::Bwrap,
    fixture: &Fixture,
    script: &str,
) -> (i32, String, String) {
    let spec = fixture.agent().spec().expect("the agent's spec");
    let checked = check(spec, &fixture.forbidden()).expect("the agent's spec is allowed");
    let mut child = bwrap
        .spawn(&checked, "sh", ["-c", script], BoxStdio::piped_output())
        .expect("the box starts");
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = child.stdout().expect("piped");
    let mut stderr = child.stderr().expect("piped");
    let (a, b) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.expect("stdout");
    b.expect("stderr");
    let status = child.wait().await.expect("the box ends");
    (status.code().unwrap_or(-1), out, err)
}

#[tokio::test]
async fn the_secret_the_data_folder_and_other_clones_are_not_in_the_box() {
    let Some(bwrap) =
        require_bwrap("the_secret_the_data_folder_and_other_clones_are_not_in_the_box").await
    else {
        return;
    };
    let fixture = Fixture::new();
    let other_clone = fixture
        .clone
        .parent()
        .and_then(|p| p.parent())
        .expect("runs")
        .join("job-2/clone");
    std::fs::create_dir_all(&other_clone).expect("another job's clone");
    std::fs::write(other_clone.join("README"), "theirs").expect("a file in it");
    let script = format!(
        "cat {secret}; echo cat=$?; ls {data}; echo ls=$?; cat {other}/README; echo other=$?
         ls /etc/ssl/private 2>/dev/null && echo SSL-PRIVATE; test -e /etc/gitconfig && echo GITCONFIG
         echo end",
        secret = fixture.secret.display(),
        data = fixture.data.display(),
        other = other_clone.display(),
    );
    let (code, out, err) = run(&bwrap, &fixture, &script).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("cat=1") && out.contains("ls=2") && out.contains("other=1"),
        "{out}\n{err}"
    );
    assert!(
        err.contains(&format!(
            "cat: {}: No such file or directory",
            fixture.secret.display()
        )),
        "{err}"
    );
    assert!(
        !out.contains("the signing key") && !out.contains("theirs"),
        "{out}"
    );
    assert!(
        !out.contains("SSL-PRIVATE") && !out.contains("GITCONFIG"),
        "{out}"
    );
}

#[tokio::test]
async fn the_clone_home_and_tmpdir_are_writable_usr_is_not_and_git_works() {
    let Some(bwrap) =
        require_bwrap("the_clone_home_and_tmpdir_are_writable_usr_is_not_and_git_works").await
    else {
        return;
    };
    let fixture = Fixture::new();
    let script = "set -e
        echo written-inside > ./from-the-box
        touch \"$HOME/h\" \"$TMPDIR/t\" /tmp/t
        if touch /usr/x 2>/dev/null; then echo USR-WRITABLE; fi
        if touch /etc/x 2>/dev/null; then echo ETC-WRITABLE; fi
        if touch /x 2>/dev/null; then echo ROOT-WRITABLE; fi
        echo user=$(id -un) uid=$(id -u) home=$HOME
        test -r /etc/ssl/certs/ca-certificates.crt && echo certs=yes
        git init -q . && git add from-the-box
        git -c user.name=agent -c user.email=agent@box commit -q -m 'from the box'
        echo committed";
    let (code, out, err) = run(&bwrap, &fixture, script).await;
    assert_eq!(code, 0, "{out}\n{err}");
    for writable in ["USR-WRITABLE", "ETC-WRITABLE", "ROOT-WRITABLE"] {
        assert!(!out.contains(writable), "{out}");
    }
    assert!(
        out.contains(&format!(
            "user=agent uid=1000 home={}",
            fixture.home.display()
        )),
        "{out}"
    );
    assert!(
        out.contains("certs=yes") && out.contains("committed"),
        "{out}\n{err}"
    );
    let written =
        std::fs::read_to_string(fixture.clone.join("from-the-box")).expect("visible outside");
    assert_eq!(written, "written-inside\n");
    assert!(fixture.home.join("h").exists() && fixture.tmp.join("t").exists());
    let log = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "log", "--format=%s"])
        .current_dir(&fixture.clone)
        .output()
        .expect("git log outside");
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "from the box");
}

#[tokio::test]
async fn the_environment_is_exactly_the_specs() {
    let Some(bwrap) = require_bwrap("the_environment_is_exactly_the_specs").await else {
        return;
    };
    let fixture = Fixture::new();
    let mut agent = fixture.agent();
    agent
        .env
        .push(("CAPSID_RUN_TOKEN".into(), "not-on-any-argv".into()));
    agent.proxy_port = Some(3128);
    let spec = agent.spec().expect("spec");
    // Exactly the spec's variables, and the one bubblewrap adds: PWD, the working directory.
    let mut want: Vec<String> = spec
        .environment()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    want.push(format!("PWD={}", spec.working_directory().display()));
    want.sort();
    let checked = check(spec, &fixture.forbidden()).expect("allowed");
    assert!(
        !checked
            .bwrap_args()
            .iter()
            .any(|a| a.to_string_lossy().contains("not-on-any-argv")),
        "a value on bwrap's argv"
    );
    let mut child = bwrap
        .spawn(
            &checked,
            "/usr/bin/env",
            [] as [&str; 0],
            BoxStdio::piped_output(),
        )
        .expect("starts");
    let mut out = String::new();
    child
        .stdout()
        .expect("piped")
        .read_to_string(&mut out)
        .await
        .expect("env's output");
    assert!(child.wait().await.expect("ends").success());
    let mut got: Vec<String> = out.lines().map(str::to_owned).collect();
    got.sort();
    assert_eq!(got, want);
}

#[tokio::test]
async fn a_setsid_child_is_gone_once_the_first_process_exits() {
    let Some(bwrap) = require_bwrap("a_setsid_child_is_gone_once_the_first_process_exits").await
    else {
        return;
    };
    let fixture = Fixture::new();
    let mark = marker();
    // The first process starts a double-forked, setsid child, waits until it runs, says so,
    // and exits when its standard input closes.
    let script = format!(
        "setsid sh -c 'touch \"$TMPDIR/up\"; sleep {mark}; : {mark}' </dev/null >/dev/null 2>&1 &
         while [ ! -e \"$TMPDIR/up\" ]; do :; done
         echo ready; read line; echo bye"
    );
    let spec = fixture.agent().spec().expect("spec");
    let checked = check(spec, &fixture.forbidden()).expect("allowed");
    let mut child = bwrap
        .spawn(
            &checked,
            "sh",
            ["-c", &script],
            BoxStdio {
                stdin: Stdio::piped(),
                stdout: Stdio::piped(),
                stderr: Stdio::inherit(),
            },
        )
        .expect("starts");
    let mut stdin = child.stdin().expect("piped");
    let mut lines = BufReader::new(child.stdout().expect("piped")).lines();
    assert_eq!(
        lines.next_line().await.expect("a line").as_deref(),
        Some("ready")
    );
    assert!(
        within(Duration::from_secs(5), || !processes_with(&mark).is_empty()).await,
        "the setsid child shows in the host's process table"
    );
    stdin.write_all(b"go\n").await.expect("write");
    drop(stdin);
    assert!(child.wait().await.expect("ends").success());
    assert!(
        within(Duration::from_secs(5), || processes_with(&mark).is_empty()).await,
        "still running after the box's first process exited: {:?}",
        processes_with(&mark)
    );
}

#[tokio::test]
async fn kill_ends_a_busy_box_and_every_process_in_it_within_5_seconds() {
    let Some(bwrap) =
        require_bwrap("kill_ends_a_busy_box_and_every_process_in_it_within_5_seconds").await
    else {
        return;
    };
    let fixture = Fixture::new();
    let mark = marker();
    let script = format!(
        "setsid sh -c 'touch \"$TMPDIR/up\"; sleep {mark}; : {mark}' </dev/null >/dev/null 2>&1 &
         sh -c 'while :; do :; done; : {mark}' &
         trap '' TERM INT HUP
         while [ ! -e \"$TMPDIR/up\" ]; do :; done
         echo ready; while :; do :; done; : {mark}"
    );
    let spec = fixture.agent().spec().expect("spec");
    let checked = check(spec, &fixture.forbidden()).expect("allowed");
    let mut child = bwrap
        .spawn(&checked, "sh", ["-c", &script], BoxStdio::piped_output())
        .expect("starts");
    let mut lines = BufReader::new(child.stdout().expect("piped")).lines();
    assert_eq!(
        lines.next_line().await.expect("a line").as_deref(),
        Some("ready")
    );
    assert!(
        within(Duration::from_secs(5), || processes_with(&mark).len() >= 3).await,
        "three marked processes run: {:?}",
        processes_with(&mark)
    );
    let killed = Instant::now();
    let status = child.kill().await.expect("killed");
    assert!(!status.success());
    assert!(
        within(Duration::from_secs(5), || processes_with(&mark).is_empty()).await,
        "still running 5 s after kill: {:?}",
        processes_with(&mark)
    );
    eprintln!(
        "the box and its processes were gone {:?} after kill",
        killed.elapsed()
    );
}

#[tokio::test]
async fn dropping_the_box_kills_it() {
    let Some(bwrap) = require_bwrap("dropping_the_box_kills_it").await else {
        return;
    };
    let fixture = Fixture::new();
    let mark = marker();
    let script = format!(
        "setsid sh -c 'sleep {mark}; : {mark}' </dev/null >/dev/null 2>&1 & sleep {mark}; : {mark}"
    );
    let checked =
        check(fixture.agent().spec().expect("spec"), &fixture.forbidden()).expect("allowed");
    let child = bwrap
        .spawn(&checked, "sh", ["-c", &script], BoxStdio::null())
        .expect("starts");
    assert!(within(Duration::from_secs(5), || processes_with(&mark).len() >= 3).await);
    drop(child);
    assert!(
        within(Duration::from_secs(5), || processes_with(&mark).is_empty()).await,
        "still running after drop: {:?}",
        processes_with(&mark)
    );
}

#[tokio::test]
async fn a_spec_that_exposes_a_forbidden_path_is_refused_before_start() {
    let fixture = Fixture::new();
    let mut agent = fixture.agent();
    agent.tools.push((
        fixture.data.parent().expect("root").to_path_buf(),
        "/opt/all".into(),
    ));
    let refusal =
        check(agent.spec().expect("spec"), &fixture.forbidden()).expect_err("exposes data");
    match &refusal {
        BoxRefusal::Exposes { forbidden, how, .. } => {
            assert_eq!(forbidden, &fixture.data);
            assert_eq!(*how, Exposure::Ancestor);
        }
        other => panic!("{other:?}"),
    }
    // A symlink to the data folder is the data folder.
    let link = fixture.dir.path().join("innocent");
    std::os::unix::fs::symlink(&fixture.data, &link).expect("a symlink");
    let spec = capsid_core::drive::box_plan::BoxSpec::new().read_only(&link, "/opt/x");
    let refusal = check(spec, &fixture.forbidden()).expect_err("a symlink into the data folder");
    assert!(
        refusal
            .to_string()
            .contains(&fixture.data.display().to_string()),
        "{refusal}"
    );
}

#[tokio::test]
async fn probe_finds_bwrap_and_a_trivial_box_starts() {
    let Some(bwrap) = require_bwrap("probe_finds_bwrap_and_a_trivial_box_starts").await else {
        return;
    };
    assert!(
        bwrap.version().starts_with("bubblewrap "),
        "{}",
        bwrap.version()
    );
    let fixture = Fixture::new();
    let checked =
        check(fixture.agent().spec().expect("spec"), &fixture.forbidden()).expect("allowed");
    let mut times = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let mut child = bwrap
            .spawn(&checked, "true", [] as [&str; 0], BoxStdio::null())
            .expect("starts");
        assert!(child.wait().await.expect("ends").success());
        times.push(started.elapsed());
    }
    times.sort();
    let argv: Vec<String> = checked
        .bwrap_args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    eprintln!("the agent box's argv: bwrap {}", argv.join(" "));
    eprintln!(
        "probe's trivial box: {:?}; the agent box running `true`: min {:?}, median {:?}, max {:?}",
        bwrap.started_in(),
        times[0],
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

#[tokio::test]
async fn a_host_without_a_working_bwrap_is_told_what_is_missing() {
    let empty = tempfile::tempdir().expect("a folder without bwrap");
    let refusal = probe_path(empty.path().as_os_str())
        .await
        .expect_err("no bwrap there");
    assert!(matches!(refusal, Unavailable::NotInstalled), "{refusal:?}");
    assert!(
        refusal.to_string().contains("bubblewrap is not installed"),
        "{refusal}"
    );
    // A bwrap that cannot make namespaces, as on a kernel with user namespaces off.
    let fake = empty.path().join("bwrap");
    // Written by a child process: a write descriptor open in this one could be inherited by
    // another test's fork and make the exec fail with "Text file busy".
    let script = "#!/bin/sh\n[ \"$1\" = --version ] && { echo bubblewrap 0.8.0; exit 0; }\necho 'bwrap: No permissions to create new namespace' >&2; exit 1\n";
    let wrote = std::process::Command::new("sh")
        .args([
            "-c",
            "printf '%s' \"$1\" > \"$2\" && chmod 755 \"$2\"",
            "sh",
            script,
        ])
        .arg(&fake)
        .status()
        .expect("sh runs");
    assert!(wrote.success(), "a fake bwrap");
    let refusal = probe_path(empty.path().as_os_str())
        .await
        .expect_err("it cannot start a box");
    assert!(
        matches!(refusal, Unavailable::CannotStart { .. }),
        "{refusal:?}"
    );
    assert!(
        refusal
            .to_string()
            .contains("No permissions to create new namespace"),
        "{refusal}"
    );
}

/// The pinned Claude Code CLI (`CAPSID_CLAUDE_BIN`, else `scripts/test.sh`'s `.tools`), or
/// `None` after saying the case did not run; in CI, where it is installed, a failure.
fn require_claude(case: &str) -> Option<std::path::PathBuf> {
    let named = std::env::var_os("CAPSID_CLAUDE_BIN").map(std::path::PathBuf::from);
    let installed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../.tools/claude-code/node_modules/.bin/claude");
    match named.into_iter().chain([installed]).find(|p| p.exists()) {
        Some(p) => Some(std::fs::canonicalize(p).expect("the CLI's real path")),
        None if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{case}: the real Claude Code CLI is not installed (.tools/claude-code)")
        }
        None => {
            eprintln!(
                "NOT RUN {case}: the real Claude Code CLI is not installed (run scripts/test.sh, or set CAPSID_CLAUDE_BIN)"
            );
            None
        }
    }
}

#[tokio::test]
async fn claude_code_starts_in_the_agent_box() {
    let case = "claude_code_starts_in_the_agent_box";
    let Some(bwrap) = require_bwrap(case).await else {
        return;
    };
    let Some(claude) = require_claude(case) else {
        return;
    };
    // The package folder (`.../@anthropic-ai/claude-code`, holding `bin/claude.exe`), read-only
    // at the same path.
    let install = claude
        .parent()
        .and_then(|bin| bin.parent())
        .expect("its package folder");
    let fixture = Fixture::new();
    let mut agent = fixture.agent();
    agent
        .tools
        .push((install.to_path_buf(), install.to_path_buf()));
    let checked = check(agent.spec().expect("spec"), &fixture.forbidden()).expect("allowed");
    let mut child = bwrap
        .spawn(&checked, &claude, ["--version"], BoxStdio::piped_output())
        .expect("starts");
    let (mut out, mut err) = (String::new(), String::new());
    let (mut stdout, mut stderr) = (
        child.stdout().expect("piped"),
        child.stderr().expect("piped"),
    );
    let (a, b) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.and(b).expect("its output");
    assert!(child.wait().await.expect("ends").success(), "{out}\n{err}");
    assert!(out.contains("(Claude Code)"), "{out}\n{err}");
}
