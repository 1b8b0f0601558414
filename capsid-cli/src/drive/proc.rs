//! Running the processes a run is made of: gate commands through `sh -c` with their output
//! kept (bounded, the tail), and git, whose answers the driver measures the run by.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result, bail};
use capsid_core::drive::gate::GateRun;
use tokio::process::Command;

/// How much of a command's output is kept (its tail).
pub const OUTPUT_KEEP: usize = 64 * 1024;

/// The last `OUTPUT_KEEP` bytes of `bytes`, as text.
pub fn keep_tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(OUTPUT_KEEP);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Runs `command` with `sh -c` in `dir`, standard error folded into standard output.
pub async fn shell(command: &str, dir: &Path, envs: &[(String, String)]) -> GateRun {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(dir)
        .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .output()
        .await;
    match out {
        Ok(o) => GateRun {
            command: command.to_owned(),
            exit_code: o.status.code(),
            output: keep_tail(&o.stdout),
        },
        Err(e) => GateRun {
            command: command.to_owned(),
            exit_code: None,
            output: format!("could not start sh: {e}"),
        },
    }
}

/// `git <args>` in `dir`: its trimmed standard output, or an error with its stderr.
pub async fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .await
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The default branch `origin/HEAD` names, if the clone knows it.
pub async fn remote_default_branch(dir: &Path) -> Option<String> {
    let head = git(
        dir,
        &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
    )
    .await
    .ok()?;
    head.strip_prefix("origin/").map(str::to_owned)
}

/// The repository's default branch: `origin/HEAD` when a remote names one, else the branch
/// the project root (not a job's worktree) has checked out.
pub async fn default_branch(root: &Path) -> Result<String> {
    if let Some(b) = remote_default_branch(root).await {
        return Ok(b);
    }
    git(root, &["rev-parse", "--abbrev-ref", "HEAD"]).await
}

/// The branch checked out in `dir` (`None` when detached or unreadable).
pub async fn current_branch(dir: &Path) -> Option<String> {
    git(dir, &["symbolic-ref", "--short", "HEAD"]).await.ok()
}
