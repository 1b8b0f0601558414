//! What the benches share (`src/bin/box-bench.rs`, `src/bin/runtime-bench.rs`): git run in a
//! folder, and a small project with a quick test and a bare `origin`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// `git args` in `dir`: its trimmed output, or the error with git's own words.
pub fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .with_context(|| format!("git {args:?}"))?;
    if !out.status.success() {
        bail!(
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The project `dir/name` with a quick test (`sh test.sh`) on `main`, pushed to the bare
/// `dir/<name>-origin.git`, its `origin`.
pub fn project(dir: &Path, name: &str) -> Result<PathBuf> {
    let origin = dir.join(format!("{name}-origin.git"));
    git(
        dir,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            &origin.display().to_string(),
        ],
    )?;
    let root = dir.join(name);
    std::fs::create_dir_all(&root)?;
    git(&root, &["init", "-q", "-b", "main"])?;
    git(&root, &["config", "user.name", "Bench"])?;
    git(&root, &["config", "user.email", "bench@capsid.invalid"])?;
    std::fs::write(root.join("test.sh"), "echo 'all tests passed'\n")?;
    git(&root, &["add", "."])?;
    git(&root, &["commit", "-qm", "The project"])?;
    git(
        &root,
        &["remote", "add", "origin", &origin.display().to_string()],
    )?;
    git(&root, &["push", "-q", "origin", "main"])?;
    Ok(root)
}
