//! Authority that stays with its holder (issue 32): an agent's open question is answered by
//! someone else (another key over the Handler API or MCP, the admin), never by the asking
//! agent's own key; a checkpoint names only a job its writer holds (the admin any). Every
//! refusal writes nothing.

use capsid_tests::e2e_cases;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

use crate::e2e_checkmarks::{api, audit_rows, checkpoint, refused, team};

async fn mark(c: &Client, agent: &str) -> Value {
    c.ok(
        "checkmarks",
        json!({"action": "get", "namespace": "alpha", "agent": agent}),
    )
    .await["checkmark"]
        .clone()
}

async fn the_asking_agent_never_answers_its_own_question(s: &TestServer) {
    let t = team(s).await;
    let asked = checkpoint(
        &t.a2.1,
        json!({"namespace": "alpha", "status": "paused_for_input", "question": "Which region?"}),
    )
    .await;
    let audits = audit_rows(s).await;

    // Its own key, over MCP: answer, answer-and-resume, resume.
    for args in [
        json!({"action": "answer", "namespace": "alpha", "agent": "a2", "answer": "eu-west"}),
        json!({"action": "answer", "namespace": "alpha", "agent": "a2", "answer": "eu-west", "resume": true}),
        json!({"action": "resume", "namespace": "alpha", "agent": "a2"}),
    ] {
        let err = t.a2.1.err("checkmarks", args.clone()).await;
        assert!(
            err.contains("a2's open question is answered by someone else"),
            "{args}: {err}"
        );
    }
    // Its own key, over the Handler API.
    for (path, body) in [
        (
            "/api/projects/alpha/agents/a2/answer",
            Some(r#"{"answer": "eu-west", "resume": true}"#),
        ),
        ("/api/projects/alpha/agents/a2/resume", None),
    ] {
        let (status, got, _) = api(s, Some(&t.a2.0), "POST", path, body).await;
        refused(
            (status, got),
            403,
            "forbidden",
            "a2's open question is answered by someone else",
        );
    }
    assert_eq!(audit_rows(s).await, audits, "a refusal writes nothing");
    let still = mark(&t.a1.1, "a2").await;
    assert_eq!(still["status"], "paused_for_input", "{still}");
    assert_eq!(still["open_question"], "Which region?", "{still}");
    assert!(still["answer"].is_null(), "{still}");

    // Another agent's key over the Handler API answers.
    let (status, answered, _) = api(
        s,
        Some(&t.a1.0),
        "POST",
        "/api/projects/alpha/agents/a2/answer",
        Some(r#"{"answer": "eu-west"}"#),
    )
    .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["log_entry"]["id"], asked["log_entry_id"]);
    assert_eq!(answered["log_entry"]["answered_by"], "agent:a1");

    // A second question: another agent over MCP answers it.
    checkpoint(
        &t.a2.1,
        json!({"namespace": "alpha", "status": "blocked", "question": "Run the migration?"}),
    )
    .await;
    let by_mcp =
        t.a1.1
            .ok(
                "checkmarks",
                json!({"action": "answer", "namespace": "alpha", "agent": "a2", "answer": "done"}),
            )
            .await;
    assert_eq!(by_mcp["log_entry"]["answered_by"], "agent:a1", "{by_mcp}");

    // A third: the admin answers it.
    checkpoint(
        &t.a2.1,
        json!({"namespace": "alpha", "status": "paused_for_input", "question": "Ship it?"}),
    )
    .await;
    let by_admin = s
        .admin(
            "checkmarks",
            json!({"action": "answer", "namespace": "alpha", "agent": "a2", "answer": "yes", "resume": true}),
        )
        .await;
    assert_eq!(
        by_admin["log_entry"]["answered_by"], "cli:test",
        "{by_admin}"
    );
    assert_eq!(by_admin["checkmark"]["status"], "working", "{by_admin}");
}

async fn job(c: &Client, title: &str) -> String {
    let out = c
        .ok(
            "jobs",
            json!({"action": "post", "namespace": "alpha", "title": title, "body": format!("Do {title}.\n")}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
    out["job"]["id"].as_str().expect("an id").to_owned()
}

async fn a_checkpoint_names_only_a_job_its_writer_holds(s: &TestServer) {
    let t = team(s).await;
    let held = job(&t.a1.1, "Held by a1").await;
    let queued = job(&t.a1.1, "Nobody holds it").await;
    let claimed =
        t.a1.1
            .ok(
                "jobs",
                json!({"action": "claim", "id": held, "namespace": "alpha"}),
            )
            .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    checkpoint(
        &t.a2.1,
        json!({"namespace": "alpha", "status": "working", "where_it_stopped": "mine"}),
    )
    .await;
    let before = mark(&t.a2.1, "a2").await;
    let audits = audit_rows(s).await;

    for (id, holder) in [(&held, "agent:a1"), (&queued, "nobody")] {
        let err = t
            .a2
            .1
            .err(
                "checkpoint",
                json!({"namespace": "alpha", "status": "working", "job_id": id, "where_it_stopped": "steering"}),
            )
            .await;
        assert!(
            err.contains(&format!("job_id: {id} is held by {holder}")),
            "{err}"
        );
    }
    assert_eq!(
        audit_rows(s).await,
        audits,
        "a refused checkpoint writes nothing"
    );
    assert_eq!(
        mark(&t.a2.1, "a2").await,
        before,
        "the checkmark is as it was"
    );

    // The holder names its job while claimed, blocked, and after it failed (the driver's
    // closing checkpoint).
    let ok = |status: &str| json!({"namespace": "alpha", "status": status, "job_id": held});
    let got = checkpoint(&t.a1.1, ok("working")).await;
    assert_eq!(got["checkmark"]["job_id"], held.as_str(), "{got}");
    t.a1.1
        .ok(
            "jobs",
            json!({"action": "block", "id": held, "namespace": "alpha", "reason": "gate", "command": "gh pr create --fill"}),
        )
        .await;
    let mut blocked = ok("blocked");
    blocked["question"] = json!("Open the PR?");
    checkpoint(&t.a1.1, blocked).await;
    // The driver resumes its own blocked job (as `capsid drive` does with an answer).
    let resumed =
        t.a1.1
            .ok(
                "jobs",
                json!({"action": "resume", "id": held, "namespace": "alpha", "reason": "answered"}),
            )
            .await;
    assert_eq!(resumed["ok"], true, "{resumed}");
    t.a1.1
        .ok(
            "jobs",
            json!({"action": "fail", "id": held, "namespace": "alpha", "reason": "gave up"}),
        )
        .await;
    checkpoint(&t.a1.1, ok("working")).await;

    // The admin names any job, on any agent's behalf.
    let by_admin = s
        .admin(
            "checkpoint",
            json!({"namespace": "alpha", "agent": "a2", "status": "working", "job_id": queued}),
        )
        .await;
    assert_eq!(
        by_admin["checkmark"]["job_id"],
        queued.as_str(),
        "{by_admin}"
    );
}

/// A run credential's checkpoints stay in its own namespace's feed (issue 53, item 6): a
/// `global` one is refused and writes nothing; the driver's own key still may.
async fn a_run_credential_writes_only_into_its_own_namespaces_feed(s: &TestServer) {
    let t = team(s).await;
    let id = job(&t.a1.1, "Run it").await;
    let claimed =
        t.a1.1
            .ok(
                "jobs",
                json!({"action": "claim", "id": id, "namespace": "alpha"}),
            )
            .await;
    let credential = claimed["run_credential"]
        .as_str()
        .expect("a run credential for a minted agent's claim");
    let run = s.client(credential).await;
    let audits = audit_rows(s).await;
    let err = run
        .err(
            "checkpoint",
            json!({"namespace": "alpha", "status": "working", "visibility": "global", "where_it_stopped": "to everyone"}),
        )
        .await;
    assert!(err.contains("visibility project only"), "{err}");
    assert_eq!(
        audit_rows(s).await,
        audits,
        "a refused checkpoint writes nothing"
    );
    let own = checkpoint(
        &run,
        json!({"namespace": "alpha", "status": "working", "visibility": "project", "where_it_stopped": "here"}),
    )
    .await;
    assert_eq!(own["checkmark"]["job_id"], id.as_str(), "{own}");
    let driver = checkpoint(
        &t.a1.1,
        json!({"namespace": "alpha", "status": "working", "visibility": "global", "where_it_stopped": "news"}),
    )
    .await;
    assert_eq!(driver["log_entry"]["visibility"], "global", "{driver}");
}

e2e_cases!(capsid_tests::server::ServerOptions::default();
    the_asking_agent_never_answers_its_own_question,
    a_checkpoint_names_only_a_job_its_writer_holds,
    a_run_credential_writes_only_into_its_own_namespaces_feed);
