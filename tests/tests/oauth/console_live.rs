//! The live console that starts work (issue 56, item 7), in headless Chromium over the real
//! router on both stores (SQLite and Postgres), signed in with a link of
//! `capsid console login`: a job posted and a namespace registered with its runner settings
//! through the page's own forms (each through its confirmation page), refusals shown in the
//! tool's words naming the field and changing nothing; a job posted through MCP appearing on
//! the open page without a navigation (`/console/events` and `/console/live.js` under the
//! page's CSP), the namespace row showing its driver's last contact; and `/console/events`
//! refused without a session.

use capsid_core::owner::OwnerService;
use capsid_tests::server::TestServer;
use serde_json::{Value, json};

use crate::cdp::Chrome;
use crate::console_chromium::chromium;
use crate::env::Browser;

capsid_tests::e2e_cases!(capsid_tests::server::ServerOptions::default();
    console_forms_post_a_job_and_register_a_namespace,
    console_shows_a_job_posted_through_mcp_without_a_reload,
    console_events_need_a_session,
);

/// A one-time sign-in link for the local owner, as `capsid console login` prints it.
async fn link(s: &TestServer) -> String {
    let link = OwnerService::new(s.service.clone())
        .start_local_console_login("alice")
        .await
        .expect("a link");
    format!("{}/console/login?token={}", s.url, link.token)
}

/// Chromium signed in on the console.
async fn signed_in(s: &TestServer) -> Chrome {
    let mut chrome = Chrome::open(
        &chromium(),
        &link(s).await,
        &["--window-size=1400,2400".into()],
    )
    .await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.readyState === 'complete' && document.getElementById('console') !== null",
            "the signed-in console",
        )
        .await;
    chrome
}

/// Fills the form matched by `form` with `fields` (name → value) and submits it.
async fn submit(chrome: &mut Chrome, form: &str, fields: &[(&str, &str)]) {
    let fields = serde_json::to_string(fields).unwrap();
    let js = format!(
        "(() => {{ const f = document.querySelector({form:?}); if (!f) return false; \
           for (const [k, v] of {fields}) {{ f.elements[k].value = v; }} \
           f.querySelector('button[type=submit]').click(); return true; }})()"
    );
    assert_eq!(chrome.eval(&js).await, Ok(json!(true)), "submit {form}");
}

/// Confirms on the confirmation page (whose heading names `action`).
async fn confirm(chrome: &mut Chrome, action: &str) {
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

async fn jobs_of(s: &TestServer, ns: &str) -> Vec<Value> {
    let out = s
        .admin("jobs", json!({"action": "list", "namespace": ns}))
        .await;
    out["jobs"].as_array().cloned().unwrap_or_default()
}

async fn console_forms_post_a_job_and_register_a_namespace(s: &TestServer) {
    s.namespace("alpha").await;
    let mut chrome = signed_in(s).await;
    // The budget part of the item: every open job's row carries the raise-cap form.
    let text = chrome.text().await;
    assert!(
        text.contains("Post a job") && text.contains("Register a namespace"),
        "{text}"
    );

    // A job through the page's form, with a role.
    submit(
        &mut chrome,
        "form.post-job",
        &[
            ("namespace", "alpha"),
            ("title", "Typed in Chromium"),
            ("body", "Write the changelog entry."),
            ("role", "junior"),
            ("priority", "3"),
            ("paths", "CHANGELOG.md, docs/**"),
        ],
    )
    .await;
    assert!(jobs_of(s, "alpha").await.is_empty(), "confirming first");
    confirm(&mut chrome, "post_job").await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.body.innerText.includes('Typed in Chromium')",
            "the console listing the posted job",
        )
        .await;
    let jobs = jobs_of(s, "alpha").await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0]["title"], "Typed in Chromium");
    let job = s
        .admin("jobs", json!({"action": "get", "id": jobs[0]["id"]}))
        .await;
    assert_eq!(job["job"]["role"], "junior", "{job}");
    assert_eq!(job["job"]["priority"], 3, "{job}");
    assert_eq!(
        job["job"]["paths"],
        json!(["CHANGELOG.md", "docs/**"]),
        "{job}"
    );
    let row = chrome
        .eval("document.body.innerText.includes('CHANGELOG.md, docs/**')")
        .await
        .expect("the page answers");
    assert_eq!(row, json!(true), "the job's row names its paths");
    // The new job's row has the raise-cap form (raising a budget from the page).
    let raise = chrome
        .eval("document.querySelectorAll('input[name=action][value=raise_cap]').length")
        .await;
    assert_eq!(raise, Ok(json!(1)));

    // A namespace with its repository and two runner settings (the rest left empty).
    submit(
        &mut chrome,
        "form.register-namespace",
        &[
            ("namespace", "gamma"),
            ("repo", "octo/gamma"),
            ("test_command", "cargo test --workspace"),
            ("runtime", "codex"),
        ],
    )
    .await;
    confirm(&mut chrome, "register_namespace").await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.body.innerText.includes('cargo test --workspace')",
            "the console showing gamma's runner settings",
        )
        .await;
    let text = chrome.text().await;
    assert!(text.contains("gamma") && text.contains("codex"), "{text}");
    assert!(text.contains("Done: the namespace is registered"), "{text}");

    // A refused job: the jobs tool's own words, naming the field; nothing posted.
    submit(
        &mut chrome,
        "form.post-job",
        &[
            ("namespace", "alpha"),
            ("title", "Refused role"),
            ("body", "Never runs."),
            ("role", "Not A Role"),
        ],
    )
    .await;
    confirm(&mut chrome, "post_job").await;
    chrome
        .wait_for(
            "document.title !== 'Confirm a console action' && document.body.innerText.includes('is not a role')",
            "the refusal naming the role",
        )
        .await;
    let refusal = chrome.text().await;
    assert!(
        refusal.contains("role") && refusal.contains("Not A Role"),
        "{refusal}"
    );
    assert_eq!(jobs_of(s, "alpha").await.len(), 1, "nothing was posted");

    // A refused namespace: its runner setting is checked before anything is registered.
    chrome.navigate(&format!("{}/console", s.url)).await;
    chrome
        .wait_for(
            "document.querySelector('form.register-namespace') !== null",
            "the console again",
        )
        .await;
    submit(
        &mut chrome,
        "form.register-namespace",
        &[
            ("namespace", "delta"),
            ("repo", "octo/delta"),
            ("root_dir", "relative/path"),
        ],
    )
    .await;
    confirm(&mut chrome, "register_namespace").await;
    chrome
        .wait_for(
            "document.title !== 'Confirm a console action' && document.body.innerText.includes('is not an absolute path')",
            "the refusal naming root_dir",
        )
        .await;
    let refusal = chrome.text().await;
    assert!(
        refusal.contains("root_dir: relative/path is not an absolute path"),
        "{refusal}"
    );
    let out = s
        .service
        .call_tool(
            &capsid_core::caller::Caller::cli("test"),
            "update_namespace",
            json!({"namespace": "delta", "test_command": "x"}),
            &capsid_core::service::NoConfirmer,
        )
        .await;
    assert!(
        out.is_err_and(|e| e.to_string().contains("not found")),
        "delta was not registered"
    );
}

