//! This store's `JobEngine` (the reads are `capsid_store_sql::jobs`): `post_job` here, claims
//! in [`claim`], transitions and the lease sweep in [`transition`]. Every change writes its audit row and the job's mirror
//! document (snapshot and upsert, no extra audit row) in the same transaction.

mod claim;
mod transition;

use async_trait::async_trait;
use capsid_core::jobs::Job;
use capsid_core::jobs::outcome::OutcomeRow;
use capsid_core::ports::DISPATCH_LIMIT;
use capsid_core::ports::{
    AuditEntry, ClaimOutcome, ClaimRequest, JobTransition, MirrorFn, NewJob, StoreError,
    StoreResult, SweepAuditFn, WriteGuard,
};
use capsid_core::time::Timestamp;
use capsid_store_sql::jobs::JobEngine;
use capsid_store_sql::{job_columns, jobs};
use sqlx::PgConnection;

pub(crate) use capsid_store_sql::jobs::HELD;
pub(crate) use claim::{BEGIN_CLAIM, BEST_CANDIDATE};
pub(crate) use transition::SWEEP;

use crate::PgStore;
use crate::audit::{self, audited};
use crate::documents::write_in_tx;
use crate::error::{TxError, TxResult, always, finish, unique_violation, with_retry};
use crate::rows;

/// Inserts a queued job (with its parent link, `$12`..`$14`, and its cap, `$21`) and its audit
/// row (`$15`..`$20`).
const POST: &str = audited!(
    concat!(
        "INSERT INTO jobs (id, namespace, title, body, priority, status, posted_by, gate_required, ",
        "review_required, required_scopes, min_record, created_at, updated_at, parent_id, ",
        "requested_by, depth, max_cost_micros, runtime, role, paths) ",
        "VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10, $11, $11, $12, $13, $14, $21, $22, $23, $24) RETURNING ",
        job_columns!()
    ),
    "$15, $16, $17, $18, $19, $20"
);
/// Locks a dispatch's parent, so its children are counted one post at a time.
const LOCK_PARENT: &str = "SELECT id FROM jobs WHERE id = $1 FOR UPDATE";
/// A job's children.
const CHILDREN: &str = "SELECT count(*) FROM jobs WHERE parent_id = $1";
/// The mirror's rewrite as CTEs, its ten values at the placeholders given, done only when
/// `$guard` holds: the stored row is locked (its latest version), snapshotted into
/// `document_versions` and updated with every named field replaced; or, when there is none, a
/// new row is inserted with the core's default type and status where the write names none.
/// What `documents::write`'s upsert does, as CTEs a statement that changes the job can carry,
/// so the job's change, its audit row and its mirror go in one round trip. [`mirrored`] says
/// whether it wrote: when another transaction created the path after the statement began, it
/// did not, and the caller writes the mirror again with [`write_mirror`] before it commits. (Not `INSERT ...
/// ON CONFLICT DO UPDATE`: that computes the row's generated `tsvector` columns for the insert
/// it then abandons, and again for the update.)
macro_rules! mirror_upsert {
    ($guard:literal, $ns:literal, $path:literal, $title:literal, $body:literal, $type:literal,
     $status:literal, $tags:literal, $at:literal, $default_type:literal, $default_status:literal) => {
        concat!(
            "mirror_prior AS (SELECT id, namespace, path, title, body, type, status, tags FROM documents ",
            "WHERE namespace = ", $ns, " AND path = ", $path, $guard, " FOR UPDATE), ",
            "mirror_snapshot AS (INSERT INTO document_versions ",
            "(document_id, namespace, path, title, body, type, status, tags, snapshot_at) ",
            "SELECT id, namespace, path, title, body, type, status, tags, ", $at, " FROM mirror_prior), ",
            "mirror_updated AS (UPDATE documents d SET title = coalesce(", $title, ", d.title), ",
            "body = coalesce(", $body, ", d.body), type = coalesce(", $type, ", d.type), ",
            "status = coalesce(", $status, ", d.status), tags = coalesce(", $tags, ", d.tags), updated_at = ", $at,
            " FROM mirror_prior p WHERE d.id = p.id RETURNING d.id), ",
            "mirror_inserted AS (INSERT INTO documents (namespace, path, title, body, type, status, tags, created_at, updated_at) ",
            "SELECT ", $ns, ", ", $path, ", ", $title, ", ", $body, ", coalesce(", $type, ", ", $default_type,
            "), coalesce(", $status, ", ", $default_status, "), ", $tags, ", ", $at, ", ", $at,
            " WHERE NOT EXISTS (SELECT 1 FROM mirror_prior)", $guard,
            " ON CONFLICT (namespace, path) DO NOTHING RETURNING id)"
        )
    };
}
pub(crate) use mirror_upsert;

