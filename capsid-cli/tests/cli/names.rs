//! Unknown names are refused, never dropped: `capsid agents mint --flag` with a flag that does
//! not exist (a typo such as `can_marge`) or a value that is not true or false exits 2 listing
//! the valid flags, and mints nothing; a namespace nobody registered (a typo such as `dmeo`)
//! or a name outside the rule is refused the same way (issue 53, item 18).

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
    assert!(
        capsid(
            dir.path(),
            &["namespaces", "register", "demo", "--repo", "you/demo"]
        )
        .status
        .success()
    );
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

#[test]
fn a_typo_in_a_namespace_or_a_bad_name_mints_nothing_and_names_the_rule() {
    let dir = tempfile::tempdir().expect("tmp");
    assert!(capsid(dir.path(), &["migrate"]).status.success());
    assert!(
        capsid(
            dir.path(),
            &["namespaces", "register", "demo", "--repo", "you/demo"]
        )
        .status
        .success()
    );
    let mint = |name: &str, namespaces: &str| {
        capsid(
            dir.path(),
            &[
                "agents",
                "mint",
                "--name",
                name,
                "--kind",
                "session",
                "--namespaces",
                namespaces,
            ],
        )
    };
    let typo = mint("typo", "demo,dmeo");
    assert_eq!(typo.status.code(), Some(2));
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(
        err.contains("dmeo is not a registered namespace") && err.contains("did you mean demo?"),
        "{err}"
    );
    // A typo is refused even for a key that could register namespaces itself.
    let writer = capsid(
        dir.path(),
        &[
            "agents",
            "mint",
            "--name",
            "writer",
            "--kind",
            "driver",
            "--namespaces",
            "dmeo",
            "--grants",
            "read,write",
        ],
    );
    assert_eq!(writer.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&writer.stderr).contains("did you mean demo?"));
    let far = mint("far", "production");
    assert_eq!(far.status.code(), Some(2));
    let err = String::from_utf8_lossy(&far.stderr);
    assert!(
        err.contains("production is not a registered namespace")
            && !err.contains("did you mean")
            && err.contains("capsid namespaces register production"),
        "{err}"
    );
    let long = mint(&"x".repeat(65), "demo");
    assert_eq!(long.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&long.stderr).contains("the limit is 64"));
    for bad in ["bad name!", ".hidden", "a/b", "tab\there"] {
        let out = mint(bad, "demo");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is not an agent name") && err.contains("letters, digits"),
            "{bad}: {err}"
        );
    }
    let listed = capsid(dir.path(), &["agents", "list", "--json"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        !listed.contains("\"typo\"") && !listed.contains("\"far\""),
        "{listed}"
    );
    assert!(!listed.contains("bad name"), "{listed}");
    // The rule's own edges mint: every allowed character, 64 characters, and "*".
    assert!(mint("ok.agent_1-x", "demo").status.success());
    assert!(mint(&"y".repeat(64), "demo").status.success());
    assert!(mint("everywhere", "*").status.success());
    // Rescoping onto a typo is refused too.
    let rescope = capsid(
        dir.path(),
        &[
            "agents",
            "update-scopes",
            "--name",
            "everywhere",
            "--namespaces",
            "dmeo",
        ],
    );
    assert_eq!(rescope.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&rescope.stderr).contains("did you mean demo?"),
        "{}",
        String::from_utf8_lossy(&rescope.stderr)
    );
}
