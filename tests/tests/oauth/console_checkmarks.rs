//! The console's checkmarks panel over HTTP: a paused agent's question, the Answer and
//! Answer & resume forms behind CSRF and a confirmation page, the `console-answer` audit row
//! naming the person, the selected agent's log in pages, and `/console.json` carrying the same.

use serde_json::json;

use crate::console::console_login;
use crate::env::*;

/// Namespace `alpha` (registered unless it is) with agent `d1` paused on a question, and `d2`
/// working.
pub(crate) async fn paused_agent(env: &Env) {
    let known = env.server.admin("namespaces", json!({})).await;
    if !known.to_string().contains("\"alpha\"") {
        env.server.namespace("alpha").await;
    }
    for (name, args) in [
        (
            "d1",
            json!({"namespace": "alpha", "status": "paused_for_input", "question": "Postgres or SQLite for the cache?",
                   "where_it_stopped": "choosing a store", "next_steps": ["pick the store", "write the migration"],
                   "tests_status": "pass"}),
        ),
        (
            "d2",
            json!({"namespace": "alpha", "status": "working", "where_it_stopped": "writing docs"}),
        ),
    ] {
        let key = env
            .server
            .mint(
                name,
                "driver",
                json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
            )
            .await;
        let c = env.server.client(&key).await;
        c.ok("checkpoint", args).await;
        let _ = c.inner.cancel().await;
    }
}

async fn checkmark(env: &Env, agent: &str) -> serde_json::Value {
    env.server
        .admin(
            "checkmarks",
            json!({"action": "get", "namespace": "alpha", "agent": agent}),
        )
        .await["checkmark"]
        .clone()
}

fn answer_form(csrf: &str, answer: &str, resume: &str) -> Vec<(String, String)> {
    [
        ("action", "answer"),
        ("namespace", "alpha"),
        ("agent", "d1"),
        ("answer", answer),
        ("resume", resume),
        ("csrf", csrf),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

#[tokio::test]
async fn console_answers_a_paused_agent_after_confirming_and_audits_the_person() {
    let env = Env::start().await;
    paused_agent(&env).await;
    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    for want in [
        "id=\"checkmarks\"",
        "badge s-paused_for_input",
        "Postgres or SQLite for the cache?",
        "pick the store, write the migration",
        "Answer &amp; resume",
    ] {
        assert!(page.body.contains(want), "the page shows {want}");
    }
    assert_eq!(
        page.body
            .matches("name=\"action\" value=\"answer\"")
            .count(),
        1,
        "one form: only the paused agent waits for an answer"
    );
    let csrf = hidden(&page.body, "csrf");

    // A form from another page (wrong CSRF token) is refused before any confirmation.
    let forged = answer_form(&"f".repeat(64), "SQLite", "yes");
    assert_eq!(
        browser
            .post_form(&env.url("/console"), &forged)
            .await
            .status,
        403
    );

    let form = answer_form(&csrf, "Postgres: the cache is shared by replicas", "yes");
    let confirm = browser.post_form(&env.url("/console"), &form).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("Confirm: answer"), "{}", confirm.body);
    assert!(
        confirm
            .body
            .contains("Postgres: the cache is shared by replicas")
    );
    assert!(
        confirm.body.contains("resumed"),
        "the effect says it resumes"
    );
    assert_eq!(
        checkmark(&env, "d1").await["answer"],
        json!(null),
        "a confirmation page changes nothing"
    );

    let mut yes = form.clone();
    yes.push(("confirm".into(), "yes".into()));
    let done = browser.post_form(&env.url("/console"), &yes).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location(), "/console?done=answer");
    let mark = checkmark(&env, "d1").await;
    assert_eq!(mark["answer"], "Postgres: the cache is shared by replicas");
    assert_eq!(mark["answered_by"], "github:octo");
    assert_eq!(mark["status"], "working", "answered and resumed");
    assert_eq!(mark["resume"]["requested_by"], "github:octo");
    let actions = env.audit_actions().await;
    assert!(
        actions.contains(&("console-answer".into(), "github:octo".into())),
        "{actions:?}"
    );
    assert!(
        actions.contains(&("checkmark-answered".into(), "github:octo".into())),
        "the checkmarks tool's own row: {actions:?}"
    );
    let rows = env
        .server
        .store
        .recent_audit(&capsid_core::ports::AuditFilter::default(), 10)
        .await
        .expect("audit");
    let console_row = rows
        .iter()
        .find(|r| r.action.as_deref() == Some("console-answer"))
        .unwrap();
    assert!(
        !console_row
            .params
            .as_deref()
            .unwrap_or_default()
            .contains("replicas"),
        "the answer's text stays out of the audit log: {:?}",
        console_row.params
    );

    // Answering again is refused by the rule, not silently overwritten.
    let page = browser.get(&env.url("/console")).await;
    assert!(
        page.body.contains("answered by github:octo"),
        "the page shows the answer"
    );
    let again = answer_form(&hidden(&page.body, "csrf"), "SQLite", "no");
    let mut again = again;
    again.push(("confirm".into(), "yes".into()));
    let r = browser.post_form(&env.url("/console"), &again).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body.contains("working") || r.body.contains("already answered"),
        "{}",
        r.body
    );
    assert_eq!(
        checkmark(&env, "d1").await["answer"],
        "Postgres: the cache is shared by replicas"
    );
}

