//! Race cases, counted: concurrent `if_match` writers, concurrent creators and upserters, and 64 claimers
//! over 10,000 queued jobs (each claimed exactly once, no holder ever with two).

use std::sync::Arc;

use capsid_core::jobs::state::JobStatus;
use capsid_core::ports::{JobCounts, Store, StoreError, WriteGuard};
use tokio::sync::Barrier;

use super::support::{at, audit, audit_count, doc, put, write};
use crate::load::{post_jobs, run_claimers};

/// Rounds of each write race.
const ROUNDS: usize = 25;

/// Two writers with the same `expected_body` at once: exactly one wins, the other gets
/// `Conflict`, and the stored body is the winner's.
pub async fn if_match_race_has_one_winner<S: Store + 'static>(store: Arc<S>) {
    put(
        &*store,
        write("proj", "contended.md", Some("C"), Some("round -1"), at(0)),
    )
    .await;
    for round in 0..ROUNDS {
        let current = doc(&*store, "proj", "contended.md")
            .await
            .body
            .expect("body");
        let audits = audit_count(&*store).await;
        let gate = Arc::new(Barrier::new(2));
        let mut tasks = Vec::new();
        for writer in 0..2 {
            let (store, gate, current) = (store.clone(), gate.clone(), current.clone());
            tasks.push(tokio::spawn(async move {
                let body = format!("round {round} by writer {writer}");
                gate.wait().await;
                let result = store
                    .write_document(
                        write(
                            "proj",
                            "contended.md",
                            None,
                            Some(&body),
                            at(round as i64 + 1),
                        ),
                        WriteGuard::Update {
                            expected_body: Some(current),
                        },
                        vec![audit(
                            &format!("agent:w{writer}"),
                            "write",
                            "proj",
                            "contended.md",
                            at(round as i64 + 1),
                        )],
                    )
                    .await;
                (body, result)
            }));
        }
        let mut winners = Vec::new();
        let mut conflicts = 0;
        for task in tasks {
            match task.await.expect("writer") {
                (body, Ok(receipt)) => {
                    assert!(receipt.snapshotted && !receipt.created);
                    winners.push(body);
                }
                (_, Err(StoreError::Conflict(_))) => conflicts += 1,
                (_, Err(e)) => panic!("round {round}: unexpected error {e:?}"),
            }
        }
        assert_eq!(
            (winners.len(), conflicts),
            (1, 1),
            "round {round}: exactly one winner"
        );
        assert_eq!(
            doc(&*store, "proj", "contended.md").await.body.as_deref(),
            Some(winners[0].as_str())
        );
        assert_eq!(
            audit_count(&*store).await,
            audits + 1,
            "round {round}: only the winner is audited"
        );
    }
    assert_eq!(
        store
            .versions("proj", "contended.md", 1000)
            .await
            .expect("versions")
            .len(),
        ROUNDS
    );
}

/// A create racing a create: exactly one `Conflict`, and the row is the winner's.
pub async fn create_race_has_one_winner<S: Store + 'static>(store: Arc<S>) {
    for round in 0..ROUNDS {
        let path = format!("race/{round}.md");
        let gate = Arc::new(Barrier::new(2));
        let mut tasks = Vec::new();
        for writer in 0..2 {
            let (store, gate, path) = (store.clone(), gate.clone(), path.clone());
            tasks.push(tokio::spawn(async move {
                let body = format!("created by writer {writer}");
                gate.wait().await;
                let result = store
                    .write_document(
                        write("proj", &path, Some("R"), Some(&body), at(round as i64)),
                        WriteGuard::Create,
                        vec![audit(
                            &format!("agent:c{writer}"),
                            "write",
                            "proj",
                            &path,
                            at(round as i64),
                        )],
                    )
                    .await;
                (body, result)
            }));
        }
        let mut winners = Vec::new();
        let mut conflicts = 0;
        for task in tasks {
            match task.await.expect("creator") {
                (body, Ok(receipt)) => {
                    assert!(receipt.created && !receipt.snapshotted);
                    winners.push(body);
                }
                (_, Err(StoreError::Conflict(_))) => conflicts += 1,
                (_, Err(e)) => panic!("round {round}: unexpected error {e:?}"),
            }
        }
        assert_eq!(
            (winners.len(), conflicts),
            (1, 1),
            "round {round}: exactly one conflict"
        );
        assert_eq!(
            doc(&*store, "proj", &path).await.body.as_deref(),
            Some(winners[0].as_str())
        );
        assert!(
            store
                .versions("proj", &path, 10)
                .await
                .expect("versions")
                .is_empty(),
            "the loser snapshots nothing"
        );
    }
    assert_eq!(audit_count(&*store).await, ROUNDS);
}

