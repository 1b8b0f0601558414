//! Skill evidence beyond evaluations: one skill read by id (with its declared trigger and
//! namespaces), edit proposals and failure notes newest first, and win/loss credit, each
//! write landing with its audit row.

use capsid_core::ports::{SkillEditRow, SkillFailureRow, SkillRow, Store};

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
        namespaces: Some(r#"["proj","other"]"#.into()),
    }
}

async fn seed<S: Store>(store: &S, id: &str) {
    store
        .insert_skill(
            skill(id),
            at(0),
            audit("improve-loop", "skill-added", "proj", id, at(0)),
        )
        .await
        .expect("insert");
}

/// `skill(id)` reads one row whole, declared fields included; an unknown id is `None`.
pub async fn skill_read_by_id<S: Store>(store: &S) {
    seed(store, "s1").await;
    seed(store, "s2").await;
    assert_eq!(store.skill("s2").await.expect("skill"), Some(skill("s2")));
    assert_eq!(store.skill("nope").await.expect("skill"), None);
    let mut bare = skill("s3");
    bare.trigger_condition = None;
    bare.namespaces = None;
    store
        .insert_skill(
            bare.clone(),
            at(0),
            audit("improve-loop", "skill-added", "proj", "s3", at(0)),
        )
        .await
        .expect("insert");
    assert_eq!(
        store.skill("s3").await.expect("skill"),
        Some(bare),
        "NULLs stay NULL"
    );
}

/// Edit proposals, accepted or not, are kept with their audit rows and listed newest first,
/// bounded by the limit and by skill.
pub async fn skill_edits_recorded_newest_first<S: Store>(store: &S) {
    seed(store, "s1").await;
    let before = audit_count(store).await;
    for (i, accepted) in [false, true, false].into_iter().enumerate() {
        let i = i as i64;
        store
            .record_skill_edit(
                SkillEditRow {
                    skill: "s1".into(),
                    from_version: 1 + i,
                    to_version: 2 + i,
                    ops: format!(r#"[{{"op":"delete","line":{}}}]"#, i + 1),
                    accepted,
                    reason: format!("reason {i}"),
                    evaluated_at: at(10 + i),
                },
                audit("improve-loop", "skill-edit", "proj", "s1", at(10 + i)),
            )
            .await
            .expect("edit");
    }
    assert_eq!(
        audit_count(store).await,
        before + 3,
        "one audit row per edit"
    );
    let edits = store.skill_edits("s1", 10).await.expect("edits");
    let got: Vec<(i64, i64, bool, &str)> = edits
        .iter()
        .map(|e| (e.from_version, e.to_version, e.accepted, e.reason.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (3, 4, false, "reason 2"),
            (2, 3, true, "reason 1"),
            (1, 2, false, "reason 0")
        ]
    );
    assert_eq!(edits[0].ops, r#"[{"op":"delete","line":3}]"#);
    assert_eq!(edits[0].evaluated_at, at(12));
    assert_eq!(store.skill_edits("s1", 2).await.expect("edits").len(), 2);
    assert_eq!(store.skill_edits("s2", 10).await.expect("edits"), vec![]);
}

/// Failure notes are kept with their audit rows; the newest N of one skill come back first.
pub async fn skill_failures_newest_n<S: Store>(store: &S) {
    seed(store, "s1").await;
    seed(store, "s2").await;
    let before = audit_count(store).await;
    for (i, (skill, kind)) in [
        ("s1", "job"),
        ("s1", "attempt"),
        ("s2", "job"),
        ("s1", "job"),
    ]
    .into_iter()
    .enumerate()
    {
        let i = i as i64;
        store
            .record_skill_failure(
                SkillFailureRow {
                    skill: skill.into(),
                    namespace: "proj".into(),
                    source_kind: kind.into(),
                    source_id: format!("src{i}"),
                    note: format!("note {i}"),
                    created_at: at(20 + i),
                },
                audit("improve-loop", "skill-failure", "proj", skill, at(20 + i)),
            )
            .await
            .expect("failure");
    }
    assert_eq!(audit_count(store).await, before + 4);
    let two = store.skill_failures("s1", 2).await.expect("failures");
    let got: Vec<(&str, &str, &str)> = two
        .iter()
        .map(|f| {
            (
                f.source_kind.as_str(),
                f.source_id.as_str(),
                f.note.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("job", "src3", "note 3"), ("attempt", "src1", "note 1")]
    );
    assert_eq!(two[0].created_at, at(23));
    assert_eq!(
        store
            .skill_failures("s1", 10)
            .await
            .expect("failures")
            .len(),
        3
    );
    assert_eq!(
        store
            .skill_failures("s2", 10)
            .await
            .expect("failures")
            .len(),
        1
    );
    assert_eq!(
        store.skill_failures("s9", 10).await.expect("failures"),
        vec![]
    );
}

/// A win or a loss moves one counter of one skill with its audit row; an unknown skill
/// writes nothing, not even the audit row.
pub async fn skill_credit_counts_with_audit<S: Store>(store: &S) {
    seed(store, "s1").await;
    let before = audit_count(store).await;
    for win in [true, true, false] {
        assert!(
            store
                .credit_skill(
                    "s1",
                    win,
                    audit("improve-loop", "skill-credited", "proj", "s1", at(5))
                )
                .await
                .expect("credit")
        );
    }
    assert_eq!(audit_count(store).await, before + 3);
    let row = store.skill("s1").await.expect("skill").expect("present");
    assert_eq!((row.wins, row.losses), (2, 1));
    assert!(
        !store
            .credit_skill(
                "nope",
                true,
                audit("improve-loop", "skill-credited", "proj", "nope", at(5))
            )
            .await
            .expect("credit")
    );
    assert_eq!(
        audit_count(store).await,
        before + 3,
        "nothing written for an unknown skill"
    );
}
