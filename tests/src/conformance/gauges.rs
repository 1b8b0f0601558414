//! Conformance cases for the `/metrics` aggregates: jobs grouped by namespace and status with
//! the oldest `created_at` of each group and the claimed jobs whose lease ran out, and the
//! pools' usage.

use capsid_core::jobs::state::JobStatus;
use capsid_core::ports::{JobGaugeRow, Store};

use super::jobs_claim::{claimed, post};
use super::support::{at, best, job_id};

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
