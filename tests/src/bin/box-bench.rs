//! What the box costs a driven job (issue 48): one run, alternating.
//!
//! - a job's wall time, `capsid drive --once` boxed and unboxed, with the real Claude Code and
//!   the same scripted model (write a file, commit, push, run the project's quick tests, end);
//! - a push through the git gateway beside the same push straight to a local bare repository;
//! - the job's clone set up from the mirror (`git clone --no-local` and checkout) of a repository
//!   (default: this one).
//!
//! `box-bench --capsid target/release/capsid [--jobs 5] [--pushes 30] [--repo .]`. Needs
//! bubblewrap, git and the pinned Claude Code (`scripts/test.sh` installs them).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capsid_box::gateway::{Gateway, GatewayConfig, NoApprovals, Secret, Upstream};
use capsid_core::drive::push_policy::PushTerms;
use capsid_tests::bench::{git, project};
use capsid_tests::fake_claude::{FakeClaude, bash, claude_bin, claude_env, text, tool};
use capsid_tests::server::{ServerOptions, TestServer};
use clap::Parser;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// The capsid binary to drive with.
    #[arg(long, default_value = "target/release/capsid")]
    capsid: PathBuf,
    /// Jobs driven each way.
    #[arg(long, default_value_t = 5)]
    jobs: usize,
    /// Pushes each way.
    #[arg(long, default_value_t = 30)]
    pushes: usize,
    /// The repository whose clone is timed.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let capsid = std::fs::canonicalize(&args.capsid)
        .with_context(|| format!("the capsid binary {}", args.capsid.display()))?;
    let claude = claude_bin().context("the pinned Claude Code (scripts/test.sh installs it)")?;
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
    let env = claude_env(&fake, &claude, dir.path());
    let root = project(dir.path(), "bench")?;

    // Job wall time, boxed and unboxed, alternating.
    let (mut boxed, mut unboxed) = (Vec::new(), Vec::new());
    for i in 0..args.jobs * 2 {
        let is_boxed = i % 2 == 1;
        let marker = format!("SCRIPT=bench{i}");
        fake.script(
            &marker,
            vec![
                vec![tool(
                    "Write",
                    json!({"file_path": format!("{{{{cwd}}}}/f{i}.txt"), "content": "x\n"}),
                )],
                vec![bash(&format!(
                    "git add f{i}.txt && git commit -qm f{i} && git push -q origin HEAD && sh test.sh"
                ))],
                vec![text("Done.")],
            ],
        );
        let posted = poster
            .ok(
                "jobs",
                json!({"action": "post", "namespace": "bench", "title": format!("Bench {i}"), "body": marker}),
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
        .arg("--root-dir")
        .arg(&root)
        .args(["--test-command", "sh test.sh"])
        .env("CAPSID_KEY", &driver)
        .env_remove("CAPSID_AGENT_COMMAND")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if is_boxed {
            c.arg("--box")
                .arg("--box-dir")
                .arg(dir.path().join("boxes"));
        } else {
            c.arg("--unboxed");
        }
        let t = Instant::now();
        let out = c.output()?;
        let took = t.elapsed();
        if !out.status.success() {
            bail!(
                "drive ({}) failed: {}",
                if is_boxed { "boxed" } else { "unboxed" },
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if is_boxed {
            boxed.push(took);
        } else {
            unboxed.push(took);
        }
    }
    let (b, u) = (median(&mut boxed), median(&mut unboxed));
    println!(
        "job wall time (median of {}): unboxed {:.0} ms, boxed {:.0} ms, ratio {:.3}x (spread boxed {:.0}-{:.0}, unboxed {:.0}-{:.0})",
        args.jobs,
        ms(u),
        ms(b),
        ms(b) / ms(u),
        ms(boxed[0]),
        ms(boxed[boxed.len() - 1]),
        ms(unboxed[0]),
        ms(unboxed[unboxed.len() - 1])
    );

    // A push through the gateway beside a push to a bare repository.
    let gdir = dir.path().join("gateway");
    std::fs::create_dir_all(&gdir)?;
    let origin = gdir.join("origin.git");
    let direct = gdir.join("direct.git");
    for bare in [&origin, &direct] {
        git(
            &gdir,
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                &bare.display().to_string(),
            ],
        )?;
    }
    git(
        &root,
        &["push", "-q", &origin.display().to_string(), "main"],
    )?;
    git(
        &root,
        &["push", "-q", &direct.display().to_string(), "main"],
    )?;
    let mirror = gdir.join("mirror.git");
    git(
        &gdir,
        &[
            "clone",
            "-q",
            "--bare",
            &origin.display().to_string(),
            &mirror.display().to_string(),
        ],
    )?;
    let terms = PushTerms::new("bench", &Vec::<String>::new(), &["main"])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let gateway = Gateway::new(
        GatewayConfig::new(
            &mirror,
            Upstream::plain(origin.display().to_string()),
            Secret::new("tok"),
            terms,
        ),
        Arc::new(NoApprovals),
        None,
    )?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let serving = gateway.clone();
    tokio::spawn(async move { serving.serve_tcp(listener).await });
    let work = gdir.join("work");
    git(
        &gdir,
        &[
            "clone",
            "-q",
            &direct.display().to_string(),
            &work.display().to_string(),
        ],
    )?;
    git(&work, &["config", "user.name", "Bench"])?;
    git(&work, &["config", "user.email", "bench@capsid.invalid"])?;
    git(&work, &["checkout", "-q", "-b", "capsid/bench"])?;
    let via_gateway = format!("http://capsid:tok@127.0.0.1:{port}/mirror.git");
    let (mut gw, mut dr) = (Vec::new(), Vec::new());
    for i in 0..args.pushes * 2 {
        std::fs::write(work.join("p.txt"), format!("{i}\n"))?;
        git(&work, &["commit", "-qam", &format!("p{i}")]).or_else(|_| {
            git(&work, &["add", "p.txt"])?;
            git(&work, &["commit", "-qm", &format!("p{i}")])
        })?;
        let target = if i % 2 == 0 {
            via_gateway.clone()
        } else {
            direct.display().to_string()
        };
        let t = Instant::now();
        git(
            &work,
            &[
                "push",
                "-q",
                "--force",
                &target,
                "HEAD:refs/heads/capsid/bench",
            ],
        )?;
        let took = t.elapsed();
        if i % 2 == 0 {
            gw.push(took)
        } else {
            dr.push(took)
        }
    }
    let (g50, d50) = (pct(&mut gw, 0.5), pct(&mut dr, 0.5));
    let (g99, d99) = (pct(&mut gw, 0.99), pct(&mut dr, 0.99));
    println!(
        "push ({} each): direct p50 {:.1} ms p99 {:.1} ms; gateway p50 {:.1} ms p99 {:.1} ms; ratio p50 {:.2}x",
        args.pushes,
        ms(d50),
        ms(d99),
        ms(g50),
        ms(g99),
        ms(g50) / ms(d50)
    );
    let forwarded = git(&origin, &["rev-parse", "refs/heads/capsid/bench"])?;
    println!("gateway forwarded the last push to origin: {forwarded}");

    // The job's clone on the given repository: a bare mirror once, then each job's own clone.
    let repo = std::fs::canonicalize(&args.repo)?;
    let cdir = dir.path().join("clones");
    std::fs::create_dir_all(&cdir)?;
    let m = cdir.join("mirror.git");
    let t = Instant::now();
    git(
        &cdir,
        &[
            "clone",
            "-q",
            "--bare",
            &repo.display().to_string(),
            &m.display().to_string(),
        ],
    )?;
    let mirror_took = t.elapsed();
    let mut clones = Vec::new();
    for i in 0..5 {
        let c = cdir.join(format!("c{i}"));
        let t = Instant::now();
        git(
            &cdir,
            &[
                "clone",
                "-q",
                "--no-local",
                "--no-checkout",
                &m.display().to_string(),
                &c.display().to_string(),
            ],
        )?;
        git(&c, &["checkout", "-q", "-B", "capsid/bench", "HEAD"])?;
        clones.push(t.elapsed());
    }
    let size = git(&repo, &["count-objects", "-vH"])?;
    let size = size
        .lines()
        .find(|l| l.starts_with("size-pack"))
        .unwrap_or("size-pack ?")
        .to_owned();
    println!(
        "clone of {} ({size}): the mirror once {:.0} ms; a job's own clone and checkout, median of 5 {:.0} ms",
        repo.display(),
        ms(mirror_took),
        ms(median(&mut clones))
    );
    server.stop().await;
    Ok(())
}