async fn console_shows_a_job_posted_through_mcp_without_a_reload(s: &TestServer) {
    s.namespace("alpha").await;
    let key = s
        .mint(
            "alpha-driver",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let mut chrome = signed_in(s).await;
    let contact = chrome
        .eval("document.querySelector('td.driver-contact').innerText")
        .await;
    assert_eq!(contact, Ok(json!("never")), "no driver has called yet");
    // The script is loaded under the page's CSP (no inline script is needed or allowed).
    chrome
        .wait_for(
            "Array.from(document.scripts).some(s => s.src.endsWith('/console/live.js'))",
            "the live script",
        )
        .await;
    // A mark on this very document and on its <main>: a navigation would lose the first.
    chrome
        .eval("window.__stay = 'same page'; document.getElementById('console').__old = true; true")
        .await
        .expect("mark the page");
    // Nothing changed: the open page's content stays as it is (its digest is stable).
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(
        chrome
            .eval("document.getElementById('console').__old === true")
            .await,
        Ok(json!(true)),
        "an unchanged console is not swapped"
    );
    let client = s.client(&key).await;
    let out = client
        .call(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Posted through MCP", "body": "Do it."}),
        )
        .await
        .expect("post through MCP");
    assert!(out["job"]["id"].is_string(), "{out}");
    // Bounded: wait_for gives up after a minute.
    chrome
        .wait_for(
            "document.body.innerText.includes('Posted through MCP')",
            "the job posted through MCP on the open page",
        )
        .await;
    assert_eq!(
        chrome.eval("window.__stay").await,
        Ok(json!("same page")),
        "no navigation: the same document shows the job"
    );
    // The driver called: its namespace row shows the contact.
    chrome
        .wait_for(
            "document.querySelector('td.driver-contact').innerText !== 'never'",
            "the driver's last contact",
        )
        .await;
    let contact = chrome
        .eval("document.querySelector('td.driver-contact time').getAttribute('datetime')")
        .await;
    assert!(contact.as_ref().is_ok_and(Value::is_string), "{contact:?}");
}

async fn console_events_need_a_session(s: &TestServer) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = format!("{}/console/events", s.url);
    let none = http.get(&url).send().await.expect("GET");
    assert_eq!(none.status(), 401);
    let forged = http
        .get(&url)
        .header("cookie", "capsid_console=not-a-session")
        .send()
        .await
        .expect("GET");
    assert_eq!(forged.status(), 401);
    let bearer = http
        .get(&url)
        .header("authorization", "Bearer whatever")
        .send()
        .await
        .expect("GET");
    assert_eq!(bearer.status(), 403);
    // A signed-in browser gets the stream, its first event the view's digest.
    let mut browser = Browser::new();
    let page = browser.follow(&s.url, &link(s).await).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let csp = page.header("content-security-policy");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let mut resp = http
        .get(&url)
        .header("cookie", browser.cookie_header())
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), resp.chunk())
        .await
        .expect("an event within 20 s")
        .expect("read")
        .expect("a chunk");
    let text = String::from_utf8_lossy(&chunk);
    assert!(text.contains("event: digest"), "{text}");
    let digest = page
        .body
        .split("data-digest=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the page's digest");
    assert!(
        text.contains(digest),
        "the stream starts at the page's digest: {text}"
    );
    let js = http
        .get(format!("{}/console/live.js", s.url))
        .send()
        .await
        .expect("GET");
    assert_eq!(js.status(), 200);
    assert!(
        js.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
}
