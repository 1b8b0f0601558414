//! `improve_run pin` over real MCP (admin only): the pin follows the scores document's Anchors
//! block, `improve_status` reports whether it still matches (with the roster, the best record,
//! the last run and the lifetime counts), a score report against a stale pin is refused (409)
//! and changes nothing, and a document with problems is never pinned.

use capsid_core::improve::anchors::anchors_checksum;
use capsid_core::improve::keys::anchor_key;
use capsid_core::improve::machine::AttemptStatus;
use capsid_core::ports::AuditFilter;
use serde_json::{Value, json};

use super::{Env, OP_WRITE, SCORES_MD, attempt_status, description, report, signed};

async fn write_scores(client: &capsid_tests::server::Client, ns: &str, body: &str) {
    let wrote = client
        .ok(
            "write",
            json!({"namespace": ns, "path": "improve/scores.md", "title": "Scores",
                   "body": body, "allow_improve_paths": true, "confirm": true}),
        )
        .await;
    assert!(wrote.to_string().contains("scores.md"), "{wrote}");
}

async fn status_of(client: &capsid_tests::server::Client, ns: &str) -> Value {
    let status = client.ok("improve_status", json!({"namespace": ns})).await;
    let namespaces = status["namespaces"].as_array().expect("namespaces");
    assert_eq!(namespaces.len(), 1, "{status}");
    namespaces[0].clone()
}

async fn stored_pin(env: &Env, ns: &str) -> Option<String> {
    env.s
        .store
        .setting(&anchor_key(ns), env.s.service.now())
        .await
        .expect("setting")
}

