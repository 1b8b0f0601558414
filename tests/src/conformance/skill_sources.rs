//! Sources of skills (issue 17): kept attempts and jobs done with `verified-success`, listed
//! oldest first and bounded, without the ones a skill names (any status, retired included)
//! or a settings marker spends; a proposal inserted with its body document and audit rows in
//! one transaction, refused whole (nothing written) while its source is spent or its document
//! path is taken.

use capsid_core::ports::{
    AuditEntry, DocumentWrite, Proposed, ProposedSkill, SkillRow, SkillSource, Store, StoreError,
};
use capsid_core::skills::abstraction::{SourceKind, spent_key, spent_prefix};

use super::support::{at, audit, audit_count};
use crate::harness::Probe;

fn attempt_sql(id: &str, status: &str, minute: i64) -> String {
    format!(
        "INSERT INTO improve_attempts (id, namespace, run_id, change_summary, diff_ref, status, ts) \
         VALUES ('{id}', 'proj', 'run-1', 'summary of {id}', 'improve/archive/run-1/{id}.md', '{status}', '{}')",
        at(minute)
    )
}

fn job_sql(id: &str, status: &str, verdict: Option<&str>, minute: i64) -> [String; 2] {
    let when = at(minute);
    let verdict = verdict.map_or("NULL".to_owned(), |v| format!("'{v}'"));
    [
        format!(
            "INSERT INTO jobs (id, namespace, title, body, status, posted_by, result_summary, created_at, updated_at) \
             VALUES ('{id}', 'proj', 'Title {id}', 'Body {id}', '{status}', 'agent:p', 'did {id}', '{when}', '{when}')"
        ),
        format!(
            "INSERT INTO job_outcomes (job_id, agent, namespace, blocked_count, resumed_count, result_kind, verified, recorded_at, skill_verdict) \
             VALUES ('{id}', 'agent:a', 'proj', 0, 0, 'none', '{{}}', '{when}', {verdict})"
        ),
    ]
}

async fn kept<S: Store>(store: &S, only: Option<&str>, limit: usize) -> Vec<String> {
    let found: Vec<SkillSource> = store
        .kept_attempt_sources("kept", &spent_prefix(SourceKind::Attempt), only, limit)
        .await
        .expect("attempt sources");
    found.into_iter().map(|s| s.id).collect()
}

async fn verified<S: Store>(store: &S, only: Option<&str>) -> Vec<String> {
    let found = store
        .verified_job_sources(
            "done",
            "verified-success",
            &spent_prefix(SourceKind::Job),
            only,
            10,
        )
        .await
        .expect("job sources");
    found.into_iter().map(|s| s.id).collect()
}

fn proposal(id: &str, kind: SourceKind, source: &str) -> ProposedSkill {
    let path = format!("improve/skills/{id}.md");
    ProposedSkill {
        row: SkillRow {
            id: id.into(),
            source_namespace: "proj".into(),
            title: format!("Skill {id}"),
            body_ref: path.clone(),
            version: 1,
            status: "candidate".into(),
            wins: 0,
            losses: 0,
            trigger_condition: Some("flaky test".into()),
            namespaces: None,
        },
        source_attempt: (kind == SourceKind::Attempt).then(|| source.to_owned()),
        source_job: (kind == SourceKind::Job).then(|| source.to_owned()),
        termination_test: Some("the test passes twice".into()),
        composition_interface: None,
        body: DocumentWrite {
            namespace: "proj".into(),
            path: path.clone(),
            title: Some(format!("Skill {id}")),
            body: Some(format!("1. Do the thing of {id}.\n")),
            doc_type: None,
            status: None,
            tags: None,
            links: None,
            at: at(50),
        },
        spent_key: spent_key(kind, source),
        spent_value: None,
        audits: vec![audit(
            "improve-loop",
            "skill-proposed",
            "proj",
            &path,
            at(50),
        )],
    }
}

