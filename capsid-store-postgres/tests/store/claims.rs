//! Claims on Postgres: 64 concurrent claimers over 10,000 queued jobs with
//! `FOR UPDATE SKIP LOCKED` (each job claimed exactly once, never two held by one claimer),
//! and one claimer racing itself (the `jobs_one_claim` index answers `AlreadyHolding`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use capsid_core::jobs::state::{JobEvent, Step};
use capsid_core::jobs::{Job, JobStatus};
use capsid_core::ports::{
    AuditEntry, Change, ClaimDecider, ClaimOutcome, ClaimRequest, ClaimTarget, ClaimVerdict,
    DocumentWrite, JobPatch, JobStore, JobTransition, MirrorFn, NewJob,
};
use capsid_core::time::{MINUTE_MS, Timestamp};
use capsid_store_postgres::PgStore;
use tokio::sync::Barrier;

use crate::common::{TestDb, at};

const JOBS: usize = 10_000;
const CLAIMERS: usize = 64;

fn job_audit(actor: &str, action: &str, job: &str, when: Timestamp) -> AuditEntry {
    AuditEntry {
        actor: actor.to_owned(),
        action: action.to_owned(),
        namespace: Some("load".to_owned()),
        path: Some(format!("jobs/{job}.md")),
        params: serde_json::json!({ "job_id": job }),
        at: when,
    }
}

fn mirror(when: Timestamp) -> MirrorFn {
    Box::new(move |job: &Job| DocumentWrite {
        namespace: job.namespace.clone(),
        path: format!("jobs/{}.md", job.id),
        title: Some(format!("Job: {}", job.title)),
        body: Some(format!(
            "# {}\n\n- status: **{}**\n",
            job.title,
            job.status.as_str()
        )),
        doc_type: Some("task".to_owned()),
        status: Some(
            if job.status == JobStatus::Done {
                "closed"
            } else {
                "active"
            }
            .to_owned(),
        ),
        tags: Some("jobs".to_owned()),
        links: None,
        at: when,
    })
}

/// Claims every candidate.
struct Always {
    actor: String,
    now: Timestamp,
}

impl ClaimDecider for Always {
    fn decide(&self, job: &Job) -> ClaimVerdict {
        ClaimVerdict::Claim(job_audit(&self.actor, "job-claimed", &job.id, self.now))
    }
}

fn request<'a>(target: ClaimTarget, decider: &'a Always) -> ClaimRequest<'a> {
    ClaimRequest {
        target,
        actor: decider.actor.clone(),
        now: decider.now,
        lease_expires: decider.now.plus_millis(240 * MINUTE_MS),
        driven: false,
        writes_nothing: &[],
        decider,
        mirror: mirror(decider.now),
    }
}

async fn post(store: &PgStore, n: usize) -> Job {
    let id = format!("job_{n:012x}");
    let when = at(0).plus_millis(n as i64);
    let job = NewJob {
        id: id.clone(),
        namespace: "load".to_owned(),
        title: format!("Job number {n}"),
        body: format!("Do job {n}."),
        priority: (n % 7) as i64,
        posted_by: "github:owner".to_owned(),
        gate_required: false,
        review_required: false,
        required_scopes: None,
        min_record: None,
        at: when,
        dispatch: None,
        max_cost_usd: None,
        runtime: None,
        role: None,
        paths: None,
    };
    store
        .post_job(
            job,
            job_audit("github:owner", "job-posted", &id, when),
            mirror(when),
        )
        .await
        .unwrap_or_else(|e| panic!("post {id}: {e}"))
}

fn complete(job: &Job, actor: &str, when: Timestamp) -> JobTransition {
    JobTransition {
        expected: None,
        id: job.id.clone(),
        step: Step {
            from: JobStatus::Claimed,
            to: JobStatus::Done,
            event: JobEvent::Complete,
        },
        holder: Some(actor.to_owned()),
        corrections: None,
        patch: JobPatch {
            lease_expires: Change::Clear,
            result_summary: Change::Set("done".to_owned()),
            ..JobPatch::default()
        },
        at: when,
        audit: job_audit(actor, "job-complete", &job.id, when),
        outcome: None,
        mirror: mirror(when),
    }
}

/// What one crowd of claimers did.
struct Crowd {
    claimed_by: HashMap<String, String>,
    doubles: Vec<String>,
    anomalies: Vec<String>,
    lost_races: usize,
    elapsed: std::time::Duration,
}

