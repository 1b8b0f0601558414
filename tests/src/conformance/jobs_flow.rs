//! Conformance cases for job transitions: keyed conditions (status, holder, corrections), the
//! one-claim rule on resume, and the lease sweep.

use capsid_core::jobs::state::JobStatus;
use capsid_core::jobs::{AUDIT_JOB_LEASE_EXPIRED, job_doc_path};
use capsid_core::ports::{Change, ClaimTarget, JobPatch, Store, StoreError};

use super::jobs_claim::{claimed, post};
use super::support::{
    Toward, assert_mirror, at, audit_count, best, complete_patch, doc, job_audit, job_id,
    transition,
};

/// A transition applies only when status, holder and corrections all match; a lost one
/// changes nothing.
pub async fn transition_is_keyed_on_status_holder_and_corrections<S: Store>(store: &S) {
    post(store, &job_id(1), "proj", "One", 0, at(0)).await;
    let job = claimed(store, "agent:a", ClaimTarget::Id(job_id(1)), at(1)).await;
    let mirror_before = doc(store, "proj", &job_doc_path(&job.id)).await;
    let audits = audit_count(store).await;
    let renew = || JobPatch {
        lease_expires: Change::Set(at(500)),
        add_correction: true,
        ..JobPatch::default()
    };
    let lost = [
        transition(
            &job.id,
            "proj",
            JobStatus::Claimed,
            "agent:b",
            renew(),
            at(2),
        ),
        transition(
            &job.id,
            "proj",
            JobStatus::Queued,
            "agent:a",
            renew(),
            at(2),
        ),
        transition(
            &job.id,
            "proj",
            JobStatus::Blocked,
            "agent:a",
            renew(),
            at(2),
        ),
        {
            let mut t = transition(
                &job.id,
                "proj",
                JobStatus::Claimed,
                "agent:a",
                renew(),
                at(2),
            );
            t.corrections = Some(1);
            t
        },
        transition(
            &job_id(99),
            "proj",
            JobStatus::Claimed,
            "agent:a",
            renew(),
            at(2),
        ),
    ];
    for t in lost {
        let what = format!(
            "{} from {:?} by {:?} corrections {:?}",
            t.id, t.step, t.holder, t.corrections
        );
        assert_eq!(
            store.transition_job(t).await.expect("transition"),
            None,
            "{what}"
        );
    }
    assert_eq!(store.job(&job.id).await.expect("job"), Some(job.clone()));
    assert_eq!(
        doc(store, "proj", &job_doc_path(&job.id)).await,
        mirror_before
    );
    assert_eq!(audit_count(store).await, audits);

    let spend = || {
        let mut t = transition(
            &job.id,
            "proj",
            JobStatus::Claimed,
            "agent:a",
            renew(),
            at(3),
        );
        t.corrections = Some(0);
        t
    };
    let renewed = store
        .transition_job(spend())
        .await
        .expect("transition")
        .expect("applied");
    assert_eq!(
        (
            renewed.corrections_count,
            renewed.lease_expires,
            renewed.updated_at
        ),
        (1, Some(at(500)), at(3))
    );
    assert_eq!(
        (
            renewed.status,
            renewed.claimed_by.as_deref(),
            renewed.claimed_at
        ),
        (JobStatus::Claimed, Some("agent:a"), job.claimed_at)
    );
    assert_eq!(
        store.transition_job(spend()).await.expect("transition"),
        None,
        "a correction is spent once"
    );
    assert_eq!(
        store.job(&job.id).await.expect("job"),
        Some(renewed.clone())
    );
    assert_mirror(store, &renewed, at(3)).await;

    let mut anyone = transition(
        &job.id,
        "proj",
        JobStatus::Claimed,
        "agent:a",
        complete_patch(),
        at(4),
    )
    .toward(JobStatus::Done);
    anyone.holder = None;
    let done = store
        .transition_job(anyone)
        .await
        .expect("transition")
        .expect("no holder condition");
    assert_eq!(
        (
            done.status,
            done.lease_expires,
            done.result_ref.as_deref(),
            done.result_summary.as_deref()
        ),
        (
            JobStatus::Done,
            None,
            Some("notes/result.md"),
            Some("finished")
        )
    );
    assert_eq!(
        done.claimed_by.as_deref(),
        Some("agent:a"),
        "a finished job keeps its holder"
    );
    assert_eq!(store.held_job("agent:a").await.expect("held"), None);
    assert_mirror(store, &done, at(4)).await;
}

