//! The `CheckmarkStore` port: a checkpoint (log entry, checkmark upsert and audit row) in one
//! transaction, answers and resumes as keyed conditional updates with their audit rows (a
//! concurrent checkpoint or answer makes the guard fail once its row lock is released), the
//! log's pages, and the shared context, last writer wins.

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::checkmarks::{AgentStatus, CiStatus, GateStatus, Visibility};
use capsid_core::ports::{
    AuditEntry, CheckmarkRow, CheckmarkStore, CheckmarkTransition, CheckmarkView,
    CheckpointAuditFn, LogEntryRow, NewCheckpoint, SharedEntry, StoreError, StoreResult,
};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection, Row};

use crate::PgStore;
use crate::audit;
use crate::error::{TxError, always, finish, limit, translate, with_retry};
use crate::sql::SqlText;

/// The `log_entries` columns a [`LogEntryRow`] is read from.
macro_rules! entry_cols {
    () => {
        "id, namespace, agent, created_at, session_id, status, summary, decisions, question, \
         answer, answered_by, answered_at, visibility, push_sha, ci_status, ci_checked_at, job_id, \
         cost_usd, turns"
    };
}

/// A checkmark (`c_` columns) joined with the entry it links to.
macro_rules! view_select {
    () => {
        "SELECT c.id AS c_id, c.namespace AS c_namespace, c.agent AS c_agent, \
         c.checkpoint_at AS c_checkpoint_at, c.status AS c_status, \
         c.where_it_stopped AS c_where_it_stopped, c.next_steps AS c_next_steps, \
         c.open_question AS c_open_question, c.log_entry_id AS c_log_entry_id, \
         c.tests_status AS c_tests_status, c.tested_at AS c_tested_at, \
         c.build_status AS c_build_status, c.built_at AS c_built_at, c.job_id AS c_job_id, \
         c.resume_requested_at AS c_resume_requested_at, \
         c.resume_requested_by AS c_resume_requested_by, \
         e.id, e.namespace, e.agent, e.created_at, e.session_id, e.status, e.summary, \
         e.decisions, e.question, e.answer, e.answered_by, e.answered_at, e.visibility, \
         e.push_sha, e.ci_status, e.ci_checked_at, e.job_id, e.cost_usd, e.turns \
         FROM checkmarks c JOIN log_entries e ON e.id = c.log_entry_id"
    };
}

const BY_AGENT: &str = concat!(view_select!(), " WHERE c.namespace = $1 AND c.agent = $2");
pub(crate) const BY_NAMESPACE: &str = concat!(
    view_select!(),
    " WHERE c.namespace = $1 ORDER BY c.agent LIMIT $2"
);

const INSERT_ENTRY: &str = concat!(
    "INSERT INTO log_entries (namespace, agent, created_at, session_id, status, summary, \
     decisions, question, visibility, push_sha, ci_status, job_id, cost_usd, turns) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING ",
    entry_cols!()
);

const UPSERT_CHECKMARK: &str = "INSERT INTO checkmarks (namespace, agent, checkpoint_at, status, \
     where_it_stopped, next_steps, open_question, log_entry_id, tests_status, tested_at, \
     build_status, built_at, job_id, resume_requested_at, resume_requested_by) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, NULL) \
     ON CONFLICT (namespace, agent) DO UPDATE SET checkpoint_at = EXCLUDED.checkpoint_at, \
     status = EXCLUDED.status, where_it_stopped = EXCLUDED.where_it_stopped, \
     next_steps = EXCLUDED.next_steps, open_question = EXCLUDED.open_question, \
     log_entry_id = EXCLUDED.log_entry_id, tests_status = EXCLUDED.tests_status, \
     tested_at = EXCLUDED.tested_at, build_status = EXCLUDED.build_status, \
     built_at = EXCLUDED.built_at, job_id = EXCLUDED.job_id, resume_requested_at = NULL, \
     resume_requested_by = NULL";

const FILL_ANSWER: &str = "UPDATE log_entries SET answer = $1, answered_by = $2, answered_at = $3 \
     WHERE id = $4 AND namespace = $5 AND agent = $6 AND question IS NOT NULL AND answer IS NULL \
     RETURNING id";

