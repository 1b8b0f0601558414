//! The work queue on the single writer: claims under contention (never two per caller, never
//! one job twice), verdicts applied or rolled back, keyed transitions, the write-once outcome,
//! the lease sweep with its audit rows and mirrors.

use std::sync::Arc;

use crate::common::{at, audit, store};
use capsid_core::jobs::mirror::mirror_doc;
use capsid_core::jobs::outcome::{OutcomeRow, ResultKind};
use capsid_core::jobs::state::{JobEvent, Step};
use capsid_core::jobs::{Job, JobStatus};
use capsid_core::ports::{
    AuditFilter, AuditLog, Change, ClaimDecider, ClaimOutcome, ClaimRequest, ClaimTarget,
    ClaimVerdict, DocumentStore, JobFilter, JobPatch, JobStore, JobTransition, MirrorFn, NewJob,
    OutcomeRecord, StoreError,
};
use capsid_core::time::Timestamp;
use capsid_store_sqlite::SqliteStore;

struct Decide(fn(&Job) -> ClaimVerdict);

impl ClaimDecider for Decide {
    fn decide(&self, job: &Job) -> ClaimVerdict {
        (self.0)(job)
    }
}

fn claim_all(job: &Job) -> ClaimVerdict {
    ClaimVerdict::Claim(audit(
        "job-claimed",
        &job.namespace,
        &format!("jobs/{}.md", job.id),
        at(10),
    ))
}

fn mirror() -> MirrorFn {
    Box::new(|job: &Job| {
        let m = mirror_doc(job);
        capsid_core::ports::DocumentWrite {
            namespace: m.namespace,
            path: m.path,
            title: Some(m.title),
            body: Some(m.body),
            doc_type: Some(m.doc_type.to_owned()),
            status: Some(m.status.to_owned()),
            tags: Some(m.tags.to_owned()),
            links: None,
            at: job.updated_at,
        }
    })
}

fn new_job(id: &str, title: &str, priority: i64, when: Timestamp) -> NewJob {
    NewJob {
        id: id.to_owned(),
        namespace: "n".to_owned(),
        title: title.to_owned(),
        body: "---\ncapsid-task-signature: x\n---\nDo it.\n".to_owned(),
        priority,
        posted_by: "github:owner".to_owned(),
        gate_required: true,
        review_required: false,
        required_scopes: None,
        min_record: None,
        at: when,
        dispatch: None,
        max_cost_usd: None,
        runtime: None,
        role: None,
        paths: None,
    }
}

async fn post(store: &SqliteStore, id: &str, title: &str, priority: i64, when: Timestamp) -> Job {
    let entry = audit("job-posted", "n", &format!("jobs/{id}.md"), when);
    store
        .post_job(new_job(id, title, priority, when), entry, mirror())
        .await
        .unwrap()
}

async fn claim(
    store: &SqliteStore,
    actor: &str,
    target: ClaimTarget,
    decide: fn(&Job) -> ClaimVerdict,
) -> ClaimOutcome {
    let decider = Decide(decide);
    let request = ClaimRequest {
        target,
        actor: actor.to_owned(),
        now: at(10),
        lease_expires: at(100),
        driven: false,
        writes_nothing: &[],
        decider: &decider,
        mirror: mirror(),
    };
    store.claim_job(request).await.unwrap()
}

fn best() -> ClaimTarget {
    ClaimTarget::Best {
        namespace: "n".to_owned(),
    }
}

fn outcome_for(job: &Job, recorded: Timestamp, urls: &[&str]) -> OutcomeRecord {
    OutcomeRecord {
        reported_call: None,
        row: OutcomeRow {
            job_id: job.id.clone(),
            agent: job
                .claimed_by
                .clone()
                .unwrap_or_else(|| "unattributed".into()),
            namespace: job.namespace.clone(),
            prs_opened: Some(urls.len() as i64),
            prs_merged: None,
            commits: Some(3),
            files_changed: None,
            tests_added: None,
            ci_green: None,
            blocked_count: 0,
            resumed_count: 0,
            duration_minutes: Some(5),
            result_kind: ResultKind::Pr,
            verified: "{}".to_owned(),
            recorded_at: recorded,
            reviewed_by: None,
            skill_ids_offered: None,
            skill_ids_used: None,
            skill_verdict: None,
            cost_usd: None,
            turns: None,
            duration_ms: None,
        },
        pr_urls: urls.iter().map(|u| (*u).to_owned()).collect(),
    }
}