/// Runs `CLAIMERS` claimers until nothing is queued. With `complete`, each claimer keeps one
/// identity and completes every job it claims; without, each claim is made by a fresh
/// identity (so the claim alone is measured) and the job stays claimed.
async fn crowd(store: &Arc<PgStore>, complete_each: bool, now: Timestamp) -> Crowd {
    let began = Instant::now();
    let mut claimers = Vec::new();
    for k in 0..CLAIMERS {
        let store = store.clone();
        claimers.push(tokio::spawn(async move {
            let (mut mine, mut lost, mut wrong) = (Vec::new(), 0usize, Vec::new());
            loop {
                let actor = if complete_each {
                    format!("agent:claimer-{k:02}")
                } else {
                    format!("agent:claimer-{k:02}-{}", mine.len() + lost)
                };
                let decider = Always { actor, now };
                let job = match store
                    .claim_job(request(
                        ClaimTarget::Best {
                            namespace: "load".into(),
                        },
                        &decider,
                    ))
                    .await
                {
                    Ok(ClaimOutcome::Claimed(job)) => job,
                    Ok(ClaimOutcome::LostRace) => {
                        lost += 1;
                        continue;
                    }
                    Ok(ClaimOutcome::NothingQueued) => break,
                    other => {
                        wrong.push(format!("{}: {other:?}", decider.actor));
                        break;
                    }
                };
                if job.claimed_by.as_deref() != Some(decider.actor.as_str())
                    || job.status != JobStatus::Claimed
                {
                    wrong.push(format!("{}: got {job:?}", decider.actor));
                }
                if complete_each {
                    match store
                        .transition_job(complete(&job, &decider.actor, now))
                        .await
                    {
                        Ok(Some(done)) if done.status == JobStatus::Done => {}
                        other => wrong.push(format!(
                            "{}: completing {} gave {other:?}",
                            decider.actor, job.id
                        )),
                    }
                }
                mine.push((job.id, decider.actor));
            }
            (mine, lost, wrong)
        }));
    }
    let mut result = Crowd {
        claimed_by: HashMap::new(),
        doubles: Vec::new(),
        anomalies: Vec::new(),
        lost_races: 0,
        elapsed: std::time::Duration::ZERO,
    };
    for claimer in claimers {
        let (mine, lost, wrong) = claimer.await.expect("claimer");
        result.lost_races += lost;
        result.anomalies.extend(wrong);
        for (id, actor) in mine {
            if let Some(first) = result.claimed_by.insert(id.clone(), actor.clone()) {
                result.doubles.push(format!("{id} by {first} and {actor}"));
            }
        }
    }
    result.elapsed = began.elapsed();
    result
}

