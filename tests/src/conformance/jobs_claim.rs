//! Conformance cases for posting and claiming jobs: open-title uniqueness, claim targets and
//! order, the one-claim rule, and the decider's verdicts applied inside the claim.

use capsid_core::jobs::mirror::mirror_doc;
use capsid_core::jobs::signature::verify_task;
use capsid_core::jobs::state::JobStatus;
use capsid_core::jobs::{AUDIT_JOB_POSTED, Job, job_doc_path};
use capsid_core::ports::{
    AuditFilter, ClaimOutcome, ClaimRequest, ClaimTarget, JobFilter, Store, StoreError,
};
use capsid_core::time::Timestamp;

use super::support::{
    NeedsRecordDecider, RefuseDecider, SECRET, SignatureDecider, Toward, assert_mirror, at,
    audit_count, best, claim, complete_patch, doc, fail_patch, job_audit, job_id, mirror, new_job,
    transition,
};

/// Posts a job, panicking on failure.
pub async fn post<S: Store>(
    store: &S,
    id: &str,
    namespace: &str,
    title: &str,
    priority: i64,
    when: Timestamp,
) -> Job {
    store
        .post_job(
            new_job(id, namespace, title, priority, when),
            job_audit("github:owner", AUDIT_JOB_POSTED, id, namespace, when),
            mirror(when),
        )
        .await
        .unwrap_or_else(|e| panic!("post {id}: {e}"))
}

/// Claims `target` as `actor` at `when`.
pub async fn claim_as<S: Store>(
    store: &S,
    actor: &str,
    target: ClaimTarget,
    when: Timestamp,
) -> ClaimOutcome {
    let decider = SignatureDecider {
        actor: actor.into(),
        now: when,
    };
    store
        .claim_job(claim(target, &decider))
        .await
        .expect("claim")
}

/// Claims `target` as `actor`, which must succeed.
pub async fn claimed<S: Store>(
    store: &S,
    actor: &str,
    target: ClaimTarget,
    when: Timestamp,
) -> Job {
    match claim_as(store, actor, target, when).await {
        ClaimOutcome::Claimed(job) => job,
        other => panic!("{actor} expected a claim, got {other:?}"),
    }
}

/// Post stores the row, its audit row and its mirror; an open title is unique per namespace.
pub async fn post_job_and_open_title_uniqueness<S: Store>(store: &S) {
    let job = post(store, &job_id(1), "proj", "Fix CI", 2, at(0)).await;
    let sealed = new_job(&job_id(1), "proj", "Fix CI", 2, at(0)).body;
    assert_eq!(
        (
            job.id.as_str(),
            job.namespace.as_str(),
            job.title.as_str(),
            job.body.as_str(),
            job.priority,
            job.status
        ),
        (
            job_id(1).as_str(),
            "proj",
            "Fix CI",
            sealed.as_str(),
            2,
            JobStatus::Queued
        )
    );
    assert!(
        verify_task(SECRET, &job.body).is_ok(),
        "the stored body is the sealed one, byte for byte"
    );
    assert_eq!(
        (
            job.posted_by.as_str(),
            job.claimed_by.clone(),
            job.claimed_at,
            job.lease_expires
        ),
        ("github:owner", None, None, None)
    );
    assert_eq!(
        (
            job.blocked_count,
            job.resumed_count,
            job.corrections_count,
            job.gate_required,
            job.review_required
        ),
        (0, 0, 0, false, false)
    );
    assert_eq!((job.created_at, job.updated_at), (at(0), at(0)));
    assert_eq!(store.job(&job.id).await.expect("job"), Some(job.clone()));
    assert_mirror(store, &job, at(0)).await;
    let rows = store
        .recent_audit(
            &AuditFilter {
                namespace: Some("proj".into()),
                actor: None,
            },
            10,
        )
        .await
        .expect("audit");
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].action.as_deref(), rows[0].path.clone()),
        (Some(AUDIT_JOB_POSTED), Some(job_doc_path(&job.id)))
    );

    let audits = audit_count(store).await;
    let err = store
        .post_job(
            new_job(&job_id(2), "proj", "Fix CI", 9, at(1)),
            job_audit("github:owner", AUDIT_JOB_POSTED, &job_id(2), "proj", at(1)),
            mirror(at(1)),
        )
        .await
        .expect_err("duplicate open title");
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    assert_eq!(store.job(&job_id(2)).await.expect("job"), None);
    assert_eq!(
        store
            .document("proj", &job_doc_path(&job_id(2)))
            .await
            .expect("read"),
        None,
        "no mirror"
    );
    assert_eq!(audit_count(store).await, audits, "no audit row");
    let err = store
        .post_job(
            new_job(&job_id(1), "proj", "Another title", 9, at(1)),
            job_audit("github:owner", AUDIT_JOB_POSTED, &job_id(1), "proj", at(1)),
            mirror(at(1)),
        )
        .await
        .expect_err("duplicate id");
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    assert_eq!(store.job(&job_id(1)).await.expect("job"), Some(job.clone()));

    post(store, &job_id(3), "other", "Fix CI", 0, at(2)).await;
    post(store, &job_id(4), "proj", "fix ci", 0, at(2)).await;
    let held = claimed(store, "agent:a", ClaimTarget::Id(job_id(1)), at(3)).await;
    let dup = store
        .post_job(
            new_job(&job_id(5), "proj", "Fix CI", 0, at(4)),
            job_audit("github:owner", AUDIT_JOB_POSTED, &job_id(5), "proj", at(4)),
            mirror(at(4)),
        )
        .await;
    assert!(
        matches!(dup, Err(StoreError::Conflict(_))),
        "a claimed job is open: {dup:?}"
    );
    store
        .transition_job(
            transition(
                &held.id,
                "proj",
                JobStatus::Claimed,
                "agent:a",
                complete_patch(),
                at(5),
            )
            .toward(JobStatus::Done),
        )
        .await
        .expect("complete")
        .expect("applied");
    post(store, &job_id(5), "proj", "Fix CI", 0, at(6)).await;
    claimed(store, "agent:b", ClaimTarget::Id(job_id(5)), at(7)).await;
    store
        .transition_job(
            transition(
                &job_id(5),
                "proj",
                JobStatus::Claimed,
                "agent:b",
                fail_patch("gave up"),
                at(8),
            )
            .toward(JobStatus::Failed),
        )
        .await
        .expect("fail")
        .expect("applied");
    post(store, &job_id(6), "proj", "Fix CI", 0, at(9)).await;
    let open = store
        .jobs(
            &JobFilter {
                namespace: Some("proj".into()),
                status: Some(JobStatus::Queued),
            },
            100,
        )
        .await
        .expect("jobs");
    let ids: Vec<&str> = open.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, [job_id(6), job_id(4)], "newest first");
}

