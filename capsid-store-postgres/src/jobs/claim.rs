//! `claim_job`: one transaction that checks the caller holds nothing, locks the target (by
//! id, or the namespace's best queued job with `FOR UPDATE SKIP LOCKED`), asks the core's
//! decider, and applies its verdict (a keyed update carrying its audit row), mirror and
//! outcome.

use capsid_core::jobs::claim_walk::{CLAIM_WALK_MAX, nothing_claimable};
use capsid_core::jobs::{Job, JobStatus};
use capsid_core::ports::{
    ClaimOutcome, ClaimRequest, ClaimTarget, ClaimVerdict, StoreError, StoreResult,
};
use sqlx::{PgConnection, PgPool, Row};

use capsid_core::jobs::paths::{LiveLease, claim_lease, lease_for_claim, waiting_on};
use capsid_store_sql::job_columns;
use capsid_store_sql::jobs::{
    HELD, LEASE_LOCK, fetch_job, leased_text, live_leases_in, month_spend, record_outcome,
};

use super::{mirror_upsert, mirrored, write_mirror};
use crate::audit::{self, audited};
use crate::documents::bind_write;
use crate::error::{TxResult, finish, unique_violation, with_retry};
use crate::rows;

const BY_ID_FOR_UPDATE: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM jobs WHERE id = $1 FOR UPDATE"
);

/// The best queued job of namespace `$1` that no other claimer has locked, provided `$2`
/// holds no claimed job (one statement for the held check and the candidate).
pub(crate) const BEST_CANDIDATE: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM jobs WHERE namespace = $1 AND status = 'queued' ",
    "AND NOT EXISTS (SELECT 1 FROM jobs held WHERE held.claimed_by = $2 AND held.status = 'claimed') ",
    "ORDER BY priority DESC, created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED"
);

/// The claim's transaction. The candidate query must walk `jobs_claimable` in claim order and
/// stop at the first row it can lock. With statistics that still call the table nearly empty
/// (a burst of posts before autovacuum's next analyze), the planner costed a scan of
/// `jobs_open_title` plus a sort as cheaper, and a connection's cached plan then sorted every
/// queued job on every claim: 90 ms a claim at 8,000 queued jobs in `store-bench`, seen with
/// `auto_explain`. So the transaction disables sorts: the candidate is left with the index walk,
/// and a statement that can only sort (the outcome's PR list) still does.
pub(crate) const BEGIN_CLAIM: &str = "BEGIN; SET LOCAL enable_sort = off";

/// The walk's next candidate (issue 51, item 6): the best queued job of namespace `$1` that
/// no other claimer has locked, other than the ones in `$2` this claim passed over.
const NEXT_CANDIDATE: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM jobs WHERE namespace = $1 AND status = 'queued' AND id <> ALL($2) ",
    "ORDER BY priority DESC, created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED"
);

const ANY_QUEUED: &str =
    "SELECT EXISTS (SELECT 1 FROM jobs WHERE namespace = $1 AND status = 'queued')";

/// Claims `$1` for `$2` until `$4`, with its audit row (`$5`..`$10`) and the claimed job's
/// mirror (`$11`..`$20`, rendered from the locked candidate as this statement changes it), in
/// one round trip; `$21` is what the claim leases (issue 51).
const CLAIM: &str = concat!(
    "WITH changed AS (",
    "UPDATE jobs SET status = 'claimed', claimed_by = $2, claimed_at = $3, lease_expires = $4, updated_at = $3, ",
    "leased = $21 ",
    "WHERE id = $1 AND status = 'queued' RETURNING ",
    job_columns!(),
    "), logged AS (INSERT INTO audit_log (actor, action, namespace, path, params, at) ",
    "SELECT $5, $6, $7, $8, $9, $10 FROM changed), ",
    mirror_upsert!(
        " AND EXISTS (SELECT 1 FROM changed)",
        "$11",
        "$12",
        "$13",
        "$14",
        "$15",
        "$16",
        "$17",
        "$18",
        "$19",
        "$20"
    ),
    " SELECT *, ",
    mirrored!(),
    " FROM changed"
);

/// The candidate as [`CLAIM`] leaves it (what its mirror is rendered from).
fn as_claimed(candidate: &Job, request: &ClaimRequest<'_>) -> Job {
    Job {
        status: JobStatus::Claimed,
        claimed_by: Some(request.actor.clone()),
        claimed_at: Some(request.now),
        lease_expires: Some(request.lease_expires),
        updated_at: request.now,
        leased: lease_for_claim(candidate, request.leases_whole(candidate)),
        ..candidate.clone()
    }
}

