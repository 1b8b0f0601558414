//! The console in the first minute, without GitHub: a real `capsid serve` over a data folder
//! (SQLite) prints `capsid console login` on start; the real `capsid console login` against
//! the same folder prints a link that opens the console in headless Chromium; the console's
//! Sign out ends that session; the same link again, or a fresh one past its five minutes of
//! the shared test clock (a file both processes read), is refused with a clear page.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use capsid_tests::cdp::{Chrome, artifacts, chromium};
use serde_json::{Value, json};

/// The shared clock's start (2027-01-15T08:00:00Z), in milliseconds.
const START_MS: i64 = 1_800_000_000_000;

struct Server {
    child: Child,
    url: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn capsid(data: &Path, clock: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capsid"));
    cmd.env("CAPSID_DATA_DIR", data)
        .env("CAPSID_TEST_CLOCK_FILE", clock)
        .env("USER", "owner-test")
        .env("CAPSID_LOG_FORMAT", "json")
        .env("CAPSID_LOG", "info");
    for unset in [
        "CAPSID_DATABASE_URL",
        "CAPSID_PUBLIC_URL",
        "CAPSID_LISTEN",
        "CAPSID_GITHUB_CLIENT_ID",
        "CAPSID_GITHUB_CLIENT_SECRET",
        "CAPSID_ADMIN_GITHUB_LOGIN",
        "CAPSID_COOKIE_KEY",
        "CAPSID_OPERATOR_KEY_HASH",
    ] {
        cmd.env_remove(unset);
    }
    cmd
}

impl Server {
    /// `capsid serve` on a free loopback port; waits (bounded) for it to log its URL.
    fn start(data: &Path, clock: &Path) -> Server {
        let mut child = capsid(data, clock)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn capsid serve");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = lines.clone();
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let url = serde_json::from_str::<Value>(&line).ok().and_then(|v| {
                    (v["fields"]["message"] == "capsid listening")
                        .then(|| v["fields"]["url"].as_str().map(str::to_owned))
                        .flatten()
                });
                kept.lock().expect("log").push(line);
                if let Some(url) = url {
                    let _ = tx.send(url);
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("capsid serve logged its URL");
        Server {
            child,
            url,
            stderr: lines,
        }
    }

    fn log(&self) -> String {
        self.stderr.lock().expect("log").join("\n")
    }
}

/// Runs `capsid console login --url <url>`: the link it prints, and its whole output.
fn console_login(data: &Path, clock: &Path, url: &str) -> (String, String) {
    let out = capsid(data, clock)
        .args(["console", "login", "--url", url])
        .output()
        .expect("run capsid console login");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = stdout
        .split_whitespace()
        .find(|w| w.starts_with(&format!("{url}/console/login?token=")))
        .unwrap_or_else(|| panic!("no link in {stdout}"))
        .to_owned();
    (link, stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_login_opens_the_console_once_without_github() {
    capsid_http::install_tls_provider();
    let dir = tempfile::tempdir().expect("data folder");
    let data = dir.path().join("data");
    let clock = dir.path().join("now");
    std::fs::write(&clock, START_MS.to_string()).expect("clock");
    let server = Server::start(&data, &clock);
    // The start tells the owner how in: GitHub is not configured.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !server.log().contains("console login") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "serve printed no `console login`: {}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        server
            .log()
            .contains(&format!("console login --url {}", server.url)),
        "{}",
        server.log()
    );
    let signed_out = reqwest::get(format!("{}/console", server.url))
        .await
        .expect("GET /console");
    assert_eq!(signed_out.status().as_u16(), 401);
    assert!(
        signed_out
            .text()
            .await
            .unwrap_or_default()
            .contains("capsid console login")
    );

    let (link, printed) = console_login(&data, &clock, &server.url);
    assert!(printed.contains("cli:owner-test"), "{printed}");
    let token = link.split("token=").nth(1).unwrap_or_default().to_owned();
    let db = std::fs::read(data.join("capsid.db")).unwrap_or_default();
    let wal = std::fs::read(data.join("capsid.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "only the token's hash reaches the database"
        );
    }

    // The link opens the console in a real browser.
    let mut chrome = Chrome::open(&chromium(), &link, &["--window-size=1200,900".into()]).await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.body.innerText.includes('cli:owner-test')",
            "the console signed in as the local owner",
        )
        .await;
    assert!(
        chrome
            .eval("location.pathname")
            .await
            .is_ok_and(|p| p == json!("/console")),
        "the token left the address bar"
    );
    let png = chrome.screenshot().await;
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    std::fs::write(artifacts().join("console-local-login.png"), png).expect("keep it");

    // Sign out from the console ends the session.
    chrome
        .eval(
            "(() => { [...document.querySelectorAll('header button')].find(b => b.textContent === 'Sign out').click(); return true; })()",
        )
        .await
        .expect("click Sign out");
    chrome
        .wait_for("document.title === 'Signed out'", "the signed-out page")
        .await;
    chrome.navigate(&format!("{}/console", server.url)).await;
    chrome
        .wait_for(
            "document.title === 'Sign in to the Capsid console'",
            "the console asking for a sign-in again",
        )
        .await;

    // The same link a second time is refused with a page saying why.
    chrome.navigate(&link).await;
    chrome
        .wait_for(
            "document.title === 'Sign-in link refused'",
            "the refusal of a spent link",
        )
        .await;
    assert!(chrome.text().await.contains("expired or was already used"));

    // A fresh link past its five minutes (of the shared clock) is refused too.
    let (late, _) = console_login(&data, &clock, &server.url);
    std::fs::write(&clock, (START_MS + 5 * 60_000).to_string()).expect("advance the clock");
    chrome.navigate(&late).await;
    chrome
        .wait_for(
            "document.title === 'Sign-in link refused'",
            "the refusal of an expired link",
        )
        .await;
    let log = server.log();
    assert!(
        !log.contains(&token),
        "the token reaches no log line of the server"
    );
    assert!(log.contains("console session started from a one-time link"));
}

/// `capsid console login` without `--url` links to where the server said it answers (its
/// random port here), reads a pasted console address as its server's, and refuses a folder
/// with no store instead of creating one whose link the server would refuse (issue 53,
/// item 13).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_login_links_to_where_the_server_answers_and_refuses_the_wrong_folder() {
    let dir = tempfile::tempdir().expect("data folder");
    let data = dir.path().join("data");
    let clock = dir.path().join("clock");
    std::fs::write(&clock, START_MS.to_string()).expect("clock");
    let server = Server::start(&data, &clock);
    let login = |extra: &[&str], folder: &Path| {
        capsid(folder, &clock)
            .args(["console", "login"])
            .args(extra)
            .output()
            .expect("run capsid console login")
    };
    let out = login(&[], &data);
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{printed}");
    assert!(
        printed.contains(&format!("{}/console/login?token=", server.url)),
        "the link is not where the server answers ({}): {printed}",
        server.url
    );
    let pasted = format!("{}/console", server.url);
    let out = login(&["--url", &pasted], &data);
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        printed.contains(&format!("{}/console/login?token=", server.url))
            && !printed.contains("/console/console"),
        "{printed}"
    );
    let wrong = dir.path().join("elsewhere");
    std::fs::create_dir_all(&wrong).expect("a folder");
    let out = login(&[], &wrong);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no Capsid store at"), "{err}");
    assert!(
        !wrong.join("capsid.db").exists(),
        "a store was created in the wrong folder"
    );
    drop(server);
}
