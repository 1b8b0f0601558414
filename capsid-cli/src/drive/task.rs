//! `capsid drive --task <ns>/improve/run-<date>.md`: subscription mode's signed task document
//! run as a job. The server verifies the document (`improve_status task_path`: the seal and the
//! loop as its last audit actor); the driver takes the namespace's driver lease (`improve_run
//! claim`, renewed while the agent runs), runs the agent in a fresh worktree of the project
//! under the same hooks as a job with the task body (signature stripped) on its stdin, runs
//! the test gate and the build check, and gives the lease back at the end, also on failure.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use capsid_core::improve::task::task_document_date;
use capsid_core::jobs::signature::split_signed;
use serde_json::{Value, json};

use super::agent::{agent_env, hide_settings, mise_install, run_agent};
use super::mcp::Answer;
use super::proc::{default_branch, git, shell};
use super::worktree;
use super::{EXIT_DONE, EXIT_ERROR, EXIT_GATED, Ready, RunArgs, load_keys, prepare, refused};

/// `(namespace, path)` of `--task`: `<ns>/improve/run-<date>.md`, or `improve/run-<date>.md`
/// with `--namespace`.
fn task_target(
    task: &str,
    namespace: Option<&str>,
) -> std::result::Result<(String, String), String> {
    let task = task.trim().trim_start_matches('/');
    let namespace = namespace.map(str::trim).filter(|n| !n.is_empty());
    if task_document_date(task).is_some() {
        return match namespace {
            Some(ns) => Ok((ns.to_owned(), task.to_owned())),
            None => Err(format!(
                "name the namespace of {task}: --task <ns>/{task}, or --namespace <ns>"
            )),
        };
    }
    match task.split_once('/') {
        Some((ns, path)) if task_document_date(path).is_some() => {
            if let Some(given) = namespace.filter(|g| *g != ns) {
                return Err(format!(
                    "--task {task} is a task document of namespace {ns}, not of --namespace {given}"
                ));
            }
            Ok((ns.to_owned(), path.to_owned()))
        }
        _ => Err(format!(
            "--task must name a task document, <ns>/improve/run-<YYYY-MM-DD>.md (got {task})"
        )),
    }
}

/// `capsid drive --task`.
pub(crate) async fn run(args: &RunArgs, task: &str) -> Result<ExitCode> {
    let (ns, path) = match task_target(task, args.namespace.as_deref()) {
        Ok(t) => t,
        Err(why) => return Ok(refused(why)),
    };
    let key = match load_keys(&args.key_file, &ns) {
        Ok(keys) => keys.into_iter().next().unwrap_or_default(),
        Err(why) => return Ok(refused(why)),
    };
    let r = match prepare(args, ns.clone(), key).await? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let status = r
        .mcp
        .ok(
            "improve_status",
            json!({"namespace": ns, "task_path": path}),
        )
        .await?;
    let verified = &status["task_verification"];
    if verified["ok"] != json!(true) {
        return Ok(refused(format!(
            "the task document {ns}/{path} does not verify: {}",
            verified["reason"].as_str().unwrap_or("no reason given")
        )));
    }
    let holder = match r
        .mcp
        .call("improve_run", json!({"action": "claim", "namespace": ns}))
        .await?
    {
        Answer::Ok(v) => v["holder"].as_str().unwrap_or("").to_owned(),
        Answer::Refused(why) => return Ok(refused(why)),
    };
    eprintln!("capsid drive: {holder} holds the driver lease of {ns}");
    let outcome = drive(&r, &path, &holder, verified).await;
    let released = r
        .mcp
        .call(
            "improve_run",
            json!({"action": "claim", "namespace": ns, "release": true}),
        )
        .await;
    match released {
        Ok(Answer::Ok(_)) => eprintln!("capsid drive: released the driver lease of {ns}"),
        Ok(Answer::Refused(why)) => eprintln!("capsid drive: releasing the driver lease: {why}"),
        Err(e) => eprintln!("capsid drive: releasing the driver lease: {e:#}"),
    }
    Ok(ExitCode::from(match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("capsid drive: {e:#}");
            EXIT_ERROR
        }
    }))
}

