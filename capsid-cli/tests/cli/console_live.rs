//! The live console that starts work (issue 56, item 7) through the real binary, on both
//! stores: a real `capsid serve` (over the data folder's SQLite, or over a fresh Postgres
//! database), the real `capsid console login` link opened in headless Chromium; a namespace
//! registered with a runner setting and a job posted through the page's own forms; a refused
//! post showing the tool's words naming the field; and, with the page left open, a job posted
//! by a driver through MCP appearing on it without a navigation, the namespace row showing
//! the driver's last contact.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use capsid_tests::cdp::{Chrome, chromium};
use capsid_tests::server::Client;
use serde_json::{Value, json};

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn capsid(data: &Path, database: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capsid"));
    cmd.env("CAPSID_DATA_DIR", data)
        .env("USER", "owner-test")
        .env("CAPSID_LOG_FORMAT", "json")
        .env("CAPSID_LOG", "info");
    for unset in [
        "CAPSID_PUBLIC_URL",
        "CAPSID_LISTEN",
        "CAPSID_GITHUB_CLIENT_ID",
        "CAPSID_GITHUB_CLIENT_SECRET",
        "CAPSID_ADMIN_GITHUB_LOGIN",
        "CAPSID_COOKIE_KEY",
        "CAPSID_OPERATOR_KEY_HASH",
        "CAPSID_TEST_CLOCK_FILE",
    ] {
        cmd.env_remove(unset);
    }
    match database {
        Some(url) => cmd.env("CAPSID_DATABASE_URL", url),
        None => cmd.env_remove("CAPSID_DATABASE_URL"),
    };
    cmd
}

impl Server {
    fn start(data: &Path, database: Option<&str>) -> Server {
        let mut child = capsid(data, database)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn capsid serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let url = serde_json::from_str::<Value>(&line).ok().and_then(|v| {
                    (v["fields"]["message"] == "capsid listening")
                        .then(|| v["fields"]["url"].as_str().map(str::to_owned))
                        .flatten()
                });
                if let Some(url) = url {
                    let _ = tx.send(url);
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("capsid serve logged its URL");
        Server { child, url }
    }
}

/// `capsid <args>` against the same store; its stdout (it must succeed).
fn run(data: &Path, database: Option<&str>, args: &[&str]) -> String {
    let out = capsid(data, database)
        .args(args)
        .output()
        .expect("run capsid");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "capsid {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Fills the form matched by `form` with `fields` and submits it; then confirms `action`.
async fn submit_and_confirm(
    chrome: &mut Chrome,
    form: &str,
    fields: &[(&str, &str)],
    action: &str,
) {
    let fields = serde_json::to_string(fields).expect("fields");
    let js = format!(
        "(() => {{ const f = document.querySelector({form:?}); if (!f) return false; \
           for (const [k, v] of {fields}) {{ f.elements[k].value = v; }} \
           f.querySelector('button[type=submit]').click(); return true; }})()"
    );
    assert_eq!(chrome.eval(&js).await, Ok(json!(true)), "submit {form}");
    chrome
        .wait_for(
            &format!(
                "document.title === 'Confirm a console action' && document.body.innerText.includes('Confirm: {action}')"
            ),
            "the confirmation page",
        )
        .await;
    let clicked = chrome
        .eval("(() => { document.querySelector('form button[type=submit]').click(); return true; })()")
        .await;
    assert_eq!(clicked, Ok(json!(true)));
}

async fn live_console_starts_work(data: &Path, database: Option<&str>) {
    capsid_http::install_tls_provider();
    let server = Server::start(data, database);
    let printed = run(data, database, &["console", "login", "--url", &server.url]);
    let link = printed
        .split_whitespace()
        .find(|w| w.starts_with(&format!("{}/console/login?token=", server.url)))
        .unwrap_or_else(|| panic!("no link in {printed}"))
        .to_owned();
    let mut chrome = Chrome::open(&chromium(), &link, &["--window-size=1400,2400".into()]).await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.readyState === 'complete' && document.querySelector('form.register-namespace') !== null",
            "the signed-in console",
        )
        .await;

    // A namespace and its runner setting, through the page's form.
    submit_and_confirm(
        &mut chrome,
        "form.register-namespace",
        &[
            ("namespace", "alpha"),
            ("repo", "octo/alpha"),
            ("test_command", "mise run test"),
        ],
        "register_namespace",
    )
    .await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.readyState === 'complete' && document.body.innerText.includes('mise run test')",
            "the namespace with its runner setting",
        )
        .await;
    let contact = chrome
        .eval("document.querySelector('td.driver-contact').innerText")
        .await;
    assert_eq!(contact, Ok(json!("never")));

    // A job through the page's form.
    submit_and_confirm(
        &mut chrome,
        "form.post-job",
        &[
            ("namespace", "alpha"),
            ("title", "Posted from the real console"),
            ("body", "Write the changelog."),
            ("role", "junior"),
        ],
        "post_job",
    )
    .await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.readyState === 'complete' && document.body.innerText.includes('Posted from the real console')",
            "the posted job listed",
        )
        .await;

    // A refused post: the tool's words, naming the field.
    submit_and_confirm(
        &mut chrome,
        "form.post-job",
        &[
            ("namespace", "alpha"),
            ("title", "Never posted"),
            ("body", "x"),
            ("role", "Not A Role"),
        ],
        "post_job",
    )
    .await;
    chrome
        .wait_for(
            "document.title !== 'Confirm a console action' && document.body.innerText.includes('is not a role')",
            "the refusal naming the role",
        )
        .await;
    let text = chrome.text().await;
    assert!(
        text.contains("role") && text.contains("Not A Role"),
        "{text}"
    );

    // Back on the console, left open; a driver posts through MCP.
    chrome.navigate(&format!("{}/console", server.url)).await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.readyState === 'complete' && document.getElementById('console') !== null",
            "the console again",
        )
        .await;
    assert!(!chrome.text().await.contains("Never posted"));
    chrome
        .eval("window.__stay = 'same page'; true")
        .await
        .expect("mark the page");
    let key_file = data.parent().expect("a parent").join("driver.key");
    run(
        data,
        database,
        &[
            "agents",
            "mint",
            "--name",
            "alpha-driver",
            "--kind",
            "driver",
            "--namespaces",
            "alpha",
            "--grants",
            "read,write",
            "--key-file",
            key_file.to_str().expect("utf-8"),
        ],
    );
    let key = std::fs::read_to_string(&key_file).expect("the key");
    let client = Client::connect(&format!("{}/ops/mcp", server.url), key.trim(), ()).await;
    let out = client
        .call(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Posted through MCP", "body": "Do it."}),
        )
        .await
        .expect("post through MCP");
    assert!(out["job"]["id"].is_string(), "{out}");
    // Bounded (a minute): the open page shows it without a navigation.
    chrome
        .wait_for(
            "document.body.innerText.includes('Posted through MCP') && document.querySelector('td.driver-contact time') !== null",
            "the job posted through MCP and the driver's contact on the open page",
        )
        .await;
    assert_eq!(
        chrome.eval("window.__stay").await,
        Ok(json!("same page")),
        "no navigation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_console_starts_work_sqlite() {
    let dir = tempfile::tempdir().expect("a folder");
    live_console_starts_work(&dir.path().join("data"), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_console_starts_work_postgres() {
    let Some((database, url)) = capsid_tests::harness::fresh_database("cli_console_live").await
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("a folder");
    live_console_starts_work(&dir.path().join("data"), Some(&url)).await;
    database.remove().await;
}
