//! `capsid drive schedule`: the nightly `capsid drive --once` as a systemd user timer (or a
//! crontab line), printed, and with `--apply` installed disabled: the timer written but not
//! enabled, the crontab line commented out.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_capsid");

#[test]
fn a_crontab_line_is_printed_commented_out() {
    let out = Command::new(BIN)
        .args([
            "drive",
            "schedule",
            "--namespace",
            "demo",
            "--at",
            "04:30",
            "--tz",
            "Europe/Paris",
            "--cron",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!(
            "# CRON_TZ=Europe/Paris 30 4 * * * {BIN} drive --once --namespace demo\n"
        )),
        "{text}"
    );
    assert!(text.contains("printed only"), "{text}");
}

#[test]
fn apply_installs_a_disabled_systemd_timer() {
    let home = tempfile::tempdir().expect("home");
    // `systemctl` on the PATH is what makes the driver choose systemd; this one never runs.
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let fake = bin.join("systemctl");
    std::fs::write(&fake, "#!/bin/sh\nexit 99\n").expect("fake systemctl");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(BIN)
        .args([
            "drive",
            "schedule",
            "--namespace",
            "demo",
            "--at",
            "04:00",
            "--apply",
        ])
        .env("HOME", home.path())
        .env("PATH", path)
        .env_remove("CAPSID_TIMEZONE")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let units = home.path().join(".config/systemd/user");
    let timer = std::fs::read_to_string(units.join("capsid-drive-demo.timer")).expect("timer");
    assert!(timer.contains("OnCalendar=*-*-* 04:00:00 UTC"), "{timer}");
    let service =
        std::fs::read_to_string(units.join("capsid-drive-demo.service")).expect("service");
    assert!(
        service.contains(&format!("ExecStart={BIN} drive --once --namespace demo")),
        "{service}"
    );
    // The unit runs in the project's folder with the environment file the README describes.
    let cwd = std::env::current_dir().expect("cwd");
    assert!(
        service.contains(&format!("WorkingDirectory={}", cwd.display())),
        "{service}"
    );
    assert!(
        service.contains("EnvironmentFile=%h/.config/capsid/drive-demo.env"),
        "{service}"
    );
    assert!(
        !units.join("timers.target.wants").exists(),
        "installed, not enabled"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("systemctl --user enable --now capsid-drive-demo.timer"),
        "{text}"
    );

    let bad = Command::new(BIN)
        .args(["drive", "schedule", "--namespace", "demo", "--at", "25:00"])
        .output()
        .expect("run");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--at 25:00: not a time of day"));
}