pub(crate) async fn a_pin_follows_the_anchors_and_guards_the_score(env: &Env) {
    let admin = env.s.client(OP_WRITE).await;

    // As seeded: pinned to SCORES_MD, on the roster, a best record, one run in flight.
    let before = status_of(&admin, "capsid").await;
    let seeded = anchors_checksum(SCORES_MD);
    assert_eq!(before["pinned"]["pinned"], true, "{before}");
    assert_eq!(before["pinned"]["matches"], true, "{before}");
    assert_eq!(before["pinned"]["checksum"], seeded.as_str());
    assert_eq!(before["anchor_pinned"], true, "the older field stays");
    assert_eq!(before["on_roster"], true);
    assert_eq!(before["best"]["sha"], "beef", "{before}");
    assert_eq!(before["last_run"]["id"], env.run.as_str(), "{before}");
    assert_eq!(before["last_run"]["status"], "awaiting-score");
    assert_eq!(
        (
            &before["last_run"]["attempts"],
            &before["last_run"]["kept"],
            &before["last_run"]["reverted"]
        ),
        (&json!(1), &json!(0), &json!(0))
    );
    assert_eq!(
        before["lifetime"],
        json!({"runs": 1, "attempts": 1, "kept": 0, "reverted": 0, "cost_usd": 0.0, "ci_minutes": 0.0})
    );
    assert!(before["jobs"].is_object() && before.get("integrity").is_some());

    // A minted agent, even with every grant, may not pin.
    let key = env
        .s
        .mint(
            "pinner",
            "session",
            json!({"namespaces": ["capsid"], "grants": ["read", "write"]}),
        )
        .await;
    let agent = env.s.client(&key).await;
    let refused = match agent
        .call(
            "improve_run",
            json!({"action": "pin", "namespace": "capsid"}),
        )
        .await
    {
        Ok(v) => v.to_string(),
        Err(e) => e,
    };
    assert!(refused.contains("admin only"), "{refused}");
    assert_eq!(
        stored_pin(env, "capsid").await.as_deref(),
        Some(seeded.as_str())
    );

    // The Anchors change: the old pin no longer matches; a dry run stores nothing; a pin does.
    let tighter = SCORES_MD.replace("min 0.5", "min 0.6");
    write_scores(&admin, "capsid", &tighter).await;
    assert_eq!(
        status_of(&admin, "capsid").await["pinned"]["matches"],
        false
    );
    let dry = admin
        .ok(
            "improve_run",
            json!({"action": "pin", "namespace": "capsid", "dry_run": true}),
        )
        .await;
    assert_eq!(dry["ok"], true, "{dry}");
    assert_eq!(dry["checksum"], anchors_checksum(&tighter).as_str());
    assert_eq!(
        stored_pin(env, "capsid").await.as_deref(),
        Some(seeded.as_str())
    );
    let pinned = admin
        .ok(
            "improve_run",
            json!({"action": "pin", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(pinned["ok"], true, "{pinned}");
    assert_eq!(pinned["action"], "pin");
    assert_eq!(pinned["namespace"], "capsid");
    assert_eq!(pinned["checksum"], anchors_checksum(&tighter).as_str());
    assert_eq!(pinned["previous"], seeded.as_str());
    assert_eq!(pinned["on_roster"], true);
    assert_eq!(
        stored_pin(env, "capsid").await,
        Some(anchors_checksum(&tighter))
    );
    let audit = env
        .s
        .store
        .recent_audit(
            &AuditFilter {
                namespace: Some("capsid".into()),
                actor: None,
            },
            20,
        )
        .await
        .expect("audit");
    let row = audit
        .iter()
        .find(|a| a.action.as_deref() == Some("improve-pin"))
        .expect("an improve-pin audit row");
    let params: Value = serde_json::from_str(row.params.as_deref().unwrap_or("{}")).expect("json");
    assert_eq!(params["checksum"], anchors_checksum(&tighter).as_str());
    assert_eq!(params["previous"], seeded.as_str());
    assert!(
        row.actor
            .as_deref()
            .is_some_and(|a| a.starts_with("opkey:")),
        "{row:?}"
    );
    assert_eq!(status_of(&admin, "capsid").await["pinned"]["matches"], true);

    // Edited again without a re-pin: status says so and the score report is refused.
    let tightest = SCORES_MD.replace("min 0.5", "min 0.7");
    write_scores(&admin, "capsid", &tightest).await;
    let stale = status_of(&admin, "capsid").await;
    assert_eq!(stale["pinned"]["pinned"], true);
    assert_eq!(stale["pinned"]["matches"], false, "{stale}");
    assert_eq!(
        stale["pinned"]["current"],
        anchors_checksum(&tightest).as_str()
    );
    let (status, why) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "stale-pin", 400.0, 40, 36),
    )
    .await;
    assert_eq!(status, 409, "{why}");
    assert!(
        description(&why).contains("anchor checksum mismatch"),
        "{why}"
    );
    assert_eq!(attempt_status(env).await, AttemptStatus::AwaitingScore);

    // A document with problems is refused naming each, and the pin stays.
    write_scores(
        &admin,
        "capsid",
        "## Anchors\n- tests_pass: max\n\n## Secondary\n- bundle_kb: smaller weight 1\n",
    )
    .await;
    let bad = admin
        .ok(
            "improve_run",
            json!({"action": "pin", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(bad["ok"], false, "{bad}");
    let problems = bad["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 3, "{bad}");
    let refusal = bad["refusal"].as_str().unwrap_or("");
    assert!(refusal.contains("declares max with no bound"), "{refusal}");
    assert!(refusal.contains("bundle_kb: smaller weight 1"), "{refusal}");
    assert_eq!(
        stored_pin(env, "capsid").await,
        Some(anchors_checksum(&tighter))
    );

    // Re-pinned over the intended document, the same attempt's report is judged.
    write_scores(&admin, "capsid", &tightest).await;
    let repinned = admin
        .ok(
            "improve_run",
            json!({"action": "pin", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(repinned["previous"], anchors_checksum(&tighter).as_str());
    let (status, answer) = signed(
        env,
        "/improve/score",
        "capsid",
        report(env, "after-repin", 400.0, 40, 36),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["verdict"], "kept", "{answer}");
    let after = status_of(&admin, "capsid").await;
    assert_eq!(after["last_run"]["kept"], 1, "{after}");
    assert_eq!(after["lifetime"]["kept"], 1, "{after}");
    assert_eq!(after["best"]["attempt_id"], env.attempt.as_str(), "{after}");

    // No scores document: refused; an unregistered namespace: an error; off the roster: said.
    let none = admin
        .ok(
            "improve_run",
            json!({"action": "pin", "namespace": "orchard"}),
        )
        .await;
    assert_eq!(none["ok"], false, "{none}");
    assert!(
        none["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("orchard/improve/scores.md does not exist"),
        "{none}"
    );
    assert_eq!(stored_pin(env, "orchard").await, None);
    let orchard = status_of(&admin, "orchard").await;
    assert_eq!(
        orchard["pinned"],
        json!({"pinned": false, "matches": null, "checksum": null, "current": null})
    );
    assert_eq!(orchard["last_run"], Value::Null);
    assert_eq!(orchard["best"], Value::Null);
    let unknown = admin
        .err(
            "improve_run",
            json!({"action": "pin", "namespace": "nosuch"}),
        )
        .await;
    assert!(unknown.contains("nosuch"), "{unknown}");
    env.s.namespace("alpha").await;
    write_scores(&admin, "alpha", SCORES_MD).await;
    let alpha = admin
        .ok(
            "improve_run",
            json!({"action": "pin", "namespace": "alpha"}),
        )
        .await;
    assert_eq!(alpha["ok"], true, "{alpha}");
    assert_eq!(alpha["on_roster"], false);
    assert_eq!(alpha["previous"], Value::Null);
    assert!(
        alpha["note"]
            .as_str()
            .unwrap_or("")
            .contains("not on the roster"),
        "{alpha}"
    );
    let alpha_status = status_of(&admin, "alpha").await;
    assert_eq!(alpha_status["on_roster"], false);
    assert_eq!(alpha_status["pinned"]["matches"], true);
}
