//! One git worktree per job under the project root, `.capsid/worktrees/<job-id>` on branch
//! `capsid/<job-id>` from the default branch: created at claim (reused on resume), removed
//! when the job is done, kept on failure for inspection and pruned after a day.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};

use super::proc::git;

/// Serializes the worktree changes of one driver process: `--max-parallel` runs jobs side by
/// side, and a git command in one worktree while `git worktree add` makes another can read
/// its half-written `.git/worktrees/<id>` ("failed to read .../commondir"). Not only `add`
/// and `remove`: `git config --worktree` and the shared `info/exclude` as well.
static WORKTREE_CHANGES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The right to change the repository's worktrees and their shared git files, held while a
/// job's worktree is made and set up.
pub struct Held(#[allow(dead_code)] tokio::sync::MutexGuard<'static, ()>);

/// Waits for the right to change the worktrees.
pub async fn hold() -> Held {
    Held(WORKTREE_CHANGES.lock().await)
}

/// How long a kept worktree stays before it is pruned.
pub const KEEP_FAILED: Duration = Duration::from_secs(24 * 3600);

/// Where the driver keeps its worktrees.
pub fn worktrees_dir(root: &Path) -> PathBuf {
    root.join(".capsid").join("worktrees")
}

/// A job id that is safe as a folder and branch name (`job_` + hex, as the server mints).
fn checked_id(job_id: &str) -> Result<&str> {
    if job_id.is_empty()
        || job_id.len() > 64
        || !job_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        bail!("the server sent a job id that is not safe as a folder name: {job_id:?}");
    }
    Ok(job_id)
}

/// Keeps `.capsid/` out of the project's own status (the worktrees live under it).
async fn exclude_capsid(root: &Path) -> Result<()> {
    let common = git(root, &["rev-parse", "--git-common-dir"]).await?;
    let common = if Path::new(&common).is_absolute() {
        PathBuf::from(common)
    } else {
        root.join(common)
    };
    let info = common.join("info");
    std::fs::create_dir_all(&info).with_context(|| format!("creating {}", info.display()))?;
    let exclude = info.join("exclude");
    let text = std::fs::read_to_string(&exclude).unwrap_or_default();
    if !text.lines().any(|l| l.trim() == "/.capsid/") {
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        std::fs::write(&exclude, format!("{text}{sep}/.capsid/\n"))
            .with_context(|| format!("writing {}", exclude.display()))?;
    }
    Ok(())
}

/// The job's worktree: reused when it exists (a resumed job), else created from `base`. The
/// caller holds the worktrees (and keeps holding them while it sets the worktree up).
pub async fn ensure(_held: &Held, root: &Path, job_id: &str, base: &str) -> Result<PathBuf> {
    let id = checked_id(job_id)?;
    exclude_capsid(root).await?;
    let path = worktrees_dir(root).join(id);
    if path.join(".git").exists() {
        return Ok(path);
    }
    std::fs::create_dir_all(worktrees_dir(root)).context("creating .capsid/worktrees")?;
    let branch = format!("capsid/{id}");
    let place = path.display().to_string();
    let exists = git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .await
    .is_ok();
    if exists {
        git(root, &["worktree", "add", &place, &branch]).await?;
    } else {
        git(root, &["worktree", "add", "-b", &branch, &place, base]).await?;
    }
    Ok(path)
}

/// Removes a finished job's worktree (its branch, with the commits, stays).
pub async fn remove(root: &Path, path: &Path) -> Result<()> {
    let _one_at_a_time = WORKTREE_CHANGES.lock().await;
    git(
        root,
        &["worktree", "remove", "--force", &path.display().to_string()],
    )
    .await?;
    Ok(())
}

/// Marks a failed job's worktree as kept for inspection (pruned a day later).
pub fn keep_failed(root: &Path, job_id: &str) {
    let dir = root.join(".capsid").join("failed");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(job_id), b"");
    }
}

/// Removes the worktrees of jobs that failed more than a day ago. A blocked job's worktree
/// stays however long the human takes: its session resumes there.
pub async fn prune_stale(root: &Path) {
    let failed = root.join(".capsid").join("failed");
    let Ok(entries) = std::fs::read_dir(&failed) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > KEEP_FAILED);
        if !old {
            continue;
        }
        let id = entry.file_name().to_string_lossy().into_owned();
        let path = worktrees_dir(root).join(&id);
        if path.exists()
            && let Err(e) = remove(root, &path).await
        {
            eprintln!("capsid drive: could not prune {}: {e:#}", path.display());
            continue;
        }
        let _ = std::fs::remove_file(entry.path());
    }
    let _one_at_a_time = WORKTREE_CHANGES.lock().await;
    let _ = git(root, &["worktree", "prune"]).await;
}