async fn doc_exists<S: Store>(store: &S, id: &str) -> bool {
    store
        .document("proj", &format!("improve/skills/{id}.md"))
        .await
        .expect("document")
        .is_some()
}

/// Kept attempts, oldest first and bounded, without a marker's or a skill's; one by id.
pub async fn skill_sources_are_unspent_bounded_and_oldest_first<S: Store>(
    store: &S,
    probe: &Probe,
) {
    for sql in [
        attempt_sql("a1", "kept", 2),
        attempt_sql("a2", "kept", 1),
        attempt_sql("a3", "reverted", 0),
        attempt_sql("a4", "kept", 3),
        attempt_sql("a5", "kept", 4),
    ] {
        probe.execute(&sql).await;
    }
    store
        .put_setting(&spent_key(SourceKind::Attempt, "a4"), "declined", None)
        .await
        .expect("marker");
    assert_eq!(kept(store, None, 10).await, ["a2", "a1", "a5"]);
    assert_eq!(kept(store, None, 2).await, ["a2", "a1"], "bounded");
    assert_eq!(kept(store, Some("a1"), 10).await, ["a1"]);
    assert!(kept(store, Some("a3"), 10).await.is_empty(), "reverted");
    assert!(kept(store, Some("a4"), 10).await.is_empty(), "declined");

    let before = audit_count(store).await;
    let first = store
        .insert_proposed_skill(proposal("s1", SourceKind::Attempt, "a5"))
        .await
        .expect("insert");
    assert_eq!(first, Proposed::Inserted);
    assert_eq!(audit_count(store).await, before + 1, "its audit row");
    assert!(doc_exists(store, "s1").await, "its body document");
    assert_eq!(
        store.skill("s1").await.expect("skill").map(|s| s.status),
        Some("candidate".to_owned())
    );
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM improve_skills WHERE id = 's1' AND source_attempt = 'a5' AND termination_test = 'the test passes twice' AND source_job IS NULL")
            .await,
        1
    );
    assert_eq!(kept(store, None, 10).await, ["a2", "a1"]);

    // The same source again, or a declined one: nothing written.
    for (id, source) in [("s2", "a5"), ("s3", "a4")] {
        let again = store
            .insert_proposed_skill(proposal(id, SourceKind::Attempt, source))
            .await
            .expect("answer");
        assert_eq!(again, Proposed::Spent, "{source}");
        assert!(!doc_exists(store, id).await, "no document for {id}");
        assert_eq!(store.skill(id).await.expect("skill"), None);
    }
    assert_eq!(audit_count(store).await, before + 1, "no audit row either");

    // Retired, the skill still spends its source.
    let retired = store
        .set_skill_status(
            "s1",
            "candidate",
            "retired",
            at(60),
            audit("admin", "skill-retired", "proj", "s1", at(60)),
        )
        .await
        .expect("retire");
    assert!(retired);
    assert_eq!(kept(store, None, 10).await, ["a2", "a1"]);
    assert!(kept(store, Some("a5"), 10).await.is_empty());
}

