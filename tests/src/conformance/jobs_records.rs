//! Conformance cases for what finished jobs leave behind: write-once outcome rows with their
//! PR rows, the queue counts, and the mirror document rewritten on every transition.

use capsid_core::drive::ledger::{Usage, Usd};
use capsid_core::jobs::job_doc_path;
use capsid_core::jobs::outcome::ResultKind;
use capsid_core::jobs::spend::{CallEnded, LedgerCall, Priced};
use capsid_core::jobs::state::JobStatus;
use capsid_core::ports::{
    Change, ClaimTarget, JobCounts, JobPatch, OutcomeRecord, StatusCount, Store,
};

use super::jobs_claim::{claimed, post};
use super::support::{
    Toward, assert_mirror, at, audit, complete_patch, doc, fail_patch, job_id, outcome_row,
    transition,
};
use crate::harness::Probe;

/// The outcome row is written once with NULLs kept NULL; its PR rows land with it.
pub async fn outcomes_write_once_with_nulls_and_pr_rows<S: Store>(store: &S, probe: &Probe) {
    post(store, &job_id(1), "proj", "One", 0, at(0)).await;
    let job = claimed(store, "agent:a", ClaimTarget::Id(job_id(1)), at(1)).await;
    let mut row = outcome_row(&job, "agent:a", at(30));
    row.prs_opened = Some(2);
    row.commits = Some(0);
    row.tests_added = Some(3);
    row.ci_green = Some(0);
    row.duration_minutes = Some(29);
    row.result_kind = ResultKind::Pr;
    let urls = vec![
        "https://github.com/acme/api/pull/1".to_owned(),
        "https://github.com/acme/api/pull/2".to_owned(),
    ];
    let mut done = transition(
        &job.id,
        "proj",
        JobStatus::Claimed,
        "agent:a",
        complete_patch(),
        at(30),
    )
    .toward(JobStatus::Done);
    done.outcome = Some(OutcomeRecord {
        reported_call: None,
        row: row.clone(),
        pr_urls: urls,
    });
    store
        .transition_job(done)
        .await
        .expect("complete")
        .expect("applied");
    assert_eq!(
        store.outcomes(Some("agent:a")).await.expect("outcomes"),
        vec![row.clone()]
    );
    assert_eq!(
        store.outcomes(Some("agent:b")).await.expect("outcomes"),
        vec![]
    );
    let prs = format!(
        "SELECT COUNT(*) FROM job_outcome_prs WHERE job_id = '{}'",
        job.id
    );
    assert_eq!(probe.count(&prs).await, 2);
    assert_eq!(
        probe.count(&format!("{prs} AND merged IS NULL")).await,
        2,
        "merge state unknown until checked"
    );

    post(store, &job_id(2), "proj", "Two", 0, at(40)).await;
    let two = claimed(store, "agent:b", ClaimTarget::Id(job_id(2)), at(41)).await;
    let first = outcome_row(&two, "agent:b", at(42));
    let mut heartbeat = transition(
        &two.id,
        "proj",
        JobStatus::Claimed,
        "agent:b",
        JobPatch::default(),
        at(42),
    );
    heartbeat.outcome = Some(OutcomeRecord {
        reported_call: None,
        row: first.clone(),
        pr_urls: vec!["https://github.com/acme/api/pull/7".into()],
    });
    store
        .transition_job(heartbeat)
        .await
        .expect("transition")
        .expect("applied");
    let mut second = outcome_row(&two, "agent:b", at(50));
    second.prs_opened = Some(9);
    second.commits = Some(9);
    let mut failed = transition(
        &two.id,
        "proj",
        JobStatus::Claimed,
        "agent:b",
        fail_patch("stuck"),
        at(50),
    )
    .toward(JobStatus::Failed);
    failed.outcome = Some(OutcomeRecord {
        reported_call: None,
        row: second,
        pr_urls: vec![
            "https://github.com/acme/api/pull/8".into(),
            "https://github.com/acme/api/pull/9".into(),
        ],
    });
    let failed = store
        .transition_job(failed)
        .await
        .expect("fail")
        .expect("the transition applies");
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(
        store.outcomes(Some("agent:b")).await.expect("outcomes"),
        vec![first],
        "the first record stands"
    );
    assert_eq!(
        probe
            .count(&format!(
                "SELECT COUNT(*) FROM job_outcome_prs WHERE job_id = '{}'",
                two.id
            ))
            .await,
        1
    );
    let mut everyone = store.outcomes(None).await.expect("outcomes");
    everyone.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    assert_eq!(
        everyone
            .iter()
            .map(|o| o.job_id.as_str())
            .collect::<Vec<_>>(),
        [job_id(1), job_id(2)]
    );
    assert_eq!(
        (
            everyone[0].prs_merged,
            everyone[0].files_changed,
            everyone[0].commits
        ),
        (None, None, Some(0)),
        "NULL is not zero"
    );
}