#[tokio::test]
async fn posts_claims_and_verdicts() {
    let (_dir, store) = store().await;
    let low = post(&store, "job_000000000001", "low", 0, at(0)).await;
    let high = post(&store, "job_000000000002", "high", 5, at(1)).await;
    assert_eq!(low.status, JobStatus::Queued);
    let twice = store
        .post_job(
            new_job("job_000000000003", "high", 0, at(2)),
            audit("p", "n", "x", at(2)),
            mirror(),
        )
        .await;
    assert!(
        matches!(twice, Err(StoreError::Conflict(ref m)) if m.contains("high")),
        "{twice:?}"
    );
    let mirror_doc = store
        .document("n", "jobs/job_000000000002.md")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mirror_doc.doc_type, "task");

    let refused = claim(&store, "agent:a", best(), |_| {
        ClaimVerdict::Refuse("no".into())
    })
    .await;
    assert!(
        matches!(refused, ClaimOutcome::Refused(ref j, _) if j.id == high.id),
        "{refused:?}"
    );
    assert_eq!(
        store.job(&high.id).await.unwrap().unwrap().status,
        JobStatus::Queued
    );

    let claimed = claim(&store, "agent:a", best(), claim_all).await;
    let ClaimOutcome::Claimed(job) = claimed else {
        panic!("{claimed:?}")
    };
    assert_eq!(
        (job.id.as_str(), job.claimed_by.as_deref()),
        (high.id.as_str(), Some("agent:a"))
    );
    assert_eq!(job.lease_expires, Some(at(100)));
    assert!(
        store
            .document("n", "jobs/job_000000000002.md")
            .await
            .unwrap()
            .unwrap()
            .body_text()
            .contains("agent:a")
    );
    assert_eq!(
        store
            .versions("n", "jobs/job_000000000002.md", 10)
            .await
            .unwrap()
            .len(),
        1,
        "mirror snapshotted"
    );
    assert!(matches!(
        claim(&store, "agent:a", best(), claim_all).await,
        ClaimOutcome::AlreadyHolding(_)
    ));
    assert_eq!(
        store.held_job("agent:a").await.unwrap().unwrap().id,
        high.id
    );
    assert!(matches!(
        claim(
            &store,
            "agent:b",
            ClaimTarget::Id(high.id.clone()),
            claim_all
        )
        .await,
        ClaimOutcome::NotQueued(_)
    ));
    assert!(matches!(
        claim(
            &store,
            "agent:b",
            ClaimTarget::Id("job_nope".into()),
            claim_all
        )
        .await,
        ClaimOutcome::NotFound
    ));

    let failed = claim(&store, "agent:b", best(), |job| ClaimVerdict::Fail {
        summary: "signature mismatch".into(),
        audit: audit("job-signature-refused", "n", "x", at(10)),
        outcome: Some(outcome_for(job, at(10), &["https://github.com/o/r/pull/1"])),
    })
    .await;
    assert!(
        matches!(failed, ClaimOutcome::Failed(ref j, _) if j.status == JobStatus::Failed),
        "{failed:?}"
    );
    assert_eq!(store.outcomes(Some("unattributed")).await.unwrap().len(), 1);
    assert!(matches!(
        claim(&store, "agent:b", best(), claim_all).await,
        ClaimOutcome::NothingQueued
    ));

    let counts = store.job_counts("n", at(0)).await.unwrap();
    assert_eq!(
        (
            counts.queued,
            counts.claimed,
            counts.blocked,
            counts.done_today
        ),
        (0, 1, 0, 0)
    );
    assert_eq!(
        store.jobs(&JobFilter::default(), 10).await.unwrap()[0].id,
        high.id,
        "newest first"
    );
    let by_holder = store.job_status_counts().await.unwrap();
    assert_eq!(by_holder.len(), 1);
    assert_eq!(
        (by_holder[0].claimed_by.as_str(), by_holder[0].count),
        ("agent:a", 1)
    );
}

#[tokio::test]
async fn contended_claims_never_double_up() {
    let (_dir, store) = store().await;
    for i in 0..8 {
        post(
            &store,
            &format!("job_{i:012}"),
            &format!("t{i}"),
            i % 3,
            at(i),
        )
        .await;
    }
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for c in 0..16 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            claim(&store, &format!("agent:c{c}"), best(), claim_all).await
        }));
    }
    let mut claimed = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            ClaimOutcome::Claimed(job) => claimed.push(job.id),
            ClaimOutcome::NothingQueued => {}
            other => panic!("{other:?}"),
        }
    }
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed.len(), 8, "every job claimed exactly once");
}

/// A transition that moves the job to another status.
trait Toward {
    fn toward(self, to: JobStatus) -> Self;
}

impl Toward for JobTransition {
    fn toward(mut self, to: JobStatus) -> Self {
        self.step.to = to;
        self
    }
}

fn transition(
    job: &Job,
    from: JobStatus,
    holder: Option<&str>,
    patch: JobPatch,
    when: Timestamp,
) -> JobTransition {
    JobTransition {
        expected: None,
        id: job.id.clone(),
        step: Step {
            from,
            to: from,
            event: JobEvent::Heartbeat,
        },
        holder: holder.map(str::to_owned),
        corrections: None,
        patch,
        at: when,
        audit: audit("job-x", "n", "x", when),
        outcome: None,
        mirror: mirror(),
    }
}