#[tokio::test]
async fn console_shows_a_selected_agents_log_in_pages_and_the_json_carries_the_panel() {
    let env = Env::start().await;
    paused_agent(&env).await;
    let key = env
        .server
        .mint("b1", "driver", json!({"namespaces": ["alpha"], "grants": ["read", "write"], "flags": {"can_write_shared": true}}))
        .await;
    let c = env.server.client(&key).await;
    for n in 0..12 {
        c.ok(
            "checkpoint",
            json!({"namespace": "alpha", "status": "working", "summary": format!("entry {n}"),
                                  "visibility": if n == 11 { "global" } else { "project" }}),
        )
        .await;
    }
    c.ok(
        "shared",
        json!({"action": "set", "key": "staging-url", "value": "https://staging.example"}),
    )
    .await;
    let mut browser = Browser::new();
    console_login(&env, &mut browser).await;
    let page = browser
        .get(&env.url("/console?log_namespace=alpha&log_agent=b1"))
        .await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Log of b1 in alpha"), "{}", page.body);
    assert!(page.body.contains("entry 11") && page.body.contains("entry 2"));
    assert!(!page.body.contains("entry 1<"), "ten to a page");
    assert!(page.body.contains("older entries"));
    assert!(page.body.contains("staging-url") && page.body.contains("https://staging.example"));
    let view = browser
        .get(&env.url("/console.json?log_namespace=alpha&log_agent=b1"))
        .await
        .json();
    let panel = &view["checkmarks"];
    assert_eq!(panel["log"]["count"], 10);
    let cursor = panel["log"]["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let older = browser
        .get(&env.url(&format!(
            "/console.json?log_namespace=alpha&log_agent=b1&log_cursor={cursor}"
        )))
        .await
        .json();
    let summaries: Vec<&str> = older["checkmarks"]["log"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert_eq!(summaries, ["entry 1", "entry 0"]);
    let agents: Vec<&str> = panel["namespaces"][0]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["b1", "d1", "d2"]);
    assert_eq!(
        panel["feed"]["entries"][0]["summary"], "entry 11",
        "the global entry"
    );
    assert_eq!(panel["feed"]["count"], 1);
    assert_eq!(panel["shared"]["entries"][0]["key"], "staging-url");
    // A stale or forged cursor shows as a note, not a failure.
    let bad = browser
        .get(&env.url("/console?log_namespace=alpha&log_agent=b1&log_cursor=forged"))
        .await;
    assert_eq!(bad.status, 200);
    assert!(
        bad.body.contains("not a cursor this server issued"),
        "{}",
        bad.body
    );
    let _ = c.inner.cancel().await;
}

#[tokio::test]
async fn console_promotes_a_log_entry_to_global_after_confirming_and_audits_the_person() {
    let env = Env::start().await;
    paused_agent(&env).await;
    let mut browser = Browser::new();
    console_login(&env, &mut browser).await;
    let page = browser
        .get(&env.url("/console?log_namespace=alpha&log_agent=d2"))
        .await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Log of d2 in alpha"), "{}", page.body);
    let entry = checkmark(&env, "d2").await["log_entry_id"]
        .as_i64()
        .expect("d2's entry");
    assert!(
        page.body
            .contains(&format!("name=\"entry_id\" value=\"{entry}\"")),
        "a Make global form for d2's project entry: {}",
        page.body
    );
    assert!(page.body.contains(">Make global</button>"));
    let csrf = hidden(&page.body, "csrf");
    let form: Vec<(String, String)> = [
        ("action", "promote"),
        ("namespace", "alpha"),
        ("entry_id", &entry.to_string()),
        ("csrf", &csrf),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let feed = || async {
        env.server
            .admin("checkmarks", json!({"action": "feed"}))
            .await["count"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(feed().await, 0);

    let confirm = browser.post_form(&env.url("/console"), &form).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(
        confirm.body.contains("Confirm: promote"),
        "{}",
        confirm.body
    );
    assert!(
        confirm
            .body
            .contains(&format!("Promote log entry {entry} of alpha to global")),
        "{}",
        confirm.body
    );
    assert_eq!(feed().await, 0, "a confirmation page changes nothing");

    let mut yes = form.clone();
    yes.push(("confirm".into(), "yes".into()));
    let done = browser.post_form(&env.url("/console"), &yes).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location(), "/console?done=promote");
    assert_eq!(feed().await, 1);
    let actions = env.audit_actions().await;
    for action in ["console-promote", "log-entry-promoted"] {
        assert!(
            actions.contains(&(action.into(), "github:octo".into())),
            "{action}: {actions:?}"
        );
    }
    let page = browser
        .get(&env.url("/console?log_namespace=alpha&log_agent=d2"))
        .await;
    assert!(
        !page
            .body
            .contains(&format!("name=\"entry_id\" value=\"{entry}\"")),
        "no form once it is global"
    );

    // Again: refused by the rule, nothing written; a bad id names the field.
    let audits = env.audit_actions().await.len();
    let again = browser.post_form(&env.url("/console"), &yes).await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(again.body.contains("already global"), "{}", again.body);
    let mut bad = yes.clone();
    bad[2].1 = "x".into();
    let r = browser.post_form(&env.url("/console"), &bad).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("entry_id"), "{}", r.body);
    assert_eq!(env.audit_actions().await.len(), audits);
}