/// `job_status_counts` per holder and status; `job_counts` with jobs done since a day start.
pub async fn job_counts_and_status_counts<S: Store>(store: &S) {
    let mut n = 0;
    let mut next = || {
        n += 1;
        job_id(n)
    };
    let finish = |actor: &'static str,
                  (to, patch): (JobStatus, JobPatch),
                  when: i64,
                  id: String| async move {
        claimed(store, actor, ClaimTarget::Id(id.clone()), at(when)).await;
        store
            .transition_job(
                transition(&id, "proj", JobStatus::Claimed, actor, patch, at(when)).toward(to),
            )
            .await
            .expect("transition")
            .expect("applied");
    };
    for (actor, patch, when) in [
        ("agent:a", (JobStatus::Done, complete_patch()), 10),
        ("agent:a", (JobStatus::Done, complete_patch()), 24 * 60 + 10),
        (
            "agent:a",
            (JobStatus::Failed, fail_patch("no")),
            24 * 60 + 20,
        ),
        ("agent:b", (JobStatus::Done, complete_patch()), 24 * 60 + 30),
    ] {
        let id = next();
        post(store, &id, "proj", &format!("finished {id}"), 0, at(0)).await;
        finish(actor, patch, when, id).await;
    }
    let id = next();
    post(store, &id, "proj", "blocked", 0, at(0)).await;
    claimed(
        store,
        "agent:b",
        ClaimTarget::Id(id.clone()),
        at(24 * 60 + 40),
    )
    .await;
    let block = JobPatch {
        lease_expires: Change::Clear,
        add_blocked: true,
        ..JobPatch::default()
    };
    store
        .transition_job(
            transition(
                &id,
                "proj",
                JobStatus::Claimed,
                "agent:b",
                block,
                at(24 * 60 + 41),
            )
            .toward(JobStatus::Blocked),
        )
        .await
        .expect("block")
        .expect("applied");
    let id = next();
    post(store, &id, "proj", "held", 0, at(0)).await;
    claimed(store, "agent:c", ClaimTarget::Id(id), at(24 * 60 + 50)).await;
    for title in ["q1", "q2", "q3"] {
        post(store, &next(), "proj", title, 0, at(1)).await;
    }
    post(store, &next(), "other", "elsewhere", 0, at(1)).await;

    let counts = store.job_counts("proj", at(24 * 60)).await.expect("counts");
    assert_eq!(
        counts,
        JobCounts {
            queued: 3,
            claimed: 1,
            blocked: 1,
            done_today: 2
        }
    );
    assert_eq!(
        store
            .job_counts("other", at(24 * 60))
            .await
            .expect("counts"),
        JobCounts {
            queued: 1,
            ..JobCounts::default()
        }
    );
    assert_eq!(
        store
            .job_counts("proj", at(0))
            .await
            .expect("counts")
            .done_today,
        3
    );
    let mut got = store.job_status_counts().await.expect("status counts");
    got.sort_by(|x, y| {
        (x.claimed_by.as_str(), x.status.as_str()).cmp(&(y.claimed_by.as_str(), y.status.as_str()))
    });
    let c = |who: &str, status: JobStatus, count: u64| StatusCount {
        claimed_by: who.into(),
        status,
        count,
    };
    assert_eq!(
        got,
        vec![
            c("agent:a", JobStatus::Done, 2),
            c("agent:a", JobStatus::Failed, 1),
            c("agent:b", JobStatus::Blocked, 1),
            c("agent:b", JobStatus::Done, 1),
            c("agent:c", JobStatus::Claimed, 1),
        ],
        "queued jobs have no holder and no row"
    );
}

