//! A user's first week with the real binary (issue 33):
//! - every admin command run where there is no store exits 2, names the path and where it came
//!   from, and creates nothing (no folder, no database file, no signing key);
//! - unknown flag, grant, kind and tool names exit 2 listing the valid ones, and mint nothing;
//! - `agents mint --key-file` writes the key with mode 0600 and never replaces a file;
//! - `restore --re-sign` of a dump made under another secret lists what it brings in and
//!   restores only with `--confirm-unverified-origin`, reporting what it re-signed.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_capsid");

fn capsid_in(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command
        .current_dir(cwd)
        .args(args)
        .env_remove("CAPSID_DATA_DIR")
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_MEDIA_URL")
        .env_remove("CAPSID_HOLDOUT_URL")
        .env("CAPSID_LOG", "warn");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run capsid")
}

fn capsid(data: &Path, args: &[&str]) -> Output {
    capsid_in(
        data.parent().expect("a parent"),
        &[("CAPSID_DATA_DIR", data.to_str().expect("utf-8"))],
        args,
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the folder") {
        let entry = entry.expect("an entry");
        out.push(entry.file_name().to_string_lossy().into_owned());
        if entry.file_type().expect("a type").is_dir() {
            for inner in files_under(&entry.path()) {
                out.push(format!("{}/{inner}", entry.file_name().to_string_lossy()));
            }
        }
    }
    out.sort();
    out
}

const ADMIN_COMMANDS: &[&[&str]] = &[
    &["agents", "list"],
    &["agents", "mint", "--name", "a", "--namespaces", "*"],
    &["agents", "revoke", "--name", "a"],
    &["agents", "update-scopes", "--name", "a", "--grants", "read"],
    &["namespaces", "list"],
    &["namespaces", "register", "alpha", "--repo", "octo/alpha"],
    &["policy", "sign", "policy/gates.md"],
    &["improve", "roster", "list"],
    &["improve", "cadence", "backup"],
    &["skills", "list"],
    &["backup"],
    &["jobs", "list", "--all"],
    &["jobs", "raise", "job_0123456789ab", "--usd", "1"],
    &["tick", "--task", "backup"],
    &["doctor"],
];

