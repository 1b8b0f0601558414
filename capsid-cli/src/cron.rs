//! What `drive schedule` and `backup schedule` share: finding a program on PATH and adding one
//! line to the user's crontab (once, keeping what is there).

use anyhow::{Context, Result, bail};

/// Whether `program` is an executable file in a folder of PATH.
pub fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// Adds `line` to the user's crontab unless it is there already.
pub fn add_cron_line(line: &str) -> Result<()> {
    let current = std::process::Command::new("crontab").arg("-l").output();
    let existing = current
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if existing.lines().any(|l| l == line) {
        return Ok(());
    }
    let mut child = std::process::Command::new("crontab")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .context("running crontab")?;
    use std::io::Write;
    if let Some(mut stdin) = child.stdin.take() {
        writeln!(stdin, "{existing}{line}")?;
    }
    if !child.wait()?.success() {
        bail!("crontab refused the new table");
    }
    Ok(())
}
