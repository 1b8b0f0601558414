//! The console's skills panel in headless Chromium (reference 9): per namespace the skills by
//! status, the newest evaluation and the offered-to-used rate, and the open merge proposal of
//! two live near-duplicates (a candidate with the same trigger and body is not proposed).

use capsid_core::ports::{AuditEntry, SkillEvaluationRow, SkillRow};
use capsid_core::time::Timestamp;
use serde_json::{Value, json};

use crate::cdp::Chrome;
use crate::console_chromium::{artifacts, chromium};
use crate::env::*;

async fn seed(env: &Env, id: &str, status: &str, trigger: &str, body: &str) {
    let at = Timestamp::parse("2026-11-01T00:00:00Z").unwrap();
    let path = format!("improve/skills/{id}.md");
    env.server
        .admin("write", json!({"namespace": "alpha", "path": path, "title": id, "body": body, "allow_improve_paths": true}))
        .await;
    env.server
        .store
        .insert_skill(
            SkillRow {
                id: id.into(),
                source_namespace: "alpha".into(),
                title: format!("Skill {id}"),
                body_ref: path.clone(),
                version: 1,
                status: status.into(),
                wins: 0,
                losses: 0,
                trigger_condition: Some(trigger.into()),
                namespaces: Some(r#"["alpha"]"#.into()),
            },
            at,
            AuditEntry {
                actor: "improve-loop".into(),
                action: "skill-added".into(),
                namespace: Some("alpha".into()),
                path: Some(path),
                params: json!({}),
                at,
            },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skills_panel_renders_in_headless_chromium() {
    let env = Env::start().await;
    env.server.namespace("alpha").await;
    let body: String = (0..20)
        .map(|i| format!("Step {i}: do thing {i}.\n"))
        .collect();
    seed(&env, "sk-flaky", "live", "flaky test retry", &body).await;
    seed(
        &env,
        "sk-retry",
        "live",
        "retry flaky tests",
        &body.replacen("Step 4", "Step four", 1),
    )
    .await;
    seed(&env, "sk-new", "candidate", "flaky test retry", &body).await;
    env.server
        .store
        .record_evaluation(
            SkillEvaluationRow {
                skill: "sk-new".into(),
                version: 1,
                namespace: "alpha".into(),
                probe_set_version: "2".into(),
                delta: 0.5,
                runs: 6,
                verdict: "positive".into(),
                evaluated_at: Timestamp::parse("2026-11-20T03:00:00Z").unwrap(),
            },
            AuditEntry {
                actor: "improve-loop".into(),
                action: "skill-evaluated".into(),
                namespace: Some("alpha".into()),
                path: Some("improve/skills/sk-new.md".into()),
                params: json!({}),
                at: Timestamp::parse("2026-11-20T03:00:00Z").unwrap(),
            },
        )
        .await
        .unwrap();
    // One job through the real tool: the claim offers the three, the driver used one.
    let key = env
        .server
        .mint(
            "d1",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"]}),
        )
        .await;
    let d = env.server.client(&key).await;
    let posted = d
        .ok("jobs", json!({"action": "post", "namespace": "alpha", "title": "Retry the flaky login test", "body": "Do it.\n"}))
        .await;
    let id = posted["job"]["id"].clone();
    let claimed = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    let offered = claimed["skills_offered"].as_array().map_or(0, Vec::len);
    assert_eq!(offered, 3, "{claimed}");
    d.ok("jobs", json!({"action": "complete", "id": id, "namespace": "alpha", "result_summary": "fixed", "skills_used": ["sk-flaky"], "skill_verdict": "verified-success"}))
        .await;

    let mut chrome = Chrome::open(
        &chromium(),
        &env.url("/console"),
        &["--window-size=1400,2600".into()],
    )
    .await;
    // Chromium signs in by itself: console, fake GitHub, callback, console.
    chrome
        .wait_for(
            "document.title === 'Capsid console' && document.querySelector('table.skills') !== null",
            "the console with the skills panel",
        )
        .await;
    let row = chrome
        .eval(
            "Array.from(document.querySelectorAll('table.skills tr[data-namespace=alpha] td')).map(td => td.innerText)",
        )
        .await
        .expect("the alpha row");
    let cells: Vec<&str> = row
        .as_array()
        .expect("cells")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(cells.len(), 6, "{cells:?}");
    assert_eq!(
        &cells[..4],
        ["alpha", "1", "2", "0"],
        "counts by status: {cells:?}"
    );
    assert!(cells[4].contains("sk-new v1: positive"), "{cells:?}");
    assert!(cells[5].contains("1/3 used (33%) over 1 job"), "{cells:?}");
    let merges = chrome
        .eval("document.querySelector('table.merges').innerText")
        .await
        .expect("the merge table");
    let merges = merges.as_str().unwrap_or_default();
    assert!(
        merges.contains("sk-flaky") && merges.contains("sk-retry"),
        "{merges}"
    );
    assert!(
        !merges.contains("sk-new"),
        "a candidate is never proposed: {merges}"
    );
    assert!(merges.contains("accept_merge"), "{merges}");
    let png = chrome.screenshot().await;
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    std::fs::write(artifacts().join("console-skills.png"), png).expect("write the screenshot");
}
