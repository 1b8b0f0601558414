//! `capsid backup pull` (issue 56, item 3) through the real binary against a real `capsid
//! serve`, on SQLite and on Postgres, to a folder and to a real S3-compatible server (moto):
//! the newest dump arrives whole with every digest the manifest's; a second pull copies
//! nothing; a copy damaged at the destination is copied again; a dump changed on the server
//! after it was sealed is refused, naming the file, with nothing of it written (no partial
//! file either); bad input names the field and writes nothing; a wrong key is refused.
//! `capsid backup schedule` prints and installs its timer as `capsid drive schedule` does.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use capsid_blobs::ObjectBlobStore;
use capsid_core::crypto::sha256_hex;
use capsid_core::ports::BlobStore;
use capsid_tests::moto::Moto;
use serde_json::Value;

use super::rehearsal::{BIN, Place, Serve, sqlite_place};

/// Every file of `run` in the media store: (key, bytes).
fn dump_files(place: &Place) -> Vec<(String, Vec<u8>)> {
    let run = place.newest_run();
    let run_id = run.file_name().and_then(|n| n.to_str()).expect("run id");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&run)
        .expect("run")
        .map(|e| {
            let path = e.expect("entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("name")
                .to_owned();
            (
                format!("backups/json/{run_id}/{name}"),
                std::fs::read(&path).expect("read"),
            )
        })
        .collect();
    files.sort();
    files
}

