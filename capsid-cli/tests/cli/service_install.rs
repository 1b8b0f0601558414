//! `capsid service install` as an owner runs it: the printed unit is what `--apply` writes,
//! systemd itself accepts it (`systemd-analyze verify`, where systemd is installed), secrets
//! stay out of both files, an existing file is never replaced without `--force`, and bad
//! input is refused by name with nothing written. Also the repository's `server.json`, held
//! to the MCP registry's server schema (2025-12-11) for every field it uses.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn capsid(home: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capsid"));
    cmd.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    for unset in [
        "CAPSID_DATABASE_URL",
        "CAPSID_DATA_DIR",
        "CAPSID_SIGNING_SECRET",
    ] {
        cmd.env_remove(unset);
    }
    cmd.arg("service").arg("install").args(args);
    cmd.output().expect("capsid runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("the file exists")
        .permissions()
        .mode()
        & 0o777
}

/// `systemd-analyze verify` of `unit`: `None` where systemd is not installed (said on
/// stderr), else its combined output and whether it passed.
fn verify(unit: &Path) -> Option<(bool, String)> {
    let out = match Command::new("systemd-analyze")
        .arg("verify")
        .arg(unit)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!(
                "systemd-analyze is not available ({e}): the unit was not verified by systemd"
            );
            return None;
        }
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), said))
}

