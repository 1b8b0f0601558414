//! `capsid backup schedule --server <url> --to <dest>`: a daily `capsid backup pull` as a
//! systemd user timer (or a crontab line where systemd is absent), printed, and with
//! `--apply` installed disabled (the timer written but not enabled; the crontab line
//! commented out), as `capsid drive schedule` does. A person turns it on.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;

/// The systemd unit's name.
const UNIT: &str = "capsid-backup-pull";

/// `capsid backup schedule`.
#[derive(Debug, Clone, Args)]
pub struct ScheduleArgs {
    /// The Capsid server to pull from.
    #[arg(long, env = "CAPSID_BACKUP_SERVER", value_name = "URL")]
    pub server: String,
    /// Where the dumps go (a folder or `s3://bucket/prefix`).
    #[arg(long, value_name = "DIR|s3://bucket/prefix")]
    pub to: String,
    /// When, HH:MM UTC, every day (the server dumps at 09:00 UTC by default).
    #[arg(long, default_value = "10:00")]
    pub at: String,
    /// Install the timer (disabled) instead of only printing it.
    #[arg(long)]
    pub apply: bool,
    /// Write a crontab line even where systemd is present.
    #[arg(long)]
    pub cron: bool,
}

/// The environment file the unit reads (`CAPSID_BACKUP_PULL_KEY`, the `AWS_*` settings).
pub const ENV_FILE: &str = "%h/.config/capsid/backup-pull.env";

fn hh_mm(at: &str) -> Result<(u8, u8)> {
    let (h, m) = at
        .split_once(':')
        .with_context(|| format!("--at {at:?}: use HH:MM"))?;
    let (h, m): (u8, u8) = (
        h.parse()
            .with_context(|| format!("--at {at:?}: the hour is not a number"))?,
        m.parse()
            .with_context(|| format!("--at {at:?}: the minute is not a number"))?,
    );
    if h > 23 || m > 59 {
        bail!("--at {at:?}: not a time of day (HH:MM, 00:00 to 23:59)");
    }
    Ok((h, m))
}

/// A value that may stand in a unit file and a crontab line unquoted.
fn plain(flag: &str, value: &str) -> Result<()> {
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ":/._-@+=".contains(c))
    {
        bail!(
            "{flag} {value:?}: only letters, digits and :/._-@+= may stand in a scheduled command"
        );
    }
    Ok(())
}

/// Prints (and with --apply installs) the schedule.
pub fn run(a: ScheduleArgs) -> Result<ExitCode> {
    let (h, m) = hh_mm(&a.at)?;
    plain("--server", &a.server)?;
    plain("--to", &a.to)?;
    // The same checks the pull makes, now rather than at the first night.
    capsid_blobs::parse_blob_url(&a.to).map_err(|e| anyhow::anyhow!("--to: {e}"))?;
    if !(a.server.starts_with("http://") || a.server.starts_with("https://")) {
        bail!("--server {:?}: not an http:// or https:// URL", a.server);
    }
    let exe = std::env::current_exe().context("finding the capsid binary")?;
    let command = format!(
        "{} backup pull --server {} --to {}",
        exe.display(),
        a.server,
        a.to
    );
    let systemd = !a.cron && crate::cron::which("systemctl");
    if systemd {
        let service = format!(
            "[Unit]\nDescription=Capsid: pull the newest dump off-site\n\n[Service]\nType=oneshot\n# KEY=value lines: CAPSID_BACKUP_PULL_KEY (from `capsid backup pull-key` on the server's host), and for s3:// the AWS_* settings\nEnvironmentFile={ENV_FILE}\nExecStart={command}\n"
        );
        let timer = format!(
            "[Unit]\nDescription=Capsid: pull the newest dump daily at {h:02}:{m:02} UTC\n\n[Timer]\nOnCalendar=*-*-* {h:02}:{m:02}:00 UTC\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n"
        );
        println!(
            "# ~/.config/systemd/user/{UNIT}.service\n{service}\n# ~/.config/systemd/user/{UNIT}.timer\n{timer}"
        );
        if a.apply {
            let home = std::env::var_os("HOME").context("HOME is not set")?;
            let dir = PathBuf::from(home).join(".config/systemd/user");
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            std::fs::write(dir.join(format!("{UNIT}.service")), service)?;
            std::fs::write(dir.join(format!("{UNIT}.timer")), timer)?;
            println!(
                "installed, disabled. Put CAPSID_BACKUP_PULL_KEY in ~/.config/capsid/backup-pull.env, then turn it on with: systemctl --user daemon-reload && systemctl --user enable --now {UNIT}.timer"
            );
        } else {
            println!("(printed only; --apply installs it, disabled)");
        }
    } else {
        let line = format!("# CRON_TZ=UTC {m} {h} * * * {command}");
        println!("{line}");
        if a.apply {
            crate::cron::add_cron_line(&line)?;
            println!(
                "installed, commented out. Set CAPSID_BACKUP_PULL_KEY for cron, then turn it on by removing the leading '# ' with: crontab -e"
            );
        } else {
            println!("(printed only; --apply installs it, commented out)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
