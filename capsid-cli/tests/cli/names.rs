//! Unknown names are refused, never dropped: `capsid agents mint --flag` with a flag that does
//! not exist (a typo such as `can_marge`) or a value that is not true or false exits 2 listing
//! the valid flags, and mints nothing.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_capsid");

fn capsid(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env("CAPSID_DATA_DIR", dir)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .output()
        .expect("run capsid")
}

#[test]
fn an_unknown_flag_is_refused_listing_the_valid_ones_and_nothing_is_minted() {
    let dir = tempfile::tempdir().expect("tmp");
    assert!(capsid(dir.path(), &["migrate"]).status.success());
    for flag in ["can_marge", "can_fly", "can_merge=maybe"] {
        let out = capsid(
            dir.path(),
            &[
                "agents",
                "mint",
                "--name",
                "typo",
                "--kind",
                "driver",
                "--namespaces",
                "demo",
                "--flag",
                flag,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("can_merge") && err.contains("--flag"),
            "{flag}: {err}"
        );
    }
    let listed = capsid(dir.path(), &["agents", "list", "--json"]);
    assert!(listed.status.success());
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("\"typo\""),
        "an agent was minted"
    );
    let ok = capsid(
        dir.path(),
        &[
            "agents",
            "mint",
            "--name",
            "right",
            "--kind",
            "driver",
            "--namespaces",
            "demo",
            "--flag",
            "can_merge",
        ],
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}
