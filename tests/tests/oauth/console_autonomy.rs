//! The console's autonomy panel over HTTP: after a signed policy, an auto-merge tick and a
//! watcher pass, the page shows the policy's state, the tick's counts, the PR awaiting the
//! seat and the watcher's finding, and `/console.json` carries exactly the `improve_status`
//! autonomy block the page was rendered from.

use capsid_core::improve::keys::AWAITING_SEAT_KEY;
use serde_json::json;

use crate::console::console_login;
use crate::env::*;

#[tokio::test]
async fn console_shows_autonomy_as_improve_status_reports_it() {
    let env = Env::start().await;
    let s = &env.server;
    s.namespace("capsid").await;
    let added = s
        .admin(
            "improve_run",
            json!({"action": "roster", "op": "add", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(added["ok"], true, "{added}");
    let body = "# Auto-merge\n\n- version: v-console\n- enabled: true\n- namespaces: capsid\n\n\
        - `body_names_job`\n- `author_is_driver`\n- `base_is_default_branch`\n- `ci_green`\n\
        - `paths_unprotected`\n- `paths_not_money`\n- `no_migration_workflow_lockfile`\n";
    s.admin("write", json!({"namespace": "capsid", "path": "policy/auto-merge.md", "title": "Auto-merge", "body": body, "allow_improve_paths": true})).await;
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/auto-merge.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
    let gates = "- version: g-console\n- enabled: false\n\n- `additive_migration`\n- `push_branch`\n- `open_pr`\n";
    s.admin("write", json!({"namespace": "capsid", "path": "policy/gates.md", "title": "Gates", "body": gates, "allow_improve_paths": true})).await;
    let signed = s
        .admin(
            "improve_run",
            json!({"action": "sign_policy", "namespace": "capsid", "path": "policy/gates.md"}),
        )
        .await;
    assert_eq!(signed["ok"], true, "{signed}");
    let tick = s.admin("improve_run", json!({"action": "tick"})).await;
    assert_eq!(tick["ok"], true, "{tick}");
    // A PR a previous tick declined, as the awaiting-seat list records it.
    s.store
        .put_setting(
            AWAITING_SEAT_KEY,
            &json!([{"namespace": "capsid", "repo": "octo/capsid", "number": 41, "failed": "ci_green",
                     "why": "CI on abcdef0 is pending", "at": "2026-12-01T00:00:00.000Z", "head_sha": "abcdef0"}])
            .to_string(),
            None,
        )
        .await
        .expect("the seat");
    let status = s.admin("improve_status", json!({})).await["autonomy"].clone();

    let mut browser = Browser::new();
    let page = console_login(&env, &mut browser).await;
    for want in [
        "<h2>Autonomy</h2>",
        "version v-console",
        "signed true · enabled true",
        "octo/capsid#41",
        "CI on abcdef0 is pending",
        "<code>backup-stale</code>",
        "Gate policy: present true · signed true · enabled false · version g-console",
    ] {
        assert!(page.body.contains(want), "{want} in {}", page.body);
    }
    assert!(
        status["gates"]["policy"]["note"]
            .as_str()
            .unwrap_or_default()
            .contains("disabled"),
        "{status}"
    );
    let view = browser.get(&env.url("/console.json")).await.json();
    assert_eq!(
        view["improve"]["autonomy"], status,
        "the page's source is improve_status's"
    );
    assert_eq!(
        view["improve"]["autonomy"]["auto_merge"]["last_tick"]["evaluated"],
        0
    );
    assert!(
        view["improve"]["autonomy"]["auto_merge"]["last_tick"]["notes"][0]
            .as_str()
            .unwrap_or_default()
            .contains("GitHub App not configured"),
        "{view}"
    );
}
