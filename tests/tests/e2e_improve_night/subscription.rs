//! Subscription mode: the opener writes the signed task document and `improve_status`
//! verifies it; only the holder of the namespace's driver lease may report an attempt, and a
//! second session is refused while another holds it; a reported attempt touching a protected
//! path is flagged; the holder's report dispatches the scorer on its branch.

use serde_json::json;

use super::{Env, NIGHT, REPO, at, live, mode, tick};
use capsid_core::improve::machine::{AttemptStatus, RunStatus};

pub(crate) async fn a_task_document_is_signed_and_only_the_lease_holder_drives(env: &Env) {
    let s = &env.s;
    mode(s, "subscription").await;
    s.clock.set(at(NIGHT));
    let opened = tick(s).await;
    assert_eq!(opened["opened"][0]["namespace"], "capsid", "{opened}");
    let run = live(s).await.expect("a run");
    assert_eq!(run.mode, "subscription");
    assert_eq!(run.status, RunStatus::Attempting);

    // The task document is signed by the loop and verifies.
    let doc = s
        .store
        .document("capsid", "improve/run-2026-12-01.md")
        .await
        .expect("doc")
        .expect("the opener wrote tonight's task document");
    let body = doc.body.unwrap_or_default();
    assert!(body.contains(&run.id), "{body}");
    let verified = s
        .admin(
            "improve_status",
            json!({"task_path": "capsid/improve/run-2026-12-01.md"}),
        )
        .await;
    assert_eq!(verified["task_verification"]["ok"], true, "{verified}");
    assert_eq!(
        verified["task_verification"]["actor"], "improve-loop",
        "{verified}"
    );

    // Nothing advances without the driver.
    let waiting = tick(s).await;
    assert!(
        waiting["advanced"][0]["did"]
            .as_str()
            .unwrap_or("")
            .contains("driver"),
        "{waiting}"
    );

    let axes = json!({"namespaces": ["capsid"], "grants": ["read", "write"]});
    let a = s
        .client(&s.mint("driver-a", "driver", axes.clone()).await)
        .await;
    let b = s.client(&s.mint("driver-b", "driver", axes).await).await;
    let attempt = format!("{}-a01", run.id);
    let branch = format!("improve/{attempt}");
    let head = env.g.commit(
        REPO,
        &branch,
        &[("src/app.ts", Some("export const size = 390;\n"))],
        "smaller",
    );

    // Without the lease, B may not report an attempt.
    let unleased = b
        .ok("improve_run", json!({"action": "attempt", "namespace": "capsid", "head_sha": head, "summary": "smaller"}))
        .await;
    assert_eq!(unleased["ok"], false, "{unleased}");
    assert!(
        unleased["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("driver lease"),
        "{unleased}"
    );

    // A takes the lease; B is refused the lease and the attempt, naming A.
    let took = a
        .ok(
            "improve_run",
            json!({"action": "claim", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(took["ok"], true, "{took}");
    let second = b
        .ok(
            "improve_run",
            json!({"action": "claim", "namespace": "capsid"}),
        )
        .await;
    assert_eq!(second["ok"], false, "{second}");
    assert!(
        second["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("driver-a"),
        "{second}"
    );
    let refused = b
        .ok(
            "improve_run",
            json!({"action": "attempt", "namespace": "capsid", "head_sha": head}),
        )
        .await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("driver-a"),
        "{refused}"
    );
    assert!(
        s.store.attempt(&attempt).await.expect("a").is_none(),
        "a refused report adds nothing"
    );

    // A's report adds the attempt and dispatches the scorer on its branch.
    let reported = a
        .ok("improve_run", json!({"action": "attempt", "namespace": "capsid", "head_sha": head, "summary": "smaller"}))
        .await;
    assert_eq!(reported["ok"], true, "{reported}");
    assert_eq!(reported["attempt"], attempt.as_str(), "{reported}");
    assert_eq!(reported["status"], "awaiting-score", "{reported}");
    assert!(
        env.g
            .runs(REPO)
            .iter()
            .any(|(_, event, b)| event == "workflow_dispatch" && *b == branch),
        "{:?}",
        env.g.runs(REPO)
    );
    let row = s.store.attempt(&attempt).await.expect("a").expect("row");
    assert_eq!(row.head_sha.as_deref(), Some(head.as_str()));
    assert_eq!(live(s).await.expect("run").status, RunStatus::AwaitingScore);

    // A second report while one waits for its score is refused.
    let busy = a
        .ok(
            "improve_run",
            json!({"action": "attempt", "namespace": "capsid", "head_sha": head}),
        )
        .await;
    assert_eq!(busy["ok"], false, "{busy}");

    // Timed out, the run attempts again; a reported attempt on a protected path is flagged.
    s.clock.set(at("2026-12-01T09:21:00Z"));
    tick(s).await;
    assert_eq!(
        s.store
            .attempt(&attempt)
            .await
            .expect("a")
            .expect("row")
            .status,
        AttemptStatus::TimedOut
    );
    let a2 = format!("{}-a02", run.id);
    let head2 = env.g.commit(
        REPO,
        &format!("improve/{a2}"),
        &[(".github/workflows/ci.yml", Some("on: push\n"))],
        "ci",
    );
    let flagged = a
        .ok(
            "improve_run",
            json!({"action": "attempt", "namespace": "capsid", "head_sha": head2}),
        )
        .await;
    assert_eq!(flagged["ok"], true, "{flagged}");
    assert_eq!(flagged["status"], "flagged", "{flagged}");
    assert!(!env.g.branch_names(REPO).contains(&format!("improve/{a2}")));
}
