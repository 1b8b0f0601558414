//! Conformance cases for path leases (issue 51): a claim leases its job's paths in the claim's
//! own transaction, a job whose paths overlap a live lease is not handed out (the refusal
//! names the job and the pattern), a job without paths leases the whole repository, leases
//! end with every way a job ends and with its lease's expiry, and a crowd of concurrent
//! claims over overlapping paths never holds two overlapping leases at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use capsid_core::jobs::paths::{overlapping, waiting_on};
use capsid_core::jobs::state::JobStatus;
use capsid_core::jobs::{AUDIT_JOB_POSTED, Job};
use capsid_core::ports::{ClaimOutcome, ClaimRequest, ClaimTarget, JobFilter, JobPatch, Store};
use capsid_core::time::Timestamp;

use capsid_core::jobs::signature::{JobTerms, seal_job};

use super::support::{
    SECRET, SignatureDecider, Toward, at, best, claim, complete_patch, fail_patch, job_audit,
    job_id, mirror, new_job, new_job_on, transition,
};

async fn post_on<S: Store + ?Sized>(
    store: &S,
    n: u64,
    title: &str,
    paths: Option<&[&str]>,
    when: Timestamp,
) -> Job {
    let id = job_id(n);
    let job = match paths {
        Some(p) => new_job_on(&id, "repo", title, p, when),
        None => new_job(&id, "repo", title, 0, when),
    };
    store
        .post_job(
            job,
            job_audit("github:owner", AUDIT_JOB_POSTED, &id, "repo", when),
            mirror(when),
        )
        .await
        .unwrap_or_else(|e| panic!("post {id}: {e}"))
}

/// A driver's claim (it names its runtimes): a job without paths leases the whole repository.
fn driven<'a>(target: ClaimTarget, decider: &'a SignatureDecider) -> ClaimRequest<'a> {
    ClaimRequest {
        driven: true,
        ..claim(target, decider)
    }
}

/// A driver's claim of `target` as `actor` at `when`.
async fn claim_as<S: Store + ?Sized>(
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
        .claim_job(driven(target, &decider))
        .await
        .expect("claim")
}