/// Every transition rewrites the mirror document (a snapshot of the previous one each time).
pub async fn mirror_rewritten_on_every_transition<S: Store>(store: &S) {
    let posted = post(store, &job_id(1), "proj", "Mirror me", 4, at(0)).await;
    let path = job_doc_path(&posted.id);
    assert_mirror(store, &posted, at(0)).await;
    assert_eq!(
        store
            .versions("proj", &path, 10)
            .await
            .expect("versions")
            .len(),
        0
    );
    let held = claimed(store, "agent:a", ClaimTarget::Id(posted.id.clone()), at(1)).await;
    assert_mirror(store, &held, at(1)).await;
    let renew = JobPatch {
        lease_expires: Change::Set(at(400)),
        ..JobPatch::default()
    };
    let renewed = store
        .transition_job(transition(
            &posted.id,
            "proj",
            JobStatus::Claimed,
            "agent:a",
            renew,
            at(2),
        ))
        .await
        .expect("renew")
        .expect("applied");
    assert_mirror(store, &renewed, at(2)).await;
    let done = store
        .transition_job(
            transition(
                &posted.id,
                "proj",
                JobStatus::Claimed,
                "agent:a",
                complete_patch(),
                at(3),
            )
            .toward(JobStatus::Done),
        )
        .await
        .expect("complete")
        .expect("applied");
    assert_mirror(store, &done, at(3)).await;
    assert_eq!(doc(store, "proj", &path).await.status, "closed");
    let versions = store.versions("proj", &path, 10).await.expect("versions");
    assert_eq!(versions.len(), 3, "one snapshot per rewrite: {versions:?}");
    assert_eq!(versions[0].snapshot_at, at(3));
    let search = store
        .search_documents("Mirror", Some("proj"), Some("task"), 10)
        .await
        .expect("search");
    assert_eq!(
        search.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        [path.as_str()]
    );
}

/// A transition given the row as its caller read it (what the jobs tool passes) leaves what
/// the same transition without it leaves: the row, its mirror, one audit row, the outcome
/// with its PR rows written once. When the row moved since it was read, the step still
/// applies to the row as it is; when it no longer applies, nothing is written.
pub async fn transitions_from_the_row_read_match_the_plain_ones<S: Store>(
    store: &S,
    probe: &Probe,
) {
    let urls = vec![
        "https://github.com/acme/api/pull/3".to_owned(),
        "https://github.com/acme/api/pull/4".to_owned(),
    ];
    let finish = |job: &capsid_core::jobs::Job, with_row: bool| {
        let mut done = transition(
            &job.id,
            "proj",
            JobStatus::Claimed,
            "agent:a",
            complete_patch(),
            at(30),
        )
        .toward(JobStatus::Done);
        let mut row = outcome_row(job, "agent:a", at(30));
        row.prs_opened = Some(2);
        row.result_kind = ResultKind::Pr;
        done.outcome = Some(OutcomeRecord {
            reported_call: None,
            row,
            pr_urls: urls.clone(),
        });
        if with_row {
            done.expected = Some(job.clone());
        }
        done
    };
    let prs = |id: &str| format!("SELECT COUNT(*) FROM job_outcome_prs WHERE job_id = '{id}'");
    let mut left = Vec::new();
    for (n, with_row) in [(1, false), (2, true)] {
        post(store, &job_id(n), "proj", "Same", 0, at(0)).await;
        let job = claimed(store, "agent:a", ClaimTarget::Id(job_id(n)), at(1)).await;
        let audits = super::support::audit_count(store).await;
        let t = finish(&job, with_row);
        let want = t.applied_to(&job);
        let done = store
            .transition_job(t)
            .await
            .expect("complete")
            .expect("applied");
        assert_eq!(done, want, "with the row read: {with_row}");
        assert_eq!(store.job(&job.id).await.expect("job"), Some(done.clone()));
        assert_mirror(store, &done, at(30)).await;
        assert_eq!(super::support::audit_count(store).await, audits + 1);
        assert_eq!(probe.count(&prs(&job.id)).await, 2);
        // The same completion again: the job is done, nothing more is written.
        assert_eq!(
            store
                .transition_job(finish(&job, with_row))
                .await
                .expect("again"),
            None
        );
        assert_eq!(super::support::audit_count(store).await, audits + 1);
        left.push(done);
    }
    let outcomes = store.outcomes(Some("agent:a")).await.expect("outcomes");
    assert_eq!(outcomes.len(), 2);
    assert_eq!(
        (
            left[0].status,
            left[0].result_ref.clone(),
            left[0].lease_expires
        ),
        (
            left[1].status,
            left[1].result_ref.clone(),
            left[1].lease_expires
        )
    );

    // The row moved after the caller read it (a heartbeat renewed the lease).
    post(store, &job_id(3), "proj", "Moved", 0, at(0)).await;
    let read = claimed(store, "agent:a", ClaimTarget::Id(job_id(3)), at(1)).await;
    let renew = JobPatch {
        lease_expires: Change::Set(at(900)),
        ..JobPatch::default()
    };
    let renewed = store
        .transition_job(transition(
            &read.id,
            "proj",
            JobStatus::Claimed,
            "agent:a",
            renew,
            at(20),
        ))
        .await
        .expect("heartbeat")
        .expect("applied");
    let audits = super::support::audit_count(store).await;
    // Not the holder, from the stale row: nothing is written.
    let mut stranger = finish(&read, true);
    stranger.holder = Some("agent:z".to_owned());
    assert_eq!(
        store.transition_job(stranger).await.expect("stranger"),
        None
    );
    assert_eq!(
        store.job(&read.id).await.expect("job"),
        Some(renewed.clone())
    );
    assert_mirror(store, &renewed, at(20)).await;
    assert_eq!(super::support::audit_count(store).await, audits);
    assert_eq!(probe.count(&prs(&read.id)).await, 0);
    // The holder, from the stale row: the step applies to the row as it is.
    let stale = finish(&read, true);
    let want = stale.applied_to(&renewed);
    let done = store
        .transition_job(stale)
        .await
        .expect("complete")
        .expect("applied to the row as it is");
    assert_eq!(done, want);
    assert_eq!(store.job(&read.id).await.expect("job"), Some(done.clone()));
    assert_mirror(store, &done, at(30)).await;
    assert_eq!(super::support::audit_count(store).await, audits + 1);
    assert_eq!(probe.count(&prs(&read.id)).await, 2);
}

