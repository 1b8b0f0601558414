//! The real binary: `capsid serve` on a fresh data folder prints how to mint a first agent,
//! generates its signing key with mode 0600, answers /health, and stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

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
    assert_eq!(health["schema_version"], "0002_oauth");
    assert_ne!(health["sha"], "", "build provenance is stamped");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = child.wait().expect("capsid exits");
    assert!(exit.success(), "a SIGTERM is a clean shutdown: {exit:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains("shutting down")), "{rest:?}");
}
