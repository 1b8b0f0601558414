//! Subscription mode: the opener writes the signed task document and `improve_status`
//! verifies it; only the holder of the namespace's driver lease may report an attempt, and a
//! second session is refused while another holds it; a reported attempt touching a protected
//! path is flagged; the holder's report dispatches the scorer on its branch; an attempt that
//! followed a skill and is reverted leaves the skill a failure note.

use serde_json::json;

use super::{Env, NIGHT, REPO, at, live, mode, score, tick};
use capsid_core::improve::machine::{AttemptStatus, RunStatus};
use capsid_core::ports::{AuditEntry, SkillRow};

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

    // An attempt may name the skill it followed: only one the namespace may use.
    let now = s.service.now();
    s.store
        .insert_skill(
            SkillRow {
                id: "sk-sub".into(),
                source_namespace: "capsid".into(),
                title: "Shrink the bundle".into(),
                body_ref: "improve/skills/sk-sub.md".into(),
                version: 1,
                status: "live".into(),
                wins: 0,
                losses: 0,
                trigger_condition: Some("bundle size".into()),
                namespaces: None,
            },
            now,
            AuditEntry {
                actor: "improve-loop".into(),
                action: "skill-added".into(),
                namespace: Some("capsid".into()),
                path: Some("improve/skills/sk-sub.md".into()),
                params: json!({}),
                at: now,
            },
        )
        .await
        .expect("skill");
    let a3 = format!("{}-a03", run.id);
    let head3 = env.g.commit(
        REPO,
        &format!("improve/{a3}"),
        &[("src/app.ts", Some("export const size = 420;\n"))],
        "bigger",
    );
    let unknown = a
        .ok("improve_run", json!({"action": "attempt", "namespace": "capsid", "head_sha": head3, "skill": "sk-nope"}))
        .await;
    assert_eq!(unknown["ok"], false, "{unknown}");
    assert!(s.store.attempt(&a3).await.expect("a").is_none());
    let followed = a
        .ok("improve_run", json!({"action": "attempt", "namespace": "capsid", "head_sha": head3, "summary": "per sk-sub", "skill": "sk-sub"}))
        .await;
    assert_eq!(followed["attempt"], a3.as_str(), "{followed}");
    let row = s.store.attempt(&a3).await.expect("a").expect("row");
    assert_eq!(row.skill_id.as_deref(), Some("sk-sub"));
    let (status, reverted) = score(env, &run.id, &a3, &head3, "sub-3", 0.0, 420.0).await;
    assert_eq!(status, 200, "{reverted}");
    assert_eq!(reverted["verdict"], "reverted", "{reverted}");
    let notes = s.store.skill_failures("sk-sub", 5).await.expect("notes");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(
        (notes[0].source_kind.as_str(), notes[0].source_id.as_str()),
        ("attempt", a3.as_str())
    );
    assert!(notes[0].note.starts_with("reverted: "), "{notes:?}");
    assert_eq!(
        s.store
            .skill("sk-sub")
            .await
            .expect("s")
            .expect("row")
            .status,
        "live",
        "a failure note moves no status"
    );
}
