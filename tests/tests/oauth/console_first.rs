//! The console puts the owner's work first: what waits on the owner (an open question, a
//! blocked job with its command, a failed job with its failing tail, a failing checkmark) at
//! the top, above the fold at 1400×900 in headless Chromium; a driver whose job failed is not
//! shown as working; the page fits 420 px without sideways scrolling; light and dark kept as
//! screenshots; and two tabs of one session both submit.

use serde_json::{Value, json};

use crate::cdp::Chrome;
use crate::console::{blocked_job, console_login};
use crate::console_checkmarks::paused_agent;
use crate::console_chromium::{artifacts, chromium};
use crate::env::*;

/// The failure summary of the failed job: its last line is the test run's verdict.
const FAILURE: &str = "the test gate failed after the run\ncargo test -p cache\nerror[E0308]: mismatched types\n  --> src/lib.rs:4:5\ntest result: FAILED. 3 passed; 1 failed";

/// Agent `builder` (a driver in `alpha`) checkpointed `working` on a job with failing tests,
/// then the job failed. The job's id.
async fn failed_driver(env: &Env) -> String {
    let key = env
        .server
        .mint(
            "builder",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let c = env.server.client(&key).await;
    let post = c
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Build the cache", "body": "Build it.\n"}),
        )
        .await;
    let id = post["job"]["id"].as_str().expect("job id").to_owned();
    let claim = c
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    c.ok(
        "checkpoint",
        json!({"namespace": "alpha", "status": "working", "job_id": id,
               "where_it_stopped": "running the tests", "tests_status": "fail"}),
    )
    .await;
    let fail = c
        .ok(
            "jobs",
            json!({"action": "fail", "id": id, "namespace": "alpha", "reason": FAILURE}),
        )
        .await;
    assert_eq!(fail["ok"], true, "{fail}");
    let _ = c.inner.cancel().await;
    id
}

/// Everything the owner's list shows: (blocked job, failed job).
async fn owners_work(env: &Env) -> (String, String) {
    let blocked = blocked_job(env).await;
    paused_agent(env).await;
    let failed = failed_driver(env).await;
    (blocked, failed)
}

fn checkmark<'a>(view: &'a Value, agent: &str) -> &'a Value {
    view["checkmarks"]["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|ns| ns["agents"].as_array().into_iter().flatten())
        .find(|c| c["agent"] == agent)
        .unwrap_or_else(|| panic!("no checkmark of {agent} in {view}"))
}

