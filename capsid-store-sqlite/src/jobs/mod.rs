//! The work-queue port: reads and `post` here; claims, transitions and the lease sweep in
//! the submodules. Every change is one `BEGIN IMMEDIATE` transaction with its audit row, the
//! mirror document rewrite and, on finishing, the write-once outcome row.

mod claim;
mod transition;

use async_trait::async_trait;
use capsid_core::jobs::Job;
use capsid_core::jobs::JobStatus;
use capsid_core::jobs::outcome::OutcomeRow;
use capsid_core::ports::DISPATCH_LIMIT;
use capsid_core::ports::{
    AuditEntry, ClaimOutcome, ClaimRequest, JobCounts, JobFilter, JobStore, JobTransition,
    MirrorFn, NewJob, OutcomeRecord, StatusCount, StoreError, StoreResult, SweepAuditFn,
};
use capsid_core::time::Timestamp;
use sqlx::sqlite::{Sqlite, SqliteConnection};
use sqlx::{QueryBuilder, Row};

use crate::documents::{apply_write, live_row};
use crate::error::{DbResult, conflict_or_backend};
use crate::rows::{self, insert_audit, job_columns, limit as sql_limit, result_kind_text};
use crate::store::{SqliteStore, commit};

pub(crate) use claim::{BEST_QUEUED_SQL, HELD_SQL};
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

/// Records the write-once outcome row (a second record for the job is ignored, PR rows too).
pub(crate) async fn record_outcome(
    conn: &mut SqliteConnection,
    outcome: &OutcomeRecord,
) -> StoreResult<()> {
    let row = &outcome.row;
    let inserted: Option<String> = sqlx::query_scalar(
        "INSERT INTO job_outcomes (job_id, agent, namespace, prs_opened, prs_merged, commits, files_changed, \
         tests_added, ci_green, blocked_count, resumed_count, duration_minutes, result_kind, verified, recorded_at, \
         reviewed_by, skill_ids_offered, skill_ids_used, skill_verdict, cost_usd, turns, duration_ms) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING RETURNING job_id",
    )
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
    .bind(result_kind_text(row.result_kind))
    .bind(&row.verified)
    .bind(row.recorded_at.to_string())
    .bind(&row.reviewed_by)
    .bind(&row.skill_ids_offered)
    .bind(&row.skill_ids_used)
    .bind(&row.skill_verdict)
    .bind(row.cost_usd)
    .bind(row.turns)
    .bind(row.duration_ms)
    .fetch_optional(&mut *conn)
    .await
    .db()?;
    if inserted.is_none() {
        return Ok(());
    }
    for url in &outcome.pr_urls {
        sqlx::query(
            "INSERT INTO job_outcome_prs (job_id, pr_url, recorded_at) VALUES (?, ?, ?) \
             ON CONFLICT (job_id, pr_url) DO NOTHING",
        )
        .bind(&row.job_id)
        .bind(url)
        .bind(row.recorded_at.to_string())
        .execute(&mut *conn)
        .await
        .db()?;
    }
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

async fn one_job(store: &SqliteStore, sql: &'static str, key: &str) -> StoreResult<Option<Job>> {
    let row = sqlx::query(sql)
        .bind(key)
        .fetch_optional(store.reader())
        .await
        .db()?;
    row.as_ref().map(rows::job).transpose().db()
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
         requested_by, depth) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13, ?14) RETURNING ",
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
    let posted = rows::job(&row).db()?;
    insert_audit(&mut tx, &audit).await.db()?;
    write_mirror(&mut tx, &mirror, &posted).await?;
    commit(tx).await?;
    Ok(posted)
}

fn status_count(row: &sqlx::sqlite::SqliteRow) -> Result<StatusCount, sqlx::Error> {
    let status: String = row.try_get("status")?;
    let status = JobStatus::parse(&status)
        .ok_or_else(|| sqlx::Error::Decode(format!("unknown job status {status:?}").into()))?;
    Ok(StatusCount {
        claimed_by: row.try_get("claimed_by")?,
        status,
        count: rows::count(row.try_get("n")?),
    })
}

#[async_trait]
impl JobStore for SqliteStore {
    async fn post_job(&self, job: NewJob, audit: AuditEntry, mirror: MirrorFn) -> StoreResult<Job> {
        post_job(self, job, audit, mirror).await
    }

    async fn job(&self, id: &str) -> StoreResult<Option<Job>> {
        one_job(
            self,
            concat!("SELECT ", job_columns!(), " FROM jobs WHERE id = ?"),
            id,
        )
        .await
    }

    async fn held_job(&self, actor: &str) -> StoreResult<Option<Job>> {
        one_job(self, HELD_SQL, actor).await
    }

    async fn jobs(&self, filter: &JobFilter, limit: usize) -> StoreResult<Vec<Job>> {
        let mut qb = QueryBuilder::<Sqlite>::new(concat!(
            "SELECT ",
            job_columns!(),
            " FROM jobs WHERE 1 = 1"
        ));
        if let Some(namespace) = &filter.namespace {
            qb.push(" AND namespace = ").push_bind(namespace.clone());
        }
        if let Some(status) = filter.status {
            qb.push(" AND status = ").push_bind(status.as_str());
        }
        qb.push(" ORDER BY created_at DESC, id DESC LIMIT ")
            .push_bind(sql_limit(limit));
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(&found, rows::job).db()
    }

    async fn job_counts(&self, namespace: &str, day_start: Timestamp) -> StoreResult<JobCounts> {
        let row = sqlx::query(
            "SELECT COALESCE(SUM(status = 'queued'), 0) AS queued, COALESCE(SUM(status = 'claimed'), 0) AS claimed, \
             COALESCE(SUM(status = 'blocked'), 0) AS blocked, \
             COALESCE(SUM(status = 'done' AND updated_at >= ?2), 0) AS done_today \
             FROM jobs WHERE namespace = ?1",
        )
        .bind(namespace)
        .bind(day_start.to_string())
        .fetch_one(self.reader())
        .await
        .db()?;
        let get = |name: &str| row.try_get::<i64, _>(name).map(rows::count);
        Ok(JobCounts {
            queued: get("queued").db()?,
            claimed: get("claimed").db()?,
            blocked: get("blocked").db()?,
            done_today: get("done_today").db()?,
        })
    }

    async fn job_status_counts(&self) -> StoreResult<Vec<StatusCount>> {
        let found = sqlx::query(
            "SELECT claimed_by, status, COUNT(*) AS n FROM jobs WHERE claimed_by IS NOT NULL \
             GROUP BY claimed_by, status ORDER BY claimed_by, status",
        )
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, status_count).db()
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

    async fn outcomes(&self, agent: Option<&str>) -> StoreResult<Vec<OutcomeRow>> {
        let mut qb = QueryBuilder::<Sqlite>::new(
            "SELECT job_id, agent, namespace, prs_opened, prs_merged, commits, files_changed, tests_added, ci_green, \
             blocked_count, resumed_count, duration_minutes, result_kind, verified, recorded_at, reviewed_by, \
             skill_ids_offered, skill_ids_used, skill_verdict, cost_usd, turns, duration_ms FROM job_outcomes",
        );
        if let Some(agent) = agent {
            qb.push(" WHERE agent = ").push_bind(agent.to_owned());
        }
        qb.push(" ORDER BY recorded_at, job_id");
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(&found, rows::outcome).db()
    }
}