/// Claim by id and by best (priority, then oldest); held, not queued, missing, nothing queued.
pub async fn claim_targets_and_order<S: Store>(store: &S) {
    post(store, &job_id(0xa), "proj", "a", 1, at(0)).await;
    post(store, &job_id(0xb), "proj", "b", 5, at(1)).await;
    post(store, &job_id(0xc), "proj", "c", 5, at(2)).await;
    post(store, &job_id(0xd), "proj", "d", -1, at(3)).await;
    post(store, &job_id(0xe), "queue2", "e", 9, at(4)).await;

    let b = claimed(store, "agent:a", best("proj"), at(10)).await;
    assert_eq!(b.id, job_id(0xb), "highest priority, then oldest");
    assert_eq!(
        (
            b.status,
            b.claimed_by.as_deref(),
            b.claimed_at,
            b.lease_expires,
            b.updated_at
        ),
        (
            JobStatus::Claimed,
            Some("agent:a"),
            Some(at(10)),
            Some(at(250)),
            at(10)
        )
    );
    assert_eq!(store.job(&b.id).await.expect("job"), Some(b.clone()));
    assert_eq!(
        store.held_job("agent:a").await.expect("held"),
        Some(b.clone())
    );
    assert_mirror(store, &b, at(10)).await;

    match claim_as(store, "agent:a", best("proj"), at(11)).await {
        ClaimOutcome::AlreadyHolding(job) => assert_eq!(job, b),
        other => panic!("expected AlreadyHolding, got {other:?}"),
    }
    match claim_as(store, "agent:a", ClaimTarget::Id(job_id(0xe)), at(11)).await {
        ClaimOutcome::AlreadyHolding(job) => {
            assert_eq!(job.id, b.id, "one claim across namespaces")
        }
        other => panic!("expected AlreadyHolding, got {other:?}"),
    }
    let a = claimed(store, "agent:b", ClaimTarget::Id(job_id(0xa)), at(12)).await;
    assert_eq!(a.claimed_by.as_deref(), Some("agent:b"));
    match claim_as(store, "agent:c", ClaimTarget::Id(job_id(0xb)), at(13)).await {
        ClaimOutcome::NotQueued(job) => assert_eq!(job, b),
        other => panic!("expected NotQueued, got {other:?}"),
    }
    assert_eq!(
        claim_as(store, "agent:c", ClaimTarget::Id(job_id(0xfff)), at(13)).await,
        ClaimOutcome::NotFound
    );
    assert_eq!(
        claimed(store, "agent:c", best("proj"), at(14)).await.id,
        job_id(0xc)
    );
    assert_eq!(
        claimed(store, "agent:d", best("proj"), at(15)).await.id,
        job_id(0xd)
    );
    assert_eq!(
        claim_as(store, "agent:e", best("proj"), at(16)).await,
        ClaimOutcome::NothingQueued
    );
    assert_eq!(
        claim_as(store, "agent:e", best("nobody"), at(16)).await,
        ClaimOutcome::NothingQueued
    );
    assert_eq!(store.held_job("agent:e").await.expect("held"), None);
    assert_eq!(
        claimed(store, "agent:e", best("queue2"), at(17)).await.id,
        job_id(0xe)
    );
}

