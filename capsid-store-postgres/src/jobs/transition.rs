//! `transition_job` (a keyed conditional update with audit, mirror and outcome) and
//! `sweep_expired_leases` (every expired claim back to the queue in one transaction).

use capsid_core::jobs::Job;
use capsid_core::ports::{AuditEntry, JobTransition, MirrorFn, StoreError, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::{PgConnection, PgPool, Row};

use super::{bind_outcome, mirror_upsert, mirrored, write_mirror};
use crate::audit::{self, audited};
use crate::documents::bind_write;
use crate::error::{TxError, TxResult, always, finish, unique_violation, with_retry};
use capsid_store_sql::job_columns;
use capsid_store_sql::jobs::record_outcome;

use crate::rows;

/// A query being bound.
type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The keyed conditional update of a transition: `$3`, `$5`, ... say whether the following
/// value replaces the column; counters add; `$17`..`$19` are the step's status, the holder and
/// the corrections spent.
macro_rules! transition_update {
    () => {
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
            "AND ($19::bigint IS NULL OR corrections_count = $19)"
        )
    };
}

/// The transition with its audit row (`$20`..`$25`), inside its transaction.
const TRANSITION: &str = audited!(
    concat!(transition_update!(), " RETURNING ", job_columns!()),
    "$20, $21, $22, $23, $24, $25"
);

/// The whole transition in one statement, for a caller that read the row first: the update
/// holds only while every column a transition changes is still as read (`$26`..`$34`), so the
/// row it leaves is known before it runs and its mirror (`$35`..`$44`) is rendered from that;
/// with the audit row (`$20`..`$25`) and, in [`ONE_STATEMENT_RECORDED`], the outcome
/// (`$45`..`$66`) and its PR rows (`$67`).
macro_rules! one_statement {
    ($recorded:expr) => {
        concat!(
            "WITH changed AS (",
            transition_update!(),
            " AND claimed_by IS NOT DISTINCT FROM $26 AND claimed_at IS NOT DISTINCT FROM $27 ",
            "AND lease_expires IS NOT DISTINCT FROM $28 AND result_ref IS NOT DISTINCT FROM $29 ",
            "AND result_summary IS NOT DISTINCT FROM $30 AND blocked_count = $31 AND resumed_count = $32 ",
            "AND corrections_count = $33 AND updated_at = $34 RETURNING ",
            job_columns!(),
            "), logged AS (INSERT INTO audit_log (actor, action, namespace, path, params, at) ",
            "SELECT $20, $21, $22, $23, $24, $25 FROM changed), ",
            mirror_upsert!(
                " AND EXISTS (SELECT 1 FROM changed)",
                "$35",
                "$36",
                "$37",
                "$38",
                "$39",
                "$40",
                "$41",
                "$42",
                "$43",
                "$44"
            ),
            $recorded,
            " SELECT *, ",
            mirrored!(),
            " FROM changed"
        )
    };
}

const ONE_STATEMENT: &str = one_statement!("");

const ONE_STATEMENT_RECORDED: &str = one_statement!(concat!(
    ", recorded AS (INSERT INTO job_outcomes (job_id, agent, namespace, prs_opened, prs_merged, commits, ",
    "files_changed, tests_added, ci_green, blocked_count, resumed_count, duration_minutes, result_kind, verified, ",
    "recorded_at, reviewed_by, skill_ids_offered, skill_ids_used, skill_verdict, cost_usd, turns, duration_ms) ",
    "SELECT $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60, $61, $62, $63, ",
    "$64, $65, $66 ",
    "FROM changed ON CONFLICT (job_id) DO NOTHING RETURNING job_id), ",
    "listed AS (INSERT INTO job_outcome_prs (job_id, pr_url, recorded_at) ",
    "SELECT r.job_id, u.url, $59 FROM recorded r CROSS JOIN unnest($67::text[]) WITH ORDINALITY AS u(url, ord) ",
    "ORDER BY u.ord ON CONFLICT (job_id, pr_url) DO NOTHING)"
));