/// Upserts racing to create the same path: every one is written, exactly one creates the
/// row, every other snapshots what it overwrote, and each leaves its one audit row.
pub async fn upsert_race_creates_once<S: Store + 'static>(store: Arc<S>) {
    const WRITERS: usize = 4;
    for round in 0..ROUNDS {
        let path = format!("upsert-race/{round}.md");
        let gate = Arc::new(Barrier::new(WRITERS));
        let mut tasks = Vec::new();
        for writer in 0..WRITERS {
            let (store, gate, path) = (store.clone(), gate.clone(), path.clone());
            tasks.push(tokio::spawn(async move {
                let body = format!("upserted by writer {writer}");
                gate.wait().await;
                store
                    .write_document(
                        write("proj", &path, Some("U"), Some(&body), at(round as i64)),
                        WriteGuard::Upsert,
                        vec![audit(
                            &format!("agent:u{writer}"),
                            "write",
                            "proj",
                            &path,
                            at(round as i64),
                        )],
                    )
                    .await
                    .unwrap_or_else(|e| panic!("round {round}, writer {writer}: {e:?}"))
            }));
        }
        let mut created = 0;
        for task in tasks {
            let receipt = task.await.expect("upserter");
            assert_ne!(receipt.created, receipt.snapshotted, "round {round}");
            created += usize::from(receipt.created);
        }
        assert_eq!(created, 1, "round {round}: exactly one creates the row");
        assert_eq!(
            store
                .versions("proj", &path, 10)
                .await
                .expect("versions")
                .len(),
            WRITERS - 1,
            "round {round}: every later upsert snapshots what it overwrote"
        );
    }
    assert_eq!(audit_count(&*store).await, ROUNDS * WRITERS);
}

/// Jobs in the claim race.
pub const RACE_JOBS: usize = 10_000;
/// Claimers in the claim race.
pub const RACE_CLAIMERS: usize = 64;

/// 64 claimers over 10,000 queued jobs: each job claimed exactly once, no claimer ever
/// holding two (counted by the claimers and watched in the store), all done.
pub async fn claimers_race_claims_each_job_once<S: Store + 'static>(store: Arc<S>) {
    let posting = post_jobs(store.clone(), "load", RACE_JOBS, 8, at(0)).await;
    eprintln!("posted {RACE_JOBS} jobs in {posting:?}");
    assert_eq!(
        store
            .job_counts("load", at(0))
            .await
            .expect("counts")
            .queued,
        RACE_JOBS as u64
    );
    let run = run_claimers(store.clone(), "load", RACE_CLAIMERS, at(24 * 60), 50).await;
    eprintln!(
        "{} claims by {RACE_CLAIMERS} claimers in {:?}: {} lost races, {} monitor samples, at most {} claimed at once",
        run.claims, run.elapsed, run.lost_races, run.monitor_samples, run.max_claimed_at_once
    );
    assert_eq!(run.anomalies, Vec::<String>::new());
    assert_eq!(run.double_claims, Vec::<String>::new());
    assert_eq!(
        run.overlapping_holds, 0,
        "the store never showed a holder with two claimed jobs"
    );
    assert!(run.monitor_samples > 0, "the monitor looked at least once");
    assert!(run.max_claimed_at_once <= RACE_CLAIMERS);
    assert_eq!(run.claims, RACE_JOBS);
    assert_eq!(run.per_actor.len(), RACE_CLAIMERS);
    assert_eq!(run.per_actor.values().sum::<u64>(), RACE_JOBS as u64);
    assert_eq!(
        store.job_counts("load", at(24 * 60)).await.expect("counts"),
        JobCounts {
            queued: 0,
            claimed: 0,
            blocked: 0,
            done_today: RACE_JOBS as u64
        }
    );
    let counts = store.job_status_counts().await.expect("status counts");
    assert!(
        counts.iter().all(|c| c.status == JobStatus::Done),
        "{counts:?}"
    );
    assert_eq!(
        counts.len(),
        run.per_actor.iter().filter(|(_, n)| **n > 0).count()
    );
    for c in &counts {
        assert_eq!(Some(&c.count), run.per_actor.get(&c.claimed_by), "{c:?}");
    }
}