/// A refusing decider leaves the job, its mirror and the audit log untouched.
pub async fn claim_refused_leaves_job_untouched<S: Store>(store: &S) {
    let job = post(store, &job_id(1), "proj", "Needs a flag", 0, at(0)).await;
    let mirror_before = doc(store, "proj", &job_doc_path(&job.id)).await;
    let audits = audit_count(store).await;
    // Alternating targets back to back: a refused claim must release its row lock at once,
    // or the next claim of the same job sees it locked.
    let targets = (0..50).flat_map(|_| [ClaimTarget::Id(job.id.clone()), best("proj")]);
    for target in targets {
        let decider = RefuseDecider("missing flag can_merge");
        let outcome = store
            .claim_job(ClaimRequest {
                target,
                actor: "agent:a".into(),
                now: at(5),
                lease_expires: at(245),
                driven: false,
                writes_nothing: &[],
                decider: &decider,
                mirror: mirror(at(5)),
            })
            .await
            .expect("claim");
        assert_eq!(
            outcome,
            ClaimOutcome::Refused(job.clone(), "missing flag can_merge".into())
        );
    }
    assert_eq!(store.job(&job.id).await.expect("job"), Some(job.clone()));
    assert_eq!(
        doc(store, "proj", &job_doc_path(&job.id)).await,
        mirror_before
    );
    assert_eq!(audit_count(store).await, audits);
    assert_eq!(store.held_job("agent:a").await.expect("held"), None);
    assert!(store.outcomes(None).await.expect("outcomes").is_empty());
}

/// A decider that needs the claimer's record changes nothing and names the job it asked about,
/// for a targeted claim and for the best queued one alike.
pub async fn claim_needing_a_record_changes_nothing<S: Store>(store: &S) {
    let job = post(store, &job_id(2), "proj", "Needs a record", 0, at(0)).await;
    let mirror_before = doc(store, "proj", &job_doc_path(&job.id)).await;
    let audits = audit_count(store).await;
    for target in [ClaimTarget::Id(job.id.clone()), best("proj")] {
        let outcome = store
            .claim_job(ClaimRequest {
                target,
                actor: "agent:a".into(),
                now: at(5),
                lease_expires: at(245),
                driven: false,
                writes_nothing: &[],
                decider: &NeedsRecordDecider,
                mirror: mirror(at(5)),
            })
            .await
            .expect("claim");
        assert_eq!(outcome, ClaimOutcome::NeedsRecord(job.clone()));
    }
    assert_eq!(store.job(&job.id).await.expect("job"), Some(job.clone()));
    assert_eq!(
        doc(store, "proj", &job_doc_path(&job.id)).await,
        mirror_before
    );
    assert_eq!(audit_count(store).await, audits);
    assert_eq!(store.held_job("agent:a").await.expect("held"), None);
}

/// A failing decider (a tampered body) marks the job failed with its summary, audit,
/// outcome row and mirror; the title is free again.
pub async fn claim_failed_by_decider_marks_failed<S: Store>(store: &S) {
    let mut tampered = new_job(&job_id(7), "proj", "Tampered", 3, at(0));
    tampered.body = tampered.body.replace("Do the work", "Do other work");
    let job = store
        .post_job(
            tampered,
            job_audit("github:owner", AUDIT_JOB_POSTED, &job_id(7), "proj", at(0)),
            mirror(at(0)),
        )
        .await
        .expect("post");
    let audits = audit_count(store).await;
    let failed = match claim_as(store, "agent:a", best("proj"), at(5)).await {
        ClaimOutcome::Failed(job, reason) => {
            assert!(reason.contains("edited after it was signed"), "{reason}");
            job
        }
        other => panic!("expected Failed, got {other:?}"),
    };
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(
        failed.result_summary.as_deref(),
        Some(
            verify_task(SECRET, &job.body)
                .expect_err("tampered")
                .to_string()
                .as_str()
        )
    );
    assert_eq!(
        (
            failed.claimed_by.clone(),
            failed.lease_expires,
            failed.updated_at
        ),
        (None, None, at(5))
    );
    assert_eq!(store.job(&job.id).await.expect("job"), Some(failed.clone()));
    assert_eq!(audit_count(store).await, audits + 1);
    assert_mirror(store, &failed, at(5)).await;
    assert_eq!(mirror_doc(&failed).status, "active");
    let outcomes = store.outcomes(None).await.expect("outcomes");
    assert_eq!(outcomes.len(), 1);
    assert_eq!(
        (outcomes[0].job_id.as_str(), outcomes[0].agent.as_str()),
        (job.id.as_str(), "unattributed")
    );
    assert_eq!(store.held_job("agent:a").await.expect("held"), None);
    assert_eq!(
        claim_as(store, "agent:a", best("proj"), at(6)).await,
        ClaimOutcome::NothingQueued
    );
    post(store, &job_id(8), "proj", "Tampered", 0, at(7)).await;
}