#[tokio::test]
async fn transitions_are_keyed_and_outcomes_write_once() {
    let (_dir, store) = store().await;
    let a = post(&store, "job_00000000000a", "a", 0, at(0)).await;
    let b = post(&store, "job_00000000000b", "b", 0, at(1)).await;
    let ClaimOutcome::Claimed(a) = claim(&store, "agent:x", ClaimTarget::Id(a.id), claim_all).await
    else {
        panic!()
    };
    let ClaimOutcome::Claimed(b) = claim(&store, "agent:y", ClaimTarget::Id(b.id), claim_all).await
    else {
        panic!()
    };

    let not_holder = store
        .transition_job(transition(
            &a,
            JobStatus::Claimed,
            Some("agent:y"),
            JobPatch::default(),
            at(20),
        ))
        .await;
    assert_eq!(not_holder.unwrap(), None);
    let mut wrong_count = transition(
        &a,
        JobStatus::Claimed,
        Some("agent:x"),
        JobPatch::default(),
        at(20),
    );
    wrong_count.corrections = Some(1);
    assert_eq!(store.transition_job(wrong_count).await.unwrap(), None);

    // Block b, then try to hand it to agent:x, who holds a: the one-claim index refuses.
    let block = JobPatch {
        add_blocked: true,
        ..JobPatch::default()
    };
    let blocked = store
        .transition_job(
            transition(&b, JobStatus::Claimed, Some("agent:y"), block, at(21))
                .toward(JobStatus::Blocked),
        )
        .await
        .unwrap();
    assert_eq!(blocked.unwrap().blocked_count, 1);
    let resume = JobPatch {
        claimed_by: Change::Set("agent:x".into()),
        add_resumed: true,
        ..JobPatch::default()
    };
    let second = store
        .transition_job(
            transition(&b, JobStatus::Blocked, None, resume, at(22)).toward(JobStatus::Claimed),
        )
        .await;
    assert!(
        matches!(second, Err(StoreError::Conflict(ref m)) if m.contains("agent:x")),
        "{second:?}"
    );
    assert_eq!(
        store.job(&b.id).await.unwrap().unwrap().status,
        JobStatus::Blocked,
        "nothing changed"
    );

    let mut heartbeat = transition(
        &a,
        JobStatus::Claimed,
        Some("agent:x"),
        JobPatch::default(),
        at(23),
    );
    heartbeat.outcome = Some(outcome_for(
        &a,
        at(23),
        &[
            "https://github.com/o/r/pull/1",
            "https://github.com/o/r/pull/2",
        ],
    ));
    store.transition_job(heartbeat).await.unwrap().unwrap();
    let done = JobPatch {
        lease_expires: Change::Clear,
        result_ref: Change::Set("https://github.com/o/r/pull/1".into()),
        ..JobPatch::default()
    };
    let mut complete =
        transition(&a, JobStatus::Claimed, Some("agent:x"), done, at(24)).toward(JobStatus::Done);
    complete.outcome = Some(outcome_for(&a, at(24), &["https://github.com/o/r/pull/3"]));
    let finished = store.transition_job(complete).await.unwrap().unwrap();
    assert_eq!(
        (finished.status, finished.lease_expires),
        (JobStatus::Done, None)
    );
    assert_eq!(
        finished.claimed_by.as_deref(),
        Some("agent:x"),
        "untouched fields stay"
    );
    let outcomes = store.outcomes(Some("agent:x")).await.unwrap();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].recorded_at, at(23), "the first record stands");
    assert_eq!(
        store
            .document("n", "jobs/job_00000000000a.md")
            .await
            .unwrap()
            .unwrap()
            .status,
        "closed"
    );
    assert_eq!(store.job_counts("n", at(0)).await.unwrap().done_today, 1);
}

#[tokio::test]
async fn the_sweep_requeues_expired_leases_with_audit_and_mirror() {
    let (_dir, store) = store().await;
    for (i, holder) in ["agent:p", "agent:q"].into_iter().enumerate() {
        let id = format!("job_00000000000{i}");
        post(&store, &id, &id, 0, at(0)).await;
        claim(&store, holder, ClaimTarget::Id(id), claim_all).await;
    }
    // Leases run to at(100): nothing has expired at at(100) itself.
    let none = store
        .sweep_expired_leases(
            at(100),
            &|j: &Job| audit("job-lease-expired", &j.namespace, &j.id, at(100)),
            mirror(),
        )
        .await;
    assert!(none.unwrap().is_empty());
    let swept = store
        .sweep_expired_leases(
            at(101),
            &|j: &Job| audit("job-lease-expired", &j.namespace, &j.id, at(101)),
            mirror(),
        )
        .await
        .unwrap();
    assert_eq!(
        swept.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        ["job_000000000000", "job_000000000001"]
    );
    assert!(swept.iter().all(|j| j.status == JobStatus::Queued
        && j.claimed_by.is_none()
        && j.lease_expires.is_none()));
    let audits = store
        .recent_audit(&AuditFilter::default(), 2)
        .await
        .unwrap();
    assert!(
        audits
            .iter()
            .all(|r| r.action.as_deref() == Some("job-lease-expired")),
        "{audits:?}"
    );
    let mirror_body = store
        .document("n", "jobs/job_000000000001.md")
        .await
        .unwrap()
        .unwrap();
    assert!(mirror_body.body_text().contains("(unclaimed)"));
    assert!(store.held_job("agent:p").await.unwrap().is_none());
}
