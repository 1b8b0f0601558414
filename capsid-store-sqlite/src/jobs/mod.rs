//! This store's `JobEngine` (the reads are `capsid_store_sql::jobs`): `post` here; claims,
//! transitions and the lease sweep in the submodules. Every change is one unit of the writer
//! with its audit row, the mirror document rewrite and, on finishing, the write-once outcome
//! row.

mod claim;
mod transition;

use async_trait::async_trait;
use capsid_core::jobs::Job;
use capsid_core::ports::DISPATCH_LIMIT;
use capsid_core::ports::{
    AuditEntry, ClaimOutcome, ClaimRequest, JobTransition, MirrorFn, NewJob, StoreError,
    StoreResult, SweepAuditFn,
};
use capsid_core::time::Timestamp;
use capsid_store_sql::audit::insert as insert_audit;
use capsid_store_sql::job_columns;
use capsid_store_sql::jobs::JobEngine;
use sqlx::sqlite::SqliteConnection;

use crate::documents::{apply_write, live_row};
use crate::error::{DbResult, conflict_or_backend};
use crate::rows;
use crate::store::{SqliteStore, commit};

pub(crate) use claim::BEST_QUEUED_SQL;
pub(crate) use transition::SWEEP_SQL;

/// Rewrites the job's mirror document inside the caller's transaction: snapshot the existing
/// mirror row, upsert (no audit row of its own).
pub(crate) async fn write_mirror(
    conn: &mut SqliteConnection,
    mirror: &MirrorFn,
    job: &Job,
) -> StoreResult<()> {
    let write = mirror(job);
    let exists = live_row(conn, &write.namespace, &write.path)
        .await?
        .is_some();
    apply_write(conn, &write, exists).await?;
    Ok(())
}

/// A unique violation on a change of job `id` as `Conflict` naming the rule (the new holder
/// would hold two claims, or the title is taken by an open job); anything else as backend.
pub(crate) fn job_change_error(err: sqlx::Error, id: &str, holder: Option<&str>) -> StoreError {
    conflict_or_backend(err, |message| {
        if message.contains("jobs.claimed_by") {
            format!(
                "job {id}: {} already holds a claimed job (one claim per caller); nothing changed",
                holder.unwrap_or("the holder")
            )
        } else if message.contains("jobs.title") {
            format!(
                "job {id}: its namespace already has an open job with this title; nothing changed"
            )
        } else {
            format!(
                "job {id}: the change collides with an existing row ({message}); nothing changed"
            )
        }
    })
}

async fn post_job(
    store: &SqliteStore,
    job: NewJob,
    audit: AuditEntry,
    mirror: MirrorFn,
) -> StoreResult<Job> {
    let mut tx = store.begin_write().await?;
    // A dispatch counts its parent's children inside this (immediate, so serialized) write.
    if let Some(d) = &job.dispatch {
        let children: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE parent_id = ?")
            .bind(&d.parent_id)
            .fetch_one(&mut *tx)
            .await
            .db()?;
        if children >= d.max_children {
            return Err(StoreError::Conflict(format!(
                "{DISPATCH_LIMIT} {} already has {children} children",
                d.parent_id
            )));
        }
    }
    let row = sqlx::query(concat!(
        "INSERT INTO jobs (id, namespace, title, body, priority, status, posted_by, gate_required, \
         review_required, required_scopes, min_record, created_at, updated_at, parent_id, \
         requested_by, depth, max_cost_micros, runtime, role, paths) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) RETURNING ",
        job_columns!()
    ))
    .bind(&job.id)
    .bind(&job.namespace)
    .bind(&job.title)
    .bind(&job.body)
    .bind(job.priority)
    .bind(&job.posted_by)
    .bind(i64::from(job.gate_required))
    .bind(i64::from(job.review_required))
    .bind(&job.required_scopes)
    .bind(&job.min_record)
    .bind(job.at.to_string())
    .bind(job.dispatch.as_ref().map(|d| d.parent_id.as_str()))
    .bind(job.dispatch.as_ref().map(|d| d.requested_by.as_str()))
    .bind(job.dispatch.as_ref().map_or(0, |d| d.depth))
    .bind(job.max_cost_usd.map(|c| i64::try_from(c.micros()).unwrap_or(i64::MAX)))
    .bind(job.runtime.as_deref())
    .bind(job.role.as_deref())
    .bind(job.paths.as_ref().map(|p| serde_json::json!(p).to_string()))
    .fetch_one(&mut *tx)
    .await
    .map_err(|e| {
        conflict_or_backend(e, |m| {
            if m.contains("jobs.title") {
                format!(
                    "namespace {} already has an open job titled '{}'",
                    job.namespace, job.title
                )
            } else {
                format!("job {} already exists", job.id)
            }
        })
    })?;
    let posted = rows::job(row).db()?;
    insert_audit(&mut tx, &audit).await.db()?;
    write_mirror(&mut tx, &mirror, &posted).await?;
    commit(tx).await?;
    Ok(posted)
}

#[async_trait]
impl JobEngine for SqliteStore {
    async fn post_job(&self, job: NewJob, audit: AuditEntry, mirror: MirrorFn) -> StoreResult<Job> {
        post_job(self, job, audit, mirror).await
    }

    async fn claim_job(&self, request: ClaimRequest<'_>) -> StoreResult<ClaimOutcome> {
        claim::claim_job(self, request).await
    }

    async fn transition_job(&self, transition: JobTransition) -> StoreResult<Option<Job>> {
        transition::transition_job(self, transition).await
    }

    async fn sweep_expired_leases(
        &self,
        now: Timestamp,
        audit: &SweepAuditFn,
        mirror: MirrorFn,
    ) -> StoreResult<Vec<Job>> {
        transition::sweep_expired_leases(self, now, audit, mirror).await
    }
}