#[tokio::test]
async fn what_waits_on_the_owner_comes_first_and_statuses_follow_the_job() {
    let env = Env::start().await;
    let (blocked, failed) = owners_work(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    let view = browser.get(&env.url("/console.json")).await.json();
    let a = &view["attention"];
    assert_eq!(a["questions"][0]["agent"], "d1", "{a}");
    assert_eq!(
        a["questions"][0]["question"],
        "Postgres or SQLite for the cache?"
    );
    assert_eq!(a["blocked_jobs"][0]["id"], blocked.as_str());
    assert_eq!(
        a["blocked_jobs"][0]["waiting_on"],
        "git push origin feature"
    );
    assert_eq!(a["failed_jobs"][0]["id"], failed.as_str());
    let tail = a["failed_jobs"][0]["tail"].as_str().unwrap_or_default();
    assert!(
        tail.ends_with("test result: FAILED. 3 passed; 1 failed"),
        "{tail}"
    );
    assert_eq!(a["failing_checks"][0]["agent"], "builder", "{a}");
    assert_eq!(a["count"], 4);
    let builder = checkmark(&view, "builder");
    assert_eq!(builder["status"], "failed", "the job failed: {builder}");
    assert_eq!(builder["checkmark_status"], "working");
    assert_eq!(builder["job_status"], "failed");
    assert_eq!(
        checkmark(&view, "d2")["status"],
        "working",
        "no job: as it said"
    );
    // The page shows the same, in the owner's order.
    let body = &page.body;
    let at = |needle: &str| {
        body.find(needle)
            .unwrap_or_else(|| panic!("{needle} not on the page"))
    };
    assert!(at("Waiting on you") < at("<h2>Namespaces"));
    assert!(at("<h2>Namespaces") < at("<h2>Agents"));
    assert!(at("<h2>Agents") < at("id=\"skills\""));
    assert!(at("data-kind=\"question\"") < at("<h2>Namespaces"));
    assert!(at("git push origin feature") < at("<h2>Namespaces"));
    assert!(at("test result: FAILED. 3 passed; 1 failed") < at("<h2>Namespaces"));
    assert!(
        body.contains("badge s-failed"),
        "builder's badge follows its job"
    );
    // No inline script: the one script is the console's own same-origin file.
    assert_eq!(body.matches("<script").count(), 1);
    assert!(body.contains("<script src=\"/console/live.js\" defer></script>"));
    // Day one: the improve loop is off and has run nowhere, so its columns are not shown;
    // times read relative to now, the exact instant on hover; every cell of a table carries
    // its column's name for the narrow screen's cards.
    assert!(
        !body.contains("anchor pinned") && !body.contains("tonight"),
        "loop columns shown"
    );
    assert!(body.contains("<time datetime=\"20"), "no relative time");
    assert!(body.contains("ago</time>") || body.contains("just now</time>"));
    assert!(body.contains("<tr class=\"head\">"));
    assert!(body.contains("<td data-label=\"actor\">"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_work_is_above_the_fold_fits_420_px_and_renders_light_and_dark() {
    let env = Env::start().await;
    owners_work(&env).await;
    let mut chrome = Chrome::open(
        &chromium(),
        &env.url("/console"),
        &["--window-size=1400,900".into()],
    )
    .await;
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.querySelector('#waiting') !== null",
            "the console",
        )
        .await;
    chrome.viewport(1400, 900).await;
    let fold = chrome
        .eval(
            "(() => { const r = s => document.querySelector(s).getBoundingClientRect(); \
               const q = r('[data-kind=question] textarea'), b = r('[data-kind=blocked] code.cmd'); \
               return {question_top: q.top, blocked_bottom: b.bottom, height: innerHeight, scroll: scrollY}; })()",
        )
        .await
        .expect("measure");
    let height = fold["height"].as_f64().unwrap_or(0.0);
    assert_eq!(height, 900.0, "{fold}");
    assert_eq!(fold["scroll"], 0, "{fold}");
    assert!(
        fold["question_top"].as_f64().unwrap_or(f64::MAX) < height,
        "the question's answer box is above the fold: {fold}"
    );
    assert!(
        fold["blocked_bottom"].as_f64().unwrap_or(f64::MAX) <= height,
        "the blocked job's command is above the fold: {fold}"
    );
    let dir = artifacts();
    let mut backgrounds = Vec::new();
    for (width, height) in [(1400, 900), (420, 900)] {
        chrome.viewport(width, height).await;
        let fits = chrome
            .eval("({scroll: document.scrollingElement.scrollWidth, inner: window.innerWidth})")
            .await
            .expect("measure the width");
        assert_eq!(fits["inner"], width, "{fits}");
        assert!(
            fits["scroll"].as_u64().unwrap_or(u64::MAX) <= u64::from(width),
            "the page does not scroll sideways at {width} px: {fits}"
        );
        // Nothing is cut at the right edge: no table scrolls within itself, and every button
        // (Pause, Revoke, Fail among them) is inside the window.
        let cut = chrome
            .eval(
                "(() => ({ tables: [...document.querySelectorAll('table')].filter(t => t.scrollWidth > t.clientWidth + 1).length,                    buttons: [...document.querySelectorAll('button')].filter(b => { const r = b.getBoundingClientRect();                      return r.width > 0 && (r.left < 0 || r.right > innerWidth + 0.5); }).map(b => b.innerText) }))()",
            )
            .await
            .expect("measure the cut");
        assert_eq!(cut, json!({"tables": 0, "buttons": []}), "at {width} px");
        for scheme in ["light", "dark"] {
            chrome.color_scheme(scheme).await;
            let bg = chrome
                .eval("getComputedStyle(document.body).backgroundColor")
                .await
                .expect("the background");
            backgrounds.push((scheme, bg));
            let png = chrome.screenshot().await;
            assert!(
                png.starts_with(b"\x89PNG") && png.len() > 10_000,
                "{scheme} at {width}: {} bytes",
                png.len()
            );
            std::fs::write(dir.join(format!("console-first-{scheme}-{width}.png")), png)
                .expect("keep the screenshot");
        }
    }
    let light: Vec<_> = backgrounds.iter().filter(|(s, _)| *s == "light").collect();
    let dark: Vec<_> = backgrounds.iter().filter(|(s, _)| *s == "dark").collect();
    assert_eq!(light[0].1, json!("rgb(251, 251, 248)"), "{backgrounds:?}");
    assert_eq!(dark[0].1, json!("rgb(21, 23, 26)"), "{backgrounds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tabs_of_one_session_both_submit() {
    let env = Env::start().await;
    let (blocked, _) = owners_work(&env).await;
    let mut first = Chrome::open(
        &chromium(),
        &env.url("/console"),
        &["--window-size=1400,900".into()],
    )
    .await;
    first
        .wait_for(
            "document.title === 'Capsid console' && document.querySelector('form.answer') !== null",
            "the console in the first tab",
        )
        .await;
    // The second tab renders the console after the first: its forms carry the same token.
    let mut second = first.open_tab(&env.url("/console")).await;
    second
        .wait_for(
            "document.title === 'Capsid console' && document.querySelector('[data-kind=blocked] form') !== null",
            "the console in the second tab",
        )
        .await;
    let typed = first
        .eval(
            "(() => { const f = document.querySelector('form.answer'); \
               f.querySelector('textarea').value = 'Postgres, from the first tab'; \
               f.querySelector('button[value=yes]').click(); return true; })()",
        )
        .await;
    assert_eq!(typed, Ok(json!(true)));
    first
        .wait_for(
            "document.title === 'Confirm a console action'",
            "the first tab's confirmation",
        )
        .await;
    first
        .eval("(() => { document.querySelector('form button[type=submit]').click(); return true; })()")
        .await
        .expect("confirm");
    first
        .wait_for(
            "document.title === 'Capsid console' && document.body.innerText.includes('answered by github:octo')",
            "the answer accepted",
        )
        .await;
    // The page says the action went through.
    let notice = first
        .eval("document.querySelector('.notice[role=status]')?.innerText ?? null")
        .await
        .expect("the notice");
    assert_eq!(
        notice,
        json!("Done: your answer is recorded for the agent.")
    );
    // And the second tab, rendered before the first tab's post, still submits.
    second
        .eval(
            "(() => { const f = document.querySelector('[data-kind=blocked] form'); \
               f.querySelector('input[name=reason]').value = 'pushed it, second tab'; \
               f.querySelector('button').click(); return true; })()",
        )
        .await
        .expect("resume from the second tab");
    second
        .wait_for(
            "document.title === 'Confirm a console action'",
            "the second tab's confirmation",
        )
        .await;
    second
        .eval("(() => { document.querySelector('form button[type=submit]').click(); return true; })()")
        .await
        .expect("confirm");
    second
        .wait_for("document.title === 'Capsid console'", "the console again")
        .await;
    let mark = env
        .server
        .admin(
            "checkmarks",
            json!({"action": "get", "namespace": "alpha", "agent": "d1"}),
        )
        .await;
    assert_eq!(mark["checkmark"]["answer"], "Postgres, from the first tab");
    let jobs = env
        .server
        .admin("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    let status = jobs["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|j| j["id"] == blocked.as_str())
        .map(|j| j["status"].clone());
    assert_eq!(status, Some(json!("queued")), "resumed: {jobs}");
    let audit = env.audit_actions().await;
    for action in ["console-answer", "console-resume_job"] {
        assert!(
            audit.contains(&(action.into(), "github:octo".into())),
            "{action}: {audit:?}"
        );
    }
}

/// A failed job is dismissed from "Waiting on you" with a confirmed console action (issue 53,
/// item 20): the job and its record stay, the click is audited under the person, and only a
/// failed job is dismissed.
#[tokio::test]
async fn a_failed_job_is_dismissed_from_the_owners_list_and_stays_failed() {
    let env = Env::start().await;
    let (blocked, failed) = owners_work(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    assert!(
        page.body.contains("value=\"dismiss_job\""),
        "a Dismiss form"
    );
    let before = browser.get(&env.url("/console.json")).await.json();
    assert_eq!(before["attention"]["failed_jobs"][0]["id"], failed.as_str());
    let csrf = hidden(&page.body, "csrf");
    let dismiss = |id: &str| {
        vec![
            ("action".to_owned(), "dismiss_job".to_owned()),
            ("id".to_owned(), id.to_owned()),
            ("csrf".to_owned(), csrf.clone()),
            ("confirm".to_owned(), "yes".to_owned()),
        ]
    };
    // A blocked job is not dismissed: it still waits on the owner.
    let refused = browser
        .post_form(&env.url("/console"), &dismiss(&blocked))
        .await;
    assert_ne!(refused.status, 303, "{}", refused.body);
    assert!(
        refused.body.contains("only a failed job is dismissed"),
        "{}",
        refused.body
    );
    let done = browser
        .post_form(&env.url("/console"), &dismiss(&failed))
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location(), "/console?done=dismiss_job");
    let after = browser.get(&env.url("/console.json")).await.json();
    assert_eq!(after["attention"]["failed_jobs"], json!([]), "{after}");
    assert_eq!(
        after["attention"]["count"].as_u64(),
        before["attention"]["count"].as_u64().map(|n| n - 1)
    );
    let job = env
        .server
        .admin("jobs", json!({"action": "get", "id": failed}))
        .await;
    assert_eq!(job["job"]["status"], "failed", "{job}");
    let audit = env.audit_actions().await;
    assert!(
        audit.contains(&("console-dismiss_job".into(), "github:octo".into())),
        "{audit:?}"
    );
}
