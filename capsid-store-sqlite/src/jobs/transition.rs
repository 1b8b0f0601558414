//! Keyed conditional job transitions (`UPDATE ... WHERE id AND status [AND claimed_by]
//! [AND corrections_count] RETURNING`) and the lease sweep, each one transaction with audit,
//! mirror and outcome.

use capsid_core::jobs::Job;
use capsid_core::ports::{AuditEntry, Change, JobPatch, JobTransition, MirrorFn, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::QueryBuilder;
use sqlx::sqlite::Sqlite;

use capsid_store_sql::audit::insert as insert_audit;
use capsid_store_sql::job_columns;
use capsid_store_sql::jobs::record_outcome;

use super::{job_change_error, write_mirror};
use crate::error::DbResult;
use crate::rows;
use crate::store::{SqliteStore, commit};

/// The sweep: every claimed job whose lease ran out before `?1` goes back to the queue
/// (index `jobs_lease`).
pub(crate) const SWEEP_SQL: &str = concat!(
    "UPDATE jobs SET status = 'queued', claimed_by = NULL, claimed_at = NULL, lease_expires = NULL, updated_at = ?1 \
     WHERE status = 'claimed' AND lease_expires IS NOT NULL AND lease_expires < ?1 RETURNING ",
    job_columns!()
);

/// Pushes `, column = ?` for each field the patch changes (a cleared one binds NULL).
fn push_patch(qb: &mut QueryBuilder<Sqlite>, patch: &JobPatch) {
    let columns = [
        (
            "claimed_by",
            patch.claimed_by.changes(),
            patch.claimed_by.stored(),
        ),
        (
            "claimed_at",
            patch.claimed_at.changes(),
            patch.claimed_at.stored(),
        ),
        (
            "lease_expires",
            patch.lease_expires.changes(),
            patch.lease_expires.stored(),
        ),
        (
            "result_ref",
            patch.result_ref.changes(),
            patch.result_ref.stored(),
        ),
        (
            "result_summary",
            patch.result_summary.changes(),
            patch.result_summary.stored(),
        ),
    ];
    for (column, changes, value) in columns {
        if changes {
            qb.push(", ").push(column).push(" = ").push_bind(value);
        }
    }
    if patch.add_blocked {
        qb.push(", blocked_count = blocked_count + 1");
    }
    if patch.add_resumed {
        qb.push(", resumed_count = resumed_count + 1");
    }
    if patch.add_correction {
        qb.push(", corrections_count = corrections_count + 1");
    }
}

/// The keyed conditional update of `transition`.
fn transition_query(transition: &JobTransition) -> QueryBuilder<Sqlite> {
    let mut qb = QueryBuilder::new("UPDATE jobs SET updated_at = ");
    qb.push_bind(transition.at.to_string());
    qb.push(", status = ")
        .push_bind(transition.step.to.as_str());
    push_patch(&mut qb, &transition.patch);
    qb.push(" WHERE id = ").push_bind(transition.id.clone());
    qb.push(" AND status = ")
        .push_bind(transition.step.from.as_str());
    if let Some(holder) = &transition.holder {
        qb.push(" AND claimed_by = ").push_bind(holder.clone());
    }
    if let Some(corrections) = transition.corrections {
        qb.push(" AND corrections_count = ").push_bind(corrections);
    }
    qb.push(concat!(" RETURNING ", job_columns!()));
    qb
}

pub(crate) async fn transition_job(
    store: &SqliteStore,
    transition: JobTransition,
) -> StoreResult<Option<Job>> {
    let mut tx = store.begin_write().await?;
    let new_holder = match &transition.patch.claimed_by {
        Change::Set(holder) => Some(holder.clone()),
        Change::Clear => None,
        Change::Keep => transition.holder.clone(),
    };
    let mut qb = transition_query(&transition);
    let row = qb
        .build()
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| job_change_error(e, &transition.id, new_holder.as_deref()))?;
    let Some(row) = row else {
        // Not in the expected state: a lost race or not the holder. Nothing was written.
        return Ok(None);
    };
    let job = rows::job(row).db()?;
    insert_audit(&mut tx, &transition.audit).await.db()?;
    if let Some(outcome) = &transition.outcome {
        record_outcome(&mut *tx, outcome).await.db()?;
    }
    write_mirror(&mut tx, &transition.mirror, &job).await?;
    commit(tx).await?;
    Ok(Some(job))
}

pub(crate) async fn sweep_expired_leases(
    store: &SqliteStore,
    now: Timestamp,
    audit: &(dyn Fn(&Job) -> AuditEntry + Send + Sync),
    mirror: MirrorFn,
) -> StoreResult<Vec<Job>> {
    let mut tx = store.begin_write().await?;
    let found = sqlx::query(SWEEP_SQL)
        .bind(now.to_string())
        .fetch_all(&mut *tx)
        .await
        .db()?;
    let mut swept = rows::all(found, rows::job).db()?;
    if swept.is_empty() {
        return Ok(swept);
    }
    swept.sort_by(|a, b| a.id.cmp(&b.id));
    for job in &swept {
        insert_audit(&mut tx, &audit(job)).await.db()?;
        write_mirror(&mut tx, &mirror, job).await?;
    }
    commit(tx).await?;
    Ok(swept)
}
