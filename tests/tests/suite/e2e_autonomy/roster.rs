//! The roster is configuration (each scenario once per store): the admin adds, removes and
//! lists it through `improve_run` action `roster`, each change audited; a minted agent cannot
//! touch it; a namespace must be registered to join; a policy naming a namespace off the
//! roster is refused at load, and adding it to the roster is what lets the policy load.

use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::json;

use super::{
    audit_rows, auto_merge_tick, autonomy_status, merge_policy, params, setup, sign_merge_policy,
};

capsid_tests::github_cases!(
    the_admin_edits_the_roster_and_each_change_is_audited,
    a_policy_naming_a_namespace_off_the_roster_is_refused,
);

async fn roster(s: &TestServer, op: &str, ns: Option<&str>) -> serde_json::Value {
    let mut args = json!({"action": "roster", "op": op});
    if let Some(ns) = ns {
        args["namespace"] = json!(ns);
    }
    s.admin("improve_run", args).await
}

async fn the_admin_edits_the_roster_and_each_change_is_audited(s: &TestServer, _g: &FakeGitHub) {
    let listed = roster(s, "list", None).await;
    assert_eq!(
        listed["roster"],
        json!([]),
        "a fresh install's roster is empty: it names no one's projects: {listed}"
    );
    s.namespace("alpha").await;
    s.namespace("beta").await;
    for ns in ["beta", "alpha"] {
        let added = roster(s, "add", Some(ns)).await;
        assert_eq!(added["ok"], true, "{added}");
        assert!(
            added["roster"].as_array().unwrap().contains(&json!(ns)),
            "{added}"
        );
    }
    let removed = roster(s, "remove", Some("beta")).await;
    assert_eq!(removed["ok"], true, "{removed}");
    let listed = roster(s, "list", None).await;
    assert_eq!(listed["roster"], json!(["alpha"]), "{listed}");
    assert_eq!(autonomy_status(s).await["roster"], listed["roster"]);
    let rows = audit_rows(s, "improve-roster").await;
    assert_eq!(rows.len(), 3, "one row per change, none for a list");
    assert_eq!(params(&rows[1])["op"], "add");
    assert_eq!(params(&rows[1])["namespace"], "alpha");
    assert_eq!(params(&rows[0])["op"], "remove");
    assert_eq!(rows[0].namespace.as_deref(), Some("beta"));
    assert_eq!(rows[0].actor.as_deref(), Some("cli:test"));

    // Joining needs a registered namespace; a dry run changes nothing.
    let unknown = s
        .service
        .call_tool(
            &capsid_core::caller::Caller::cli("test"),
            "improve_run",
            json!({"action": "roster", "op": "add", "namespace": "nosuch"}),
            &capsid_core::service::NoConfirmer,
        )
        .await;
    assert!(unknown.is_err_and(|e| e.to_string().contains("nosuch")));
    let dry = s
        .admin(
            "improve_run",
            json!({"action": "roster", "op": "remove", "namespace": "alpha", "dry_run": true}),
        )
        .await;
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert!(
        roster(s, "list", None).await["roster"]
            .as_array()
            .unwrap()
            .contains(&json!("alpha"))
    );
    assert_eq!(audit_rows(s, "improve-roster").await.len(), 3);

    // A minted agent, however wide, is refused at the one check, and nothing changes.
    let key = s
        .mint(
            "wide",
            "session",
            json!({"namespaces": ["*"], "grants": ["read", "write"]}),
        )
        .await;
    let agent = s.client(&key).await;
    for args in [
        json!({"action": "roster", "op": "add", "namespace": "alpha"}),
        json!({"action": "roster", "op": "list"}),
        json!({"action": "tick"}),
    ] {
        let answer = agent.ok("improve_run", args.clone()).await;
        assert_eq!(answer["ok"], false, "{args}: {answer}");
        assert!(
            answer["refusal"]
                .as_str()
                .unwrap_or_default()
                .contains("admin only"),
            "{answer}"
        );
    }
    assert_eq!(audit_rows(s, "improve-roster").await.len(), 3);
    assert!(audit_rows(s, "improve-tick").await.is_empty());
}

async fn a_policy_naming_a_namespace_off_the_roster_is_refused(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    s.namespace("beta").await;
    sign_merge_policy(s, &merge_policy("v1", true, "alpha, beta")).await;
    let report = auto_merge_tick(s).await;
    assert_eq!(report["evaluated"], 0, "{report}");
    let note = report["notes"][0].as_str().unwrap_or_default();
    assert!(
        note.contains("beta") && note.contains("not on the improve roster"),
        "{report}"
    );
    let policy = &autonomy_status(s).await["auto_merge"]["policy"];
    assert_eq!(
        (policy["signed"].as_bool(), policy["enabled"].as_bool()),
        (Some(true), Some(false)),
        "{policy}"
    );
    assert!(
        policy["note"]
            .as_str()
            .unwrap_or_default()
            .contains("not on the improve roster")
    );
    s.admin(
        "improve_run",
        json!({"action": "roster", "op": "add", "namespace": "beta"}),
    )
    .await;
    let report = auto_merge_tick(s).await;
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| !n.as_str().unwrap_or_default().contains("roster")),
        "{report}"
    );
    let policy = &autonomy_status(s).await["auto_merge"]["policy"];
    assert_eq!(policy["enabled"], true, "{policy}");
    assert_eq!(policy["namespaces"], json!(["alpha", "beta"]), "{policy}");
}