/// Jobs done with `verified-success` only; the verdict round-trips on the outcome row.
pub async fn verified_jobs_are_sources_until_abstracted<S: Store>(store: &S, probe: &Probe) {
    for (id, status, verdict, minute) in [
        ("job_000000000001", "done", Some("verified-success"), 2),
        ("job_000000000002", "done", Some("improvised"), 1),
        ("job_000000000003", "failed", Some("verified-failure"), 1),
        ("job_000000000004", "done", None, 0),
        ("job_000000000005", "done", Some("verified-success"), 1),
    ] {
        for sql in job_sql(id, status, verdict, minute) {
            probe.execute(&sql).await;
        }
    }
    assert_eq!(
        verified(store, None).await,
        ["job_000000000005", "job_000000000001"]
    );
    let rows = store.outcomes(None).await.expect("outcomes");
    let verdict_of = |id: &str| {
        rows.iter()
            .find(|r| r.job_id == id)
            .and_then(|r| r.skill_verdict.clone())
    };
    assert_eq!(
        verdict_of("job_000000000002").as_deref(),
        Some("improvised")
    );
    assert_eq!(verdict_of("job_000000000004"), None);
    let found = store
        .verified_job_sources(
            "done",
            "verified-success",
            &spent_prefix(SourceKind::Job),
            Some("job_000000000001"),
            10,
        )
        .await
        .expect("one");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].title.as_deref(), Some("Title job_000000000001"));
    assert_eq!(found[0].body.as_deref(), Some("Body job_000000000001"));
    assert_eq!(found[0].summary.as_deref(), Some("did job_000000000001"));
    assert_eq!(found[0].kind, SourceKind::Job);

    let inserted = store
        .insert_proposed_skill(proposal("s1", SourceKind::Job, "job_000000000001"))
        .await
        .expect("insert");
    assert_eq!(inserted, Proposed::Inserted);
    assert_eq!(verified(store, None).await, ["job_000000000005"]);
    store
        .put_setting(
            &spent_key(SourceKind::Job, "job_000000000005"),
            "declined",
            None,
        )
        .await
        .expect("marker");
    assert!(verified(store, None).await.is_empty());
}

/// A body document already at the skill's path refuses the whole unit: no row, no audit.
pub async fn a_taken_skill_path_writes_nothing<S: Store>(store: &S, probe: &Probe) {
    probe.execute(&attempt_sql("a1", "kept", 0)).await;
    let taken = proposal("s1", SourceKind::Attempt, "a1");
    store
        .write_document(
            taken.body.clone(),
            capsid_core::ports::WriteGuard::Create,
            Vec::<AuditEntry>::new(),
        )
        .await
        .expect("someone's document");
    let before = audit_count(store).await;
    let refused = store.insert_proposed_skill(taken).await;
    assert!(
        matches!(refused, Err(StoreError::Conflict(_))),
        "{refused:?}"
    );
    assert_eq!(store.skill("s1").await.expect("skill"), None);
    assert_eq!(audit_count(store).await, before);
    assert_eq!(
        kept(store, None, 10).await,
        ["a1"],
        "the source stays unspent"
    );
}

/// A repository copy read back (issue 56): a proposal with no attempt or job whose marker the
/// unit itself sets to the new skill's id, so the same content inserts once (the second is
/// `Spent`, nothing written); the declared termination test and composition interface are
/// read back from the row, and an unknown skill has none.
pub async fn a_read_back_copy_spends_its_content_in_the_unit<S: Store>(store: &S, _: &Probe) {
    let copy = |id: &str| {
        let mut p = proposal(id, SourceKind::Job, "unused");
        p.source_job = None;
        p.spent_key = "skills:repo-copy:proj:0123abcd".into();
        p.spent_value = Some(id.to_owned());
        p.composition_interface = Some("takes a failing test".into());
        p
    };
    let before = audit_count(store).await;
    let first = store
        .insert_proposed_skill(copy("rc1"))
        .await
        .expect("insert");
    assert_eq!(first, Proposed::Inserted);
    assert_eq!(
        store
            .setting("skills:repo-copy:proj:0123abcd", at(60))
            .await
            .expect("setting")
            .as_deref(),
        Some("rc1"),
        "the marker is set with the row"
    );
    assert!(doc_exists(store, "rc1").await);
    let declared = store
        .skill_declared("rc1")
        .await
        .expect("declared")
        .expect("a row");
    assert_eq!(
        declared.termination_test.as_deref(),
        Some("the test passes twice")
    );
    assert_eq!(
        declared.composition_interface.as_deref(),
        Some("takes a failing test")
    );
    assert_eq!(store.skill_declared("nosuch").await.expect("read"), None);

    let again = store
        .insert_proposed_skill(copy("rc2"))
        .await
        .expect("insert");
    assert_eq!(again, Proposed::Spent);
    assert!(store.skill("rc2").await.expect("read").is_none());
    assert!(!doc_exists(store, "rc2").await, "nothing written");
    assert_eq!(audit_count(store).await, before + 1);
}