/// The task, from its body to the test gate, while this driver holds the lease.
async fn drive(r: &Ready, path: &str, holder: &str, verified: &Value) -> Result<u8> {
    let ns = &r.namespace;
    let agent = holder
        .strip_prefix("agent:")
        .context("the driver lease is not held by a minted agent; drive with an agent key")?
        .to_owned();
    let date = task_document_date(path).context("not a task document path")?;
    let doc = r
        .mcp
        .ok("read", json!({"namespace": ns, "path": path}))
        .await?;
    let stored = doc["body"].as_str().unwrap_or("");
    let body = split_signed(stored)
        .map(|p| p.body)
        .context("the task document lost its signature after it was verified")?
        .to_owned();
    let id = format!("improve-run-{date}");
    let base = default_branch(&r.root).await?;
    let wt = fresh_worktree(r, &id, &base).await?;
    eprintln!("capsid drive: task {ns}/{path} in {}", wt.display());
    mise_install(&wt).await;
    crate::hook::install(&wt)?;
    hide_settings(&wt).await;

    // The improve loop's subscription driver acts under the namespace's driver lease
    // (`improve_run attempt`, `propose_skill`), so its agent holds the driver's key, unlike a
    // queued job's agent, which holds a run credential bound to its job.
    let mut envs: Vec<(String, String)> = agent_env(r, &id, &agent, &wt, &r.key)
        .await
        .into_iter()
        .filter(|(k, _)| k != "CAPSID_JOB_ID")
        .collect();
    envs.extend([
        ("CAPSID_KEY".to_owned(), r.key.clone()),
        ("CAPSID_DEFAULT_BRANCH".to_owned(), base.clone()),
        ("CAPSID_TASK_PATH".to_owned(), format!("{ns}/{path}")),
        (
            "CAPSID_RUN_ID".to_owned(),
            verified["run_id"].as_str().unwrap_or("").to_owned(),
        ),
    ]);
    // The model is reached through the run's metered door, as for a queued job.
    let door = super::model_door::open(&r.model).await?;
    envs.extend(door.env(r.runtime));
    let run = with_lease(
        r,
        run_agent(r, &agent, &id, &wt, &r.agent_command, &body, &envs),
    )
    .await;
    let metered = door.close().await;
    let run = run?;
    if !r.quiet {
        eprintln!("capsid drive: task {ns}/{path}: {}", metered.line(None));
    }
    let tests = shell(&r.tests.command, &wt, &[]).await;
    let build = match (&r.build, tests.passed()) {
        (Some(b), true) => Some(shell(&b.command, &wt, &[]).await),
        _ => None,
    };
    let agent_ok = run.exit == Some(0);
    let build_ok = build.as_ref().is_none_or(|b| b.passed());
    let passed = agent_ok && tests.passed() && build_ok;
    println!(
        "task {ns}/{path}: agent exit {}, tests {}, build {}",
        run.exit.map_or("none".to_owned(), |c| c.to_string()),
        if tests.passed() { "pass" } else { "fail" },
        match &build {
            None if tests.passed() => "skipped",
            None => "not run",
            Some(b) if b.passed() => "pass",
            Some(_) => "fail",
        }
    );
    if passed {
        if let Err(e) = worktree::remove(&r.root, &wt).await {
            eprintln!("capsid drive: {e:#}");
        }
        return Ok(EXIT_DONE);
    }
    if !tests.passed() {
        eprintln!("{}", tests.failure("The test gate"));
    } else if let Some(b) = build.as_ref().filter(|b| !b.passed()) {
        eprintln!("{}", b.failure("The build check"));
    }
    worktree::keep_failed(&r.root, &id);
    eprintln!(
        "capsid drive: the task's worktree is kept for a day at {}",
        wt.display()
    );
    Ok(EXIT_GATED)
}

/// A fresh worktree for the task: one left by an earlier drive of the same night is removed
/// (its scratch branch with it; the attempts live on their pushed `improve/` branches).
async fn fresh_worktree(r: &Ready, id: &str, base: &str) -> Result<std::path::PathBuf> {
    let old = worktree::worktrees_dir(&r.root).join(id);
    if old.exists() {
        worktree::remove(&r.root, &old).await?;
    }
    let branch = format!("capsid/{id}");
    if git(
        &r.root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .await
    .is_ok()
    {
        git(&r.root, &["branch", "-D", &branch]).await?;
    }
    let wt = worktree::ensure(&worktree::hold().await, &r.root, id, base).await?;
    if !wt.join(".git").exists() {
        bail!("the task's worktree {} was not created", wt.display());
    }
    Ok(wt)
}

/// Renews the driver lease every `r.heartbeat` while `work` runs (a claim by its holder
/// extends it by another six hours).
async fn with_lease<T>(r: &Ready, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(r.heartbeat);
    tick.tick().await;
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = tick.tick() => {
                match r.mcp.call("improve_run", json!({"action": "claim", "namespace": r.namespace})).await {
                    Ok(Answer::Ok(_)) => {}
                    Ok(Answer::Refused(why)) => eprintln!("capsid drive: renewing the driver lease: {why}"),
                    Err(e) => eprintln!("capsid drive: renewing the driver lease: {e:#}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::task_target;

    #[test]
    fn the_task_names_its_namespace_or_takes_the_flag() {
        let t = |task, ns| task_target(task, ns);
        assert_eq!(
            t("demo/improve/run-2026-12-01.md", None),
            Ok(("demo".into(), "improve/run-2026-12-01.md".into()))
        );
        assert_eq!(
            t("improve/run-2026-12-01.md", Some("demo")),
            Ok(("demo".into(), "improve/run-2026-12-01.md".into()))
        );
        assert_eq!(
            t("demo/improve/run-2026-12-01.md", Some("demo")),
            Ok(("demo".into(), "improve/run-2026-12-01.md".into()))
        );
        for (task, ns, why) in [
            ("improve/run-2026-12-01.md", None, "name the namespace"),
            (
                "demo/improve/run-2026-12-01.md",
                Some("other"),
                "not of --namespace other",
            ),
            ("demo/improve/scores.md", None, "must name a task document"),
            (
                "demo/improve/run-2026-02-30.md",
                None,
                "must name a task document",
            ),
        ] {
            let got = t(task, ns).expect_err(task);
            assert!(got.contains(why), "{task}: {got}");
        }
    }
}