/// A driver's claim that must succeed.
async fn claimed<S: Store + ?Sized>(
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

fn by_id(job: &Job) -> ClaimTarget {
    ClaimTarget::Id(job.id.clone())
}

fn refusal(outcome: ClaimOutcome) -> String {
    match outcome {
        ClaimOutcome::Refused(_, why) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn status<S: Store + ?Sized>(store: &S, job: &Job) -> JobStatus {
    store.job(&job.id).await.expect("job").expect("row").status
}

/// Ends `job`, held by `actor`, toward `to` with `patch`.
async fn end<S: Store + ?Sized>(
    store: &S,
    job: &Job,
    actor: &str,
    to: JobStatus,
    patch: JobPatch,
    when: Timestamp,
) {
    let t = transition(&job.id, "repo", JobStatus::Claimed, actor, patch, when).toward(to);
    assert!(
        store.transition_job(t).await.expect("transition").is_some(),
        "{} toward {to:?}",
        job.id
    );
}

/// The claim grants the lease: a job on overlapping paths waits, naming the holder and the
/// pattern, by id and by the queue's walk; a job on disjoint paths is taken beside it.
pub async fn a_claim_leases_its_paths_and_an_overlapping_job_waits<S: Store>(store: &S) {
    let api = post_on(store, 1, "Api", Some(&["src/api/**"]), at(0)).await;
    let api_v1 = post_on(store, 2, "Api v1", Some(&["src/api/v1/mod.rs"]), at(1)).await;
    let web = post_on(store, 3, "Web", Some(&["src/web/**", "docs/web.md"]), at(2)).await;
    let held = claimed(store, "agent:a", best("repo"), at(10)).await;
    assert_eq!(held.id, api.id, "the oldest job first");
    assert_eq!(
        held.leased.as_deref(),
        api.paths.as_deref(),
        "leased with the claim"
    );
    let why = refusal(claim_as(store, "agent:b", by_id(&api_v1), at(11)).await);
    assert_eq!(
        why,
        format!("waiting on job {} ('Api') for `src/api/**`", api.id)
    );
    assert_eq!(
        status(store, &api_v1).await,
        JobStatus::Queued,
        "nothing changed"
    );
    // The walk passes over the waiting job and takes the disjoint one behind it.
    let taken = claimed(store, "agent:b", best("repo"), at(12)).await;
    assert_eq!(taken.id, web.id);
    // With both live, the waiting job's refusal names its holder; a third claimer gets it.
    let why = refusal(claim_as(store, "agent:c", best("repo"), at(13)).await);
    assert!(
        why.contains(&api.id) && why.contains("`src/api/**`"),
        "{why}"
    );
    // What the stores read outside a claim says the same.
    let live = store
        .live_leases("repo", at(13))
        .await
        .expect("live leases");
    let mut ids: Vec<&str> = live.iter().map(|l| l.job_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![api.id.as_str(), web.id.as_str()]);
    assert_eq!(
        waiting_on(&api_v1, true, &live),
        Some(format!(
            "waiting on job {} ('Api') for `src/api/**`",
            api.id
        ))
    );
    end(
        store,
        &held,
        "agent:a",
        JobStatus::Done,
        complete_patch(),
        at(14),
    )
    .await;
    let next = claimed(store, "agent:c", best("repo"), at(15)).await;
    assert_eq!(next.id, api_v1.id, "free once the holder is done");
}

/// A job without paths leases the whole repository: it waits on any live lease, and while it
/// is live nothing else in its repository is handed out. Other namespaces are other
/// repositories.
pub async fn a_job_without_paths_runs_alone<S: Store>(store: &S) {
    let scoped = post_on(store, 1, "Scoped", Some(&["src/a.rs"]), at(0)).await;
    let whole = post_on(store, 2, "Unscoped", None, at(1)).await;
    claimed(store, "agent:a", by_id(&scoped), at(10)).await;
    let why = refusal(claim_as(store, "agent:b", by_id(&whole), at(11)).await);
    assert_eq!(
        why,
        format!(
            "waiting on job {} ('Scoped') for `src/a.rs` (this job has no paths, so it leases the whole repository)",
            scoped.id
        )
    );
    end(
        store,
        &scoped,
        "agent:a",
        JobStatus::Done,
        complete_patch(),
        at(12),
    )
    .await;
    claimed(store, "agent:b", by_id(&whole), at(13)).await;
    let later = post_on(store, 3, "Later", Some(&["docs/x.md"]), at(14)).await;
    let why = refusal(claim_as(store, "agent:c", by_id(&later), at(15)).await);
    assert_eq!(
        why,
        format!(
            "waiting on job {} ('Unscoped') for the whole repository",
            whole.id
        )
    );
    let id = job_id(4);
    store
        .post_job(
            new_job(&id, "elsewhere", "Elsewhere", 0, at(16)),
            job_audit("github:owner", AUDIT_JOB_POSTED, &id, "elsewhere", at(16)),
            mirror(at(16)),
        )
        .await
        .expect("post elsewhere");
    let other = claimed(store, "agent:c", best("elsewhere"), at(17)).await;
    assert_eq!(other.id, id, "another namespace is another repository");
    // A claim outside a driver (an agent working through the tools, as on the Worker's
    // queue) of a job without paths leases nothing and waits on nothing.
    let plain = post_on(store, 5, "Plain", None, at(18)).await;
    let decider = SignatureDecider {
        actor: "agent:plain".into(),
        now: at(19),
    };
    match store
        .claim_job(claim(by_id(&plain), &decider))
        .await
        .expect("claim")
    {
        ClaimOutcome::Claimed(job) => assert_eq!(job.leased, None),
        other => panic!("a plain claim of a job without paths: {other:?}"),
    }
    // Nor does a driver's claim of a job whose role writes nothing in the tree (a review).
    let id = job_id(6);
    let mut review = new_job(&id, "repo", "Review", 0, at(18));
    review.role = Some("senior".to_owned());
    review.body = seal_job(
        SECRET,
        "Review it.\n",
        &JobTerms {
            role: Some("senior"),
            paths: None,
        },
    );
    store
        .post_job(
            review,
            job_audit("github:owner", AUDIT_JOB_POSTED, &id, "repo", at(18)),
            mirror(at(18)),
        )
        .await
        .expect("post the review");
    let decider = SignatureDecider {
        actor: "agent:reviewer".into(),
        now: at(19),
    };
    let writes_nothing = ["senior".to_owned()];
    let request = ClaimRequest {
        writes_nothing: &writes_nothing,
        ..driven(ClaimTarget::Id(id.clone()), &decider)
    };
    match store.claim_job(request).await.expect("claim") {
        ClaimOutcome::Claimed(job) => assert_eq!(job.leased, None, "a review leases nothing"),
        other => panic!("a driver's claim of a review while the repository is leased: {other:?}"),
    }
    let live = store
        .live_leases("repo", at(19))
        .await
        .expect("live leases");
    assert!(
        live.iter().all(|l| l.job_id != plain.id && l.job_id != id),
        "{live:?}"
    );
    assert!(
        live.iter()
            .any(|l| l.job_id == whole.id && l.leased == vec!["**".to_owned()]),
        "{live:?}"
    );
}

/// Leases end with the job: done, failed, and the lease's expiry (a claimed job whose lease
/// ran out holds nothing, and the sweep returns it to the queue); a job blocked at a gate
/// keeps its lease.
pub async fn leases_end_with_every_way_a_job_ends<S: Store>(store: &S) {
    let paths: &[&str] = &["src/shared.rs"];
    let mut n = 0;
    let mut next = |title: &'static str| {
        n += 1;
        (n, title)
    };
    for (to, patch) in [
        (JobStatus::Done, complete_patch()),
        (JobStatus::Failed, fail_patch("gave up")),
    ] {
        let (a, ta) = next("Holder");
        let (b, tb) = next("Waiter");
        let holder = post_on(store, a, &format!("{ta} {a}"), Some(paths), at(0)).await;
        let waiter = post_on(store, b, &format!("{tb} {b}"), Some(paths), at(1)).await;
        claimed(store, "agent:a", by_id(&holder), at(10)).await;
        refusal(claim_as(store, "agent:b", by_id(&waiter), at(11)).await);
        end(store, &holder, "agent:a", to, patch, at(12)).await;
        let took = claimed(store, "agent:b", by_id(&waiter), at(13)).await;
        end(
            store,
            &took,
            "agent:b",
            JobStatus::Done,
            complete_patch(),
            at(14),
        )
        .await;
    }
    // Blocked at a gate: still live.
    let (a, _) = next("Blocked");
    let (b, _) = next("Behind");
    let blocked = post_on(store, a, "Blocked holder", Some(paths), at(20)).await;
    let behind = post_on(store, b, "Behind the gate", Some(paths), at(21)).await;
    claimed(store, "agent:a", by_id(&blocked), at(22)).await;
    let to_gate = transition(
        &blocked.id,
        "repo",
        JobStatus::Claimed,
        "agent:a",
        JobPatch {
            add_blocked: true,
            ..JobPatch::default()
        },
        at(23),
    )
    .toward(JobStatus::Blocked);
    assert!(
        store
            .transition_job(to_gate)
            .await
            .expect("block")
            .is_some()
    );
    let why = refusal(claim_as(store, "agent:b", by_id(&behind), at(24)).await);
    assert!(why.contains(&blocked.id), "{why}");
    // Expiry: a claimed job whose lease ran out (240 minutes after its claim) holds nothing.
    let (c, _) = next("Expires");
    let (d, _) = next("After");
    let other: &[&str] = &["lib/**"];
    let expires = post_on(store, c, "Expires", Some(other), at(30)).await;
    let after = post_on(store, d, "After expiry", Some(other), at(31)).await;
    let held = claimed(store, "agent:c", by_id(&expires), at(32)).await;
    let lease_end = held.lease_expires.expect("a lease");
    refusal(claim_as(store, "agent:d", by_id(&after), lease_end).await);
    let past = lease_end.plus_millis(1);
    let took = claimed(store, "agent:d", by_id(&after), past).await;
    assert_eq!(took.id, after.id, "an expired lease holds no paths");
}

/// Overlapping jobs in the crowd.
pub const OVERLAP_JOBS: usize = 128;
/// Claimers in the crowd.
pub const OVERLAP_CLAIMERS: usize = 64;

/// The paths of crowd job `i`: a few shapes over few folders, so most pairs overlap.
fn crowd_paths(i: usize) -> Vec<String> {
    let folder = ["api", "web", "cli", "core"][i % 4];
    match i % 5 {
        0 => vec![format!("src/{folder}/**")],
        1 => vec![format!("src/{folder}/mod.rs")],
        2 => vec![format!("src/{folder}/*.rs"), "docs/*.md".to_owned()],
        3 => vec![format!("tests/{folder}_{}.rs", i % 3)],
        _ => vec![format!("src/{folder}/deep/{}.rs", i % 7)],
    }
}

/// 64 concurrent claimers over 128 jobs whose paths overlap: every job claimed exactly once,
/// and a monitor reading the live jobs never sees two overlapping leases at once.
pub async fn concurrent_claims_never_hold_overlapping_leases<S: Store + 'static>(store: Arc<S>) {
    for i in 0..OVERLAP_JOBS {
        let id = job_id(i as u64 + 1);
        let paths = crowd_paths(i);
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let when = at(0).plus_millis(i as i64);
        store
            .post_job(
                new_job_on(&id, "repo", &format!("Crowd job {i}"), &refs, when),
                job_audit("github:owner", AUDIT_JOB_POSTED, &id, "repo", when),
                mirror(when),
            )
            .await
            .expect("post");
    }
    let now = at(60);
    let stop = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let (mut samples, mut overlaps) = (0usize, Vec::new());
            while !stop.load(Ordering::SeqCst) {
                let live = store
                    .jobs(
                        &JobFilter {
                            namespace: Some("repo".to_owned()),
                            status: Some(JobStatus::Claimed),
                        },
                        10_000,
                    )
                    .await
                    .expect("live jobs");
                samples += 1;
                for (i, a) in live.iter().enumerate() {
                    for b in &live[i + 1..] {
                        let (la, lb) = (
                            capsid_core::jobs::paths::lease_of(a),
                            capsid_core::jobs::paths::lease_of(b),
                        );
                        assert!(
                            a.leased.is_some() && b.leased.is_some(),
                            "a claimed crowd job holds its lease"
                        );
                        if let Some(pair) = overlapping(&la, &lb) {
                            overlaps.push(format!("{} and {} over {pair:?}", a.id, b.id));
                        }
                    }
                }
                tokio::task::yield_now().await;
            }
            (samples, overlaps)
        })
    };
    let mut crowd = Vec::new();
    for k in 0..OVERLAP_CLAIMERS {
        let store = store.clone();
        crowd.push(tokio::spawn(async move {
            let actor = format!("agent:crowd-{k:02}");
            let decider = SignatureDecider {
                actor: actor.clone(),
                now,
            };
            let mut mine = Vec::new();
            let mut idle = 0u32;
            loop {
                match store
                    .claim_job(driven(best("repo"), &decider))
                    .await
                    .expect("claim")
                {
                    ClaimOutcome::Claimed(job) => {
                        idle = 0;
                        mine.push(job.id.clone());
                        let mut done = transition(
                            &job.id,
                            "repo",
                            JobStatus::Claimed,
                            &actor,
                            complete_patch(),
                            now,
                        )
                        .toward(JobStatus::Done);
                        done.expected = Some(job);
                        assert!(store.transition_job(done).await.expect("done").is_some());
                    }
                    ClaimOutcome::NothingQueued => break,
                    // Every candidate waits on a lease or is locked by another claimer.
                    ClaimOutcome::Refused(..) | ClaimOutcome::LostRace => {
                        idle += 1;
                        assert!(idle < 100_000, "{actor} never got a claim");
                        tokio::task::yield_now().await;
                    }
                    other => panic!("{actor}: unexpected {other:?}"),
                }
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for task in crowd {
        all.extend(task.await.expect("claimer"));
    }
    stop.store(true, Ordering::SeqCst);
    let (samples, overlaps) = monitor.await.expect("monitor");
    assert_eq!(overlaps, Vec::<String>::new(), "two live leases overlapped");
    assert!(samples > 0, "the monitor looked");
    all.sort_unstable();
    let claims = all.len();
    all.dedup();
    assert_eq!(all.len(), claims, "no job was claimed twice");
    assert_eq!(claims, OVERLAP_JOBS, "every job was claimed once");
}
