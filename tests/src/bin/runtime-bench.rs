//! What Capsid adds to a job of each runtime (issue 50): the same scripted turns (write a file,
//! commit, run the project's quick tests, push, end) run three ways, alternating, for Claude
//! Code and for Codex:
//!
//! - **bare**: the CLI alone, in a clone of the project, its model the scripted fake;
//! - **driven**: `capsid drive --once --unboxed --runtime <r>` (the job posted and claimed, the
//!   hooks, the model door and its ledger, the driver's own test gate and the close);
//! - **boxed**: the same with `--box` (the job's clone, bubblewrap, the doors, the gateway).
//!
//! Each arm is measured by GNU time around the whole process tree: wall time, CPU (user +
//! system) and the peak resident memory of its largest process.
//!
//! `runtime-bench --capsid target/release/capsid [--jobs 5]`. Needs git, bubblewrap and the
//! pinned Claude Code and Codex (`scripts/test.sh` installs them), and `/usr/bin/time`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use capsid_tests::bench::{git, project};
use capsid_tests::fake_claude::{FakeClaude, bash, claude_bin, claude_env, text, tool};
use capsid_tests::fake_codex::{CODEX_MODEL, codex_bin, codex_env};
use capsid_tests::server::{ServerOptions, TestServer};
use clap::Parser;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// The capsid binary to drive with.
    #[arg(long, default_value = "target/release/capsid")]
    capsid: PathBuf,
    /// Jobs each way, per runtime.
    #[arg(long, default_value_t = 5)]
    jobs: usize,
}

/// One process tree's cost, as GNU time reports it.
#[derive(Clone, Copy, Debug, Default)]
struct Cost {
    wall_ms: f64,
    cpu_ms: f64,
    peak_kib: f64,
}