const STEP_CHECKMARK: &str = "UPDATE checkmarks SET status = $1, \
     resume_requested_at = COALESCE($2, resume_requested_at), \
     resume_requested_by = COALESCE($3, resume_requested_by) \
     WHERE namespace = $4 AND agent = $5 AND status = $6 AND log_entry_id = $7 RETURNING id";

const SHARED_ONE: &str = "SELECT key, value, set_by, updated_at FROM shared_context WHERE key = $1";
const SHARED_ALL: &str =
    "SELECT key, value, set_by, updated_at FROM shared_context ORDER BY key LIMIT $1";
const SHARED_LOCK: &str =
    "SELECT key, value, set_by, updated_at FROM shared_context WHERE key = $1 FOR UPDATE";
const SHARED_PUT: &str = "INSERT INTO shared_context (key, value, set_by, updated_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, \
     set_by = EXCLUDED.set_by, updated_at = EXCLUDED.updated_at";
const SHARED_DELETE: &str =
    "DELETE FROM shared_context WHERE key = $1 RETURNING key, value, set_by, updated_at";

/// The SQL of one agent's log page: namespace `$1`, agent `$2`, then `before` when set, then
/// the limit.
pub(crate) fn log_sql(before: bool) -> String {
    let mut sql = SqlText::new(concat!("SELECT ", entry_cols!(), " FROM log_entries"));
    sql.and("namespace = $?").and("agent = $?");
    if before {
        sql.and("id < $?");
    }
    sql.push(" ORDER BY id DESC LIMIT $?");
    sql.finish()
}

/// The SQL of a page of the global feed: visibility `$1`, then the namespace and `before`
/// when set, then the limit.
pub(crate) fn feed_sql(namespace: bool, before: bool) -> String {
    let mut sql = SqlText::new(concat!("SELECT ", entry_cols!(), " FROM log_entries"));
    sql.and("visibility = $?");
    if namespace {
        sql.and("namespace = $?");
    }
    if before {
        sql.and("id < $?");
    }
    sql.push(" ORDER BY id DESC LIMIT $?");
    sql.finish()
}

fn corrupt(what: String) -> sqlx::Error {
    sqlx::Error::Decode(what.into())
}