#[test]
fn every_admin_command_where_there_is_no_store_exits_2_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("a folder");
    let cwd = dir.path().join("somewhere-else");
    std::fs::create_dir_all(&cwd).expect("a folder");
    for args in ADMIN_COMMANDS {
        // The default data folder (./capsid-data, relative to where the command runs).
        let out = capsid_in(&cwd, &[], args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out) + &String::from_utf8_lossy(&out.stdout);
        assert!(
            err.contains("capsid-data/capsid.db")
                && err.contains("default data folder")
                && err.contains("capsid serve"),
            "{args:?} names the path, where it came from and what creates a store: {err}"
        );
        assert!(
            files_under(&cwd).is_empty(),
            "{args:?} created {:?}",
            files_under(&cwd)
        );
        // A data folder named by the environment, and by the flag.
        let named = dir.path().join("named");
        let out = capsid_in(
            &cwd,
            &[("CAPSID_DATA_DIR", named.to_str().expect("utf-8"))],
            args,
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("CAPSID_DATA_DIR")
                || String::from_utf8_lossy(&out.stdout).contains("CAPSID_DATA_DIR"),
            "{args:?}: {}",
            stderr(&out)
        );
        let mut with_flag = vec!["--data-dir", named.to_str().expect("utf-8")];
        with_flag.extend_from_slice(args);
        let out = capsid_in(&cwd, &[], &with_flag);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            (stderr(&out) + &String::from_utf8_lossy(&out.stdout)).contains("--data-dir"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!named.exists(), "{args:?} created {}", named.display());
    }
    // `migrate` creates the store; then the same command works.
    let data = cwd.join("capsid-data");
    let migrated = capsid_in(&cwd, &[], &["migrate"]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    assert!(data.join("capsid.db").is_file());
    let listed = capsid_in(&cwd, &[], &["agents", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
}

fn migrated() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a folder");
    let data = dir.path().join("data");
    let out = capsid(&data, &["migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    (dir, data)
}

fn agent_names(data: &Path) -> String {
    let out = capsid(data, &["agents", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn unknown_names_exit_2_listing_the_valid_ones_and_mint_nothing() {
    let (_dir, data) = migrated();
    let cases: &[(&[&str], &[&str])] = &[
        (&["--flag", "can_marge"], &["can_merge", "can_backup"]),
        (&["--grants", "read,wrte"], &["read", "write"]),
        (&["--kind", "drivr"], &["session", "driver", "seat", "cron"]),
        (&["--tools", "raed"], &["read", "write", "jobs"]),
        (&["--tools", "jobs.clam"], &["post", "claim", "approval"]),
    ];
    for (extra, listed) in cases {
        let mut args = vec!["agents", "mint", "--name", "typo", "--namespaces", "*"];
        args.extend_from_slice(extra);
        let out = capsid(&data, &args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        for valid in *listed {
            assert!(
                stderr(&out).contains(valid),
                "{extra:?} lists {valid}: {}",
                stderr(&out)
            );
        }
        assert!(!agent_names(&data).contains("\"typo\""), "{extra:?} minted");
    }
    // The right names mint.
    let out = capsid(
        &data,
        &[
            "agents",
            "mint",
            "--name",
            "right",
            "--namespaces",
            "*",
            "--kind",
            "driver",
            "--grants",
            "read,write",
            "--tools",
            "read,jobs,jobs.claim",
            "--flag",
            "can_merge",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // Other enumerated values of the CLI: a log format, a skill status, a periodic task.
    for (args, listed) in [
        (
            &["--log-format", "yaml", "agents", "list"][..],
            &["text", "json"][..],
        ),
        (
            &["skills", "list", "--status", "bogus"][..],
            &["candidate", "live", "retired"][..],
        ),
        (
            &["tick", "--task", "bogus"][..],
            &["sweep", "backup", "watcher"][..],
        ),
        (
            &["improve", "cadence", "bogus"][..],
            &["sweep", "backup", "watcher"][..],
        ),
    ] {
        let out = capsid(&data, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        for valid in listed {
            assert!(
                stderr(&out).contains(valid),
                "{args:?} lists {valid}: {}",
                stderr(&out)
            );
        }
    }
    // update-scopes checks the same names.
    let out = capsid(
        &data,
        &[
            "agents",
            "update-scopes",
            "--name",
            "right",
            "--tools",
            "raed",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        agent_names(&data).contains("jobs.claim"),
        "the scopes were not changed"
    );
}

#[test]
fn a_key_file_is_written_0600_and_never_replaced() {
    let (dir, data) = migrated();
    let key_file = dir.path().join("agent.key");
    let out = capsid(
        &data,
        &[
            "agents",
            "mint",
            "--name",
            "filed",
            "--namespaces",
            "*",
            "--key-file",
            key_file.to_str().expect("utf-8"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    let key = std::fs::read_to_string(&key_file).expect("the key file");
    let key = key.trim();
    assert!(key.starts_with("capsid_agent_"), "{key}");
    assert!(!printed.contains(key), "the key is not printed: {printed}");
    let mode = std::fs::metadata(&key_file)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "mode {mode:o}");
    // Never replaced: refused before anything is minted.
    let out = capsid(
        &data,
        &[
            "agents",
            "mint",
            "--name",
            "second",
            "--namespaces",
            "*",
            "--key-file",
            key_file.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("exists"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&key_file).expect("kept").trim(),
        key
    );
    assert!(!agent_names(&data).contains("\"second\""));
}

#[test]
fn a_restore_under_a_lost_secret_lists_what_it_brings_in_and_needs_confirming() {
    let (dir, data) = migrated();
    // The old host: an agent and a runner's settings, backed up under its secret.
    for args in [
        &["namespaces", "register", "alpha", "--repo", "octo/alpha"][..],
        &[
            "agents",
            "mint",
            "--name",
            "old-driver",
            "--kind",
            "driver",
            "--namespaces",
            "alpha",
        ][..],
    ] {
        let out = capsid(&data, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    std::fs::write(data.join("signing.key"), "the old host's secret\n").expect("a secret");
    let backup = capsid(&data, &["backup", "--json"]);
    assert_eq!(backup.status.code(), Some(0), "{}", stderr(&backup));
    let media = data.join("media");
    let from = media.to_str().expect("utf-8");

    // The new host: another secret.
    let new_host = dir.path().join("new-host");
    std::fs::create_dir_all(&new_host).expect("a folder");
    std::fs::write(new_host.join("signing.key"), "the new host's secret\n").expect("a secret");
    let refused = capsid(&new_host, &["restore", "--from", from]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    for named in ["signing.key", "CAPSID_SIGNING_SECRET", "--re-sign"] {
        assert!(
            stderr(&refused).contains(named),
            "names {named}: {}",
            stderr(&refused)
        );
    }
    assert!(
        !new_host.join("capsid.db").exists(),
        "refused before any write"
    );

    let unconfirmed = capsid(&new_host, &["restore", "--from", from, "--re-sign"]);
    assert_eq!(
        unconfirmed.status.code(),
        Some(2),
        "{}",
        stderr(&unconfirmed)
    );
    let listing = String::from_utf8_lossy(&unconfirmed.stdout);
    assert!(
        listing.contains("old-driver (driver)"),
        "lists the agents: {listing}"
    );
    assert!(
        stderr(&unconfirmed).contains("--confirm-unverified-origin"),
        "{}",
        stderr(&unconfirmed)
    );
    assert!(
        !new_host.join("capsid.db").exists(),
        "nothing written unconfirmed"
    );

    let confirmed = capsid(
        &new_host,
        &[
            "restore",
            "--from",
            from,
            "--re-sign",
            "--confirm-unverified-origin",
            "--json",
        ],
    );
    assert_eq!(confirmed.status.code(), Some(0), "{}", stderr(&confirmed));
    let report: serde_json::Value =
        serde_json::from_slice(&confirmed.stdout).expect("a JSON report");
    assert_eq!(report["ok"], true, "{report}");
    assert!(
        report["report"]["provenance"]
            .as_str()
            .unwrap_or_default()
            .contains("RE-SIGNED"),
        "{report}"
    );
    assert!(
        report["report"]["re_signed"]["agents"]
            .to_string()
            .contains("old-driver"),
        "{report}"
    );
    assert!(agent_names(&new_host).contains("old-driver"));
}
