//! The owner's console over HTTP: sign-in, CSRF, confirmations, the JSON view and
//! console sessions.

use capsid_core::time::HOUR_MS;
use serde_json::json;

use crate::env::*;

/// Signs `browser` in to the console (following the GitHub round trip); the console page.
pub(crate) async fn console_login(env: &Env, browser: &mut Browser) -> Resp {
    let page = browser.follow(&env.server.url, &env.url("/console")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page
}

async fn job_status(env: &Env, id: &str) -> String {
    let out = env
        .server
        .admin("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    out["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["id"] == id))
        .and_then(|j| j["status"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The cap of job `id` in alpha, as the job tool answers it (`null`: none).
async fn job_cap(env: &Env, id: &str) -> serde_json::Value {
    env.server
        .admin(
            "jobs",
            json!({"action": "get", "id": id, "namespace": "alpha"}),
        )
        .await["job"]["max_cost_usd"]
        .clone()
}

pub(crate) async fn blocked_job(env: &Env) -> String {
    env.server.namespace("alpha").await;
    let key = env
        .server
        .mint(
            "worker",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let worker = env.server.client(&key).await;
    let post = worker
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": "Ship it", "body": "Ship.\n"}),
        )
        .await;
    let id = post["job"]["id"].as_str().unwrap().to_owned();
    let claim = worker
        .ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    assert_eq!(claim["ok"], true, "{claim}");
    let block = worker
        .ok("jobs", json!({"action": "block", "id": id, "namespace": "alpha", "reason": "needs a push", "command": "git push origin feature"}))
        .await;
    assert_eq!(block["ok"], true, "{block}");
    let _ = worker.inner.cancel().await;
    id
}

#[tokio::test]
async fn console_turns_bearer_callers_away_and_signs_others_in() {
    let env = Env::start().await;
    let r = read(
        http()
            .get(env.url("/console"))
            .bearer_auth("capsid_some_key")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 403);
    assert!(r.body.contains("/ops/mcp"), "{}", r.body);
    let r = Browser::new().get(&env.url("/console")).await;
    assert_eq!(r.status, 302);
    assert!(
        r.location()
            .starts_with(&format!("{}/login/oauth/authorize", env.github.url))
    );
    let r = Browser::new().get(&env.url("/console.json")).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn console_admits_only_the_owner() {
    let env = Env::start().await;
    env.github.sign_in_as("mallory", 666);
    let r = Browser::new()
        .follow(&env.server.url, &env.url("/console"))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("mallory"));
}

#[tokio::test]
async fn console_csrf_mismatch_is_refused_before_any_confirmation() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    let mut browser = Browser::new();
    console_login(&env, &mut browser).await;
    let form = vec![
        ("action".to_owned(), "resume_job".to_owned()),
        ("id".to_owned(), id.clone()),
        ("reason".to_owned(), "pushed".to_owned()),
        ("csrf".to_owned(), "f".repeat(64)),
    ];
    let r = browser.post_form(&env.url("/console"), &form).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        !r.body.contains("confirm"),
        "no confirmation page: {}",
        r.body
    );
    let mut with_confirm = form.clone();
    with_confirm.push(("confirm".into(), "yes".into()));
    assert_eq!(
        browser
            .post_form(&env.url("/console"), &with_confirm)
            .await
            .status,
        403
    );
    assert_eq!(job_status(&env, &id).await, "blocked", "nothing changed");
}

#[tokio::test]
async fn console_resume_confirms_then_runs_the_jobs_tools_function_and_audits_the_person() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    assert!(
        page.body.contains("git push origin feature"),
        "the exact command it waits on"
    );
    let csrf = hidden(&page.body, "csrf");
    let form = vec![
        ("action".to_owned(), "resume_job".to_owned()),
        ("id".to_owned(), id.clone()),
        ("reason".to_owned(), "pushed it".to_owned()),
        ("csrf".to_owned(), csrf),
    ];
    let confirm = browser.post_form(&env.url("/console"), &form).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("confirm"), "{}", confirm.body);
    assert!(confirm.body.contains(&id));
    assert_eq!(
        job_status(&env, &id).await,
        "blocked",
        "a confirmation page changes nothing"
    );
    let mut yes = form.clone();
    yes.push(("confirm".into(), "yes".into()));
    let done = browser.post_form(&env.url("/console"), &yes).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location(), "/console?done=resume_job");
    let actions = env.audit_actions().await;
    assert!(
        actions.contains(&("console-resume_job".into(), "github:octo".into())),
        "{actions:?}"
    );
    assert!(
        actions.contains(&("job-resumed".into(), "github:octo".into())),
        "the jobs tool's own transition: {actions:?}"
    );
    assert_eq!(
        job_status(&env, &id).await,
        "queued",
        "back to its holder's queue"
    );
}

