//! `claim_job`: one `BEGIN IMMEDIATE` transaction holding the one-claim check, candidate
//! selection, the core's verdict, and its application (keyed conditional update, audit,
//! mirror, outcome). The single writer serializes claimers, so a candidate cannot be taken
//! between its selection and its update; the keyed update still guards it.

use capsid_core::jobs::Job;
use capsid_core::jobs::claim_walk::{CLAIM_WALK_MAX, nothing_claimable};
use capsid_core::ports::{ClaimOutcome, ClaimRequest, ClaimTarget, ClaimVerdict, StoreResult};
use sqlx::sqlite::SqliteConnection;

use capsid_core::jobs::paths::{LiveLease, claim_lease, waiting_on};
use capsid_store_sql::audit::insert as insert_audit;
use capsid_store_sql::job_columns;
use capsid_store_sql::jobs::{
    HELD, JOB, fetch_job, leased_text, live_leases_in, month_spend, record_outcome,
};

use super::{job_change_error, write_mirror};
use crate::error::DbResult;
use crate::rows;
use crate::store::{SqliteStore, commit};

/// The namespace's best queued job: highest priority, then oldest, then id (index
/// `jobs_claimable`).
pub(crate) const BEST_QUEUED_SQL: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM jobs WHERE namespace = ? AND status = 'queued' ORDER BY priority DESC, created_at, id LIMIT 1"
);

/// The namespace's queued job after the first `?2` in claim order.
const NEXT_QUEUED_SQL: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM jobs WHERE namespace = ? AND status = 'queued' ORDER BY priority DESC, created_at, id LIMIT 1 OFFSET ?"
);

const CLAIM_SQL: &str = concat!(
    "UPDATE jobs SET status = 'claimed', claimed_by = ?1, claimed_at = ?2, lease_expires = ?3, updated_at = ?2, \
     leased = ?5 WHERE id = ?4 AND status = 'queued' RETURNING ",
    job_columns!()
);

const FAIL_SQL: &str = concat!(
    "UPDATE jobs SET status = 'failed', result_summary = ?1, updated_at = ?2 \
     WHERE id = ?3 AND status = 'queued' RETURNING ",
    job_columns!()
);

async fn job_where(
    conn: &mut SqliteConnection,
    sql: &'static str,
    key: &str,
) -> StoreResult<Option<Job>> {
    fetch_job(conn, sql, key).await.db()
}

