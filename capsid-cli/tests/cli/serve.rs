//! The real binary: `capsid serve` on a fresh data folder prints how to mint a first agent,
//! generates its signing key with mode 0600, answers /health, and stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

/// `--public-url capsid.example.org` (no scheme) would have every request refused for its
/// Host: the start is refused instead, naming the fix, and nothing is created.
#[test]
fn serve_refuses_a_public_url_clients_could_not_reach_it_under() {
    let dir = tempfile::tempdir().expect("temporary folder");
    for bad in ["capsid.example.org", "https://capsid.example.org/console"] {
        let out = Command::new(env!("CARGO_BIN_EXE_capsid"))
            .args(["serve", "--listen", "127.0.0.1:0", "--public-url", bad])
            .env("CAPSID_DATA_DIR", dir.path())
            .env_remove("CAPSID_DATABASE_URL")
            .env_remove("CAPSID_PUBLIC_URL")
            .output()
            .expect("run capsid serve");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}: {err}");
        assert!(
            err.contains("--public-url") && err.contains("https://capsid.example.org"),
            "{bad}: {err}"
        );
    }
    assert!(
        std::fs::read_dir(dir.path())
            .expect("the folder")
            .next()
            .is_none(),
        "a refused start created files"
    );
}

/// `serve --help` names the dump interval and its variable (issue 56, item 4), and a value
/// outside 1 to 24 hours, by flag or by variable, refuses the start naming the setting and its
/// rule, before anything is created.
#[test]
fn serve_takes_the_dump_interval_and_refuses_one_outside_a_day() {
    let help = Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(["serve", "--help"])
        .output()
        .expect("run capsid serve --help");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    assert!(
        text.contains("--backup-every-hours <HOURS>")
            && text.contains("CAPSID_BACKUP_EVERY_HOURS")
            && text.contains("[default: 24]"),
        "{text}"
    );
    let dir = tempfile::tempdir().expect("temporary folder");
    let refused = |flag: Option<&str>, env: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_capsid"));
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .env("CAPSID_DATA_DIR", dir.path())
            .env_remove("CAPSID_DATABASE_URL")
            .env_remove("CAPSID_BACKUP_EVERY_HOURS");
        if let Some(v) = flag {
            cmd.args(["--backup-every-hours", v]);
        }
        if let Some(v) = env {
            cmd.env("CAPSID_BACKUP_EVERY_HOURS", v);
        }
        let out = cmd.output().expect("run capsid serve");
        assert_eq!(out.status.code(), Some(2), "{flag:?} {env:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for (flag, env, bad) in [
        (Some("0"), None, "\"0\""),
        (Some("25"), None, "\"25\""),
        (None, Some("half"), "\"half\""),
    ] {
        let err = refused(flag, env);
        assert!(
            err.contains("CAPSID_BACKUP_EVERY_HOURS (--backup-every-hours)")
                && err.contains("a whole number of hours from 1 to 24")
                && err.contains(bad),
            "{err}"
        );
    }
    assert!(
        std::fs::read_dir(dir.path())
            .expect("the folder")
            .next()
            .is_none(),
        "a refused start created files"
    );
}

#[test]
fn serve_starts_reports_health_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut child = Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("CAPSID_DATA_DIR", dir.path())
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_OPERATOR_KEY_HASH")
        .env("CAPSID_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn capsid serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut url = None;
    let mut banner = String::new();
    for line in lines.by_ref() {
        let line = line.expect("a line of output");
        banner.push_str(&line);
        banner.push('\n');
        if let Some(rest) = line.strip_prefix("capsid is serving MCP at ") {
            url = Some(rest.trim().trim_end_matches("/ops/mcp").to_owned());
        }
        if line.contains("agents mint --name") {
            break;
        }
    }
    let url = url.unwrap_or_else(|| panic!("no banner in:\n{banner}"));
    assert!(banner.contains("No agents yet"), "{banner}");
    assert!(
        banner.contains("capsid.db"),
        "the banner names the database: {banner}"
    );

    let key = dir.path().join("signing.key");
    let mode = std::fs::metadata(&key)
        .expect("signing.key exists")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "the generated signing secret is private");

    capsid_http::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let health: serde_json::Value = runtime.block_on(async {
        let resp = reqwest::get(format!("{url}/health"))
            .await
            .expect("health answers");
        assert_eq!(resp.status().as_u16(), 200);
        resp.json().await.expect("json")
    });
    assert_eq!(health["status"], "ok");
    let newest = capsid_store_sqlite::MIGRATOR
        .iter()
        .last()
        .map(|m| format!("{:04}_{}", m.version, m.description.replace(' ', "_")))
        .expect("a migration");
    assert_eq!(health["schema_version"], newest.as_str());
    assert_ne!(health["sha"], "", "build provenance is stamped");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    // Read to the end before waiting: a server still logging into a full pipe never exits.
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let exit = child.wait().expect("capsid exits");
    assert!(exit.success(), "a SIGTERM is a clean shutdown: {exit:?}");
    assert!(rest.iter().any(|l| l.contains("shutting down")), "{rest:?}");
}

