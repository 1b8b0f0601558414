//! `transition_job` (a keyed conditional update with audit, mirror and outcome) and
//! `sweep_expired_leases` (every expired claim back to the queue in one transaction).

use capsid_core::jobs::Job;
use capsid_core::ports::{AuditEntry, JobTransition, MirrorFn, StoreError, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::{PgConnection, PgPool};

use super::{record_outcome, write_mirror};
use crate::audit::{self, audited};
use crate::error::{TxError, TxResult, always, finish, unique_violation, with_retry};
use crate::rows::{self, job_cols};

/// `$3`, `$5`, ... say whether the following value replaces the column; counters add. The
/// audit row is `$20`..`$25`.
const TRANSITION: &str = audited!(
    concat!(
        "UPDATE jobs SET status = coalesce($2, status), ",
        "claimed_by = CASE WHEN $3 THEN $4 ELSE claimed_by END, ",
        "claimed_at = CASE WHEN $5 THEN $6 ELSE claimed_at END, ",
        "lease_expires = CASE WHEN $7 THEN $8 ELSE lease_expires END, ",
        "result_ref = CASE WHEN $9 THEN $10 ELSE result_ref END, ",
        "result_summary = CASE WHEN $11 THEN $12 ELSE result_summary END, ",
        "blocked_count = blocked_count + $13, resumed_count = resumed_count + $14, ",
        "corrections_count = corrections_count + $15, updated_at = $16 ",
        "WHERE id = $1 AND status = $17 AND ($18::text IS NULL OR claimed_by = $18) ",
        "AND ($19::bigint IS NULL OR corrections_count = $19) RETURNING ",
        job_cols!()
    ),
    "$20, $21, $22, $23, $24, $25"
);

/// Every claimed job whose lease ran out before `$1`, back to the queue.
pub(crate) const SWEEP: &str = concat!(
    "UPDATE jobs SET status = 'queued', claimed_by = NULL, claimed_at = NULL, lease_expires = NULL, updated_at = $1 ",
    "WHERE status = 'claimed' AND lease_expires IS NOT NULL AND lease_expires < $1 RETURNING ",
    job_cols!()
);

/// A transition the unique indexes refused: a second claim for the holder, or an open title
/// taken meanwhile.
fn transition_conflict(error: sqlx::Error) -> TxError {
    let what = match unique_violation(&error) {
        Some("jobs_one_claim") => "the change would give its holder a second claimed job",
        Some("jobs_open_title") => "another open job of the namespace has this title",
        _ => return TxError::Db(error),
    };
    TxError::Store(StoreError::Conflict(what.to_owned()))
}

fn counter(add: bool) -> i64 {
    i64::from(add)
}

async fn transition_once(pool: &PgPool, t: &JobTransition) -> TxResult<Option<Job>> {
    let mut tx = pool.begin().await?;
    let result = apply(&mut tx, t).await;
    finish(tx, result, Option::is_some).await
}

/// The transition's work inside its transaction.
async fn apply(conn: &mut PgConnection, t: &JobTransition) -> TxResult<Option<Job>> {
    let patch = &t.patch;
    let query = sqlx::query(TRANSITION)
        .bind(&t.id)
        .bind(t.step.to.as_str())
        .bind(patch.claimed_by.changes())
        .bind(patch.claimed_by.stored())
        .bind(patch.claimed_at.changes())
        .bind(patch.claimed_at.stored())
        .bind(patch.lease_expires.changes())
        .bind(patch.lease_expires.stored())
        .bind(patch.result_ref.changes())
        .bind(patch.result_ref.stored())
        .bind(patch.result_summary.changes())
        .bind(patch.result_summary.stored())
        .bind(counter(patch.add_blocked))
        .bind(counter(patch.add_resumed))
        .bind(counter(patch.add_correction))
        .bind(t.at.to_string())
        .bind(t.step.from.as_str())
        .bind(t.holder.as_deref())
        .bind(t.corrections);
    let row = audit::bind(query, &t.audit)?
        .fetch_optional(&mut *conn)
        .await
        .map_err(transition_conflict)?;
    // Not in the expected state: a lost race or not the holder. Nothing was written.
    let Some(row) = row else { return Ok(None) };
    let job = rows::job(&row)?;
    write_mirror(&mut *conn, &t.mirror, &job).await?;
    if let Some(record) = &t.outcome {
        record_outcome(&mut *conn, record).await?;
    }
    Ok(Some(job))
}

/// `JobStore::transition_job`.
pub(crate) async fn transition_job(
    pool: &PgPool,
    transition: &JobTransition,
) -> StoreResult<Option<Job>> {
    with_retry(|| Box::pin(transition_once(pool, transition))).await
}

/// `JobStore::sweep_expired_leases`.
pub(crate) async fn sweep_expired_leases<'a>(
    pool: &'a PgPool,
    now: Timestamp,
    audit_of: &'a (dyn Fn(&Job) -> AuditEntry + Send + Sync + 'a),
    mirror: &'a MirrorFn,
) -> StoreResult<Vec<Job>> {
    let now = now.to_string();
    let now = now.as_str();
    with_retry(|| {
        Box::pin(async move {
            let mut tx = pool.begin().await?;
            let result = async {
                let rows = sqlx::query(SWEEP).bind(now).fetch_all(&mut *tx).await?;
                let mut swept = rows
                    .iter()
                    .map(rows::job)
                    .collect::<Result<Vec<Job>, _>>()?;
                // A stable order: audit ids and mirror locks follow job ids.
                swept.sort_by(|a, b| a.id.cmp(&b.id));
                for job in &swept {
                    audit::insert(&mut tx, &audit_of(job)).await?;
                    write_mirror(&mut tx, mirror, job).await?;
                }
                Ok(swept)
            }
            .await;
            finish(tx, result, always).await
        })
    })
    .await
}