/// A namespace's budget is a keyed, audited update, and its spend sums its ledger since an
/// instant: here the reported rows finished jobs' outcomes carry, whichever way the outcome
/// was written (the plain transition and the one from the row as read).
pub async fn budgets_sum_reported_costs_since_an_instant<S: Store>(store: &S) {
    use capsid_core::ports::{NamespaceBudget, NamespaceSpend, StoreError};
    store
        .register_namespace(
            "proj",
            "[]",
            at(0),
            audit("github:o", "register_namespace", "proj", "", at(0)),
        )
        .await
        .expect("register");
    assert_eq!(
        store.namespace_budget("proj", at(0)).await.expect("budget"),
        Some(NamespaceBudget {
            budget_usd: None,
            spent_usd: 0.0
        })
    );
    assert_eq!(
        store.namespace_budget("nope", at(0)).await.expect("budget"),
        None
    );
    let set = |b| {
        audit(
            "github:o",
            "update_namespace",
            "proj",
            &format!("{b:?}"),
            at(1),
        )
    };
    assert_eq!(
        store
            .set_namespace_budget("proj", Some(2.5), set(Some(2.5)))
            .await
            .expect("set"),
        None
    );
    assert_eq!(
        store
            .set_namespace_budget("proj", Some(3.0), set(Some(3.0)))
            .await
            .expect("set"),
        Some(2.5)
    );
    assert!(matches!(
        store
            .set_namespace_budget("nope", Some(1.0), set(Some(1.0)))
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        store
            .namespace("proj")
            .await
            .expect("row")
            .map(|r| r.monthly_budget_usd),
        Some(Some(3.0))
    );

    for (n, cost, expected) in [
        (1, Some(1.25), false),
        (2, Some(0.5), true),
        (3, None, true),
    ] {
        post(
            store,
            &job_id(n),
            "proj",
            &format!("Job {n}"),
            0,
            at(10 * n as i64),
        )
        .await;
        let job = claimed(
            store,
            "agent:a",
            ClaimTarget::Id(job_id(n)),
            at(10 * n as i64 + 1),
        )
        .await;
        let mut row = outcome_row(&job, "agent:a", at(10 * n as i64 + 2));
        row.cost_usd = cost;
        row.turns = cost.map(|_| 4);
        row.duration_ms = cost.map(|_| 64_000);
        let mut done = transition(
            &job.id,
            "proj",
            JobStatus::Claimed,
            "agent:a",
            complete_patch(),
            at(10 * n as i64 + 2),
        )
        .toward(JobStatus::Done);
        if expected {
            done.expected = Some(job.clone());
        }
        done.outcome = Some(OutcomeRecord {
            reported_call: cost.map(|c| {
                LedgerCall::reported(
                    &job.id,
                    Usd::from_dollars(c).expect("dollars"),
                    at(10 * n as i64 + 2),
                )
            }),
            row: row.clone(),
            pr_urls: vec![],
        });
        store
            .transition_job(done)
            .await
            .expect("complete")
            .expect("applied");
        let stored = store.outcomes(Some("agent:a")).await.expect("outcomes");
        assert_eq!(stored.last(), Some(&row), "job {n}: the cost round-trips");
    }
    assert_eq!(
        store.spend_since(at(0)).await.expect("spend"),
        vec![NamespaceSpend {
            namespace: "proj".into(),
            spent_usd: 1.75
        }]
    );
    assert_eq!(
        store.spend_since(at(20)).await.expect("spend"),
        vec![NamespaceSpend {
            namespace: "proj".into(),
            spent_usd: 0.5
        }],
        "outcomes recorded before the instant are left out"
    );
    assert_eq!(
        store
            .namespace_budget("proj", at(12))
            .await
            .expect("budget"),
        Some(NamespaceBudget {
            budget_usd: Some(3.0),
            spent_usd: 1.75
        })
    );
    assert_eq!(
        store
            .namespace_budget("proj", at(40))
            .await
            .expect("budget"),
        Some(NamespaceBudget {
            budget_usd: Some(3.0),
            spent_usd: 0.0
        })
    );
}

pub(crate) fn metered(id: &str, model: &str, micros: u64, started: i64) -> LedgerCall {
    LedgerCall {
        call_id: id.into(),
        session: Some("s1".into()),
        model: model.into(),
        usage: Usage {
            input_tokens: 1_000,
            output_tokens: 200,
            cache_write_tokens: 30,
            cache_read_tokens: 4,
        },
        cost: Usd::from_micros(micros),
        priced: Priced::Table,
        ended: CallEnded::Completed,
        started_at: at(started),
        ended_at: at(started + 1),
    }
}

/// The job ledger: calls round-trip in the order they started, a call id already there is
/// kept once (however often it is sent), a finished job's outcome adds its reported row only
/// when the outcome is new, the month's spend sums every row of the namespace, and the open
/// jobs' spend lists only open jobs.
pub async fn the_ledger_keeps_each_call_once_and_sums_it<S: Store>(store: &S) {
    use capsid_core::ports::NamespaceSpend;
    store
        .register_namespace(
            "proj",
            "[]",
            at(0),
            audit("github:o", "register_namespace", "proj", "", at(0)),
        )
        .await
        .expect("register");
    post(store, &job_id(1), "proj", "One", 0, at(0)).await;
    post(store, &job_id(2), "proj", "Two", 0, at(0)).await;
    let one = claimed(store, "agent:a", ClaimTarget::Id(job_id(1)), at(1)).await;
    let calls = vec![
        metered("call_b", "claude-sonnet-5", 250_000, 5),
        metered("call_a", "claude-haiku-4-5", 1_234, 3),
    ];
    assert_eq!(
        store
            .record_calls(&one, "agent:a", &calls, at(6))
            .await
            .expect("record"),
        2
    );
    let mut again = calls.clone();
    again.push(metered("call_c", "claude-sonnet-5", 10, 7));
    assert_eq!(
        store
            .record_calls(&one, "agent:a", &again, at(8))
            .await
            .expect("record"),
        1,
        "the two already there are kept once"
    );
    let stored = store.job_calls(&one.id).await.expect("calls");
    assert_eq!(
        stored,
        vec![again[1].clone(), again[0].clone(), again[2].clone()],
        "oldest first, every field as written"
    );
    assert!(store.job_calls(&job_id(2)).await.expect("calls").is_empty());
    assert_eq!(
        store.open_job_spend().await.expect("open"),
        vec![(one.id.clone(), Usd::from_micros(251_244))]
    );
    assert_eq!(
        store.spend_since(at(0)).await.expect("spend"),
        vec![NamespaceSpend {
            namespace: "proj".into(),
            spent_usd: 0.251244
        }]
    );
    assert_eq!(
        store.spend_since(at(7)).await.expect("spend"),
        vec![NamespaceSpend {
            namespace: "proj".into(),
            spent_usd: 0.00001
        }],
        "rows recorded before the instant are left out"
    );

    // Done: a reported row rides with a new outcome, and not with a second one.
    let row = outcome_row(&one, "agent:a", at(9));
    let mut done = transition(
        &one.id,
        "proj",
        JobStatus::Claimed,
        "agent:a",
        complete_patch(),
        at(9),
    )
    .toward(JobStatus::Done);
    done.outcome = Some(OutcomeRecord {
        reported_call: Some(LedgerCall::reported(&one.id, Usd::from_micros(5), at(9))),
        row,
        pr_urls: vec![],
    });
    store
        .transition_job(done)
        .await
        .expect("complete")
        .expect("applied");
    assert_eq!(store.job_calls(&one.id).await.expect("calls").len(), 4);
    assert!(
        store.open_job_spend().await.expect("open").is_empty(),
        "a finished job is not open"
    );
    assert_eq!(
        store.spend_since(at(0)).await.expect("spend")[0].spent_usd,
        0.251249
    );
}

fn door(
    id: &str,
    door: &str,
    host: &str,
    decision: capsid_core::jobs::doors::DoorDecision,
    started: i64,
) -> capsid_core::jobs::doors::DoorRecord {
    capsid_core::jobs::doors::DoorRecord {
        record_id: id.into(),
        door: door.into(),
        host: host.into(),
        port: if host == "capsid" { 0 } else { 443 },
        decision,
        bytes_up: 17,
        bytes_down: 4_000_000_000_000,
        started_at: at(started),
        ended_at: at(started + 1),
        detail: (decision != capsid_core::jobs::doors::DoorDecision::Reached)
            .then(|| format!("{host} is not allowed")),
    }
}

/// The doors' records: they round-trip every field in the order they started, a record id
/// the job already has is kept once, another job's same id is its own, a job keeps at most
/// `JOB_DOORS_MAX` records, and the newest records of every job come first.
pub async fn door_records_keep_each_connection_once<S: Store>(store: &S) {
    use capsid_core::jobs::doors::{DoorDecision, JOB_DOORS_MAX};
    post(store, &job_id(1), "proj", "One", 0, at(0)).await;
    post(store, &job_id(2), "proj", "Two", 0, at(0)).await;
    let one = claimed(store, "agent:a", ClaimTarget::Id(job_id(1)), at(1)).await;
    let two = claimed(store, "agent:b", ClaimTarget::Id(job_id(2)), at(1)).await;
    let first = vec![
        door("r1-e0", "egress", "example.com", DoorDecision::Refused, 5),
        door("r1-c0", "model", "capsid", DoorDecision::Reached, 3),
    ];
    assert_eq!(
        store
            .record_doors(&one, "agent:a", &first, at(6))
            .await
            .expect("record"),
        2
    );
    let mut again = first.clone();
    again.push(door(
        "r1-e1",
        "egress",
        "registry.npmjs.org",
        DoorDecision::Reached,
        4,
    ));
    assert_eq!(
        store
            .record_doors(&one, "agent:a", &again, at(8))
            .await
            .expect("record"),
        1,
        "the two already there are kept once"
    );
    assert_eq!(
        store.job_doors(&one.id).await.expect("doors"),
        vec![again[1].clone(), again[2].clone(), again[0].clone()],
        "oldest first, every field as written"
    );
    let theirs = vec![door(
        "r1-e0",
        "egress",
        "crates.io",
        DoorDecision::Failed,
        9,
    )];
    assert_eq!(
        store
            .record_doors(&two, "agent:b", &theirs, at(10))
            .await
            .expect("record"),
        1,
        "another job's record of the same id is its own"
    );
    let recent = store.recent_doors(2).await.expect("recent");
    assert_eq!(
        recent,
        vec![
            (two.id.clone(), theirs[0].clone()),
            (one.id.clone(), again[2].clone())
        ],
        "newest recorded first, at most the limit"
    );
    // A job keeps at most JOB_DOORS_MAX records: the rest of a call is left out.
    let many: Vec<_> = (0..JOB_DOORS_MAX + 5)
        .map(|i| {
            door(
                &format!("r2-c{i}"),
                "git",
                "capsid",
                DoorDecision::Reached,
                20,
            )
        })
        .collect();
    let mut kept = 0;
    for chunk in many.chunks(capsid_core::jobs::doors::DOORS_PER_CALL_MAX) {
        kept += store
            .record_doors(&two, "agent:b", chunk, at(21))
            .await
            .expect("record");
    }
    assert_eq!(kept as usize, JOB_DOORS_MAX - 1, "one was there already");
    assert_eq!(store.job_doors(&one.id).await.expect("doors").len(), 3);
    assert_eq!(
        store.job_doors(&two.id).await.expect("doors").len(),
        capsid_core::jobs::doors::JOB_DOORS_SHOWN
    );
}
