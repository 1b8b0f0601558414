//! Conformance cases for the `/metrics` aggregates: jobs grouped by namespace and status with
//! the oldest `created_at` of each group and the claimed jobs whose lease ran out, checkmarks
//! grouped by namespace, status, asked and answered with the oldest checkpoint of each group,
//! the ledger of one status's jobs summed per namespace, and the pools' usage.

use capsid_core::checkmarks::AgentStatus;
use capsid_core::drive::ledger::Usd;
use capsid_core::jobs::state::JobStatus;
use capsid_core::ports::{AgentGaugeRow, ClaimTarget, JobGaugeRow, LedgerSpendRow, Store};
use capsid_core::time::Timestamp;

use super::checkmarks::{answer, cp, record};
use super::jobs_claim::{claimed, post};
use super::jobs_records::metered;
use super::support::{Toward, at, best, fail_patch, job_id, transition};

fn row<'a>(rows: &'a [JobGaugeRow], ns: &str, status: JobStatus) -> Option<&'a JobGaugeRow> {
    rows.iter()
        .find(|r| r.namespace == ns && r.status == status)
}

/// Groups, counts, the oldest queued job and lapsed leases, as the sweep would see them.
pub async fn job_gauges_group_by_namespace_and_status<S: Store>(store: &S) {
    assert!(store.job_gauges(at(0)).await.expect("gauges").is_empty());
    for n in 0..3 {
        post(
            store,
            &job_id(n),
            "alpha",
            &format!("a{n}"),
            0,
            at(n as i64),
        )
        .await;
    }
    post(store, &job_id(9), "beta", "b", 0, at(7)).await;
    // The oldest alpha job is the best candidate: claimed at minute 10 for four hours.
    let job = claimed(store, "agent:one", best("alpha"), at(10)).await;
    assert_eq!(job.id, job_id(0));

    let rows = store.job_gauges(at(11)).await.expect("gauges");
    assert_eq!(rows.len(), 3, "{rows:?}");
    let queued = row(&rows, "alpha", JobStatus::Queued).expect("alpha queued");
    assert_eq!(queued.count, 2);
    assert_eq!(queued.oldest_created, Some(at(1)));
    assert_eq!(queued.lapsed_leases, 0);
    let held = row(&rows, "alpha", JobStatus::Claimed).expect("alpha claimed");
    assert_eq!((held.count, held.lapsed_leases), (1, 0));
    let beta = row(&rows, "beta", JobStatus::Queued).expect("beta queued");
    assert_eq!((beta.count, beta.oldest_created), (1, Some(at(7))));

    // Past the four-hour lease the claim is lapsed (waiting for the sweep), still claimed.
    let later = store.job_gauges(at(10 + 241)).await.expect("gauges");
    let held = row(&later, "alpha", JobStatus::Claimed).expect("alpha claimed");
    assert_eq!((held.count, held.lapsed_leases), (1, 1));
    // At the lease's last instant it is still live (the sweep's predicate is strict).
    let edge = store.job_gauges(at(10 + 240)).await.expect("gauges");
    assert_eq!(
        row(&edge, "alpha", JobStatus::Claimed)
            .expect("claimed")
            .lapsed_leases,
        0
    );

    let pools = store.pool_usage();
    assert!(!pools.is_empty());
    for p in pools {
        assert!(p.max >= 1 && p.in_use + p.idle <= p.max, "{p:?}");
    }
}

fn agents(
    ns: &str,
    status: AgentStatus,
    asked: bool,
    answered: bool,
    count: u64,
    oldest: Timestamp,
) -> AgentGaugeRow {
    AgentGaugeRow {
        namespace: ns.to_owned(),
        status,
        asked,
        answered,
        count,
        oldest_checkpoint: Some(oldest),
    }
}

/// Checkmarks (one per agent, however often it checkpoints) grouped with the oldest checkpoint
/// of each group, an answered question in its own group; and the ledger of the claimed jobs
/// only, per namespace.
pub async fn agent_gauges_and_run_spend_group_by_namespace<S: Store>(store: &S) {
    assert!(store.agent_gauges().await.expect("gauges").is_empty());
    record(store, cp("alpha", "a1", AgentStatus::Working, 1)).await;
    record(store, cp("alpha", "a2", AgentStatus::PausedForInput, 2)).await;
    let asked = record(store, cp("alpha", "a3", AgentStatus::PausedForInput, 3)).await;
    record(store, cp("beta", "b1", AgentStatus::Blocked, 4)).await;
    record(store, cp("alpha", "a1", AgentStatus::Working, 5)).await;
    record(store, cp("alpha", "a4", AgentStatus::PausedForInput, 6)).await;
    store
        .transition_checkmark(answer(&asked, AgentStatus::PausedForInput, "yes", false, 7))
        .await
        .expect("answer")
        .expect("answered");
    let mut rows = store.agent_gauges().await.expect("gauges");
    rows.sort_by_key(|r| (r.namespace.clone(), r.status.as_str(), r.answered));
    assert_eq!(
        rows,
        [
            agents("alpha", AgentStatus::PausedForInput, true, false, 2, at(2)),
            agents("alpha", AgentStatus::PausedForInput, true, true, 1, at(3)),
            agents("alpha", AgentStatus::Working, false, false, 1, at(5)),
            agents("beta", AgentStatus::Blocked, true, false, 1, at(4)),
        ]
    );

    for n in 0..3 {
        post(
            store,
            &job_id(n),
            "alpha",
            &format!("a{n}"),
            0,
            at(n as i64),
        )
        .await;
    }
    post(store, &job_id(9), "beta", "b", 0, at(1)).await;
    let running = claimed(store, "agent:one", ClaimTarget::Id(job_id(0)), at(10)).await;
    let failed = claimed(store, "agent:two", ClaimTarget::Id(job_id(1)), at(10)).await;
    claimed(store, "agent:three", best("beta"), at(10)).await;
    let calls = [
        metered("c1", "m", 250_000, 11),
        metered("c2", "m", 125_000, 12),
    ];
    store
        .record_calls(&running, "agent:one", &calls, at(13))
        .await
        .expect("record");
    let more = [metered("c3", "m", 1_000_000, 11)];
    store
        .record_calls(&failed, "agent:two", &more, at(13))
        .await
        .expect("record");
    store
        .transition_job(
            transition(
                &failed.id,
                "alpha",
                JobStatus::Claimed,
                "agent:two",
                fail_patch("no"),
                at(14),
            )
            .toward(JobStatus::Failed),
        )
        .await
        .expect("fail")
        .expect("applied");
    assert_eq!(
        store
            .ledger_spend_by_status(JobStatus::Claimed)
            .await
            .expect("spend"),
        [LedgerSpendRow {
            namespace: "alpha".into(),
            spent: Usd::from_micros(375_000),
        }],
        "beta's run metered nothing; the failed job is not running"
    );
    assert_eq!(
        store
            .ledger_spend_by_status(JobStatus::Failed)
            .await
            .expect("spend"),
        [LedgerSpendRow {
            namespace: "alpha".into(),
            spent: Usd::from_micros(1_000_000),
        }]
    );
}
