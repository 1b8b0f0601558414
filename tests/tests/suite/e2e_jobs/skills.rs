//! Skills on the queue (reference 9): a claim offers the live and candidate skills whose
//! trigger the job matches (with their newest failure notes), the completing call reports
//! which were used and the verifier's verdict, both lists land on the outcome row, and only a
//! used skill with a verified outcome is credited; a failed job notes the failure.

use super::*;
use capsid_core::ports::{AuditEntry, SkillRow};
use capsid_core::time::Timestamp;

async fn seed_skill(
    s: &TestServer,
    id: &str,
    status: &str,
    trigger: &str,
    namespaces: Option<&str>,
) {
    let at = Timestamp::parse("2026-11-01T00:00:00Z").unwrap();
    s.store
        .insert_skill(
            SkillRow {
                id: id.into(),
                source_namespace: "alpha".into(),
                title: format!("Skill {id}"),
                body_ref: format!("improve/skills/{id}.md"),
                version: 1,
                status: status.into(),
                wins: 0,
                losses: 0,
                trigger_condition: Some(trigger.into()),
                namespaces: namespaces.map(str::to_owned),
            },
            at,
            AuditEntry {
                actor: "improve-loop".into(),
                action: "skill-added".into(),
                namespace: Some("alpha".into()),
                path: Some(format!("improve/skills/{id}.md")),
                params: json!({}),
                at,
            },
        )
        .await
        .unwrap();
}