#[test]
fn a_user_unit_is_printed_then_written_as_printed_and_systemd_accepts_it() {
    let home = tempfile::tempdir().expect("a home");
    let secret = home.path().join("signing.key");
    std::fs::write(&secret, "s3cret-value-never-copied").expect("a key file");
    let credential = format!("CAPSID_SIGNING_SECRET={}", secret.display());
    let unit_path = home.path().join(".config/systemd/user/capsid.service");
    let env_path = home.path().join(".config/capsid/capsid.env");

    // Printed only: nothing written.
    let printed = capsid(
        home.path(),
        &["--user", "--credential", &credential, "--json"],
    );
    assert!(printed.status.success(), "{}", text(&printed));
    let plan: Value = serde_json::from_slice(&printed.stdout).expect("json");
    assert_eq!(plan["applied"], false);
    assert_eq!(plan["unit_path"], unit_path.to_str().expect("utf-8"));
    assert_eq!(plan["env_path"], env_path.to_str().expect("utf-8"));
    assert!(
        !unit_path.exists() && !env_path.exists(),
        "printing wrote a file"
    );

    let unit = plan["unit"].as_str().expect("unit text").to_owned();
    let binary = std::fs::canonicalize(env!("CARGO_BIN_EXE_capsid")).expect("the binary");
    assert!(
        unit.contains(&format!("ExecStart={} serve\n", binary.display())),
        "{unit}"
    );
    assert!(
        unit.contains("Environment=CAPSID_DATA_DIR=%S/capsid\n"),
        "{unit}"
    );
    assert!(unit.contains("StateDirectory=capsid\n"), "{unit}");
    // The secret reaches serve as a credential reference; its value is in neither file.
    assert!(
        unit.contains(&format!(
            "LoadCredential=capsid-signing-secret:{}\n",
            secret.display()
        )),
        "{unit}"
    );
    assert!(
        unit.contains("Environment=CAPSID_SIGNING_SECRET=file:%d/capsid-signing-secret\n"),
        "{unit}"
    );
    assert!(unit.contains("WantedBy=default.target"), "{unit}");
    let env = plan["env"].as_str().expect("env text").to_owned();
    assert!(env.contains("CAPSID_LISTEN=127.0.0.1:8787\n"), "{env}");
    for file in [&unit, &env] {
        assert!(!file.contains("s3cret-value-never-copied"), "{file}");
    }

    // Written as printed: the unit readable by systemd, the environment file by its owner only.
    let applied = capsid(
        home.path(),
        &["--user", "--credential", &credential, "--apply"],
    );
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(
        String::from_utf8_lossy(&applied.stdout).contains(
            "systemctl --user daemon-reload && systemctl --user enable --now capsid.service"
        ),
        "{}",
        text(&applied)
    );
    assert_eq!(std::fs::read_to_string(&unit_path).expect("unit"), unit);
    assert_eq!(std::fs::read_to_string(&env_path).expect("env"), env);
    assert_eq!(mode(&unit_path), 0o644);
    assert_eq!(mode(&env_path), 0o600);

    if let Some((ok, said)) = verify(&unit_path) {
        assert!(
            ok,
            "systemd-analyze verify refused the unit:\n{said}\n{unit}"
        );
        assert!(said.trim().is_empty(), "systemd warned:\n{said}\n{unit}");
    }

    // A second --apply replaces nothing and says which file and how.
    std::fs::write(&env_path, "CAPSID_LISTEN=10.0.0.1:9999\n").expect("an owner's edit");
    let again = capsid(home.path(), &["--user", "--apply"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        text(&again).contains(&format!("{} exists", env_path.display()))
            && text(&again).contains("--force"),
        "{}",
        text(&again)
    );
    assert_eq!(
        std::fs::read_to_string(&env_path).expect("env"),
        "CAPSID_LISTEN=10.0.0.1:9999\n"
    );
    assert_eq!(std::fs::read_to_string(&unit_path).expect("unit"), unit);

    // With only the unit left, a second --apply still writes nothing: not even the missing
    // environment file.
    std::fs::remove_file(&env_path).expect("the owner removes the environment file");
    let half = capsid(home.path(), &["--user", "--apply"]);
    assert_eq!(half.status.code(), Some(2), "{}", text(&half));
    assert!(
        text(&half).contains(&format!("{} exists", unit_path.display())),
        "{}",
        text(&half)
    );
    assert!(
        !env_path.exists(),
        "a refused install wrote {}",
        env_path.display()
    );

    // --force replaces both, whole.
    let forced = capsid(
        home.path(),
        &["--user", "--apply", "--force", "--listen", "127.0.0.1:9911"],
    );
    assert!(forced.status.success(), "{}", text(&forced));
    let env = std::fs::read_to_string(&env_path).expect("env");
    assert!(env.contains("CAPSID_LISTEN=127.0.0.1:9911\n"), "{env}");
    assert_eq!(mode(&env_path), 0o600);
    let unit = std::fs::read_to_string(&unit_path).expect("unit");
    assert!(!unit.contains("LoadCredential"), "{unit}");
}

#[test]
fn a_system_unit_is_hardened_and_systemd_accepts_it() {
    let home = tempfile::tempdir().expect("a home");
    let keys = tempfile::tempdir().expect("a folder for the key");
    let pem = keys.path().join("app.pem");
    std::fs::write(&pem, "not a real key").expect("a key file");
    let credential = format!("CAPSID_GITHUB_APP_PRIVATE_KEY={}", pem.display());
    // A binary outside every home folder (this checkout may live under /home).
    let out = capsid(
        home.path(),
        &[
            "--json",
            "--name",
            "capsid-prod",
            "--public-url",
            "https://capsid.example.org",
            "--binary",
            "/bin/sh",
            "--credential",
            &credential,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(plan["unit_path"], "/etc/systemd/system/capsid-prod.service");
    assert_eq!(plan["env_path"], "/etc/capsid-prod/capsid-prod.env");
    let unit = plan["unit"].as_str().expect("unit");
    let load = format!(
        "LoadCredential=capsid-github-app-private-key:{}",
        pem.display()
    );
    for line in [
        "DynamicUser=yes",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "StateDirectory=capsid-prod",
        "Environment=CAPSID_DATA_DIR=%S/capsid-prod",
        &load,
        "Environment=CAPSID_GITHUB_APP_PRIVATE_KEY=file:%d/capsid-github-app-private-key",
        "WantedBy=multi-user.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line} missing:\n{unit}");
    }
    let env = plan["env"].as_str().expect("env");
    assert!(
        env.contains("CAPSID_PUBLIC_URL=https://capsid.example.org\n"),
        "{env}"
    );
    // systemd checks the EnvironmentFile's folder only at start; the unit file itself is
    // verified from a scratch copy.
    let scratch = home.path().join("capsid-prod.service");
    std::fs::write(&scratch, unit).expect("a scratch unit");
    if let Some((ok, said)) = verify(&scratch) {
        assert!(
            ok,
            "systemd-analyze verify refused the unit:\n{said}\n{unit}"
        );
        assert!(said.trim().is_empty(), "systemd warned:\n{said}\n{unit}");
    }
}

#[test]
fn a_database_url_goes_to_the_owner_only_file_never_the_unit() {
    let home = tempfile::tempdir().expect("a home");
    let url = "postgres://capsid:pw-in-env-file@db.internal/capsid";
    let out = Command::new(env!("CARGO_BIN_EXE_capsid"))
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .args([
            "--database-url",
            url,
            "service",
            "install",
            "--user",
            "--apply",
            "--json",
        ])
        .output()
        .expect("capsid runs");
    assert!(out.status.success(), "{}", text(&out));
    // What is printed never shows the password (issue 53, item 10); the owner-only file has it.
    assert!(
        !text(&out).contains("pw-in-env-file"),
        "the password was printed: {}",
        text(&out)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        plan["env"]
            .as_str()
            .expect("env")
            .contains("CAPSID_DATABASE_URL=postgres://capsid:***@db.internal/capsid\n"),
        "{plan}"
    );
    let written = std::fs::read_to_string(plan["env_path"].as_str().expect("env_path"))
        .expect("the environment file");
    assert!(
        written.contains(&format!("CAPSID_DATABASE_URL={url}\n")),
        "{written}"
    );
    assert!(
        !plan["unit"]
            .as_str()
            .expect("unit")
            .contains("pw-in-env-file")
    );
}

#[test]
fn bad_input_is_refused_by_name_and_writes_nothing() {
    let home = tempfile::tempdir().expect("a home");
    let config: PathBuf = home.path().join(".config");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--user", "--apply", "--credential", "CAPSID_LISTEN=/etc/x"],
            "CAPSID_LISTEN is not a setting that takes a secret; one of CAPSID_SIGNING_SECRET",
        ),
        (
            &[
                "--user",
                "--apply",
                "--credential",
                "CAPSID_COOKIE_KEY=cookie.key",
            ],
            "the path of CAPSID_COOKIE_KEY must be absolute",
        ),
        (
            &["--user", "--apply", "--credential", "CAPSID_COOKIE_KEY"],
            "expected VAR=/absolute/path",
        ),
        (&["--user", "--force"], "--apply"),
        (
            &["--user", "--apply", "--name", "../etc/evil"],
            "a unit name is",
        ),
    ];
    for (args, said) in cases {
        let out = capsid(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(said), "{args:?}: {}", text(&out));
        assert!(!config.exists(), "{args:?} wrote {}", config.display());
    }
    // A credential file that does not exist (issue 53, item 11): refused, saying how to make
    // one, before anything is written.
    let nowhere = home.path().join("no-such-signing.key");
    let out = capsid(
        home.path(),
        &[
            "--user",
            "--apply",
            "--credential",
            &format!("CAPSID_SIGNING_SECRET={}", nowhere.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{}: no such file", nowhere.display()))
            && text(&out).contains("openssl rand -hex 32"),
        "{}",
        text(&out)
    );
    assert!(!config.exists());
    // A system unit whose binary sits in a home folder (~/.cargo/bin) that ProtectHome=yes
    // hides: it could never start, so it is refused naming the fix.
    let cargo_bin = home.path().join(".cargo/bin");
    std::fs::create_dir_all(&cargo_bin).expect("~/.cargo/bin");
    let in_home = cargo_bin.join("capsid");
    std::fs::write(&in_home, "#!/bin/sh\n").expect("a binary");
    let out = capsid(
        home.path(),
        &["--json", "--binary", in_home.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("ProtectHome=yes hides")
            && text(&out).contains("/usr/local/bin/capsid"),
        "{}",
        text(&out)
    );
    // As a user service it is where it belongs.
    let out = capsid(
        home.path(),
        &[
            "--user",
            "--json",
            "--binary",
            in_home.to_str().expect("utf-8"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let missing = capsid(
        home.path(),
        &["--user", "--apply", "--binary", "/nonexistent/capsid"],
    );
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("/nonexistent/capsid"),
        "{}",
        text(&missing)
    );
    assert!(!config.exists());
}

/// The repository's `server.json` against the MCP registry's server schema (2025-12-11, the
/// `$schema` it names), rule by rule for the fields it uses, and against this build.
#[test]
fn server_json_is_a_valid_registry_entry_for_this_build() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let raw = std::fs::read_to_string(root.join("server.json")).expect("server.json at the root");
    let entry: Value = serde_json::from_str(&raw).expect("server.json parses");
    assert_eq!(
        entry["$schema"],
        "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
    );
    let object = entry.as_object().expect("an object");
    for key in object.keys() {
        assert!(
            [
                "$schema",
                "name",
                "description",
                "version",
                "repository",
                "websiteUrl",
                "packages",
                "remotes",
                "_meta"
            ]
            .contains(&key.as_str()),
            "{key} is not a field of the schema"
        );
    }
    // name: required, reverse-DNS with exactly one slash, 3-200 characters.
    let name = entry["name"].as_str().expect("name is a string");
    let (ns, server) = name.split_once('/').expect("one slash");
    let dns = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-';
    assert!(!ns.is_empty() && ns.chars().all(dns), "{name}");
    assert!(
        !server.is_empty() && server.chars().all(|c| dns(c) || c == '_'),
        "{name}"
    );
    assert!((3..=200).contains(&name.len()), "{name}");
    // description: required, 1-100 characters.
    let description = entry["description"].as_str().expect("description");
    assert!(
        (1..=100).contains(&description.chars().count()),
        "{} characters",
        description.chars().count()
    );
    // version: required, this build's, a specific version (no range).
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
    // remotes: streamable-http, at serve's MCP route, with the auth header as a secret input.
    let remotes = entry["remotes"].as_array().expect("remotes");
    assert!(!remotes.is_empty());
    for remote in remotes {
        assert_eq!(remote["type"], "streamable-http");
        let url = remote["url"].as_str().expect("url");
        assert!(
            url.starts_with("http://") || url.starts_with("https://"),
            "{url}"
        );
        assert!(url.ends_with("/ops/mcp"), "{url}");
        for header in remote["headers"].as_array().expect("headers") {
            assert!(header["name"].is_string(), "{header}");
            for flag in ["isRequired", "isSecret"] {
                assert!(
                    header[flag].is_null() || header[flag].is_boolean(),
                    "{header}"
                );
            }
            assert!(header["description"].is_string(), "{header}");
        }
        assert!(
            remote["headers"]
                .as_array()
                .expect("headers")
                .iter()
                .any(|h| h["name"] == "Authorization" && h["isSecret"] == true),
            "{remote}"
        );
    }
}