/// `capsid backup pull --json ...` with `env`: (exit code, JSON, stderr).
fn pull(place: &Place, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Value, String) {
    let mut all = vec!["backup", "pull", "--json"];
    all.extend_from_slice(args);
    let mut cmd = Command::new(BIN);
    cmd.args(&all)
        // The puller's host holds the key only, never the signing secret.
        .env("CAPSID_DATA_DIR", place.data.join("elsewhere"))
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_BACKUP_PULL_KEY")
        .env_remove("CAPSID_BACKUP_SERVER")
        .env("CAPSID_LOG", "warn");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run capsid backup pull");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        out.status.code(),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every file below `dir`, relative, sorted.
fn files_below(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let path = e.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(
                    path.strip_prefix(root)
                        .expect("below")
                        .display()
                        .to_string(),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

async fn pulls_to_a_folder_and_to_s3(place: Place, case: &str) {
    place.seeded_with_a_dump();
    let s = Serve::start(&place, &[]);
    let key = place.ok(&["backup", "pull-key"]).trim().to_owned();
    assert_eq!(key.len(), 64, "{key}");
    let files = dump_files(&place);
    let n = files.len();
    assert!(n >= 5, "{files:?}");
    let with_key = [("PULL_KEY", key.as_str())];
    let dest = tempfile::tempdir().expect("a destination");
    let to = dest.path().join("off-site");
    let to_s = to.to_str().expect("utf-8");
    let args = [
        "--server",
        s.url.as_str(),
        "--to",
        to_s,
        "--key",
        "env:PULL_KEY",
    ];

    // The first pull copies every file of the newest dump, each as the server holds it.
    let (code, summary, stderr) = pull(&place, &args, &with_key);
    assert_eq!(code, Some(0), "{summary} {stderr}");
    assert_eq!(
        (summary["copied"].as_u64(), summary["skipped"].as_u64()),
        (Some(n as u64), Some(0)),
        "{summary}"
    );
    for (k, bytes) in &files {
        assert_eq!(&std::fs::read(to.join(k)).expect(k), bytes, "{k}");
    }
    assert!(
        stderr.contains("SHA-256 verified"),
        "progress is printed: {stderr}"
    );
    let last = summary["files"].as_array().and_then(|f| f.last()).cloned();
    assert!(
        last.is_some_and(|f| f["key"]
            .as_str()
            .is_some_and(|k| k.ends_with("manifest.json"))),
        "the manifest comes last: {summary}"
    );

    // Again: nothing to copy.
    let (code, summary, _) = pull(&place, &args, &with_key);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(
        (summary["copied"].as_u64(), summary["skipped"].as_u64()),
        (Some(0), Some(n as u64)),
        "{summary}"
    );

    // A copy damaged at the destination is copied again, and only it.
    let (damaged, good) = &files[0];
    std::fs::write(to.join(damaged), b"damaged").expect("damage");
    let (code, summary, _) = pull(&place, &args, &with_key);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(
        (summary["copied"].as_u64(), summary["skipped"].as_u64()),
        (Some(1), Some(n as u64 - 1)),
        "{summary}"
    );
    assert_eq!(&std::fs::read(to.join(damaged)).expect("again"), good);

    // Bad input names the field, exits 2 and writes nothing.
    let nowhere = dest.path().join("never");
    let nowhere_s = nowhere.to_str().expect("utf-8");
    for (bad, field) in [
        (
            vec![
                "--server",
                s.url.as_str(),
                "--to",
                "ftp://host/x",
                "--key",
                "env:PULL_KEY",
            ],
            "--to",
        ),
        (
            vec![
                "--server",
                "localhost:8787",
                "--to",
                nowhere_s,
                "--key",
                "env:PULL_KEY",
            ],
            "--server",
        ),
        (
            vec![
                "--server",
                s.url.as_str(),
                "--to",
                nowhere_s,
                "--key",
                "abc123",
            ],
            "--key",
        ),
        (vec!["--server", s.url.as_str(), "--to", nowhere_s], "--key"),
    ] {
        let (code, answer, _) = pull(&place, &bad, &with_key);
        assert_eq!(code, Some(2), "{bad:?}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with(field) || error.contains(&format!("{field} ")),
            "{bad:?}: {error}"
        );
    }
    // A key of the right shape that is not this server's.
    let wrong = "0".repeat(64);
    let (code, answer, _) = pull(
        &place,
        &[
            "--server",
            s.url.as_str(),
            "--to",
            nowhere_s,
            "--key",
            &wrong,
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{answer}");
    assert!(
        answer["error"].as_str().is_some_and(|e| e.contains("401")),
        "{answer}"
    );
    assert!(!nowhere.exists(), "nothing written for a refused pull");

    // To a real S3-compatible server.
    if let Some(moto) = Moto::start(case).await {
        moto.bucket("offsite").await;
        let aws = [
            ("PULL_KEY", key.as_str()),
            ("AWS_ENDPOINT", moto.endpoint.as_str()),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
        ];
        let s3 = [
            "--server",
            s.url.as_str(),
            "--to",
            "s3://offsite/capsid",
            "--key",
            "env:PULL_KEY",
        ];
        let (code, summary, stderr) = pull(&place, &s3, &aws);
        assert_eq!(code, Some(0), "{summary} {stderr}");
        assert_eq!(summary["copied"].as_u64(), Some(n as u64), "{summary}");
        let config: Vec<(&str, String)> = moto.config();
        let pairs: Vec<(&str, &str)> = config.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let bucket = ObjectBlobStore::s3_with("offsite", "capsid/", &pairs).expect("the bucket");
        for (k, bytes) in &files {
            let held = bucket.get(k).await.expect(k);
            assert_eq!(sha256_hex(&held), sha256_hex(bytes), "{k}");
        }
        let (code, summary, _) = pull(&place, &s3, &aws);
        assert_eq!(code, Some(0), "{summary}");
        assert_eq!(
            (summary["copied"].as_u64(), summary["skipped"].as_u64()),
            (Some(0), Some(n as u64)),
            "{summary}"
        );
    }

    // A dump changed on the server after it was sealed: refused naming the file; that file
    // and the manifest never reach a fresh destination, and no partial file is left.
    let run = place.newest_run();
    let agents = run.join("agents.json");
    let mut bytes = std::fs::read(&agents).expect("agents.json");
    bytes.insert(bytes.len() - 2, b' ');
    std::fs::write(&agents, bytes).expect("alter");
    let fresh = dest.path().join("fresh");
    let fresh_s = fresh.to_str().expect("utf-8");
    let (code, answer, _) = pull(
        &place,
        &[
            "--server",
            s.url.as_str(),
            "--to",
            fresh_s,
            "--key",
            "env:PULL_KEY",
        ],
        &with_key,
    );
    assert_eq!(code, Some(2), "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("agents.json") && error.contains("SHA-256"),
        "{error}"
    );
    let written = files_below(&fresh);
    assert!(
        !written.iter().any(|f| f.ends_with("agents.json")
            || f.ends_with("manifest.json")
            || f.contains("partial")),
        "{written:?}"
    );
    drop(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_to_a_folder_and_to_s3_sqlite() {
    let dir = tempfile::tempdir().expect("a folder");
    pulls_to_a_folder_and_to_s3(sqlite_place(dir.path()), "cli_backup_pull_sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_to_a_folder_and_to_s3_postgres() {
    let Some((database, url)) = capsid_tests::harness::fresh_database("cli_backup_pull").await
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("a folder");
    pulls_to_a_folder_and_to_s3(
        Place {
            data: dir.path().join("data"),
            database: Some(url),
        },
        "cli_backup_pull_postgres",
    )
    .await;
    database.remove().await;
}

#[test]
fn the_pull_timer_is_printed_and_installed_disabled() {
    let out = Command::new(BIN)
        .args([
            "backup",
            "schedule",
            "--server",
            "https://capsid.example.org",
            "--to",
            "/srv/capsid-dumps",
            "--at",
            "10:30",
            "--cron",
        ])
        .env_remove("CAPSID_BACKUP_SERVER")
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
            "# CRON_TZ=UTC 30 10 * * * {BIN} backup pull --server https://capsid.example.org --to /srv/capsid-dumps\n"
        )),
        "{text}"
    );
    assert!(text.contains("printed only"), "{text}");

    let home = tempfile::tempdir().expect("home");
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
            "backup",
            "schedule",
            "--server",
            "https://capsid.example.org",
            "--to",
            "s3://dumps/capsid",
            "--apply",
        ])
        .env("HOME", home.path())
        .env("PATH", path)
        .env_remove("CAPSID_BACKUP_SERVER")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let units = home.path().join(".config/systemd/user");
    let timer = std::fs::read_to_string(units.join("capsid-backup-pull.timer")).expect("timer");
    assert!(timer.contains("OnCalendar=*-*-* 10:00:00 UTC"), "{timer}");
    let service =
        std::fs::read_to_string(units.join("capsid-backup-pull.service")).expect("service");
    assert!(
        service.contains(&format!(
            "ExecStart={BIN} backup pull --server https://capsid.example.org --to s3://dumps/capsid"
        )) && service.contains("EnvironmentFile=%h/.config/capsid/backup-pull.env"),
        "{service}"
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("installed, disabled"), "{said}");

    for (bad, field) in [("25:00", "--at"), ("noon", "--at")] {
        let out = Command::new(BIN)
            .args([
                "backup",
                "schedule",
                "--server",
                "https://x.example",
                "--to",
                "/srv/d",
                "--at",
                bad,
            ])
            .output()
            .expect("run");
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(field), "{bad}: {err}");
    }
    let out = Command::new(BIN)
        .args([
            "backup",
            "schedule",
            "--server",
            "https://x.example",
            "--to",
            "ftp://h/x",
        ])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--to"));
}