/// Block keeps the holder; resuming it for a caller that holds another claimed job is a
/// `Conflict` with nothing changed; resuming for a free caller counts.
pub async fn transition_to_a_second_claim_is_conflict<S: Store>(store: &S) {
    post(store, &job_id(1), "proj", "First", 0, at(0)).await;
    post(store, &job_id(2), "proj", "Second", 0, at(0)).await;
    claimed(store, "agent:a", ClaimTarget::Id(job_id(2)), at(1)).await;
    let block = JobPatch {
        lease_expires: Change::Clear,
        result_summary: Change::Set("needs a human".into()),
        add_blocked: true,
        ..JobPatch::default()
    };
    let blocked = store
        .transition_job(
            transition(
                &job_id(2),
                "proj",
                JobStatus::Claimed,
                "agent:a",
                block,
                at(2),
            )
            .toward(JobStatus::Blocked),
        )
        .await
        .expect("block")
        .expect("applied");
    assert_eq!(
        (
            blocked.status,
            blocked.claimed_by.as_deref(),
            blocked.blocked_count
        ),
        (JobStatus::Blocked, Some("agent:a"), 1)
    );
    assert_mirror(store, &blocked, at(2)).await;
    claimed(store, "agent:a", ClaimTarget::Id(job_id(1)), at(3)).await;

    let audits = audit_count(store).await;
    let resume = |holder: &str| JobPatch {
        claimed_by: Change::Set(holder.to_owned()),
        claimed_at: Change::Set(at(4)),
        lease_expires: Change::Set(at(244)),
        add_resumed: true,
        add_correction: true,
        ..JobPatch::default()
    };
    let mut t = transition(
        &job_id(2),
        "proj",
        JobStatus::Blocked,
        "agent:a",
        resume("agent:a"),
        at(4),
    )
    .toward(JobStatus::Claimed);
    t.holder = None;
    let err = store
        .transition_job(t)
        .await
        .expect_err("a second claimed job for agent:a");
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    assert_eq!(
        store.job(&job_id(2)).await.expect("job"),
        Some(blocked.clone())
    );
    assert_eq!(audit_count(store).await, audits);
    assert_eq!(
        store.held_job("agent:a").await.expect("held").map(|j| j.id),
        Some(job_id(1))
    );

    let mut t = transition(
        &job_id(2),
        "proj",
        JobStatus::Blocked,
        "github:owner",
        resume("agent:b"),
        at(5),
    )
    .toward(JobStatus::Claimed);
    t.holder = None;
    let resumed = store
        .transition_job(t)
        .await
        .expect("resume")
        .expect("applied");
    assert_eq!(
        (
            resumed.status,
            resumed.claimed_by.as_deref(),
            resumed.resumed_count,
            resumed.corrections_count,
            resumed.blocked_count
        ),
        (JobStatus::Claimed, Some("agent:b"), 1, 1, 1)
    );
    assert_eq!(
        store.held_job("agent:b").await.expect("held"),
        Some(resumed.clone())
    );
    assert_mirror(store, &resumed, at(5)).await;
}

