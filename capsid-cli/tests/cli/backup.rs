//! The real binary: `capsid backup` writes a dump and says so (`--json` summary, exit 0);
//! `capsid restore --rehearse` restores it into a throwaway store and verifies it (exit 0);
//! `capsid restore` into the non-empty source is refused (exit 2) and into an empty file
//! succeeds; a data folder with another signing secret is refused (exit 2, naming
//! `signing.key` and `CAPSID_SIGNING_SECRET`); a folder with no dump is refused. A dump with
//! one byte changed is refused (exit 2, naming the file) and nothing reaches the target.

use std::path::Path;
use std::process::{Command, Output};

fn capsid(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(args)
        .env("CAPSID_DATA_DIR", data)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_MEDIA_URL")
        .env_remove("CAPSID_HOLDOUT_URL")
        .env("CAPSID_LOG", "warn")
        .output()
        .expect("run capsid")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn backup_then_restore_with_exit_codes() {
    let dir = tempfile::tempdir().expect("a folder");
    let data = dir.path().join("data");
    let migrated = capsid(&data, &["migrate"]);
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let registered = capsid(
        &data,
        &["namespaces", "register", "alpha", "--repo", "octo/alpha"],
    );
    assert!(
        registered.status.success(),
        "{}",
        String::from_utf8_lossy(&registered.stderr)
    );
    let minted = capsid(
        &data,
        &[
            "agents",
            "mint",
            "--name",
            "me",
            "--kind",
            "session",
            "--namespaces",
            "*",
            "--grants",
            "read,write",
        ],
    );
    assert!(
        minted.status.success(),
        "{}",
        String::from_utf8_lossy(&minted.stderr)
    );

    let backup = capsid(&data, &["backup", "--json"]);
    assert_eq!(
        backup.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&backup.stderr)
    );
    let summary = json(&backup);
    assert_eq!(summary["ran"], true, "{summary}");
    // No documents yet: the dump is written, pruning refused by the preflight.
    assert_eq!(summary["prune_refused"], "documents-empty");
    let media = data.join("media");
    assert!(media.join("backups/json").is_dir());

    let rehearse = capsid(
        &data,
        &[
            "restore",
            "--from",
            media.to_str().expect("utf-8"),
            "--rehearse",
            "--json",
        ],
    );
    assert_eq!(
        rehearse.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rehearse.stderr)
    );
    let report = json(&rehearse);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["rehearsal"], true);
    let agents = report["report"]["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|t| t["table"] == "agents")
        .cloned()
        .expect("agents");
    assert_eq!(
        (agents["expected"].as_u64(), agents["restored"].as_u64()),
        (Some(1), Some(1))
    );

    let into_source = capsid(
        &data,
        &["restore", "--from", media.to_str().expect("utf-8")],
    );
    assert_eq!(
        into_source.status.code(),
        Some(2),
        "refused: {}",
        String::from_utf8_lossy(&into_source.stderr)
    );
    let refused = String::from_utf8_lossy(&into_source.stderr);
    assert!(refused.contains("not empty"), "{refused}");
    // It says what to move aside and what to keep (issue 53, item 16).
    assert!(
        refused.contains("capsid.db")
            && refused.contains("aside")
            && refused.contains("signing.key"),
        "{refused}"
    );

    // A data folder with another signing secret: refused before anything is written, naming
    // what to carry over.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).expect("a folder");
    std::fs::write(other.join("signing.key"), "another host's secret").expect("a key");
    let elsewhere = dir.path().join("elsewhere.db");
    let elsewhere_url = format!("sqlite://{}", elsewhere.display());
    let foreign = capsid(
        &other,
        &[
            "restore",
            "--from",
            media.to_str().expect("utf-8"),
            "--database-url",
            &elsewhere_url,
        ],
    );
    let said = String::from_utf8_lossy(&foreign.stderr);
    assert_eq!(foreign.status.code(), Some(2), "{said}");
    assert!(
        said.contains("another signing secret")
            && said.contains("signing.key")
            && said.contains("CAPSID_SIGNING_SECRET"),
        "{said}"
    );
    let listed = capsid(
        &other,
        &["--database-url", &elsewhere_url, "agents", "list", "--json"],
    );
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("\"me\""),
        "nothing was restored"
    );

    let fresh = dir.path().join("restored.db");
    let url = format!("sqlite://{}", fresh.display());
    let restored = capsid(
        &data,
        &[
            "restore",
            "--from",
            media.to_str().expect("utf-8"),
            "--database-url",
            &url,
        ],
    );
    assert_eq!(
        restored.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    assert!(String::from_utf8_lossy(&restored.stdout).contains("verified"));
    let listed = capsid(&data, &["--database-url", &url, "agents", "list", "--json"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("\"me\""),
        "the agent moved"
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("a folder");
    let nothing = capsid(
        &data,
        &[
            "restore",
            "--from",
            empty.to_str().expect("utf-8"),
            "--rehearse",
        ],
    );
    assert_eq!(
        nothing.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&nothing.stderr)
    );
}

/// A data folder under `dir` with one agent (`me`) and one dump of it: the folder and the run.
fn one_dump(dir: &Path) -> (std::path::PathBuf, String) {
    let data = dir.join("data");
    for args in [
        &["migrate"][..],
        &[
            "agents",
            "mint",
            "--name",
            "me",
            "--kind",
            "session",
            "--namespaces",
            "*",
            "--grants",
            "read,write",
        ],
        &["backup", "--json"],
    ] {
        let out = capsid(&data, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let run = std::fs::read_dir(data.join("media/backups/json"))
        .expect("the dump's folder")
        .flatten()
        .next()
        .expect("one dump")
        .file_name();
    (data, run.to_str().expect("utf-8").to_owned())
}

/// Copies dump `run` of `data` into the media store `root`: the copy's folder.
fn copy_dump(data: &Path, run: &str, root: &Path) -> std::path::PathBuf {
    let copy = root.join("backups/json").join(run);
    std::fs::create_dir_all(&copy).expect("a folder");
    for e in std::fs::read_dir(data.join("media/backups/json").join(run))
        .expect("the dump")
        .flatten()
    {
        std::fs::copy(e.path(), copy.join(e.file_name())).expect("copy");
    }
    copy
}

#[test]
fn restore_refuses_a_dump_with_one_byte_changed_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("a folder");
    let (data, run) = one_dump(dir.path());
    // A copy of the dump with one byte of the agents table changed: still valid JSON, an
    // agent renamed.
    let tampered = dir.path().join("tampered");
    let copy = copy_dump(&data, &run, &tampered);
    let agents = copy.join("agents.json");
    let text = std::fs::read_to_string(&agents).expect("agents.json");
    let changed = text.replacen("\"name\":\"me\"", "\"name\":\"mf\"", 1);
    assert_eq!(changed.len(), text.len(), "one byte");
    assert_ne!(changed, text, "the byte changed");
    std::fs::write(&agents, changed).expect("write");

    let target = dir.path().join("target.db");
    let url = format!("sqlite://{}", target.display());
    let refused = capsid(
        &data,
        &[
            "restore",
            "--from",
            tampered.to_str().expect("utf-8"),
            "--database-url",
            &url,
        ],
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("capsid restore refused")
            && said.contains(&format!("backups/json/{run}/agents.json"))
            && said.contains("SHA-256"),
        "{said}"
    );
    // Nothing reached the target: no agent, neither the renamed one nor the original.
    let listed = capsid(&data, &["--database-url", &url, "agents", "list", "--json"]);
    let listed = json(&listed);
    assert_eq!(listed["agents"], serde_json::json!([]), "{listed}");
}

/// Issue 53, item 7: the seal of a dump this build made, removed (and the agents table edited
/// to match): refused as a removed seal even with --accept-unverified, never as an old dump.
/// A dump that really is from before sealing (its schema older) is shown first, as --re-sign
/// shows one, and restored only with --confirm-unverified-origin.
#[test]
fn a_dump_whose_seal_was_removed_is_refused_and_an_old_one_previewed_first() {
    let dir = tempfile::tempdir().expect("a folder");
    let (data, run) = one_dump(dir.path());
    let copy_with = |name: &str, schema: Option<&str>| {
        let root = dir.path().join(name);
        let copy = copy_dump(&data, &run, &root);
        let path = copy.join("manifest.json");
        let mut manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("manifest")).expect("JSON");
        assert!(manifest["integrity"].is_object(), "the dump was sealed");
        manifest
            .as_object_mut()
            .expect("object")
            .remove("integrity");
        if let Some(schema) = schema {
            manifest["schema_version"] = serde_json::json!(schema);
        }
        std::fs::write(&path, serde_json::to_vec(&manifest).expect("JSON")).expect("write");
        root
    };
    let restore = |from: &Path, target: &str, extra: &[&str]| {
        let url = format!("sqlite://{}", dir.path().join(target).display());
        let mut args = vec![
            "restore",
            "--from",
            from.to_str().expect("utf-8"),
            "--database-url",
        ];
        args.push(&url);
        args.extend_from_slice(extra);
        capsid(&data, &args)
    };
    let stripped = copy_with("stripped", None);
    for extra in [&[][..], &["--accept-unverified"]] {
        let out = restore(&stripped, "stripped.db", extra);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {said}");
        assert!(
            said.contains("its seal was removed") && !said.contains("--accept-unverified"),
            "{extra:?}: {said}"
        );
        assert!(!dir.path().join("stripped.db").exists(), "nothing written");
    }
    // A dump from before sealing: previewed, then restored once confirmed.
    let old = copy_with("old", Some("0017_skill_sources"));
    let preview = restore(&old, "old.db", &["--accept-unverified"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&preview.stdout),
        String::from_utf8_lossy(&preview.stderr)
    );
    assert_eq!(preview.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--accept-unverified of run")
            && said.contains("me")
            && said.contains("--confirm-unverified-origin"),
        "{said}"
    );
    assert!(
        !dir.path().join("old.db").exists(),
        "the preview wrote nothing"
    );
    let done = restore(
        &old,
        "old.db",
        &["--accept-unverified", "--confirm-unverified-origin"],
    );
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    // The confirmation alone names what it confirms.
    let alone = restore(&old, "alone.db", &["--confirm-unverified-origin"]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&alone.stderr)
            .contains("confirms --re-sign or --accept-unverified")
    );
}
