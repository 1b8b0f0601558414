//! Block and resume: who may, the resume rules and the block cap.

use super::*;

async fn block_then_resume_rules_and_the_cap(s: &TestServer) {
    setup(s).await;
    let a = driver(s, "a", json!({})).await;
    let seat = driver(s, "seat", json!({})).await;
    let job = post(&a, "alpha", "Gated", json!({})).await;
    let id = job["id"].clone();
    a.ok("jobs", json!({"action": "claim", "namespace": "alpha"}))
        .await;
    let blocked = a.ok("jobs", json!({"action": "block", "id": id, "namespace": "alpha", "reason": "needs a push", "command": "git push origin feature"})).await;
    assert_eq!(blocked["job"]["status"], "blocked");
    assert!(blocked["job"]["result_summary"].as_str().unwrap().contains(
        "Run this, then send it back in with jobs action 'resume':\n\n    git push origin feature"
    ));
    let out = seat
        .ok(
            "jobs",
            json!({"action": "resume", "id": id, "namespace": "alpha"}),
        )
        .await;
    assert_eq!(out["ok"], false);
    assert!(
        out["refusal"].as_str().unwrap().contains("needs a reason"),
        "{out}"
    );
    for round in 1..=2 {
        let out = seat
            .ok(
                "jobs",
                json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "pushed"}),
            )
            .await;
        assert_eq!(out["ok"], true, "resume {round}: {out}");
        assert_eq!(out["job"]["claimed_by"], "agent:seat");
        assert_eq!(out["job"]["corrections_count"], round);
        seat.ok("jobs", json!({"action": "block", "id": id, "namespace": "alpha", "reason": "again", "command": "git push origin feature"})).await;
    }
    let capped = seat
        .ok(
            "jobs",
            json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "pushed"}),
        )
        .await;
    assert_eq!(
        capped["ok"], false,
        "the third non-admin resume hits the cap"
    );
    assert!(
        capped["refusal"].as_str().unwrap().contains("retry cap"),
        "{capped}"
    );
    let admin = s.client(OP_WRITE).await;
    let lifted = admin
        .ok(
            "jobs",
            json!({"action": "resume", "id": id, "namespace": "alpha", "reason": "admin ruled"}),
        )
        .await;
    assert_eq!(lifted["ok"], true, "{lifted}");
    assert_eq!(
        lifted["job"]["corrections_count"], 2,
        "an admin resume spends no correction"
    );
}

e2e_cases!(crate::e2e_jobs::options();
    block_then_resume_rules_and_the_cap,
);