pub(crate) async fn claim_job(
    store: &SqliteStore,
    request: ClaimRequest<'_>,
) -> StoreResult<ClaimOutcome> {
    let mut tx = store.begin_write().await?;
    if let Some(held) = job_where(&mut tx, HELD, &request.actor).await? {
        return Ok(ClaimOutcome::AlreadyHolding(held));
    }
    let now = request.now.to_string();
    // A claim by id considers that job; a claim of the best job walks the queue in claim
    // order, passing over the jobs this caller cannot take (issue 51, item 6).
    let mut skipped: Vec<(Job, String)> = Vec::new();
    // The namespace's live leases, read once for the walk.
    let mut live: Option<Vec<LiveLease>> = None;
    let (updated, outcome) = loop {
        let candidate = match &request.target {
            ClaimTarget::Id(id) => match job_where(&mut tx, JOB, id).await? {
                None => return Ok(ClaimOutcome::NotFound),
                Some(job) if job.status != capsid_core::jobs::JobStatus::Queued => {
                    return Ok(ClaimOutcome::NotQueued(job));
                }
                Some(job) => job,
            },
            ClaimTarget::Best { namespace } => {
                match next_queued(&mut tx, namespace, skipped.len()).await? {
                    Some(job) => job,
                    None if skipped.is_empty() => return Ok(ClaimOutcome::NothingQueued),
                    None => return Ok(passed_over(skipped)),
                }
            }
        };
        let walking = matches!(request.target, ClaimTarget::Best { .. });
        match request.decider.decide(&candidate) {
            // Dropping the transaction rolls it back: nothing was written.
            ClaimVerdict::Refuse(reason) if walking => {
                skipped.push((candidate, reason));
                if skipped.len() >= CLAIM_WALK_MAX {
                    return Ok(passed_over(skipped));
                }
            }
            ClaimVerdict::Refuse(reason) => return Ok(ClaimOutcome::Refused(candidate, reason)),
            ClaimVerdict::NeedsRecord => return Ok(ClaimOutcome::NeedsRecord(candidate)),
            ClaimVerdict::Claim(audit) => {
                // The job's cap is reserved against the namespace's month under the one
                // writer: no other claim runs between this read and the update.
                // The job's paths are leased under the one writer too (issue 51).
                let asks_lease =
                    claim_lease(&candidate, request.leases_whole(&candidate)).is_some();
                if asks_lease && live.is_none() {
                    let namespace = &candidate.namespace;
                    live = Some(
                        live_leases_in(&mut *tx, namespace, request.now)
                            .await
                            .db()?,
                    );
                }
                let held = live.as_deref().unwrap_or_default();
                if let Some(why) = waiting_on(&candidate, request.leases_whole(&candidate), held) {
                    if walking && skipped.len() + 1 < CLAIM_WALK_MAX {
                        skipped.push((candidate, why));
                        continue;
                    }
                    return Ok(ClaimOutcome::Refused(candidate, why));
                }
                if let Some(since) = request.decider.budget_since() {
                    let month = month_spend(&mut *tx, &candidate, since, false).await.db()?;
                    if let Err(why) = request.decider.fits(&candidate, &month) {
                        if walking && skipped.len() + 1 < CLAIM_WALK_MAX {
                            skipped.push((candidate, why));
                            continue;
                        }
                        return Ok(ClaimOutcome::Refused(candidate, why));
                    }
                }
                let row = sqlx::query(CLAIM_SQL)
                    .bind(&request.actor)
                    .bind(&now)
                    .bind(request.lease_expires.to_string())
                    .bind(&candidate.id)
                    .bind(leased_text(&candidate, request.leases_whole(&candidate)))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(|e| job_change_error(e, &candidate.id, Some(&request.actor)))?;
                let Some(row) = row else {
                    return Ok(ClaimOutcome::LostRace);
                };
                let job = rows::job(row).db()?;
                insert_audit(&mut tx, &audit).await.db()?;
                break (job.clone(), ClaimOutcome::Claimed(job));
            }
            ClaimVerdict::Fail {
                summary,
                audit,
                outcome,
            } => {
                let row = sqlx::query(FAIL_SQL)
                    .bind(&summary)
                    .bind(&now)
                    .bind(&candidate.id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(|e| job_change_error(e, &candidate.id, None))?;
                let Some(row) = row else {
                    return Ok(ClaimOutcome::LostRace);
                };
                let job = rows::job(row).db()?;
                insert_audit(&mut tx, &audit).await.db()?;
                if let Some(outcome) = &outcome {
                    record_outcome(&mut *tx, outcome).await.db()?;
                }
                break (job.clone(), ClaimOutcome::Failed(job, summary));
            }
        }
    };
    write_mirror(&mut tx, &request.mirror, &updated).await?;
    commit(tx).await?;
    Ok(outcome)
}

/// The namespace's queued job after the first `passed` in claim order (index
/// `jobs_claimable`): the walk's next candidate.
async fn next_queued(
    conn: &mut SqliteConnection,
    namespace: &str,
    passed: usize,
) -> StoreResult<Option<Job>> {
    let row = sqlx::query(NEXT_QUEUED_SQL)
        .bind(namespace)
        .bind(i64::try_from(passed).unwrap_or(i64::MAX))
        .fetch_optional(&mut *conn)
        .await
        .db()?;
    row.map(rows::job).transpose().db()
}

/// The refusal of a walk that passed over every candidate: the first one, and what each
/// waits on.
fn passed_over(skipped: Vec<(Job, String)>) -> ClaimOutcome {
    let why = nothing_claimable(&skipped);
    match skipped.into_iter().next() {
        Some((first, _)) => ClaimOutcome::Refused(first, why),
        None => ClaimOutcome::NothingQueued,
    }
}
