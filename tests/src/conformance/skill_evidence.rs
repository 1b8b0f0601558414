//! Skill evidence written by the evaluation cycle: an evaluation lands with its audit row,
//! and an accepted edit bumps the version keyed on the version it was measured against,
//! with its `skill_edits` row, its body document and its audit row in one transaction.

use capsid_core::ports::{DocumentWrite, SkillEditRow, SkillEvaluationRow, SkillRow, Store};

use super::support::{at, audit, audit_count};

fn skill(id: &str) -> SkillRow {
    SkillRow {
        id: id.into(),
        source_namespace: "proj".into(),
        title: format!("Skill {id}"),
        body_ref: format!("improve/skills/{id}.md"),
        version: 1,
        status: "candidate".into(),
        wins: 0,
        losses: 0,
        trigger_condition: Some("flaky test retry".into()),
        namespaces: None,
    }
}

fn body(id: &str, text: &str, minute: i64) -> DocumentWrite {
    DocumentWrite {
        namespace: "proj".into(),
        path: format!("improve/skills/{id}.md"),
        title: Some(format!("Skill {id}")),
        body: Some(text.into()),
        doc_type: None,
        status: None,
        tags: None,
        links: None,
        at: at(minute),
    }
}

fn edit(id: &str, from: i64, minute: i64) -> SkillEditRow {
    SkillEditRow {
        skill: id.into(),
        from_version: from,
        to_version: from + 1,
        ops: r#"[{"op":"replace","line":1,"text":"better"}]"#.into(),
        accepted: true,
        reason: "delta 0.5 beats 0.25".into(),
        evaluated_at: at(minute),
    }
}

async fn body_of<S: Store>(store: &S, id: &str) -> Option<String> {
    store
        .document("proj", &format!("improve/skills/{id}.md"))
        .await
        .expect("document")
        .and_then(|d| d.body)
}

/// `record_evaluation` writes the row and its audit row together.
pub async fn evaluation_recorded_with_its_audit<S: Store>(store: &S) {
    store
        .insert_skill(
            skill("e1"),
            at(0),
            audit("loop", "skill-added", "proj", "e1", at(0)),
        )
        .await
        .expect("insert");
    let before = audit_count(store).await;
    store
        .record_evaluation(
            SkillEvaluationRow {
                skill: "e1".into(),
                version: 1,
                namespace: "proj".into(),
                probe_set_version: "3".into(),
                delta: 0.5,
                runs: 2,
                verdict: "positive".into(),
                evaluated_at: at(5),
            },
            audit("loop", "skill-evaluated", "proj", "e1", at(5)),
        )
        .await
        .expect("evaluation");
    assert_eq!(audit_count(store).await, before + 1);
    let evals = store.evaluations("e1").await.expect("evaluations");
    assert_eq!(evals.len(), 1);
    assert_eq!(evals[0].probe_set_version, "3");
}

/// An accepted edit bumps the version once: a second acceptance measured against the old
/// version, or one for a skill that does not exist, writes nothing at all.
pub async fn accepted_edit_bumps_the_version_keyed<S: Store>(store: &S) {
    store
        .insert_skill(
            skill("e2"),
            at(0),
            audit("loop", "skill-added", "proj", "e2", at(0)),
        )
        .await
        .expect("insert");
    store
        .write_document(
            body("e2", "first\nsecond", 0),
            capsid_core::ports::WriteGuard::Upsert,
            vec![],
        )
        .await
        .expect("body");
    let before = audit_count(store).await;
    assert!(
        store
            .accept_skill_edit(
                edit("e2", 1, 10),
                body("e2", "better\nsecond", 10),
                audit("loop", "skill-edit-accepted", "proj", "e2", at(10)),
            )
            .await
            .expect("accept")
    );
    let row = store.skill("e2").await.expect("skill").expect("row");
    assert_eq!(row.version, 2);
    assert_eq!(
        body_of(store, "e2").await.as_deref(),
        Some("better\nsecond")
    );
    let edits = store.skill_edits("e2", 10).await.expect("edits");
    assert_eq!(edits.len(), 1);
    assert!(edits[0].accepted);
    assert_eq!((edits[0].from_version, edits[0].to_version), (1, 2));
    assert_eq!(audit_count(store).await, before + 1);

    // Stale: measured against version 1, which is gone.
    assert!(
        !store
            .accept_skill_edit(
                edit("e2", 1, 11),
                body("e2", "stale\nsecond", 11),
                audit("loop", "skill-edit-accepted", "proj", "e2", at(11)),
            )
            .await
            .expect("stale accept")
    );
    assert!(
        !store
            .accept_skill_edit(
                edit("nope", 1, 12),
                DocumentWrite {
                    path: "improve/skills/nope.md".into(),
                    ..body("nope", "x", 12)
                },
                audit("loop", "skill-edit-accepted", "proj", "nope", at(12)),
            )
            .await
            .expect("unknown")
    );
    assert_eq!(
        store
            .skill("e2")
            .await
            .expect("skill")
            .expect("row")
            .version,
        2
    );
    assert_eq!(
        body_of(store, "e2").await.as_deref(),
        Some("better\nsecond")
    );
    assert_eq!(body_of(store, "nope").await, None);
    assert_eq!(store.skill_edits("e2", 10).await.expect("edits").len(), 1);
    assert_eq!(store.skill_edits("nope", 10).await.expect("edits").len(), 0);
    assert_eq!(audit_count(store).await, before + 1);
}
