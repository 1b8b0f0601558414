//! Load drivers shared by the race cases and the benchmark: bulk job posting, and a crowd of
//! claimers that claim the best job, complete it and claim again, counting what they saw
//! while a monitor watches the store for a holder with two claimed jobs.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capsid_core::jobs::state::JobStatus;
use capsid_core::jobs::{AUDIT_JOB_POSTED, Job};
use capsid_core::ports::{ClaimOutcome, JobFilter, Store};
use capsid_core::time::Timestamp;

use crate::conformance::support::{
    SignatureDecider, Toward, best, claim, complete_patch, job_audit, job_id, mirror, new_job,
    transition,
};

/// Posts `count` queued jobs (`job_id(1..=count)`, priorities 0..7, one millisecond apart)
/// with `writers` concurrent posters. Returns the time taken.
pub async fn post_jobs<S: Store + 'static>(
    store: Arc<S>,
    namespace: &str,
    count: usize,
    writers: usize,
    start: Timestamp,
) -> Duration {
    let began = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers.max(1) {
        let store = store.clone();
        let namespace = namespace.to_owned();
        tasks.push(tokio::spawn(async move {
            for i in (w..count).step_by(writers.max(1)) {
                let id = job_id(i as u64 + 1);
                let when = start.plus_millis(i as i64);
                let job = new_job(
                    &id,
                    &namespace,
                    &format!("Job number {i}"),
                    (i % 7) as i64,
                    when,
                );
                store
                    .post_job(
                        job,
                        job_audit("github:owner", AUDIT_JOB_POSTED, &id, &namespace, when),
                        mirror(when),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("post {id}: {e}"));
            }
        }));
    }
    for task in tasks {
        task.await.expect("poster");
    }
    began.elapsed()
}

/// What a claimer crowd saw.
#[derive(Debug, Default)]
pub struct ClaimRun {
    /// Successful claims.
    pub claims: usize,
    /// `LostRace` answers.
    pub lost_races: usize,
    /// Jobs claimed more than once.
    pub double_claims: Vec<String>,
    /// Times the monitor saw one holder with two claimed jobs.
    pub overlapping_holds: usize,
    /// Times the monitor looked.
    pub monitor_samples: usize,
    /// Most claimed jobs the monitor saw at once.
    pub max_claimed_at_once: usize,
    /// Claims per claimer.
    pub per_actor: HashMap<String, u64>,
    /// Wrong answers (a claimer given a job while holding one, a lost completion, errors).
    pub anomalies: Vec<String>,
    /// Wall time of the crowd.
    pub elapsed: Duration,
}

/// Runs `claimers` concurrent claimers over `namespace` until it has nothing queued. Every
/// `check_every` claims a claimer also asks the store what it holds and tries a second claim,
/// which must answer `AlreadyHolding`.
pub async fn run_claimers<S: Store + 'static>(
    store: Arc<S>,
    namespace: &str,
    claimers: usize,
    now: Timestamp,
    check_every: usize,
) -> ClaimRun {
    let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    let run: Arc<Mutex<ClaimRun>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let monitor = tokio::spawn(watch_holders(
        store.clone(),
        namespace.to_owned(),
        stop.clone(),
        run.clone(),
    ));
    let began = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..claimers {
        let (store, seen, run) = (store.clone(), seen.clone(), run.clone());
        let namespace = namespace.to_owned();
        tasks.push(tokio::spawn(async move {
            let actor = format!("agent:claimer-{k:02}");
            let decider = SignatureDecider {
                actor: actor.clone(),
                now,
            };
            let (mut mine, mut lost, mut anomalies) = (0u64, 0usize, Vec::new());
            loop {
                let job = match store.claim_job(claim(best(&namespace), &decider)).await {
                    Ok(ClaimOutcome::Claimed(job)) => job,
                    Ok(ClaimOutcome::LostRace) => {
                        lost += 1;
                        continue;
                    }
                    Ok(ClaimOutcome::NothingQueued) => break,
                    Ok(other) => {
                        anomalies.push(format!("{actor}: unexpected {other:?}"));
                        break;
                    }
                    Err(e) => {
                        anomalies.push(format!("{actor}: claim failed: {e}"));
                        break;
                    }
                };
                if !seen.lock().expect("seen").insert(job.id.clone()) {
                    run.lock().expect("run").double_claims.push(job.id.clone());
                }
                if job.claimed_by.as_deref() != Some(actor.as_str()) {
                    anomalies.push(format!(
                        "{actor}: claimed {} held by {:?}",
                        job.id, job.claimed_by
                    ));
                }
                mine += 1;
                if check_every > 0 && mine % check_every as u64 == 0 {
                    check_holding(&*store, &namespace, &decider, &job, &mut anomalies).await;
                }
                let mut done = transition(
                    &job.id,
                    &namespace,
                    JobStatus::Claimed,
                    &actor,
                    complete_patch(),
                    now,
                )
                .toward(JobStatus::Done);
                // As the jobs tool does: the claimer completes the row it was handed.
                done.expected = Some(job.clone());
                match store.transition_job(done).await {
                    Ok(Some(_)) => {}
                    other => {
                        anomalies.push(format!("{actor}: completing {} gave {other:?}", job.id))
                    }
                }
            }
            let mut run = run.lock().expect("run");
            run.claims += mine as usize;
            run.lost_races += lost;
            run.per_actor.insert(actor, mine);
            run.anomalies.extend(anomalies);
        }));
    }
    for task in tasks {
        task.await.expect("claimer");
    }
    let elapsed = began.elapsed();
    stop.store(true, Ordering::SeqCst);
    monitor.await.expect("monitor");
    let mut run = std::mem::take(&mut *run.lock().expect("run"));
    run.elapsed = elapsed;
    run
}

async fn check_holding<S: Store>(
    store: &S,
    namespace: &str,
    decider: &SignatureDecider,
    job: &Job,
    anomalies: &mut Vec<String>,
) {
    let actor = &decider.actor;
    match store.held_job(actor).await {
        Ok(Some(held)) if held.id == job.id => {}
        other => anomalies.push(format!(
            "{actor}: held_job after claiming {} gave {other:?}",
            job.id
        )),
    }
    match store.claim_job(claim(best(namespace), decider)).await {
        Ok(ClaimOutcome::AlreadyHolding(held)) if held.id == job.id => {}
        other => anomalies.push(format!(
            "{actor}: a second claim while holding {} gave {other:?}",
            job.id
        )),
    }
}

async fn watch_holders<S: Store>(
    store: Arc<S>,
    namespace: String,
    stop: Arc<AtomicBool>,
    run: Arc<Mutex<ClaimRun>>,
) {
    let filter = JobFilter {
        namespace: Some(namespace),
        status: Some(JobStatus::Claimed),
    };
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    while !stop.load(Ordering::SeqCst) {
        tick.tick().await;
        let Ok(claimed) = store.jobs(&filter, 10_000).await else {
            continue;
        };
        let mut holders = HashSet::new();
        let overlapping = claimed
            .iter()
            .filter(|j| !holders.insert(j.claimed_by.clone()))
            .count();
        let mut run = run.lock().expect("run");
        run.monitor_samples += 1;
        run.overlapping_holds += overlapping;
        run.max_claimed_at_once = run.max_claimed_at_once.max(claimed.len());
    }
}
