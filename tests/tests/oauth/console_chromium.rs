//! The console rendered by headless Chromium, light and dark, with a paused agent on its
//! checkmarks panel; and an answer typed into the panel's form and submitted by Chromium itself
//! (its cookies, CSRF field and Origin), confirmed on the confirmation page.

use capsid_core::caller::Caller;
use capsid_core::service::NoConfirmer;
use serde_json::json;

use crate::cdp::Chrome;
use crate::console::blocked_job;
use crate::console_checkmarks::paused_agent;
use crate::env::*;

pub(crate) use capsid_tests::cdp::{artifacts, chromium};

async fn run_chromium(args: &[String], url: &str) -> std::process::Output {
    let profile = tempfile::tempdir().expect("profile");
    let mut cmd = tokio::process::Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(args)
    .arg(url)
    .kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output())
        .await
        .expect("chromium finished within two minutes")
        .expect("run chromium")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_renders_in_headless_chromium_light_and_dark() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    paused_agent(&env).await;
    env.server.namespace("beta").await;
    env.server
        .service
        .call_tool(
            &Caller::cli("test"),
            "improve_run",
            json!({"action": "pause", "namespace": "beta", "reason": "holiday"}),
            &NoConfirmer,
        )
        .await
        .expect("pause");
    let url = env.url("/console");
    // Chromium follows the whole sign-in by itself: console → fake GitHub → callback → console.
    let dom = run_chromium(&["--dump-dom".into()], &url).await;
    let html = String::from_utf8_lossy(&dom.stdout);
    assert!(
        html.contains("Capsid console"),
        "status {:?}\n{html}\n{}",
        dom.status,
        String::from_utf8_lossy(&dom.stderr)
    );
    for want in [
        "Namespaces",
        "alpha",
        "beta",
        "Blocked jobs",
        "git push origin feature",
        &id,
        "Agents",
        "worker",
        "Recent activity",
        "github:octo",
        "Checkmarks",
        "badge s-paused_for_input",
        "Postgres or SQLite for the cache?",
        "Answer &amp; resume",
        "Global feed",
        "Shared context",
        "jobs' spend this month",
        "off: improve_run action mode (subscription or api) turns it on",
    ] {
        assert!(html.contains(want), "the page shows {want}");
    }
    // The loop is off and has run nowhere: its columns wait until it has something to show.
    for absent in ["last run (attempts/kept/reverted)", "anchor pinned"] {
        assert!(!html.contains(absent), "the page hides {absent}");
    }
    let dir = artifacts();
    for (scheme, flags) in [
        (
            "light",
            vec!["--blink-settings=preferredColorScheme=1".to_owned()],
        ),
        (
            "dark",
            vec![
                "--force-dark-mode".to_owned(),
                "--blink-settings=preferredColorScheme=0".to_owned(),
            ],
        ),
    ] {
        let path = dir.join(format!("console-{scheme}.png"));
        let _ = std::fs::remove_file(&path);
        let mut args = flags;
        args.push(format!("--screenshot={}", path.display()));
        args.push("--window-size=1400,2600".into());
        let out = run_chromium(&args, &url).await;
        let meta = std::fs::metadata(&path).unwrap_or_else(|_| {
            panic!(
                "{scheme} screenshot not written: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(
            meta.len() > 10_000,
            "{scheme} screenshot is {} bytes",
            meta.len()
        );
    }
    let light = std::fs::read(dir.join("console-light.png")).unwrap();
    let dark = std::fs::read(dir.join("console-dark.png")).unwrap();
    assert_ne!(light, dark, "the dark scheme renders differently");
    // The logins Chromium made are the owner's sessions; each left an audit trail of nothing
    // but reads: no action was taken.
    assert!(
        !env.audit_actions()
            .await
            .iter()
            .any(|(a, _)| a.starts_with("console-"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_answers_a_paused_agent_through_the_console_form() {
    let env = Env::start().await;
    paused_agent(&env).await;
    let mut chrome = Chrome::open(
        &chromium(),
        &env.url("/console"),
        &["--window-size=1400,2000".into()],
    )
    .await;
    // Chromium signs in by itself: console, fake GitHub, callback, console.
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.querySelector('form.answer') !== null",
            "the console with the answer form",
        )
        .await;
    let text = chrome.text().await;
    assert!(text.contains("Postgres or SQLite for the cache?"), "{text}");
    let typed = chrome
        .eval(
            "(() => { const f = document.querySelector('form.answer'); \
               f.querySelector('textarea').value = 'Postgres, typed in Chromium'; \
               f.querySelector('button[value=yes]').click(); return true; })()",
        )
        .await;
    assert_eq!(typed, Ok(json!(true)));
    chrome
        .wait_for(
            "document.title === 'Confirm a console action'",
            "the confirmation page",
        )
        .await;
    let text = chrome.text().await;
    assert!(text.contains("Confirm: answer"), "{text}");
    assert!(text.contains("Postgres, typed in Chromium"), "{text}");
    let nothing_yet = env
        .server
        .admin(
            "checkmarks",
            json!({"action": "get", "namespace": "alpha", "agent": "d1"}),
        )
        .await;
    assert_eq!(
        nothing_yet["checkmark"]["answer"],
        json!(null),
        "confirming changes nothing yet"
    );
    let clicked = chrome
        .eval("(() => { document.querySelector('form button[type=submit]').click(); return true; })()")
        .await;
    assert_eq!(clicked, Ok(json!(true)));
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.body.innerText.includes('answered by github:octo')",
            "the console showing the answer",
        )
        .await;
    let mark = env
        .server
        .admin(
            "checkmarks",
            json!({"action": "get", "namespace": "alpha", "agent": "d1"}),
        )
        .await;
    assert_eq!(mark["checkmark"]["answer"], "Postgres, typed in Chromium");
    assert_eq!(mark["checkmark"]["status"], "working");
    assert_eq!(mark["checkmark"]["resume"]["requested_by"], "github:octo");
    assert!(
        env.audit_actions()
            .await
            .contains(&("console-answer".into(), "github:octo".into()))
    );
    let png = chrome.screenshot().await;
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    std::fs::write(artifacts().join("console-answered.png"), png).expect("write the screenshot");
}
