//! Merge proposals and the skills panel (reference 9) through the real MCP tools: two live
//! skills with overlapping triggers and bodies under 10% apart are proposed to a human in
//! `improve_status`, a candidate never is; only an admin settles a proposal (accept retires
//! the other skill, reject stops the pair being proposed again), and the panel counts skills
//! by status with the offered-to-used rate of the namespace's outcomes.

use super::*;
use capsid_core::ports::{AuditEntry, SkillRow};
use capsid_core::time::Timestamp;

fn steps(n: usize) -> String {
    (0..n)
        .map(|i| format!("Step {i}: do the thing numbered {i}.\n"))
        .collect()
}

async fn seed(s: &TestServer, id: &str, status: &str, trigger: &str, body: &str) {
    let at = Timestamp::parse("2026-11-01T00:00:00Z").unwrap();
    let path = format!("improve/skills/{id}.md");
    s.admin("write", json!({"namespace": "alpha", "path": path, "title": id, "body": body, "allow_improve_paths": true}))
        .await;
    s.store
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
                namespaces: None,
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

async fn seed_four(s: &TestServer) {
    setup(s).await;
    let body = steps(20);
    seed(s, "sk-a", "live", "flaky test retry", &body).await;
    seed(
        s,
        "sk-b",
        "live",
        "retry flaky tests",
        &body.replacen("Step 3", "Step three", 1),
    )
    .await;
    seed(s, "sk-c", "candidate", "flaky test retry", &body).await;
    seed(s, "sk-d", "live", "database migration lockfile", &body).await;
}

fn proposals(status: &Value) -> Vec<String> {
    status["skill_merge_proposals"]
        .as_array()
        .unwrap_or_else(|| panic!("skill_merge_proposals: {status}"))
        .iter()
        .map(|p| p["pair"].as_str().unwrap().to_owned())
        .collect()
}

fn panel<'a>(status: &'a Value, ns: &str) -> &'a Value {
    status["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["namespace"] == ns)
        .map(|n| &n["skills"])
        .unwrap_or_else(|| panic!("{ns} in {status}"))
}

/// Only the two live near-duplicates are proposed (not the candidate with the same trigger
/// and body, not the live skill with another trigger); an agent may see the proposal but not
/// settle it; accepting retires the other skill, audited, and the proposal is gone.
async fn a_merge_is_proposed_for_live_near_duplicates_and_settled_by_an_admin(s: &TestServer) {
    seed_four(s).await;
    let d = driver(s, "d1", json!({})).await;
    let status = d.ok("improve_status", json!({"namespace": "alpha"})).await;
    assert_eq!(proposals(&status), ["sk-a+sk-b"], "{status}");
    let p = &status["skill_merge_proposals"][0];
    assert!(p["difference"].as_f64().unwrap() < 0.1, "{p}");

    let refused = match d
        .call(
            "improve_run",
            json!({"action": "accept_merge", "namespace": "alpha", "skill": "sk-a", "other": "sk-b"}),
        )
        .await
    {
        Ok(v) => v.to_string(),
        Err(e) => e,
    };
    assert!(refused.contains("admin only"), "{refused}");
    assert_eq!(s.store.skill("sk-b").await.unwrap().unwrap().status, "live");

    let not_a_pair = s
        .admin(
            "improve_run",
            json!({"action": "accept_merge", "skill": "sk-a", "other": "sk-c"}),
        )
        .await;
    assert_eq!(not_a_pair["ok"], false, "{not_a_pair}");
    assert_eq!(
        s.store.skill("sk-c").await.unwrap().unwrap().status,
        "candidate"
    );
    let dry = s
        .admin(
            "improve_run",
            json!({"action": "accept_merge", "skill": "sk-a", "other": "sk-b", "dry_run": true}),
        )
        .await;
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(s.store.skill("sk-b").await.unwrap().unwrap().status, "live");

    let merged = s
        .admin("improve_run", json!({"action": "accept_merge", "skill": "sk-a", "other": "sk-b", "reason": "same steps"}))
        .await;
    assert_eq!(
        (merged["ok"].clone(), merged["retired"].clone()),
        (json!(true), json!("sk-b")),
        "{merged}"
    );
    assert_eq!(
        s.store.skill("sk-b").await.unwrap().unwrap().status,
        "retired"
    );
    assert_eq!(s.store.skill("sk-a").await.unwrap().unwrap().status, "live");
    let audit = s
        .store
        .newest_audit("skill-merged", "alpha", "improve/skills/sk-b.md")
        .await
        .unwrap()
        .expect("audit row");
    assert!(audit.params.unwrap_or_default().contains("sk-a"));
    let after = d.ok("improve_status", json!({"namespace": "alpha"})).await;
    assert!(proposals(&after).is_empty(), "{after}");
    let again = s
        .admin(
            "improve_run",
            json!({"action": "accept_merge", "skill": "sk-a", "other": "sk-b"}),
        )
        .await;
    assert_eq!(again["ok"], false, "a settled pair is no proposal: {again}");
}