/// The select-list column `mirrored`: whether [`mirror_upsert`]'s CTEs wrote the mirror.
macro_rules! mirrored {
    () => {
        "EXISTS (SELECT 1 FROM mirror_updated UNION ALL SELECT 1 FROM mirror_inserted) AS mirrored"
    };
}
pub(crate) use mirrored;

/// Rewrites the job's mirror document (snapshot and upsert, retried on a create race; its
/// audit is the job's).
pub(crate) async fn write_mirror(
    conn: &mut PgConnection,
    mirror: &MirrorFn,
    job: &Job,
) -> TxResult<()> {
    let write = mirror(job);
    write_in_tx(conn, &write, &WriteGuard::Upsert).await?;
    Ok(())
}

/// Binds an outcome row's twenty-two values, in `job_outcomes`' column order.
pub(crate) fn bind_outcome<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    row: &'q OutcomeRow,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(&row.job_id)
        .bind(&row.agent)
        .bind(&row.namespace)
        .bind(row.prs_opened)
        .bind(row.prs_merged)
        .bind(row.commits)
        .bind(row.files_changed)
        .bind(row.tests_added)
        .bind(row.ci_green)
        .bind(row.blocked_count)
        .bind(row.resumed_count)
        .bind(row.duration_minutes)
        .bind(jobs::result_kind_text(row.result_kind))
        .bind(&row.verified)
        .bind(row.recorded_at.to_string())
        .bind(&row.reviewed_by)
        .bind(&row.skill_ids_offered)
        .bind(&row.skill_ids_used)
        .bind(&row.skill_verdict)
        .bind(row.cost_usd)
        .bind(row.turns)
        .bind(row.duration_ms)
}

/// A conflict on the jobs table, named: an open title taken, or a second claim.
pub(crate) fn job_conflict(error: sqlx::Error, namespace: &str, title: &str) -> TxError {
    let what = match unique_violation(&error) {
        Some("jobs_open_title") => {
            format!("namespace '{namespace}' already has an open job titled '{title}'")
        }
        Some("jobs_one_claim") => {
            "the change would give its holder a second claimed job".to_owned()
        }
        Some("jobs_pkey") => "a job with this id already exists".to_owned(),
        _ => return TxError::Db(error),
    };
    TxError::Store(StoreError::Conflict(what))
}

#[async_trait]
impl JobEngine for PgStore {
    async fn post_job(&self, job: NewJob, audit: AuditEntry, mirror: MirrorFn) -> StoreResult<Job> {
        let pool = &self.pool;
        let (job, audit, mirror) = (&job, &audit, &mirror);
        let at = job.at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    if let Some(d) = &job.dispatch {
                        sqlx::query(LOCK_PARENT)
                            .bind(&d.parent_id)
                            .execute(&mut *tx)
                            .await?;
                        let children: i64 = sqlx::query_scalar(CHILDREN)
                            .bind(&d.parent_id)
                            .fetch_one(&mut *tx)
                            .await?;
                        if children >= d.max_children {
                            return Err(TxError::Store(StoreError::Conflict(format!(
                                "{DISPATCH_LIMIT} {} already has {children} children",
                                d.parent_id
                            ))));
                        }
                    }
                    let query = sqlx::query(POST)
                        .bind(&job.id)
                        .bind(&job.namespace)
                        .bind(&job.title)
                        .bind(&job.body)
                        .bind(job.priority)
                        .bind(&job.posted_by)
                        .bind(i64::from(job.gate_required))
                        .bind(i64::from(job.review_required))
                        .bind(job.required_scopes.as_deref())
                        .bind(job.min_record.as_deref())
                        .bind(at)
                        .bind(job.dispatch.as_ref().map(|d| d.parent_id.as_str()))
                        .bind(job.dispatch.as_ref().map(|d| d.requested_by.as_str()))
                        .bind(job.dispatch.as_ref().map_or(0, |d| d.depth));
                    let cap = job
                        .max_cost_usd
                        .map(|c| i64::try_from(c.micros()).unwrap_or(i64::MAX));
                    let row = audit::bind(query, audit)?
                        .bind(cap)
                        .bind(job.runtime.as_deref())
                        .bind(job.role.as_deref())
                        .bind(job.paths.as_ref().map(|p| serde_json::json!(p).to_string()))
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(|e| job_conflict(e, &job.namespace, &job.title))?;
                    let posted = rows::job(row)?;
                    write_mirror(&mut tx, mirror, &posted).await?;
                    Ok(posted)
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn claim_job(&self, request: ClaimRequest<'_>) -> StoreResult<ClaimOutcome> {
        claim::claim_job(&self.pool, &request).await
    }

    async fn transition_job(&self, transition: JobTransition) -> StoreResult<Option<Job>> {
        transition::transition_job(&self.pool, &transition).await
    }

    async fn sweep_expired_leases(
        &self,
        now: Timestamp,
        audit: &SweepAuditFn,
        mirror: MirrorFn,
    ) -> StoreResult<Vec<Job>> {
        transition::sweep_expired_leases(&self.pool, now, audit, &mirror).await
    }
}