/// Every claimed job whose lease ran out before `$1`, back to the queue.
pub(crate) const SWEEP: &str = concat!(
    "UPDATE jobs SET status = 'queued', claimed_by = NULL, claimed_at = NULL, lease_expires = NULL, updated_at = $1 ",
    "WHERE status = 'claimed' AND lease_expires IS NOT NULL AND lease_expires < $1 RETURNING ",
    job_columns!()
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

/// Binds the transition's `$1`..`$25` (the update and its audit row).
fn bind_transition<'q>(
    query: PgQuery<'q>,
    t: &'q JobTransition,
) -> Result<PgQuery<'q>, StoreError> {
    let patch = &t.patch;
    let query = query
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
    audit::bind(query, &t.audit)
}

/// The transition's work inside its transaction.
async fn apply(conn: &mut PgConnection, t: &JobTransition) -> TxResult<Option<Job>> {
    let row = bind_transition(sqlx::query(TRANSITION), t)?
        .fetch_optional(&mut *conn)
        .await
        .map_err(transition_conflict)?;
    // Not in the expected state: a lost race or not the holder. Nothing was written.
    let Some(row) = row else { return Ok(None) };
    let job = rows::job(row)?;
    write_mirror(&mut *conn, &t.mirror, &job).await?;
    if let Some(record) = &t.outcome {
        record_outcome(&mut *conn, record).await?;
    }
    Ok(Some(job))
}

/// [`ONE_STATEMENT`] (or [`ONE_STATEMENT_RECORDED`]) from `before`, the row as the caller
/// read it: the changed job, or `None` when the row is no longer `before` or the step does
/// not apply (then nothing was written, and the transaction decides).
async fn one_statement(pool: &PgPool, t: &JobTransition, before: &Job) -> TxResult<Option<Job>> {
    let mut tx = pool.begin().await?;
    let result = one_statement_in(&mut tx, t, before).await;
    finish(tx, result, Option::is_some).await
}

/// [`one_statement`]'s work inside its transaction: `BEGIN`, the statement, `COMMIT`, where
/// the transaction of the transition's steps takes four or five round trips. The transaction
/// lets a mirror written again (below) commit with the transition or not at all.
async fn one_statement_in(
    conn: &mut PgConnection,
    t: &JobTransition,
    before: &Job,
) -> TxResult<Option<Job>> {
    let after = t.applied_to(before);
    let mirror = (t.mirror)(&after);
    // A reported ledger row goes with the outcome only when the outcome row is new, which
    // the transaction of the steps decides ([`record_outcome`]).
    let reported = t
        .outcome
        .as_ref()
        .is_some_and(|o| o.reported_call.is_some());
    if mirror.links.is_some() || before.id != t.id || reported {
        return Ok(None);
    }
    let sql = match &t.outcome {
        Some(_) => ONE_STATEMENT_RECORDED,
        None => ONE_STATEMENT,
    };
    let query = bind_transition(sqlx::query(sql), t)?
        .bind(before.claimed_by.as_deref())
        .bind(before.claimed_at.map(|at| at.to_string()))
        .bind(before.lease_expires.map(|at| at.to_string()))
        .bind(before.result_ref.as_deref())
        .bind(before.result_summary.as_deref())
        .bind(before.blocked_count)
        .bind(before.resumed_count)
        .bind(before.corrections_count)
        .bind(before.updated_at.to_string());
    let query = bind_write(query, &mirror);
    let query = match &t.outcome {
        Some(record) => bind_outcome(query, &record.row).bind(&record.pr_urls),
        None => query,
    };
    let row = query
        .fetch_optional(&mut *conn)
        .await
        .map_err(transition_conflict)?;
    let Some(row) = row else { return Ok(None) };
    let mirrored: bool = row.try_get("mirrored")?;
    let job = rows::job(row)?;
    // The update held only while the row was as read, so it left `after`; only a row whose
    // other columns changed without a transition (a restore) could differ. That, or a mirror
    // path another transaction created meanwhile: the mirror is written again from the row,
    // before this transaction commits.
    if job != after || !mirrored {
        write_mirror(&mut *conn, &t.mirror, &job).await?;
    }
    Ok(Some(job))
}

/// `JobStore::transition_job`: in one statement when the caller read the row and it is
/// unchanged, otherwise (or when that statement finds it changed) as a transaction of its
/// steps.
pub(crate) async fn transition_job(
    pool: &PgPool,
    transition: &JobTransition,
) -> StoreResult<Option<Job>> {
    if let Some(before) = &transition.expected
        && let Some(job) = with_retry(|| Box::pin(one_statement(pool, transition, before))).await?
    {
        return Ok(Some(job));
    }
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
                    .into_iter()
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