#[tokio::test]
async fn console_never_merges_or_mints() {
    let env = Env::start().await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    let csrf = hidden(&page.body, "csrf");
    for action in ["merge", "mint", "merge_pr", "mint_agent"] {
        let r = browser
            .post_form(
                &env.url("/console"),
                &[
                    ("action".into(), action.into()),
                    ("csrf".into(), csrf.clone()),
                    ("confirm".into(), "yes".into()),
                ],
            )
            .await;
        assert_eq!(r.status, 400, "{action}: {}", r.body);
        assert!(
            r.body
                .contains("pause, unpause, mode, resume_job, fail_job, revoke_agent"),
            "{}",
            r.body
        );
    }
    let view = browser.get(&env.url("/console.json")).await.json();
    let actions = view["actions"].to_string();
    assert!(
        !actions.contains("merge") && !actions.contains("mint"),
        "{actions}"
    );
    assert!(!page.body.contains("value=\"merge") && !page.body.contains("value=\"mint"));
}

/// The last restore rehearsal the scheduler recorded is on the Server card and in
/// `/console.json`, beside the backup's age; a failed one says why (escaped).
#[tokio::test]
async fn the_last_rehearsal_is_shown_beside_the_backup() {
    use capsid_core::backup::rehearsal::{REHEARSAL_KEY, RehearsalOutcome, RehearsalRecord};
    let env = Env::start().await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    assert!(
        page.body.contains("restore rehearsal: none yet"),
        "{}",
        page.body
    );
    let record = RehearsalRecord {
        at: "2026-03-09T10:00:00.000Z".into(),
        run: Some("2026-03-09T09-00-00-000Z".into()),
        key: Some("backups/json/2026-03-09T09-00-00-000Z/manifest.json".into()),
        ok: false,
        outcome: RehearsalOutcome::Refused,
        tables: Vec::new(),
        fts: None,
        reason: Some("backups/json/2026-03-09T09-00-00-000Z/agents.json: <sha256> differs".into()),
    };
    env.server
        .service
        .store()
        .put_setting(REHEARSAL_KEY, &record.to_json(), None)
        .await
        .expect("record");
    let view = browser.get(&env.url("/console.json")).await.json();
    assert_eq!(view["rehearsal"]["ok"], false, "{view}");
    assert_eq!(
        view["rehearsal"]["run"], "2026-03-09T09-00-00-000Z",
        "{view}"
    );
    let page = browser.get(&env.url("/console")).await;
    assert!(
        page.body
            .contains("restore rehearsal FAILED at 2026-03-09T10:00:00.000Z")
            && page.body.contains("agents.json: &lt;sha256&gt; differs"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn console_json_is_the_object_the_page_renders_and_holds_no_secrets() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    let view = browser.get(&env.url("/console.json")).await.json();
    assert_eq!(view["viewer"], "github:octo");
    for key in [
        "generated",
        "health",
        "improve",
        "agents",
        "jobs",
        "activity",
        "activity_filter",
    ] {
        assert!(view.get(key).is_some(), "{key} missing: {view}");
    }
    assert!(view["agents"].to_string().contains("worker"));
    assert!(view["jobs"].to_string().contains(&id));
    assert!(page.body.contains("worker") && page.body.contains(&id) && page.body.contains("alpha"));
    let text = view.to_string();
    let csrf = hidden(&page.body, "csrf");
    assert!(!text.contains(&csrf), "no CSRF token");
    assert!(
        !text.contains(browser.jar.get("capsid_console").unwrap()),
        "no session token"
    );
    assert!(!text.contains("key_hash"), "no hashes");
    let csp = page.header("content-security-policy");
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    // Self-contained: its one script is its own, same-origin (`script-src 'self'`).
    assert_eq!(page.body.matches("<script").count(), 1, "one script");
    assert!(
        page.body
            .contains("<script src=\"/console/live.js\" defer></script>")
            && !page.body.contains("<link")
            && !csp.contains("unsafe-inline"),
        "self-contained"
    );
    assert!(page.body.contains("prefers-color-scheme"), "light and dark");
}

#[tokio::test]
async fn console_sessions_last_twelve_hours_and_the_owner_can_end_them() {
    let env = Env::start().await;
    let mut a = Browser::new();
    let page_a = console_login(&env, &mut a).await;
    let mut b = Browser::new();
    let page_b = console_login(&env, &mut b).await;
    let mut c = Browser::new();
    console_login(&env, &mut c).await;
    env.advance(12 * HOUR_MS - 1000);
    assert_eq!(a.get(&env.url("/console.json")).await.status, 200);
    // Ending this session: the server forgets it (the old cookie no longer works).
    let held = a
        .jar
        .get("capsid_console")
        .cloned()
        .expect("session cookie");
    let r = a
        .post_form(
            &env.url("/console/logout"),
            &[("csrf".into(), hidden(&page_a.body, "csrf"))],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    a.jar.insert("capsid_console".into(), held);
    assert_eq!(
        a.get(&env.url("/console.json")).await.status,
        401,
        "ended server-side"
    );
    assert_eq!(
        b.get(&env.url("/console.json")).await.status,
        200,
        "only that one"
    );
    // A logout without the page's CSRF token ends nothing.
    let r = b
        .post_form(&env.url("/console/logout"), &[("all".into(), "yes".into())])
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(c.get(&env.url("/console.json")).await.status, 200);
    // Ending every session.
    let r = b
        .post_form(
            &env.url("/console/logout"),
            &[
                ("csrf".into(), hidden(&page_b.body, "csrf")),
                ("all".into(), "yes".into()),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        c.get(&env.url("/console.json")).await.status,
        401,
        "every session"
    );
    // And a session ends by itself after twelve hours.
    let mut d = Browser::new();
    console_login(&env, &mut d).await;
    env.advance(12 * HOUR_MS - 1000);
    assert_eq!(d.get(&env.url("/console.json")).await.status, 200);
    env.advance(1000);
    assert_eq!(
        d.get(&env.url("/console.json")).await.status,
        401,
        "twelve hours"
    );
}

#[tokio::test]
async fn console_raise_cap_confirms_then_raises_the_jobs_cap_and_audits_the_person() {
    let env = Env::start().await;
    let id = blocked_job(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    assert!(page.body.contains("Raise cap"), "{}", page.body);
    let csrf = hidden(&page.body, "csrf");
    // Not dollars: refused naming the field, nothing changes.
    let bad = vec![
        ("action".to_owned(), "raise_cap".to_owned()),
        ("id".to_owned(), id.clone()),
        ("usd".to_owned(), "lots".to_owned()),
        ("csrf".to_owned(), csrf.clone()),
    ];
    let refused = browser.post_form(&env.url("/console"), &bad).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("usd"), "{}", refused.body);
    assert_eq!(job_cap(&env, &id).await, serde_json::Value::Null);
    let form = vec![
        ("action".to_owned(), "raise_cap".to_owned()),
        ("id".to_owned(), id.clone()),
        ("usd".to_owned(), "2.5".to_owned()),
        ("csrf".to_owned(), csrf),
    ];
    let confirm = browser.post_form(&env.url("/console"), &form).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("confirm") && confirm.body.contains(&id));
    assert_eq!(
        job_cap(&env, &id).await,
        serde_json::Value::Null,
        "a confirmation page changes nothing"
    );
    let mut yes = form.clone();
    yes.push(("confirm".into(), "yes".into()));
    let done = browser.post_form(&env.url("/console"), &yes).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(job_cap(&env, &id).await, json!(2.5));
    let actions = env.audit_actions().await;
    for action in ["console-raise_cap", "job-cap-raised"] {
        assert!(
            actions.contains(&(action.into(), "github:octo".into())),
            "{action}: {actions:?}"
        );
    }
}