/// The binary with the GitHub App pointed at the fake GitHub on loopback.
fn with_app(cmd: &mut Command, dir: &std::path::Path, api_url: &str, key: &str) {
    cmd.env("CAPSID_DATA_DIR", dir)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_OPERATOR_KEY_HASH")
        .env(
            "CAPSID_GITHUB_APP_CLIENT_ID",
            capsid_tests::fake_github::CLIENT_ID,
        )
        .env("CAPSID_GITHUB_APP_PRIVATE_KEY", key)
        .env("CAPSID_GITHUB_API_URL", api_url);
}

fn run_json(mut cmd: Command) -> (bool, serde_json::Value) {
    let out = cmd.output().expect("run capsid");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = serde_json::from_str(&text).unwrap_or_else(|_| {
        panic!(
            "not JSON: {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), value)
}

/// The check named `name` in a `capsid doctor --json` report.
fn doctor_check(report: &serde_json::Value, name: &str) -> serde_json::Value {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name:?} check: {report}"))
}

#[test]
fn doctor_reports_the_github_app_and_serve_wires_it_into_the_repo_tools() {
    capsid_http::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let gh = runtime.block_on(capsid_tests::fake_github::FakeGitHub::start());
    gh.add_repo("octo/alpha", &[("README.md", "hello from the fake\n")]);
    let key = &capsid_tests::fake_github::test_key().private_pem;
    let dir = tempfile::tempdir().expect("temporary folder");
    let capsid = || Command::new(env!("CARGO_BIN_EXE_capsid"));
    let mut cmd = capsid();
    cmd.arg("migrate");
    with_app(&mut cmd, dir.path(), &gh.url, key);
    assert!(cmd.status().expect("migrate").success());

    // doctor: the key parses, GitHub accepts the JWT, the installation is listed.
    let mut cmd = capsid();
    cmd.args(["doctor", "--json"]);
    with_app(&mut cmd, dir.path(), &gh.url, key);
    let (_, report) = run_json(cmd);
    let app = doctor_check(&report, "GitHub App (repo access)");
    assert_eq!(app["key"], "parses", "{report}");
    assert_eq!(app["jwt"], "accepted (App: Capsid Test App)", "{report}");
    assert!(
        app["installations"].to_string().contains("octo ("),
        "{report}"
    );
    assert!(
        !report.to_string().contains("BEGIN RSA"),
        "the key is never printed"
    );
    let store = doctor_check(&report, "store");
    assert_eq!(
        store["limitations"],
        serde_json::json!([]),
        "an SQLite store lacks nothing: {report}"
    );
    // Whether `drive --box` can box an agent here: bubblewrap starts a box (scripts/test.sh
    // installs it), and without it on the PATH doctor names what is missing.
    let boxed = doctor_check(&report, "agent box (capsid drive)");
    let have_bwrap = Command::new("bwrap")
        .arg("--version")
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        have_bwrap || std::env::var("CI").as_deref() != Ok("true"),
        "CI installs bubblewrap"
    );
    if have_bwrap {
        assert_eq!(boxed["value"], "available", "{report}");
        assert!(
            boxed["version"]
                .as_str()
                .unwrap_or("")
                .contains("bubblewrap"),
            "{report}"
        );
    }
    let mut cmd = capsid();
    cmd.args(["doctor", "--json"]).env("PATH", dir.path());
    with_app(&mut cmd, dir.path(), &gh.url, key);
    let (_, report) = run_json(cmd);
    let boxed = doctor_check(&report, "agent box (capsid drive)");
    assert_eq!(boxed["value"], "unavailable", "{report}");
    assert!(
        boxed["meaning"]
            .as_str()
            .unwrap_or("")
            .contains("--unboxed"),
        "{report}"
    );
    assert!(
        boxed["error"]
            .as_str()
            .unwrap_or("")
            .contains("apt-get install bubblewrap"),
        "{report}"
    );
    // A key that does not parse is reported, naming the setting, and makes doctor unhealthy.
    let mut cmd = capsid();
    cmd.args(["doctor", "--json"]);
    with_app(&mut cmd, dir.path(), &gh.url, "not a key");
    let (healthy, report) = run_json(cmd);
    assert!(!healthy, "{report}");
    assert!(
        report.to_string().contains("CAPSID_GITHUB_APP_PRIVATE_KEY"),
        "{report}"
    );
    // Another App's key: the JWT is refused.
    let mut cmd = capsid();
    cmd.args(["doctor", "--json"]);
    let other = &capsid_tests::fake_github::other_test_key().private_pem;
    with_app(&mut cmd, dir.path(), &gh.url, other);
    let (healthy, report) = run_json(cmd);
    assert!(!healthy, "{report}");
    assert!(report.to_string().contains("refused"), "{report}");
    let refused_so_far = gh.refusals().len();
    assert!(refused_so_far >= 1, "the fake refused the other key's JWT");

    // serve: the App is wired into the Service, so a repo tool reads through it.
    let mut cmd = capsid();
    cmd.args(["namespaces", "register", "alpha", "--repo", "octo/alpha"]);
    with_app(&mut cmd, dir.path(), &gh.url, key);
    assert!(cmd.status().expect("register").success());
    let mut cmd = capsid();
    cmd.args([
        "agents",
        "mint",
        "--name",
        "reader",
        "--kind",
        "session",
        "--namespaces",
        "alpha",
        "--grants",
        "read",
        "--json",
    ]);
    with_app(&mut cmd, dir.path(), &gh.url, key);
    let (ok, minted) = run_json(cmd);
    assert!(ok, "{minted}");
    let agent_key = minted["key"].as_str().expect("a key").to_owned();
    let mut cmd = capsid();
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("CAPSID_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    with_app(&mut cmd, dir.path(), &gh.url, key);
    let mut child = cmd.spawn().expect("spawn capsid serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut url = None;
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.expect("a line of output");
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("capsid listening")
            && let Some((_, rest)) = line.split_once("http://127.0.0.1:")
        {
            let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
            url = Some(format!("http://127.0.0.1:{port}"));
            break;
        }
    }
    let url = url.unwrap_or_else(|| panic!("no url in:\n{seen}"));
    assert!(seen.contains("GitHub App configured"), "{seen}");
    let listing = runtime.block_on(async {
        let client =
            capsid_tests::server::Client::connect(&format!("{url}/ops/mcp"), &agent_key, ()).await;
        client
            .ok(
                "read_repo_file",
                serde_json::json!({"namespace": "alpha", "path": "README.md"}),
            )
            .await
    });
    assert!(
        listing.to_string().contains("hello from the fake"),
        "{listing}"
    );
    assert!(gh.token_requests() >= 1);
    assert_eq!(
        gh.refusals().len(),
        refused_so_far,
        "serve's JWTs verify: {:?}",
        gh.refusals()
    );
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    // Read to the end before waiting: a server still logging into a full pipe never exits.
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let _ = child.wait();
    assert!(
        !seen.contains("ghs_") && !rest.iter().any(|l| l.contains("ghs_")),
        "no installation token in the server's logs"
    );
}

/// The trusted-proxy check of `capsid doctor`, as `--json` reports it.
fn proxy_check(
    dir: &std::path::Path,
    public_url: &str,
    proxies: Option<&str>,
) -> (bool, serde_json::Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capsid"));
    cmd.args(["doctor", "--json"])
        .env("CAPSID_DATA_DIR", dir)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_GITHUB_APP_CLIENT_ID")
        .env_remove("CAPSID_GITHUB_APP_PRIVATE_KEY")
        .env("CAPSID_PUBLIC_URL", public_url);
    match proxies {
        Some(p) => cmd.env("CAPSID_TRUSTED_PROXIES", p),
        None => cmd.env_remove("CAPSID_TRUSTED_PROXIES"),
    };
    let (healthy, report) = run_json(cmd);
    let check = doctor_check(&report, "trusted proxies");
    (healthy, check)
}

#[test]
fn doctor_warns_when_an_https_url_has_no_trusted_proxy() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let capsid = || Command::new(env!("CARGO_BIN_EXE_capsid"));
    let mut migrate = capsid();
    migrate
        .args(["migrate"])
        .env("CAPSID_DATA_DIR", dir.path())
        .env_remove("CAPSID_DATABASE_URL");
    assert!(migrate.status().expect("migrate").success());
    let (_, check) = proxy_check(dir.path(), "https://capsid.example.com", None);
    let warning = check["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("CAPSID_TRUSTED_PROXIES") && warning.contains("https://"),
        "{check}"
    );
    let (_, check) = proxy_check(
        dir.path(),
        "https://capsid.example.com",
        Some("10.0.0.0/8, 192.168.1.7"),
    );
    assert_eq!(check["warning"], serde_json::Value::Null, "{check}");
    assert_eq!(
        check["value"],
        serde_json::json!(["10.0.0.0/8", "192.168.1.7/32"]),
        "{check}"
    );
    let (_, check) = proxy_check(dir.path(), "http://127.0.0.1:8787", None);
    assert_eq!(check["warning"], serde_json::Value::Null, "{check}");
    let (healthy, check) = proxy_check(
        dir.path(),
        "https://capsid.example.com",
        Some("10.0.0.0/33"),
    );
    assert!(!healthy, "a bad value makes doctor unhealthy: {check}");
    assert!(
        check["error"]
            .as_str()
            .unwrap_or_default()
            .contains("10.0.0.0/33"),
        "the error names the entry: {check}"
    );
}