/// Runs `cmd` under `/usr/bin/time` with `input` on its standard input; its cost.
fn timed(cmd: &mut Command, input: &str, scratch: &Path) -> Result<Cost> {
    let report = scratch.join("time.out");
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
    let mut timed = Command::new("/usr/bin/time");
    timed
        .arg("-f")
        .arg("%e %U %S %M")
        .arg("-o")
        .arg(&report)
        .arg(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    let mut child = timed.spawn().context("starting /usr/bin/time")?;
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().context("stdin")?;
        stdin.write_all(input.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "{:?} failed: {}\n{}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let text = std::fs::read_to_string(&report)?;
    let f: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    if f.len() != 4 {
        bail!("GNU time said {text:?}");
    }
    Ok(Cost {
        wall_ms: f[0] * 1000.0,
        cpu_ms: (f[1] + f[2]) * 1000.0,
        peak_kib: f[3],
    })
}

fn median(v: &[Cost], f: impl Fn(&Cost) -> f64) -> f64 {
    let mut xs: Vec<f64> = v.iter().map(f).collect();
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let capsid = std::fs::canonicalize(&args.capsid)
        .with_context(|| format!("the capsid binary {}", args.capsid.display()))?;
    let claude = claude_bin().context("the pinned Claude Code (scripts/test.sh installs it)")?;
    let codex = codex_bin().context("the pinned Codex (scripts/test.sh installs it)")?;
    let dir = tempfile::tempdir()?;
    let fake = FakeClaude::start();
    let store = capsid_store_sqlite::SqliteStore::open(&format!(
        "sqlite://{}",
        dir.path().join("bench.db").display()
    ))
    .await?;
    store.migrate().await?;
    let server = TestServer::start(Arc::new(store), ServerOptions::default()).await;
    server.namespace("bench").await;
    let driver = server
        .mint(
            "bench-driver",
            "driver",
            json!({"namespaces": ["bench"], "grants": ["read", "write"]}),
        )
        .await;
    let poster = server.client(&driver).await;
    let root = project(dir.path(), "bench")?;
    let origin = dir.path().join("bench-origin.git");
    // Codex run bare: its own configuration, the fake as its provider.
    let bare_codex_home = dir.path().join("bare-codex-home");
    std::fs::create_dir_all(&bare_codex_home)?;
    std::fs::write(
        bare_codex_home.join("config.toml"),
        format!(
            "model_provider = \"fake\"\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"{}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
            fake.url
        ),
    )?;
    println!("| runtime | arm | wall ms | CPU ms | peak RSS MiB |");
    println!("|---|---|---|---|---|");
    for runtime in ["claude-code", "codex"] {
        let env = match runtime {
            "codex" => codex_env(&fake, &codex, dir.path()),
            _ => claude_env(&fake, &claude, dir.path()),
        };
        let (mut bare, mut driven, mut boxed) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..args.jobs * 3 {
            let marker = format!("SCRIPT={runtime}-{i}");
            let file = format!("{runtime}-{i}.txt");
            fake.script(
                &marker,
                vec![
                    vec![tool(
                        "Write",
                        json!({"file_path": format!("{{{{cwd}}}}/{file}"), "content": "x\n"}),
                    )],
                    vec![bash(&format!(
                        "git add {file} && git commit -qm {file} && sh test.sh && git push -q origin HEAD"
                    ))],
                    vec![text("Done.")],
                ],
            );
            let arm = i % 3;
            let cost = if arm == 0 {
                let work = dir.path().join(format!("bare-{runtime}-{i}"));
                git(
                    dir.path(),
                    &[
                        "clone",
                        "-q",
                        &origin.display().to_string(),
                        &work.display().to_string(),
                    ],
                )?;
                git(&work, &["checkout", "-q", "-b", &format!("bare/{i}")])?;
                let mut c = match runtime {
                    "codex" => {
                        let mut c = Command::new(&codex);
                        c.args([
                            "exec",
                            "--json",
                            "--skip-git-repo-check",
                            "--dangerously-bypass-approvals-and-sandbox",
                            "-m",
                            CODEX_MODEL,
                            "-",
                        ])
                        .env("CODEX_HOME", &bare_codex_home);
                        c
                    }
                    _ => {
                        let mut c = Command::new(&claude);
                        c.args([
                            "-p",
                            "--output-format",
                            "stream-json",
                            "--verbose",
                            "--permission-mode",
                            "bypassPermissions",
                        ])
                        .env("IS_SANDBOX", "1");
                        c
                    }
                };
                c.current_dir(&work)
                    .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .env("GIT_AUTHOR_NAME", "Bench")
                    .env("GIT_AUTHOR_EMAIL", "bench@capsid.invalid")
                    .env("GIT_COMMITTER_NAME", "Bench")
                    .env("GIT_COMMITTER_EMAIL", "bench@capsid.invalid");
                timed(&mut c, &marker, dir.path())?
            } else {
                let posted = poster
                    .ok(
                        "jobs",
                        json!({"action": "post", "namespace": "bench", "title": format!("Bench {runtime} {i}"), "body": marker}),
                    )
                    .await;
                if posted["ok"] != true {
                    bail!("posting a job: {posted}");
                }
                let mut c = Command::new(&capsid);
                c.args([
                    "drive",
                    "--once",
                    "--quiet",
                    "--namespace",
                    "bench",
                    "--url",
                    &server.url,
                ])
                .args(["--runtime", runtime])
                .arg("--root-dir")
                .arg(&root)
                .args(["--test-command", "sh test.sh"])
                .env("CAPSID_KEY", &driver)
                .env_remove("CAPSID_AGENT_COMMAND")
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .env("GIT_AUTHOR_NAME", "Bench")
                .env("GIT_AUTHOR_EMAIL", "bench@capsid.invalid")
                .env("GIT_COMMITTER_NAME", "Bench")
                .env("GIT_COMMITTER_EMAIL", "bench@capsid.invalid");
                if arm == 2 {
                    c.arg("--box")
                        .arg("--box-dir")
                        .arg(dir.path().join("boxes"));
                } else {
                    c.arg("--unboxed");
                }
                timed(&mut c, "", dir.path())?
            };
            match arm {
                0 => bare.push(cost),
                1 => driven.push(cost),
                _ => boxed.push(cost),
            }
        }
        let wall = |v: &[Cost]| median(v, |c| c.wall_ms);
        for (name, v) in [("bare", &bare), ("driven", &driven), ("boxed", &boxed)] {
            println!(
                "| {runtime} | {name} | {:.0} | {:.0} | {:.1} |",
                wall(v),
                median(v, |c| c.cpu_ms),
                median(v, |c| c.peak_kib) / 1024.0
            );
        }
        println!(
            "| {runtime} | driven / bare, boxed / bare (wall) | {:.2}x, {:.2}x | | |",
            wall(&driven) / wall(&bare),
            wall(&boxed) / wall(&bare)
        );
    }
    server.stop().await;
    Ok(())
}
