//! `capsid drive schedule`: a nightly `capsid drive --once` as a systemd user timer (or a
//! crontab line where systemd is absent), printed, and with `--apply` installed disabled:
//! off twice over (the timer is written but not enabled; the crontab line is commented out),
//! as the Worker's scheduled drivers are. A person turns it on.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;

/// `capsid drive schedule`.
#[derive(Debug, Clone, Args)]
pub struct ScheduleArgs {
    /// The namespace to drive.
    #[arg(long)]
    pub namespace: String,
    /// When, HH:MM, in the time zone --tz names.
    #[arg(long, default_value = "04:00")]
    pub at: String,
    /// The loop's time zone (an IANA name).
    #[arg(long, env = "CAPSID_TIMEZONE", default_value = "UTC")]
    pub tz: String,
    /// Install the timer (disabled) instead of only printing it.
    #[arg(long)]
    pub apply: bool,
    /// Write a crontab line even where systemd is present.
    #[arg(long)]
    pub cron: bool,
    /// The project's git repository, the unit's working directory (default: the current
    /// folder).
    #[arg(long)]
    pub root_dir: Option<PathBuf>,
}

/// The environment file the unit reads (`KEY=value` lines: `CAPSID_URL`, `CAPSID_KEY` or a key
/// file, the credential an `env:` reference names, the model API's settings, `PATH`).
pub fn env_file(namespace: &str) -> String {
    format!("%h/.config/capsid/drive-{namespace}.env")
}

fn hh_mm(at: &str) -> Result<(u8, u8)> {
    let (h, m) = at
        .split_once(':')
        .with_context(|| format!("--at {at}: use HH:MM"))?;
    let (h, m): (u8, u8) = (
        h.parse()
            .with_context(|| format!("--at {at}: the hour is not a number"))?,
        m.parse()
            .with_context(|| format!("--at {at}: the minute is not a number"))?,
    );
    if h > 23 || m > 59 {
        bail!("--at {at}: not a time of day");
    }
    Ok((h, m))
}

/// Prints (and with --apply installs) the schedule.
pub fn run(a: ScheduleArgs) -> Result<ExitCode> {
    let (h, m) = hh_mm(&a.at)?;
    if a.namespace.is_empty()
        || !a
            .namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        bail!("--namespace {:?} is not a namespace name", a.namespace);
    }
    if a.tz.is_empty()
        || !a
            .tz
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c))
    {
        bail!("--tz {:?} is not a time zone name", a.tz);
    }
    let exe = std::env::current_exe().context("finding the capsid binary")?;
    let command = format!("{} drive --once --namespace {}", exe.display(), a.namespace);
    let systemd = !a.cron && crate::cron::which("systemctl");
    if systemd {
        let unit = format!("capsid-drive-{}", a.namespace);
        let root = match &a.root_dir {
            Some(r) => r.clone(),
            None => std::env::current_dir().context("the current folder")?,
        };
        let service = format!(
            "[Unit]\nDescription=Capsid: drive one job of {ns}\n\n[Service]\nType=oneshot\nWorkingDirectory={root}\n# KEY=value lines: CAPSID_URL, CAPSID_KEY (or a key file), the credential an env: reference names, the model API's settings, PATH with claude on it\nEnvironmentFile={envf}\nExecStart={command}\n",
            ns = a.namespace,
            root = root.display(),
            envf = env_file(&a.namespace),
        );
        let timer = format!(
            "[Unit]\nDescription=Capsid: drive {ns} nightly at {h:02}:{m:02} {tz}\n\n[Timer]\nOnCalendar=*-*-* {h:02}:{m:02}:00 {tz}\nPersistent=false\n\n[Install]\nWantedBy=timers.target\n",
            ns = a.namespace,
            tz = a.tz
        );
        println!(
            "# ~/.config/systemd/user/{unit}.service\n{service}\n# ~/.config/systemd/user/{unit}.timer\n{timer}"
        );
        if a.apply {
            let home = std::env::var_os("HOME").context("HOME is not set")?;
            let dir = PathBuf::from(home).join(".config/systemd/user");
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            std::fs::write(dir.join(format!("{unit}.service")), service)?;
            std::fs::write(dir.join(format!("{unit}.timer")), timer)?;
            println!(
                "installed, disabled. Turn it on with: systemctl --user daemon-reload && systemctl --user enable --now {unit}.timer"
            );
        } else {
            println!("(printed only; --apply installs it, disabled)");
        }
    } else {
        let line = format!("# CRON_TZ={tz} {m} {h} * * * {command}", tz = a.tz);
        println!("{line}");
        if a.apply {
            crate::cron::add_cron_line(&line)?;
            println!(
                "installed, commented out. Turn it on by removing the leading '# ' with: crontab -e"
            );
        } else {
            println!("(printed only; --apply installs it, commented out)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