/// A rejected pair is not proposed again and both skills stay live; rejecting twice is
/// refused.
async fn a_rejected_merge_is_not_proposed_again(s: &TestServer) {
    seed_four(s).await;
    let rejected = s
        .admin("improve_run", json!({"action": "reject_merge", "skill": "sk-b", "other": "sk-a", "reason": "they differ in intent"}))
        .await;
    assert_eq!(rejected["pair"], "sk-a+sk-b", "{rejected}");
    let status = s.admin("improve_status", json!({})).await;
    assert!(proposals(&status).is_empty(), "{status}");
    for id in ["sk-a", "sk-b"] {
        assert_eq!(s.store.skill(id).await.unwrap().unwrap().status, "live");
    }
    let twice = s
        .admin(
            "improve_run",
            json!({"action": "reject_merge", "skill": "sk-a", "other": "sk-b"}),
        )
        .await;
    assert_eq!(twice["ok"], false, "{twice}");
    let unknown = s
        .admin(
            "improve_run",
            json!({"action": "reject_merge", "skill": "sk-a", "other": "nope"}),
        )
        .await;
    assert_eq!(unknown["ok"], false, "{unknown}");
}

/// The panel: counts by status for the namespace, nothing offered yet, then one claim that
/// offered two skills and a completion that used one: 1 of 2 used.
async fn the_panel_counts_skills_and_the_offered_to_used_rate(s: &TestServer) {
    seed_four(s).await;
    let d = driver(s, "d1", json!({})).await;
    let status = d.ok("improve_status", json!({"namespace": "alpha"})).await;
    let p = panel(&status, "alpha");
    assert_eq!(
        p["counts"],
        json!({"candidate": 1, "live": 3, "retired": 0}),
        "{p}"
    );
    assert_eq!(p["offered_to_used"]["rate"], Value::Null, "{p}");
    assert_eq!(p["last_evaluation"], Value::Null);

    let job = post(&d, "alpha", "Retry the flaky login test", json!({})).await;
    let claimed = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": job["id"], "namespace": "alpha"}),
        )
        .await;
    let offered = claimed["skills_offered"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    assert!(offered >= 2, "{claimed}");
    d.ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "fixed", "skills_used": ["sk-a"], "skill_verdict": "verified-success"}))
        .await;
    let status = d.ok("improve_status", json!({"namespace": "alpha"})).await;
    let rate = &panel(&status, "alpha")["offered_to_used"];
    assert_eq!(rate["outcomes"], 1, "{rate}");
    assert_eq!(rate["offered"], offered, "{rate}");
    assert_eq!(rate["used"], 1, "{rate}");
    let want = 1.0 / offered as f64;
    assert!(
        (rate["rate"].as_f64().unwrap() - want).abs() < 1e-9,
        "{rate}"
    );
    let beta = d.ok("improve_status", json!({"namespace": "beta"})).await;
    assert_eq!(panel(&beta, "beta")["offered_to_used"]["outcomes"], 0);
}

e2e_cases!(crate::e2e_jobs::options();
    a_merge_is_proposed_for_live_near_duplicates_and_settled_by_an_admin,
    a_rejected_merge_is_not_proposed_again,
    the_panel_counts_skills_and_the_offered_to_used_rate,
);
