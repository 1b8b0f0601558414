//! The real binary and the model API of the loop's `api` mode: `serve --help` names its two
//! settings; `capsid doctor` reports it as not configured, accepted or refused by the fake
//! Messages API; `serve` resolves the key's credential reference at start (one that does not
//! resolve stops it, naming the setting) and never prints the key.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use capsid_tests::fake_model::FakeModel;

const KEY: &str = "sk-ant-cli-test-SECRET-4242";

/// The binary on `dir`, with no setting from the outer environment but ours.
fn capsid(dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capsid"));
    cmd.env("CAPSID_DATA_DIR", dir);
    for var in [
        "CAPSID_DATABASE_URL",
        "CAPSID_SIGNING_SECRET",
        "CAPSID_OPERATOR_KEY_HASH",
        "CAPSID_GITHUB_APP_CLIENT_ID",
        "CAPSID_GITHUB_APP_PRIVATE_KEY",
        "CAPSID_PUBLIC_URL",
        "CAPSID_TRUSTED_PROXIES",
        "CAPSID_ANTHROPIC_API_KEY",
        "CAPSID_ANTHROPIC_API_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// `capsid doctor --json`: overall health, the model check, and everything printed.
fn doctor(mut cmd: Command) -> (bool, serde_json::Value, String) {
    let out = cmd.args(["doctor", "--json"]).output().expect("run doctor");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let printed = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("not JSON: {printed}"));
    let check = report["checks"]
        .as_array()
        .and_then(|c| {
            c.iter().find(|c| {
                c["check"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("model API"))
            })
        })
        .cloned()
        .unwrap_or_else(|| panic!("no model check in {report}"));
    assert_eq!(report["healthy"], out.status.success(), "{report}");
    (out.status.success(), check, printed)
}

#[test]
fn serve_help_names_the_model_settings() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let out = capsid(dir.path())
        .args(["serve", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for name in [
        "CAPSID_ANTHROPIC_API_KEY",
        "CAPSID_ANTHROPIC_API_URL",
        "https://api.anthropic.com",
    ] {
        assert!(help.contains(name), "{name} missing from:\n{help}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reports_the_model_api_without_printing_the_key() {
    let dir = tempfile::tempdir().expect("temporary folder");
    assert!(
        capsid(dir.path())
            .arg("migrate")
            .status()
            .expect("migrate")
            .success()
    );
    let fake = FakeModel::start(KEY).await;

    let (healthy, check, _) = doctor(capsid(dir.path()));
    assert!(healthy, "no model is fine: {check}");
    assert_eq!(check["value"], "not configured", "{check}");

    // The key as a credential reference, resolved by doctor and accepted by the API.
    let mut cmd = capsid(dir.path());
    cmd.env("CAPSID_ANTHROPIC_API_KEY", "env:CAPSID_TEST_MODEL_KEY")
        .env("CAPSID_TEST_MODEL_KEY", KEY)
        .env("CAPSID_ANTHROPIC_API_URL", &fake.url);
    let (healthy, check, printed) = doctor(cmd);
    assert!(healthy, "{check}");
    assert_eq!(check["value"], "configured", "{check}");
    assert_eq!(check["key"], "accepted", "{check}");
    assert_eq!(check["api_url"], fake.url.as_str(), "{check}");
    assert!(!printed.contains(KEY), "{printed}");
    let calls = fake.requests();
    assert_eq!(calls.len(), 1, "one check, no completion");
    assert_eq!(calls[0].path, "/v1/models");
    assert_eq!(calls[0].header("x-api-key"), Some(KEY));

    // A key the API refuses.
    let mut cmd = capsid(dir.path());
    cmd.env("CAPSID_ANTHROPIC_API_KEY", "sk-ant-other-SECRET")
        .env("CAPSID_ANTHROPIC_API_URL", &fake.url);
    let (healthy, check, printed) = doctor(cmd);
    assert!(!healthy, "{check}");
    assert_eq!(
        check["key"],
        "refused: the model API refused the credential: HTTP 401: authentication_error: invalid x-api-key"
    );
    assert!(!printed.contains("sk-ant-other-SECRET"), "{printed}");

    // A reference that does not resolve names the setting.
    let mut cmd = capsid(dir.path());
    cmd.env(
        "CAPSID_ANTHROPIC_API_KEY",
        "env:CAPSID_SURELY_UNSET_MODEL_KEY",
    )
    .env("CAPSID_ANTHROPIC_API_URL", &fake.url);
    let (healthy, check, _) = doctor(cmd);
    assert!(!healthy, "{check}");
    let said = check["key"].as_str().unwrap_or_default();
    assert!(said.contains("CAPSID_ANTHROPIC_API_KEY"), "{check}");
    assert!(said.contains("CAPSID_SURELY_UNSET_MODEL_KEY"), "{check}");
    assert_eq!(fake.requests().len(), 2, "an unresolved key asks nothing");
}

#[test]
fn serve_resolves_the_key_at_start_and_never_logs_it() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let key_file = dir.path().join("anthropic.key");
    std::fs::write(&key_file, format!("{KEY}\n")).expect("key file");

    // A reference that does not resolve stops the start, naming the setting.
    let out = capsid(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env(
            "CAPSID_ANTHROPIC_API_KEY",
            "file:/nonexistent/anthropic.key",
        )
        .output()
        .expect("serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CAPSID_ANTHROPIC_API_KEY"), "{stderr}");

    // A file reference: the client is built and wired; the log names the URL, not the key.
    let mut child = capsid(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env(
            "CAPSID_ANTHROPIC_API_KEY",
            format!("file:{}", key_file.display()),
        )
        .env("CAPSID_ANTHROPIC_API_URL", "http://127.0.0.1:9/model")
        .env("CAPSID_LOG", "debug")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.expect("a line");
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("capsid listening") {
            break;
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    // Read to the end before waiting: with debug logs the server can fill the pipe after
    // "listening", and a server blocked writing its log never exits (a run hung here).
    seen.extend(lines.map_while(Result::ok).map(|l| l + "\n"));
    let _ = child.wait();
    assert!(
        seen.contains("model API configured") && seen.contains("http://127.0.0.1:9/model"),
        "{seen}"
    );
    assert!(!seen.contains(KEY) && !seen.contains("SECRET"), "{seen}");
}
