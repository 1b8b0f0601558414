//! `claim_job`: one `BEGIN IMMEDIATE` transaction holding the one-claim check, candidate
//! selection, the core's verdict, and its application (keyed conditional update, audit,
//! mirror, outcome). The single writer serializes claimers, so a candidate cannot be taken
//! between its selection and its update; the keyed update still guards it.

use capsid_core::jobs::Job;
use capsid_core::ports::{ClaimOutcome, ClaimRequest, ClaimTarget, ClaimVerdict, StoreResult};
use sqlx::sqlite::SqliteConnection;

use capsid_store_sql::audit::insert as insert_audit;
use capsid_store_sql::job_columns;
use capsid_store_sql::jobs::{HELD, JOB, fetch_job, month_spend, record_outcome};

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

const CLAIM_SQL: &str = concat!(
    "UPDATE jobs SET status = 'claimed', claimed_by = ?1, claimed_at = ?2, lease_expires = ?3, updated_at = ?2 \
     WHERE id = ?4 AND status = 'queued' RETURNING ",
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
    let candidate = match &request.target {
        ClaimTarget::Id(id) => match job_where(&mut tx, JOB, id).await? {
            None => return Ok(ClaimOutcome::NotFound),
            Some(job) if job.status != capsid_core::jobs::JobStatus::Queued => {
                return Ok(ClaimOutcome::NotQueued(job));
            }
            Some(job) => job,
        },
        ClaimTarget::Best { namespace } => {
            match job_where(&mut tx, BEST_QUEUED_SQL, namespace).await? {
                None => return Ok(ClaimOutcome::NothingQueued),
                Some(job) => job,
            }
        }
    };
    let now = request.now.to_string();
    let (updated, outcome) = match request.decider.decide(&candidate) {
        // Dropping the transaction rolls it back: nothing was written.
        ClaimVerdict::Refuse(reason) => return Ok(ClaimOutcome::Refused(candidate, reason)),
        ClaimVerdict::NeedsRecord => return Ok(ClaimOutcome::NeedsRecord(candidate)),
        ClaimVerdict::Claim(audit) => {
            // The job's cap is reserved against the namespace's month under the one writer:
            // no other claim runs between this read and the update.
            if let Some(since) = request.decider.budget_since() {
                let month = month_spend(&mut *tx, &candidate, since, false).await.db()?;
                if let Err(why) = request.decider.fits(&candidate, &month) {
                    return Ok(ClaimOutcome::Refused(candidate, why));
                }
            }
            let row = sqlx::query(CLAIM_SQL)
                .bind(&request.actor)
                .bind(&now)
                .bind(request.lease_expires.to_string())
                .bind(&candidate.id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| job_change_error(e, &candidate.id, Some(&request.actor)))?;
            let Some(row) = row else {
                return Ok(ClaimOutcome::LostRace);
            };
            let job = rows::job(row).db()?;
            insert_audit(&mut tx, &audit).await.db()?;
            (job.clone(), ClaimOutcome::Claimed(job))
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
            (job.clone(), ClaimOutcome::Failed(job, summary))
        }
    };
    write_mirror(&mut tx, &request.mirror, &updated).await?;
    commit(tx).await?;
    Ok(outcome)
}