fn vocabulary<T>(
    row: &PgRow,
    column: &str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, sqlx::Error> {
    let text: String = row.try_get(column)?;
    parse(&text).ok_or_else(|| corrupt(format!("unknown {column} {text:?}")))
}

fn entry(row: &PgRow) -> Result<LogEntryRow, sqlx::Error> {
    Ok(LogEntryRow {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        agent: row.try_get("agent")?,
        created_at: row.time("created_at")?,
        session_id: row.try_get("session_id")?,
        status: vocabulary(row, "status", AgentStatus::parse)?,
        summary: row.try_get("summary")?,
        decisions: row.try_get("decisions")?,
        question: row.try_get("question")?,
        answer: row.try_get("answer")?,
        answered_by: row.try_get("answered_by")?,
        answered_at: row.time("answered_at")?,
        visibility: vocabulary(row, "visibility", Visibility::parse)?,
        push_sha: row.try_get("push_sha")?,
        ci_status: vocabulary(row, "ci_status", CiStatus::parse)?,
        ci_checked_at: row.time("ci_checked_at")?,
        job_id: row.try_get("job_id")?,
        cost_usd: row.try_get("cost_usd")?,
        turns: row.try_get("turns")?,
    })
}

fn view(row: &PgRow) -> Result<CheckmarkView, sqlx::Error> {
    let steps: String = row.try_get("c_next_steps")?;
    let next_steps: Vec<String> = serde_json::from_str(&steps)
        .map_err(|e| corrupt(format!("next_steps is not a list of strings: {e}")))?;
    Ok(CheckmarkView {
        checkmark: CheckmarkRow {
            id: row.try_get("c_id")?,
            namespace: row.try_get("c_namespace")?,
            agent: row.try_get("c_agent")?,
            checkpoint_at: row.time("c_checkpoint_at")?,
            status: vocabulary(row, "c_status", AgentStatus::parse)?,
            where_it_stopped: row.try_get("c_where_it_stopped")?,
            next_steps,
            open_question: row.try_get("c_open_question")?,
            log_entry_id: row.try_get("c_log_entry_id")?,
            tests_status: vocabulary(row, "c_tests_status", GateStatus::parse)?,
            tested_at: row.time("c_tested_at")?,
            build_status: vocabulary(row, "c_build_status", GateStatus::parse)?,
            built_at: row.time("c_built_at")?,
            job_id: row.try_get("c_job_id")?,
            resume_requested_at: row.time("c_resume_requested_at")?,
            resume_requested_by: row.try_get("c_resume_requested_by")?,
        },
        entry: entry(row)?,
    })
}

fn shared(row: &PgRow) -> Result<SharedEntry, sqlx::Error> {
    Ok(SharedEntry {
        key: row.try_get("key")?,
        value: row.try_get("value")?,
        set_by: row.try_get("set_by")?,
        updated_at: row.time("updated_at")?,
    })
}

async fn view_of(
    conn: &mut PgConnection,
    namespace: &str,
    agent: &str,
) -> Result<Option<CheckmarkView>, sqlx::Error> {
    let row = sqlx::query(BY_AGENT)
        .bind(namespace)
        .bind(agent)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(view).transpose()
}

fn vanished() -> TxError {
    TxError::Store(StoreError::Backend(
        "the checkmark just written is missing".into(),
    ))
}

#[async_trait]
impl CheckmarkStore for PgStore {
    async fn checkpoint(
        &self,
        cp: NewCheckpoint,
        audit: CheckpointAuditFn,
    ) -> StoreResult<CheckmarkView> {
        let pool = &self.pool;
        let (cp, audit) = (&cp, &audit);
        let steps = serde_json::to_string(&cp.next_steps).unwrap_or_else(|_| "[]".into());
        let steps = steps.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let at = cp.at.to_string();
                    let row = sqlx::query(INSERT_ENTRY)
                        .bind(&cp.namespace)
                        .bind(&cp.agent)
                        .bind(&at)
                        .bind(&cp.session_id)
                        .bind(cp.status.as_str())
                        .bind(&cp.summary)
                        .bind(&cp.decisions)
                        .bind(&cp.question)
                        .bind(cp.visibility.as_str())
                        .bind(&cp.push_sha)
                        .bind(cp.ci_status.as_str())
                        .bind(&cp.job_id)
                        .bind(cp.cost_usd)
                        .bind(cp.turns)
                        .fetch_one(&mut *tx)
                        .await?;
                    let logged = entry(&row)?;
                    sqlx::query(UPSERT_CHECKMARK)
                        .bind(&cp.namespace)
                        .bind(&cp.agent)
                        .bind(&at)
                        .bind(cp.status.as_str())
                        .bind(&cp.where_it_stopped)
                        .bind(steps)
                        .bind(&cp.question)
                        .bind(logged.id)
                        .bind(cp.tests_status.as_str())
                        .bind(cp.tested_at.map(|t| t.to_string()))
                        .bind(cp.build_status.as_str())
                        .bind(cp.built_at.map(|t| t.to_string()))
                        .bind(&cp.job_id)
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, &audit(&logged)).await?;
                    view_of(&mut tx, &cp.namespace, &cp.agent)
                        .await?
                        .ok_or_else(vanished)
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn checkmark(&self, namespace: &str, agent: &str) -> StoreResult<Option<CheckmarkView>> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        view_of(&mut conn, namespace, agent)
            .await
            .map_err(translate)
    }

    async fn checkmarks(&self, namespace: &str, max: usize) -> StoreResult<Vec<CheckmarkView>> {
        let rows = sqlx::query(BY_NAMESPACE)
            .bind(namespace)
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(view)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn log_entries(
        &self,
        namespace: &str,
        agent: &str,
        before: Option<i64>,
        max: usize,
    ) -> StoreResult<Vec<LogEntryRow>> {
        let mut query = sqlx::query(AssertSqlSafe(log_sql(before.is_some())))
            .bind(namespace)
            .bind(agent);
        if let Some(before) = before {
            query = query.bind(before);
        }
        let rows = query
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(entry)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn global_entries(
        &self,
        namespace: Option<&str>,
        before: Option<i64>,
        max: usize,
    ) -> StoreResult<Vec<LogEntryRow>> {
        let sql = feed_sql(namespace.is_some(), before.is_some());
        let mut query = sqlx::query(AssertSqlSafe(sql)).bind(Visibility::Global.as_str());
        if let Some(ns) = namespace {
            query = query.bind(ns);
        }
        if let Some(before) = before {
            query = query.bind(before);
        }
        let rows = query
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(entry)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn transition_checkmark(
        &self,
        t: CheckmarkTransition,
    ) -> StoreResult<Option<CheckmarkView>> {
        let pool = &self.pool;
        let t = &t;
        let at = t.at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    if let Some(fill) = &t.answer {
                        let filled = sqlx::query(FILL_ANSWER)
                            .bind(&fill.answer)
                            .bind(&fill.by)
                            .bind(at)
                            .bind(t.entry_id)
                            .bind(&t.namespace)
                            .bind(&t.agent)
                            .fetch_optional(&mut *tx)
                            .await?;
                        if filled.is_none() {
                            return Ok(None);
                        }
                    }
                    let stepped = sqlx::query(STEP_CHECKMARK)
                        .bind(t.step.to.as_str())
                        .bind(t.resume_by.as_ref().map(|_| at))
                        .bind(&t.resume_by)
                        .bind(&t.namespace)
                        .bind(&t.agent)
                        .bind(t.step.from.as_str())
                        .bind(t.entry_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if stepped.is_none() {
                        return Ok(None);
                    }
                    audit::insert(&mut tx, &t.audit).await?;
                    Ok(Some(
                        view_of(&mut tx, &t.namespace, &t.agent)
                            .await?
                            .ok_or_else(vanished)?,
                    ))
                }
                .await;
                finish(tx, result, Option::is_some).await
            })
        })
        .await
    }

    async fn shared_entry(&self, key: &str) -> StoreResult<Option<SharedEntry>> {
        let row = sqlx::query(SHARED_ONE)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        row.as_ref().map(shared).transpose().map_err(translate)
    }

    async fn shared_entries(&self, max: usize) -> StoreResult<Vec<SharedEntry>> {
        let rows = sqlx::query(SHARED_ALL)
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(shared)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn set_shared(
        &self,
        entry: SharedEntry,
        audit: AuditEntry,
    ) -> StoreResult<Option<SharedEntry>> {
        let pool = &self.pool;
        let (entry, audit) = (&entry, &audit);
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let previous = sqlx::query(SHARED_LOCK)
                        .bind(&entry.key)
                        .fetch_optional(&mut *tx)
                        .await?;
                    let previous = previous.as_ref().map(shared).transpose()?;
                    sqlx::query(SHARED_PUT)
                        .bind(&entry.key)
                        .bind(&entry.value)
                        .bind(&entry.set_by)
                        .bind(entry.updated_at.to_string())
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(previous)
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn delete_shared(
        &self,
        key: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<SharedEntry>> {
        let pool = &self.pool;
        let audit = &audit;
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let row = sqlx::query(SHARED_DELETE)
                        .bind(key)
                        .fetch_optional(&mut *tx)
                        .await?;
                    let Some(gone) = row.as_ref().map(shared).transpose()? else {
                        return Ok(None);
                    };
                    audit::insert(&mut tx, audit).await?;
                    Ok(Some(gone))
                }
                .await;
                finish(tx, result, Option::is_some).await
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sql_numbers_its_parameters() {
        assert!(
            log_sql(false)
                .ends_with("WHERE namespace = $1 AND agent = $2 ORDER BY id DESC LIMIT $3")
        );
        assert!(log_sql(true).ends_with("AND agent = $2 AND id < $3 ORDER BY id DESC LIMIT $4"));
        assert!(
            feed_sql(false, false).ends_with("WHERE visibility = $1 ORDER BY id DESC LIMIT $2")
        );
        assert!(feed_sql(true, true).ends_with(
            "WHERE visibility = $1 AND namespace = $2 AND id < $3 ORDER BY id DESC LIMIT $4"
        ));
    }
}