/// Fails `$1` with summary `$2`, with its audit row (`$4`..`$9`).
const FAIL: &str = audited!(
    concat!(
        "UPDATE jobs SET status = 'failed', result_summary = $2, updated_at = $3 ",
        "WHERE id = $1 AND status = 'queued' RETURNING ",
        job_columns!()
    ),
    "$4, $5, $6, $7, $8, $9"
);

/// One attempt's result: an outcome, or the database's refusal of a second claim (the
/// caller claimed elsewhere concurrently). One exists per claim call, so its size costs nothing.
#[allow(clippy::large_enum_variant)]
enum Attempt {
    Done(ClaimOutcome),
    SecondClaim,
}

/// The claim's work inside its transaction (which [`claim_once`] ends). A claim of the best
/// job walks the queue in claim order, passing over (and keeping locked until the transaction
/// ends) the jobs this caller cannot take, up to [`CLAIM_WALK_MAX`] of them.
async fn decide_and_apply(
    conn: &mut PgConnection,
    request: &ClaimRequest<'_>,
) -> TxResult<Attempt> {
    let mut skipped: Vec<(Job, String)> = Vec::new();
    // The namespace's live leases, read once for the walk under its lease lock.
    let mut live: Option<Vec<LiveLease>> = None;
    loop {
        let candidate = match &request.target {
            ClaimTarget::Id(id) => {
                if let Some(held) = fetch_job(&mut *conn, HELD, &request.actor).await? {
                    return Ok(Attempt::Done(ClaimOutcome::AlreadyHolding(held)));
                }
                match fetch_job(&mut *conn, BY_ID_FOR_UPDATE, id).await? {
                    None => return Ok(Attempt::Done(ClaimOutcome::NotFound)),
                    Some(job) if job.status != JobStatus::Queued => {
                        return Ok(Attempt::Done(ClaimOutcome::NotQueued(job)));
                    }
                    Some(job) => job,
                }
            }
            ClaimTarget::Best { namespace } if !skipped.is_empty() => {
                let passed: Vec<&str> = skipped.iter().map(|(j, _)| j.id.as_str()).collect();
                let row = sqlx::query(NEXT_CANDIDATE)
                    .bind(namespace)
                    .bind(&passed)
                    .fetch_optional(&mut *conn)
                    .await?;
                match row {
                    Some(row) => rows::job(row)?,
                    None => return Ok(Attempt::Done(passed_over(skipped))),
                }
            }
            ClaimTarget::Best { namespace } => {
                let row = sqlx::query(BEST_CANDIDATE)
                    .bind(namespace)
                    .bind(&request.actor)
                    .fetch_optional(&mut *conn)
                    .await?;
                match row {
                    Some(row) => rows::job(row)?,
                    None => {
                        if let Some(held) = fetch_job(&mut *conn, HELD, &request.actor).await? {
                            return Ok(Attempt::Done(ClaimOutcome::AlreadyHolding(held)));
                        }
                        // Every queued job may be locked by other claimers right now.
                        let any: bool = sqlx::query_scalar(ANY_QUEUED)
                            .bind(namespace)
                            .fetch_one(&mut *conn)
                            .await?;
                        let outcome = if any {
                            ClaimOutcome::LostRace
                        } else {
                            ClaimOutcome::NothingQueued
                        };
                        return Ok(Attempt::Done(outcome));
                    }
                }
            }
        };
        let walking = matches!(request.target, ClaimTarget::Best { .. });
        match apply(conn, request, candidate, &mut live).await? {
            Applied::PassedOver(job, why) if walking && skipped.len() + 1 < CLAIM_WALK_MAX => {
                skipped.push((job, why));
            }
            Applied::PassedOver(job, why) if walking => {
                skipped.push((job, why));
                return Ok(Attempt::Done(passed_over(skipped)));
            }
            Applied::PassedOver(job, why) => {
                return Ok(Attempt::Done(ClaimOutcome::Refused(job, why)));
            }
            Applied::Done(attempt) => return Ok(attempt),
        }
    }
}