async fn seed_all(s: &TestServer) {
    setup(s).await;
    seed_skill(s, "sk-live", "live", "flaky test retry", None).await;
    seed_skill(
        s,
        "sk-cand",
        "candidate",
        "retry flaky tests",
        Some(r#"["alpha"]"#),
    )
    .await;
    seed_skill(s, "sk-retired", "retired", "flaky test retry", None).await;
    seed_skill(
        s,
        "sk-beta",
        "live",
        "flaky test retry",
        Some(r#"["beta"]"#),
    )
    .await;
    seed_skill(s, "sk-other", "live", "database migration lockfile", None).await;
}

async fn claim(d: &Client, id: &Value) -> Value {
    let out = d
        .ok(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["job"]["status"], "claimed", "{out}");
    out
}

fn offered_ids(claim: &Value) -> Vec<String> {
    claim["skills_offered"]
        .as_array()
        .unwrap_or_else(|| panic!("skills_offered: {claim}"))
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn skill(s: &TestServer, id: &str) -> SkillRow {
    s.store.skill(id).await.unwrap().unwrap()
}

async fn outcome_lists(s: &TestServer, job: &str) -> (Option<String>, Option<String>) {
    let rows = s.store.outcomes(None).await.unwrap();
    let row = rows
        .into_iter()
        .find(|r| r.job_id == job)
        .expect("outcome row");
    (row.skill_ids_offered, row.skill_ids_used)
}

/// Offered and used with a verified success: a win, both lists on the outcome.
async fn used_skill_with_verified_success_wins(s: &TestServer) {
    seed_all(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Retry the flaky login test", json!({})).await;
    let claimed = claim(&d, &job["id"]).await;
    assert_eq!(
        offered_ids(&claimed),
        ["sk-live", "sk-cand"],
        "live first; retired, other namespaces and unrelated triggers not offered"
    );
    let first = &claimed["skills_offered"][0];
    assert_eq!(first["name"], "Skill sk-live");
    assert_eq!(first["version"], 1);
    assert_eq!(first["status"], "live");
    assert_eq!(first["trigger"], "flaky test retry");
    assert_eq!(first["failures"], json!([]));
    let done = d
        .ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "fixed", "skills_used": ["sk-live"], "skill_verdict": "verified-success"}))
        .await;
    assert_eq!(done["job"]["status"], "done", "{done}");
    assert_eq!(
        done["skills"]["credited"],
        json!([{"id": "sk-live", "credit": "win"}]),
        "{done}"
    );
    let live = skill(s, "sk-live").await;
    assert_eq!((live.wins, live.losses), (1, 0));
    let cand = skill(s, "sk-cand").await;
    assert_eq!(
        (cand.wins, cand.losses),
        (0, 0),
        "offered but unused earns nothing"
    );
    let (offered, used) = outcome_lists(s, job["id"].as_str().unwrap()).await;
    assert_eq!(offered.as_deref(), Some(r#"["sk-live","sk-cand"]"#));
    assert_eq!(used.as_deref(), Some(r#"["sk-live"]"#));
}

/// Offered and unused: nothing credited; an empty used list is stored as `[]`, not NULL.
async fn offered_and_unused_earns_nothing(s: &TestServer) {
    seed_all(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Retry the flaky login test", json!({})).await;
    claim(&d, &job["id"]).await;
    let done = d
        .ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "fixed", "skills_used": [], "skill_verdict": "verified-success"}))
        .await;
    assert_eq!(done["skills"]["credited"], json!([]), "{done}");
    for id in ["sk-live", "sk-cand"] {
        let row = skill(s, id).await;
        assert_eq!((row.wins, row.losses), (0, 0), "{id}");
    }
    let (offered, used) = outcome_lists(s, job["id"].as_str().unwrap()).await;
    assert_eq!(offered.as_deref(), Some(r#"["sk-live","sk-cand"]"#));
    assert_eq!(used.as_deref(), Some("[]"));
}

/// Used, and the job failed on the environment: no loss, but a failure note that the next
/// claim offering the skill carries; a verified failure is a loss.
async fn environment_failure_earns_nothing_but_leaves_a_note(s: &TestServer) {
    seed_all(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Retry the flaky login test", json!({})).await;
    claim(&d, &job["id"]).await;
    let failed = d
        .ok("jobs", json!({"action": "fail", "id": job["id"], "namespace": "alpha", "reason": "runner out of disk", "skills_used": ["sk-live"], "skill_verdict": "environment-failure"}))
        .await;
    assert_eq!(failed["job"]["status"], "failed", "{failed}");
    assert_eq!(failed["skills"]["credited"], json!([]));
    let live = skill(s, "sk-live").await;
    assert_eq!(
        (live.wins, live.losses),
        (0, 0),
        "an outage charges nothing"
    );
    let (offered, used) = outcome_lists(s, job["id"].as_str().unwrap()).await;
    assert_eq!(offered.as_deref(), Some(r#"["sk-live","sk-cand"]"#));
    assert_eq!(used.as_deref(), Some(r#"["sk-live"]"#));

    let second = post(&d, "alpha", "Retry the flaky signup test", json!({})).await;
    let claimed = claim(&d, &second["id"]).await;
    let notes = &claimed["skills_offered"][0]["failures"];
    assert_eq!(notes.as_array().map(Vec::len), Some(1), "{claimed}");
    assert_eq!(notes[0]["note"], "environment-failure: runner out of disk");
    assert_eq!(notes[0]["source_id"], job["id"]);
    d.ok("jobs", json!({"action": "fail", "id": second["id"], "namespace": "alpha", "reason": "wrong fix", "skills_used": ["sk-live"], "skill_verdict": "verified-failure"}))
        .await;
    let live = skill(s, "sk-live").await;
    assert_eq!(
        (live.wins, live.losses),
        (0, 1),
        "a verified failure is a loss"
    );
    let third = post(&d, "alpha", "Retry the flaky logout test", json!({})).await;
    let claimed = claim(&d, &third["id"]).await;
    let notes = &claimed["skills_offered"][0]["failures"];
    assert_eq!(
        notes[0]["note"], "verified-failure: wrong fix",
        "newest first"
    );
    assert_eq!(notes.as_array().map(Vec::len), Some(2));
}

/// A used id the claim did not offer is refused and changes nothing; a verdict that
/// contradicts the action is a tool error naming the field.
async fn reports_outside_the_offer_are_refused(s: &TestServer) {
    seed_all(s).await;
    let d = driver(s, "d1", json!({})).await;
    let job = post(&d, "alpha", "Retry the flaky login test", json!({})).await;
    claim(&d, &job["id"]).await;
    let out = d
        .ok("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "x", "skills_used": ["sk-retired"], "skill_verdict": "verified-success"}))
        .await;
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        out["refusal"].as_str().unwrap().contains("did not offer"),
        "{out}"
    );
    let err = d
        .err("jobs", json!({"action": "complete", "id": job["id"], "namespace": "alpha", "result_summary": "x", "skills_used": ["sk-live"], "skill_verdict": "verified-failure"}))
        .await;
    assert!(err.contains("skill_verdict"), "{err}");
    let listed = d
        .ok("jobs", json!({"action": "list", "namespace": "alpha"}))
        .await;
    assert_eq!(listed["jobs"][0]["status"], "claimed", "nothing changed");
    assert_eq!(skill(s, "sk-retired").await.wins, 0);
}

/// `improve_run skills|skill` read for any caller with the namespace; `retire_skill` is admin
/// only, keyed and audited, and a retired skill is no longer offered.
async fn improve_run_lists_shows_and_retires_skills(s: &TestServer) {
    seed_all(s).await;
    let d = driver(s, "d1", json!({})).await;
    let listed = d
        .ok(
            "improve_run",
            json!({"action": "skills", "namespace": "alpha", "status": "live"}),
        )
        .await;
    let mut ids: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["id"].as_str())
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        ["sk-beta", "sk-live", "sk-other"],
        "live, and from alpha or offerable there: {listed}"
    );
    let beta = d
        .ok(
            "improve_run",
            json!({"action": "skills", "namespace": "beta", "status": "candidate"}),
        )
        .await;
    assert_eq!(
        beta["skills"],
        json!([]),
        "sk-cand is from alpha and scoped to alpha: {beta}"
    );
    // An agent of beta alone (the one check makes it name beta) sees only what may be
    // offered in beta: alpha's candidate scoped to alpha is no skill to it.
    let narrow = driver(s, "d-beta", json!({"namespaces": ["beta"]})).await;
    let hidden = narrow
        .ok(
            "improve_run",
            json!({"action": "skill", "namespace": "beta", "skill": "sk-cand"}),
        )
        .await;
    assert_eq!(hidden["ok"], false, "{hidden}");
    assert!(
        hidden["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("no skill sk-cand"),
        "{hidden}"
    );
    let offered_there = narrow
        .ok(
            "improve_run",
            json!({"action": "skill", "namespace": "beta", "skill": "sk-live"}),
        )
        .await;
    assert_eq!(offered_there["ok"], true, "{offered_there}");
    let shown = d
        .ok(
            "improve_run",
            json!({"action": "skill", "namespace": "alpha", "skill": "sk-live"}),
        )
        .await;
    assert_eq!(shown["skill"]["trigger"], "flaky test retry", "{shown}");
    assert_eq!(shown["evaluations"], json!([]));
    let refused = match d
        .call("improve_run", json!({"action": "retire_skill", "namespace": "alpha", "skill": "sk-live", "reason": "no"}))
        .await
    {
        Ok(v) => v.to_string(),
        Err(e) => e,
    };
    assert!(refused.contains("admin only"), "{refused}");
    assert_eq!(
        skill(s, "sk-live").await.status,
        "live",
        "a refused retire changes nothing"
    );
    let no_reason = s
        .admin(
            "improve_run",
            json!({"action": "retire_skill", "skill": "sk-live"}),
        )
        .await;
    assert_eq!(no_reason["ok"], false, "{no_reason}");
    let retired = s
        .admin("improve_run", json!({"action": "retire_skill", "skill": "sk-live", "reason": "superseded by sk-cand"}))
        .await;
    assert_eq!(retired["status"], "retired", "{retired}");
    assert_eq!(skill(s, "sk-live").await.status, "retired");
    let audit = s
        .store
        .newest_audit("skill-retired", "alpha", "improve/skills/sk-live.md")
        .await
        .unwrap()
        .expect("audit row");
    assert!(
        audit
            .params
            .unwrap_or_default()
            .contains("superseded by sk-cand")
    );
    let again = s
        .admin(
            "improve_run",
            json!({"action": "retire_skill", "skill": "sk-live", "reason": "x"}),
        )
        .await;
    assert_eq!(again["ok"], false, "{again}");
    let job = post(&d, "alpha", "Retry the flaky login test", json!({})).await;
    assert_eq!(offered_ids(&claim(&d, &job["id"]).await), ["sk-cand"]);
}

e2e_cases!(crate::e2e_jobs::options();
    improve_run_lists_shows_and_retires_skills,
    used_skill_with_verified_success_wins,
    offered_and_unused_earns_nothing,
    environment_failure_earns_nothing_but_leaves_a_note,
    reports_outside_the_offer_are_refused,
);
