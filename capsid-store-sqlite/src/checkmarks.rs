//! The checkmark port: a checkpoint (log entry, checkmark upsert and audit row) in one
//! transaction, answers and resumes as keyed conditional updates with their audit rows,
//! the log's pages, and the shared context.

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::checkmarks::{AgentStatus, CiStatus, GateStatus, Visibility};
use capsid_core::ports::{
    AuditEntry, CheckmarkRow, CheckmarkStore, CheckmarkTransition, CheckmarkView,
    CheckpointAuditFn, LogEntryRow, NewCheckpoint, SharedEntry, StoreResult,
};
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteRow};
use sqlx::{Error, QueryBuilder, Row};

use crate::error::DbResult;
use crate::rows::{insert_audit, limit as sql_limit};
use crate::store::{SqliteStore, commit};

/// The `log_entries` columns a [`LogEntryRow`] is read from.
macro_rules! entry_columns {
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

fn corrupt(what: String) -> Error {
    Error::Decode(what.into())
}

fn vocabulary<T>(row: &SqliteRow, column: &str, parse: fn(&str) -> Option<T>) -> Result<T, Error> {
    let text: String = row.try_get(column)?;
    parse(&text).ok_or_else(|| corrupt(format!("unknown {column} {text:?}")))
}

/// A [`LogEntryRow`] from a row selected with [`entry_columns`].
fn entry(row: &SqliteRow) -> Result<LogEntryRow, Error> {
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

/// A [`CheckmarkView`] from a row selected with [`view_select`].
fn view(row: &SqliteRow) -> Result<CheckmarkView, Error> {
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

fn shared(row: &SqliteRow) -> Result<SharedEntry, Error> {
    Ok(SharedEntry {
        key: row.try_get("key")?,
        value: row.try_get("value")?,
        set_by: row.try_get("set_by")?,
        updated_at: row.time("updated_at")?,
    })
}

const BY_AGENT: &str = concat!(view_select!(), " WHERE c.namespace = ? AND c.agent = ?");

async fn view_of(
    conn: &mut SqliteConnection,
    namespace: &str,
    agent: &str,
) -> Result<Option<CheckmarkView>, Error> {
    let row = sqlx::query(BY_AGENT)
        .bind(namespace)
        .bind(agent)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(view).transpose()
}

const INSERT_ENTRY: &str = concat!(
    "INSERT INTO log_entries (namespace, agent, created_at, session_id, status, summary, \
     decisions, question, visibility, push_sha, ci_status, job_id, cost_usd, turns) \
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ",
    entry_columns!()
);

const UPSERT_CHECKMARK: &str = "INSERT INTO checkmarks (namespace, agent, checkpoint_at, status, \
     where_it_stopped, next_steps, open_question, log_entry_id, tests_status, tested_at, \
     build_status, built_at, job_id, resume_requested_at, resume_requested_by) \
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL) \
     ON CONFLICT (namespace, agent) DO UPDATE SET checkpoint_at = excluded.checkpoint_at, \
     status = excluded.status, where_it_stopped = excluded.where_it_stopped, \
     next_steps = excluded.next_steps, open_question = excluded.open_question, \
     log_entry_id = excluded.log_entry_id, tests_status = excluded.tests_status, \
     tested_at = excluded.tested_at, build_status = excluded.build_status, \
     built_at = excluded.built_at, job_id = excluded.job_id, resume_requested_at = NULL, \
     resume_requested_by = NULL";

const FILL_ANSWER: &str = "UPDATE log_entries SET answer = ?, answered_by = ?, answered_at = ? \
     WHERE id = ? AND namespace = ? AND agent = ? AND question IS NOT NULL AND answer IS NULL \
     RETURNING id";

const STEP_CHECKMARK: &str = "UPDATE checkmarks SET status = ?, \
     resume_requested_at = COALESCE(?, resume_requested_at), \
     resume_requested_by = COALESCE(?, resume_requested_by) \
     WHERE namespace = ? AND agent = ? AND status = ? AND log_entry_id = ? RETURNING id";

/// The newest entries matching the filters pushed so far, below `before`.
fn page_entries(qb: &mut QueryBuilder<Sqlite>, before: Option<i64>, limit: usize) {
    if let Some(before) = before {
        qb.push(" AND id < ").push_bind(before);
    }
    qb.push(" ORDER BY id DESC LIMIT ")
        .push_bind(sql_limit(limit));
}

#[async_trait]
impl CheckmarkStore for SqliteStore {
    async fn checkpoint(
        &self,
        cp: NewCheckpoint,
        audit: CheckpointAuditFn,
    ) -> StoreResult<CheckmarkView> {
        let steps = serde_json::to_string(&cp.next_steps).unwrap_or_else(|_| "[]".into());
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(INSERT_ENTRY)
            .bind(&cp.namespace)
            .bind(&cp.agent)
            .bind(cp.at.to_string())
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
            .await
            .db()?;
        let logged = entry(&row).db()?;
        sqlx::query(UPSERT_CHECKMARK)
            .bind(&cp.namespace)
            .bind(&cp.agent)
            .bind(cp.at.to_string())
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
            .await
            .db()?;
        insert_audit(&mut tx, &audit(&logged)).await.db()?;
        let recorded = view_of(&mut tx, &cp.namespace, &cp.agent)
            .await
            .db()?
            .ok_or_else(|| {
                capsid_core::ports::StoreError::Backend(
                    "the checkmark just written is missing".into(),
                )
            })?;
        commit(tx).await?;
        Ok(recorded)
    }

    async fn checkmark(&self, namespace: &str, agent: &str) -> StoreResult<Option<CheckmarkView>> {
        let mut conn = self.reader().acquire().await.db()?;
        view_of(&mut conn, namespace, agent).await.db()
    }

    async fn checkmarks(&self, namespace: &str, limit: usize) -> StoreResult<Vec<CheckmarkView>> {
        let rows = sqlx::query(concat!(
            view_select!(),
            " WHERE c.namespace = ? ORDER BY c.agent LIMIT ?"
        ))
        .bind(namespace)
        .bind(sql_limit(limit))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows.iter().map(view).collect::<Result<_, _>>().db()
    }

    async fn log_entries(
        &self,
        namespace: &str,
        agent: &str,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LogEntryRow>> {
        let mut qb = QueryBuilder::new(concat!(
            "SELECT ",
            entry_columns!(),
            " FROM log_entries WHERE namespace = "
        ));
        qb.push_bind(namespace.to_owned())
            .push(" AND agent = ")
            .push_bind(agent.to_owned());
        page_entries(&mut qb, before, limit);
        let rows = qb.build().fetch_all(self.reader()).await.db()?;
        rows.iter().map(entry).collect::<Result<_, _>>().db()
    }

    async fn global_entries(
        &self,
        namespace: Option<&str>,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LogEntryRow>> {
        let mut qb = QueryBuilder::new(concat!(
            "SELECT ",
            entry_columns!(),
            " FROM log_entries WHERE visibility = "
        ));
        qb.push_bind(Visibility::Global.as_str());
        if let Some(ns) = namespace {
            qb.push(" AND namespace = ").push_bind(ns.to_owned());
        }
        page_entries(&mut qb, before, limit);
        let rows = qb.build().fetch_all(self.reader()).await.db()?;
        rows.iter().map(entry).collect::<Result<_, _>>().db()
    }

    async fn transition_checkmark(
        &self,
        t: CheckmarkTransition,
    ) -> StoreResult<Option<CheckmarkView>> {
        let at = t.at.to_string();
        let mut tx = self.begin_write().await?;
        if let Some(fill) = &t.answer {
            let filled = sqlx::query(FILL_ANSWER)
                .bind(&fill.answer)
                .bind(&fill.by)
                .bind(&at)
                .bind(t.entry_id)
                .bind(&t.namespace)
                .bind(&t.agent)
                .fetch_optional(&mut *tx)
                .await
                .db()?;
            if filled.is_none() {
                return Ok(None);
            }
        }
        let resumed_at = t.resume_by.as_ref().map(|_| at.clone());
        let stepped = sqlx::query(STEP_CHECKMARK)
            .bind(t.step.to.as_str())
            .bind(resumed_at)
            .bind(&t.resume_by)
            .bind(&t.namespace)
            .bind(&t.agent)
            .bind(t.step.from.as_str())
            .bind(t.entry_id)
            .fetch_optional(&mut *tx)
            .await
            .db()?;
        if stepped.is_none() {
            return Ok(None);
        }
        insert_audit(&mut tx, &t.audit).await.db()?;
        let done = view_of(&mut tx, &t.namespace, &t.agent).await.db()?;
        commit(tx).await?;
        Ok(done)
    }

    async fn shared_entry(&self, key: &str) -> StoreResult<Option<SharedEntry>> {
        let row =
            sqlx::query("SELECT key, value, set_by, updated_at FROM shared_context WHERE key = ?")
                .bind(key)
                .fetch_optional(self.reader())
                .await
                .db()?;
        row.as_ref().map(shared).transpose().db()
    }

    async fn shared_entries(&self, limit: usize) -> StoreResult<Vec<SharedEntry>> {
        let rows = sqlx::query(
            "SELECT key, value, set_by, updated_at FROM shared_context ORDER BY key LIMIT ?",
        )
        .bind(sql_limit(limit))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows.iter().map(shared).collect::<Result<_, _>>().db()
    }

    async fn set_shared(
        &self,
        entry: SharedEntry,
        audit: AuditEntry,
    ) -> StoreResult<Option<SharedEntry>> {
        let mut tx = self.begin_write().await?;
        let previous =
            sqlx::query("SELECT key, value, set_by, updated_at FROM shared_context WHERE key = ?")
                .bind(&entry.key)
                .fetch_optional(&mut *tx)
                .await
                .db()?;
        let previous = previous.as_ref().map(shared).transpose().db()?;
        sqlx::query(
            "INSERT INTO shared_context (key, value, set_by, updated_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, \
             updated_at = excluded.updated_at",
        )
        .bind(&entry.key)
        .bind(&entry.value)
        .bind(&entry.set_by)
        .bind(entry.updated_at.to_string())
        .execute(&mut *tx)
        .await
        .db()?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(previous)
    }

    async fn delete_shared(
        &self,
        key: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<SharedEntry>> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(
            "DELETE FROM shared_context WHERE key = ? RETURNING key, value, set_by, updated_at",
        )
        .bind(key)
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        let Some(gone) = row.as_ref().map(shared).transpose().db()? else {
            return Ok(None);
        };
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(Some(gone))
    }
}