/// What the decider made of one candidate.
#[allow(clippy::large_enum_variant)]
enum Applied {
    /// This caller cannot take it, and why.
    PassedOver(Job, String),
    /// The claim's answer.
    Done(Attempt),
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

/// Asks the decider about the locked `candidate` and applies its verdict.
async fn apply(
    conn: &mut PgConnection,
    request: &ClaimRequest<'_>,
    candidate: Job,
    live: &mut Option<Vec<LiveLease>>,
) -> TxResult<Applied> {
    let now = request.now.to_string();
    let outcome = match request.decider.decide(&candidate) {
        ClaimVerdict::Refuse(reason) => return Ok(Applied::PassedOver(candidate, reason)),
        ClaimVerdict::NeedsRecord => {
            return Ok(Applied::Done(Attempt::Done(ClaimOutcome::NeedsRecord(
                candidate,
            ))));
        }
        ClaimVerdict::Claim(entry) => {
            // The job's paths are leased with the namespace's lease lock held, so claims in one
            // namespace decide one after the other, each seeing the leases the ones before it
            // took (issue 51).
            let asks_lease = claim_lease(&candidate, request.leases_whole(&candidate)).is_some();
            if asks_lease && live.is_none() {
                sqlx::query(LEASE_LOCK)
                    .bind(&candidate.namespace)
                    .execute(&mut *conn)
                    .await?;
                *live = Some(live_leases_in(&mut *conn, &candidate.namespace, request.now).await?);
            }
            let held = live.as_deref().unwrap_or_default();
            if let Some(why) = waiting_on(&candidate, request.leases_whole(&candidate), held) {
                return Ok(Applied::PassedOver(candidate, why));
            }
            // The job's cap is reserved against the namespace's month with its row locked, so
            // claims in one namespace decide one after the other, each seeing the jobs the
            // ones before it claimed.
            if let Some(since) = request.decider.budget_since() {
                let month = month_spend(&mut *conn, &candidate, since, true).await?;
                if let Err(why) = request.decider.fits(&candidate, &month) {
                    return Ok(Applied::PassedOver(candidate, why));
                }
            }
            let predicted = as_claimed(&candidate, request);
            let mirror = (request.mirror)(&predicted);
            let query = sqlx::query(CLAIM)
                .bind(&candidate.id)
                .bind(&request.actor)
                .bind(&now)
                .bind(request.lease_expires.to_string());
            let updated = bind_write(audit::bind(query, &entry)?, &mirror)
                .bind(leased_text(&candidate, request.leases_whole(&candidate)))
                .fetch_optional(&mut *conn)
                .await;
            let row = match updated {
                Err(e) if unique_violation(&e) == Some("jobs_one_claim") => {
                    return Ok(Applied::Done(Attempt::SecondClaim));
                }
                other => other?,
            };
            let Some(row) = row else {
                return Ok(Applied::Done(Attempt::Done(ClaimOutcome::LostRace)));
            };
            let mirrored: bool = row.try_get("mirrored")?;
            let job = rows::job(row)?;
            // The candidate was locked, so the row is what was predicted; were it not, or had
            // another transaction created the mirror's path meanwhile, the mirror is written
            // again from the row, still inside this transaction.
            if job != predicted || !mirrored || mirror.links.is_some() {
                write_mirror(&mut *conn, &request.mirror, &job).await?;
            }
            ClaimOutcome::Claimed(job)
        }
        ClaimVerdict::Fail {
            summary,
            audit: entry,
            outcome,
        } => {
            let query = sqlx::query(FAIL)
                .bind(&candidate.id)
                .bind(&summary)
                .bind(&now);
            let row = audit::bind(query, &entry)?
                .fetch_optional(&mut *conn)
                .await?;
            let Some(row) = row else {
                return Ok(Applied::Done(Attempt::Done(ClaimOutcome::LostRace)));
            };
            let job = rows::job(row)?;
            write_mirror(&mut *conn, &request.mirror, &job).await?;
            if let Some(record) = &outcome {
                record_outcome(&mut *conn, record).await?;
            }
            ClaimOutcome::Failed(job, summary)
        }
    };
    Ok(Applied::Done(Attempt::Done(outcome)))
}

/// One attempt: only a claim or a failure is committed; every other answer rolls back at
/// once, releasing the candidate's row lock before the caller hears it.
async fn claim_once(pool: &PgPool, request: &ClaimRequest<'_>) -> TxResult<Attempt> {
    let mut tx = pool.begin_with(BEGIN_CLAIM).await?;
    let result = decide_and_apply(&mut tx, request).await;
    finish(tx, result, |attempt| {
        matches!(
            attempt,
            Attempt::Done(ClaimOutcome::Claimed(_) | ClaimOutcome::Failed(..))
        )
    })
    .await
}

/// `JobStore::claim_job`.
pub(crate) async fn claim_job(
    pool: &PgPool,
    request: &ClaimRequest<'_>,
) -> StoreResult<ClaimOutcome> {
    match with_retry(|| Box::pin(claim_once(pool, request))).await? {
        Attempt::Done(outcome) => Ok(outcome),
        Attempt::SecondClaim => {
            // The caller's other claim committed first: report the job it holds.
            let mut conn = pool.acquire().await.map_err(crate::error::translate)?;
            match fetch_job(&mut *conn, HELD, &request.actor)
                .await
                .map_err(crate::error::translate)?
            {
                Some(held) => Ok(ClaimOutcome::AlreadyHolding(held)),
                None => Err(StoreError::Conflict(
                    "the claimer took another job concurrently; nothing was claimed".to_owned(),
                )),
            }
        }
    }
}