fn report(what: &str, crowd: &Crowd) {
    eprintln!(
        "{what}: {} claims by {CLAIMERS} claimers in {:?} = {:.0} claims/s ({} lost races)",
        crowd.claimed_by.len(),
        crowd.elapsed,
        crowd.claimed_by.len() as f64 / crowd.elapsed.as_secs_f64(),
        crowd.lost_races
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_claimers_claim_ten_thousand_jobs_once_each() {
    let Some(db) = TestDb::new("sixty_four_claimers_claim_ten_thousand_jobs_once_each", 32).await
    else {
        return;
    };
    let store = Arc::new(db.store.clone());
    let began = Instant::now();
    let mut posters = Vec::new();
    for w in 0..16 {
        let store = store.clone();
        posters.push(tokio::spawn(async move {
            for n in (w..JOBS).step_by(16) {
                post(&store, n).await;
            }
        }));
    }
    for poster in posters {
        poster.await.expect("poster");
    }
    eprintln!("posted {JOBS} jobs in {:?}", began.elapsed());
    sqlx::query("ANALYZE")
        .execute(db.store.pool())
        .await
        .expect("analyze");

    // Round one: every claim by a fresh identity, nothing completed.
    let first = crowd(&store, false, at(60)).await;
    report("claims alone", &first);
    assert_eq!(first.anomalies, Vec::<String>::new());
    assert_eq!(first.doubles, Vec::<String>::new());
    assert_eq!(first.claimed_by.len(), JOBS, "every job claimed");
    assert_eq!(
        db.store
            .job_counts("load", at(0))
            .await
            .expect("counts")
            .claimed,
        JOBS as u64
    );

    // The sweep returns every lease (4 h) to the queue in one transaction.
    let began = Instant::now();
    let sweep_audit =
        |job: &Job| job_audit("improve-loop", "job-lease-expired", &job.id, at(60 + 241));
    let swept = db
        .store
        .sweep_expired_leases(at(60 + 241), &sweep_audit, mirror(at(60 + 241)))
        .await
        .expect("sweep");
    eprintln!(
        "swept {} expired leases in {:?}",
        swept.len(),
        began.elapsed()
    );
    assert_eq!(swept.len(), JOBS);
    assert!(
        swept
            .iter()
            .all(|j| j.status == JobStatus::Queued && j.claimed_by.is_none())
    );

    // Round two: 64 claimers, each completing what it claims before claiming again.
    let second = crowd(&store, true, at(400)).await;
    report("claims each followed by its completion", &second);
    assert_eq!(second.anomalies, Vec::<String>::new());
    assert_eq!(second.doubles, Vec::<String>::new());
    assert_eq!(second.claimed_by.len(), JOBS, "every job claimed again");
    let counts = db.store.job_counts("load", at(0)).await.expect("counts");
    assert_eq!(
        (counts.queued, counts.claimed, counts.done_today),
        (0, 0, JOBS as u64)
    );
    let audits: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'job-claimed'")
            .fetch_one(db.store.pool())
            .await
            .expect("count");
    assert_eq!(audits, 2 * JOBS as i64, "one claim audit row per claim");
    db.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claimer_racing_itself_holds_one_job() {
    let Some(db) = TestDb::new("a_claimer_racing_itself_holds_one_job", 8).await else {
        return;
    };
    let store = Arc::new(db.store.clone());
    for round in 0..20usize {
        let (a, b) = (
            post(&store, round * 2).await,
            post(&store, round * 2 + 1).await,
        );
        let actor = format!("agent:twin-{round}");
        let gate = Arc::new(Barrier::new(2));
        let mut tasks = Vec::new();
        for target in [a.id.clone(), b.id.clone()] {
            let (store, gate, actor) = (store.clone(), gate.clone(), actor.clone());
            tasks.push(tokio::spawn(async move {
                let decider = Always { actor, now: at(1) };
                gate.wait().await;
                store
                    .claim_job(request(ClaimTarget::Id(target), &decider))
                    .await
                    .expect("claim")
            }));
        }
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.expect("claim task"));
        }
        let claimed: Vec<&Job> = outcomes
            .iter()
            .filter_map(|o| match o {
                ClaimOutcome::Claimed(job) => Some(job),
                _ => None,
            })
            .collect();
        assert_eq!(claimed.len(), 1, "round {round}: {outcomes:?}");
        let holding = outcomes.iter().find_map(|o| match o {
            ClaimOutcome::AlreadyHolding(job) => Some(job),
            _ => None,
        });
        assert_eq!(
            holding.map(|j| &j.id),
            Some(&claimed[0].id),
            "round {round}: {outcomes:?}"
        );
        assert_eq!(
            store.held_job(&actor).await.expect("held").map(|j| j.id),
            Some(claimed[0].id.clone())
        );
    }
    db.finish().await;
}

/// The claim transaction's planner guard (`BEGIN_CLAIM`) must reach the claims themselves, not
/// only the plan probe: misled as stale statistics once misled it (an index page costing a
/// thousand sequential ones), a plain transaction sorts the queue it read through
/// `jobs_open_title` (90 ms a claim at 8,000 queued jobs). Real claims on a connection so misled
/// must still walk `jobs_claimable`. Read from the index statistics, which a backend reports
/// before it leaves `pg_stat_activity` on exit.
#[tokio::test]
async fn real_claims_walk_the_claim_index_even_when_the_planner_is_misled() {
    const CLAIMS: usize = 5;
    let Some(db) = TestDb::new("real_claims_walk_the_claim_index", 2).await else {
        return;
    };
    for n in 0..200 {
        post(&db.store, n).await;
    }
    let reader = sqlx::PgPool::connect(&db.url).await.expect("reader");
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&reader)
        .await
        .expect("database name");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{name}\" SET random_page_cost = 1000"
    )))
    .execute(&reader)
    .await
    .expect("mislead the planner");
    let misled_url = format!("{}?application_name=capsid_misled", db.url);
    let misled = PgStore::connect_with(&misled_url, 1)
        .await
        .expect("connect");
    let now = at(1);
    for k in 0..CLAIMS {
        let decider = Always {
            actor: format!("agent:misled-{k}"),
            now,
        };
        let outcome = misled
            .claim_job(request(
                ClaimTarget::Best {
                    namespace: "load".into(),
                },
                &decider,
            ))
            .await
            .expect("claim");
        assert!(
            matches!(outcome, ClaimOutcome::Claimed(_)),
            "claim {k}: {outcome:?}"
        );
    }
    misled.close().await;
    let mut gone = false;
    for _ in 0..500 {
        let left: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'capsid_misled'",
        )
        .fetch_one(&reader)
        .await
        .expect("activity");
        if left == 0 {
            gone = true;
            break;
        }
        // Waiting on another process's exit, not on time: the loop ends when it has gone.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(gone, "the misled store's backend did not exit");
    let scans: Vec<(String, i64)> = sqlx::query_as(
        "SELECT indexrelname::text, idx_scan FROM pg_stat_user_indexes \
         WHERE indexrelname IN ('jobs_claimable', 'jobs_open_title') ORDER BY 1",
    )
    .fetch_all(&reader)
    .await
    .expect("index statistics");
    let scans: HashMap<String, i64> = scans.into_iter().collect();
    assert!(
        scans.get("jobs_claimable").copied().unwrap_or(0) >= CLAIMS as i64,
        "each claim walks jobs_claimable: {scans:?}"
    );
    assert_eq!(
        scans.get("jobs_open_title").copied().unwrap_or(0),
        0,
        "no claim may read the queue through jobs_open_title to sort it: {scans:?}"
    );
    reader.close().await;
    db.finish().await;
}
