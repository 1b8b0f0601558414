//! Git's own `pre-push` hook, owned by Capsid: the gate that sees the refs a push will really
//! update, however the push was spelled or launched (a shell, `eval`, `xargs`, an alias, a
//! rewritten refspec). A driven worktree gets it through its own `core.hooksPath` (set with
//! `extensions.worktreeConfig`, so the main checkout is untouched), pointing at
//! `<root>/.capsid/git-hooks/<job-id>`, where the repository's other hooks are linked and its own
//! `pre-push`, if any, runs after Capsid's. `capsid hook install` puts it in the repository's
//! hooks folder. At the end of a run the driver checks the worktree's configuration is still as
//! it set it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::proc::git;

/// What the driver set, to check at the end of the run.
#[derive(Clone, Debug)]
pub struct Installed {
    /// The hooks folder the worktree's `core.hooksPath` names.
    pub dir: PathBuf,
    /// The `pre-push` script as written.
    pub script: String,
}

/// The script: Capsid's gate, then the repository's own `pre-push` (`chained`) if it had one.
/// `settings` (the server, the namespace, the default branch and the gate commands of a driven
/// run; no secret) are written into it, so the agent's environment cannot redirect the gate.
fn script(program: &Path, chained: Option<&Path>, settings: &[(String, String)]) -> String {
    let q = capsid_core::drive::hooks::shell_quote;
    let mut capsid = q(&program.display().to_string());
    if !settings.is_empty() {
        let pairs: Vec<String> = settings
            .iter()
            .map(|(k, v)| q(&format!("{k}={v}")))
            .collect();
        capsid = format!("env {} {capsid}", pairs.join(" "));
    }
    match chained {
        None => format!(
            "#!/bin/sh\n# Capsid's push gate (capsid hook pre-push): tests, build check, protected refs.\nexec {capsid} hook pre-push \"$@\"\n"
        ),
        Some(own) => {
            let own = capsid_core::drive::hooks::shell_quote(&own.display().to_string());
            format!(
                "#!/bin/sh\n# Capsid's push gate (capsid hook pre-push), then the repository's own pre-push.\nrefs=$(cat)\nprintf '%s\\n' \"$refs\" | {capsid} hook pre-push \"$@\" || exit $?\nprintf '%s\\n' \"$refs\" | {own} \"$@\"\n"
            )
        }
    }
}

fn write_executable(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The folder git runs `dir`'s hooks from.
async fn hooks_path(dir: &Path) -> Result<PathBuf> {
    let p = git(dir, &["rev-parse", "--git-path", "hooks"]).await?;
    let p = PathBuf::from(p);
    Ok(if p.is_absolute() { p } else { dir.join(p) })
}

/// Gives the worktree `wt` of the repository at `root` Capsid's `pre-push` hook, with the
/// run's `settings` written into it.
pub async fn install_for_worktree(
    root: &Path,
    wt: &Path,
    settings: &[(String, String)],
) -> Result<Installed> {
    let program = std::env::current_exe().context("finding the capsid binary's own path")?;
    let own = hooks_path(root).await?;
    // One folder per worktree: jobs run side by side with settings of their own.
    let id = wt
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_owned());
    let dir = root.join(".capsid").join("git-hooks").join(id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // The repository's other hooks keep running in the worktree.
    if let Ok(entries) = std::fs::read_dir(&own) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            if name == "pre-push" || name.ends_with(".sample") || !is_executable(&path) {
                continue;
            }
            let link = dir.join(&name);
            if !link.exists() {
                #[cfg(unix)]
                let _ = std::os::unix::fs::symlink(&path, &link);
            }
        }
    }
    let chained = own.join("pre-push");
    let chained = (is_executable(&chained) && own != dir).then_some(chained);
    let text = script(&program, chained.as_deref(), settings);
    write_executable(&dir.join("pre-push"), &text)?;
    git(root, &["config", "extensions.worktreeConfig", "true"]).await?;
    git(
        wt,
        &[
            "config",
            "--worktree",
            "core.hooksPath",
            &dir.display().to_string(),
        ],
    )
    .await?;
    Ok(Installed { dir, script: text })
}

/// Why the worktree's hook configuration is no longer what the driver set, if it is not.
pub async fn changed(wt: &Path, set: &Installed) -> Option<String> {
    let effective = git(wt, &["config", "--get", "core.hooksPath"]).await.ok();
    let want = set.dir.display().to_string();
    if effective.as_deref() != Some(want.as_str()) {
        return Some(format!(
            "the worktree's core.hooksPath is {} instead of {want}, so git's pre-push gate may not have run",
            effective.as_deref().unwrap_or("unset")
        ));
    }
    let now = std::fs::read_to_string(set.dir.join("pre-push")).unwrap_or_default();
    if now != set.script || !is_executable(&set.dir.join("pre-push")) {
        return Some(format!(
            "{} was changed during the run, so git's pre-push gate may not have run",
            set.dir.join("pre-push").display()
        ));
    }
    None
}

/// `capsid hook install`'s half for git: Capsid's `pre-push` in the repository's hooks folder
/// (a `pre-push` of the project's own is kept as `pre-push.capsid-chained` and runs after it).
/// The hook's path, or `None` when `dir` is not in a git repository.
pub async fn install_in_repository(dir: &Path) -> Result<Option<PathBuf>> {
    if git(dir, &["rev-parse", "--git-dir"]).await.is_err() {
        return Ok(None);
    }
    let program = std::env::current_exe().context("finding the capsid binary's own path")?;
    let hooks = hooks_path(dir).await?;
    std::fs::create_dir_all(&hooks).with_context(|| format!("creating {}", hooks.display()))?;
    let hook = hooks.join("pre-push");
    let chained = hooks.join("pre-push.capsid-chained");
    let ours = std::fs::read_to_string(&hook)
        .map(|t| t.contains("Capsid's push gate"))
        .unwrap_or(false);
    if hook.exists() && !ours {
        std::fs::rename(&hook, &chained)
            .with_context(|| format!("keeping the project's own {}", hook.display()))?;
    }
    let text = script(
        &program,
        is_executable(&chained).then_some(chained.as_path()),
        &[],
    );
    write_executable(&hook, &text)?;
    Ok(Some(hook))
}

/// The protected refs of the repository at `root`, local and on `origin`, as `(ref, sha)`
/// pairs (`names`: the namespace's protected branches and the default branch): what no run
/// may move behind the gates.
pub async fn protected_refs(root: &Path, names: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for b in names {
        let local = format!("refs/heads/{b}");
        if let Ok(sha) = git(root, &["rev-parse", "--verify", "--quiet", &local]).await {
            out.push((local, sha));
        }
    }
    let heads: Vec<String> = names.iter().map(|b| format!("refs/heads/{b}")).collect();
    let mut args = vec!["ls-remote", "origin"];
    args.extend(heads.iter().map(String::as_str));
    if let Ok(listed) = git(root, &args).await {
        for line in listed.lines() {
            if let Some((sha, r)) = line.split_once('\t') {
                out.push((format!("origin {r}"), sha.to_owned()));
            }
        }
    }
    out
}