/// The sweep returns only claimed jobs whose lease expired strictly before `now`.
pub async fn sweep_only_expired_claimed_jobs<S: Store>(store: &S) {
    for (n, title) in [(1, "one"), (2, "two"), (3, "three"), (4, "four")] {
        post(store, &job_id(n), "proj", title, 0, at(0)).await;
    }
    let lease = |id: u64, actor: &str, until: i64| {
        let actor = actor.to_owned();
        async move {
            claimed(store, &actor, ClaimTarget::Id(job_id(id)), at(1)).await;
            let renew = JobPatch {
                lease_expires: Change::Set(at(until)),
                ..JobPatch::default()
            };
            store
                .transition_job(transition(
                    &job_id(id),
                    "proj",
                    JobStatus::Claimed,
                    &actor,
                    renew,
                    at(2),
                ))
                .await
                .expect("renew")
                .expect("applied")
        }
    };
    let one = lease(1, "agent:a", 60).await;
    lease(2, "agent:b", 180).await;
    lease(3, "agent:c", 30).await;
    lease(4, "agent:d", 30).await;
    // Finished and blocked jobs keep their stale lease here: only claimed jobs may be swept.
    let done = JobPatch {
        ..JobPatch::default()
    };
    store
        .transition_job(
            transition(
                &job_id(3),
                "proj",
                JobStatus::Claimed,
                "agent:c",
                done,
                at(20),
            )
            .toward(JobStatus::Done),
        )
        .await
        .expect("complete")
        .expect("applied");
    let block = JobPatch {
        ..JobPatch::default()
    };
    store
        .transition_job(
            transition(
                &job_id(4),
                "proj",
                JobStatus::Claimed,
                "agent:d",
                block,
                at(20),
            )
            .toward(JobStatus::Blocked),
        )
        .await
        .expect("block")
        .expect("applied");
    let audits = audit_count(store).await;
    let sweep_audit = |job: &capsid_core::jobs::Job| {
        job_audit(
            "improve-loop",
            AUDIT_JOB_LEASE_EXPIRED,
            &job.id,
            &job.namespace,
            at(120),
        )
    };

    assert_eq!(
        store
            .sweep_expired_leases(at(60), &sweep_audit, super::support::mirror(at(60)))
            .await
            .expect("sweep"),
        vec![],
        "not before expiry"
    );
    let swept = store
        .sweep_expired_leases(at(120), &sweep_audit, super::support::mirror(at(120)))
        .await
        .expect("sweep");
    assert_eq!(swept.len(), 1, "{swept:?}");
    let s = &swept[0];
    assert_eq!(s.id, one.id);
    assert_eq!(
        (
            s.status,
            s.claimed_by.clone(),
            s.claimed_at,
            s.lease_expires
        ),
        (JobStatus::Queued, None, None, None)
    );
    assert_eq!(store.job(&one.id).await.expect("job").as_ref(), Some(s));
    assert_mirror(store, s, at(120)).await;
    assert_eq!(audit_count(store).await, audits + 1);
    assert_eq!(store.held_job("agent:a").await.expect("held"), None);
    assert_eq!(
        store.job(&job_id(2)).await.expect("job").map(|j| j.status),
        Some(JobStatus::Claimed)
    );
    assert_eq!(
        store.job(&job_id(3)).await.expect("job").map(|j| j.status),
        Some(JobStatus::Done)
    );
    assert_eq!(
        store
            .job(&job_id(4))
            .await
            .expect("job")
            .map(|j| (j.status, j.claimed_by)),
        Some((JobStatus::Blocked, Some("agent:d".into())))
    );
    assert_eq!(
        store
            .sweep_expired_leases(at(120), &sweep_audit, super::support::mirror(at(120)))
            .await
            .expect("sweep"),
        vec![]
    );
    assert_eq!(
        store
            .sweep_expired_leases(at(180), &sweep_audit, super::support::mirror(at(180)))
            .await
            .expect("sweep"),
        vec![],
        "a lease ending now has not expired"
    );
    let later = store
        .sweep_expired_leases(
            at(180).plus_millis(1),
            &sweep_audit,
            super::support::mirror(at(181)),
        )
        .await
        .expect("sweep");
    assert_eq!(
        later.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [job_id(2)]
    );
    assert_eq!(
        claimed(store, "agent:a", best("proj"), at(200)).await.id,
        job_id(1),
        "a swept job is claimable"
    );
}
