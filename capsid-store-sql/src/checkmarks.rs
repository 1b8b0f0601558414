//! The checkmark port: a checkpoint (log entry, checkmark upsert and audit row) in one unit,
//! answers and resumes as keyed conditional updates with their audit rows (a concurrent
//! checkpoint or answer makes the guard fail), the log's pages, and the shared context, last
//! writer wins (its previous row read locked the engine's way, [`Engine::lock_row`]).

use capsid_core::checkmarks::{AgentStatus, CiStatus, GateStatus, Visibility};
use capsid_core::ports::{
    AuditEntry, CheckmarkRow, CheckmarkTransition, CheckmarkView, CheckpointAuditFn, LogEntryRow,
    NewCheckpoint, SharedEntry, StoreError, StoreResult,
};

use crate::engine::in_unit;
use crate::engine::{Engine, TxResult, always, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::{Arg, Stmt, ToArg};

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

/// A namespace's checkmarks by agent (the stores' plan checks explain it).
pub const BY_NAMESPACE: &str = concat!(
    view_select!(),
    " WHERE c.namespace = $1 ORDER BY c.agent LIMIT $2"
);
const BY_AGENT: &str = concat!(view_select!(), " WHERE c.namespace = $1 AND c.agent = $2");
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
     ON CONFLICT (namespace, agent) DO UPDATE SET checkpoint_at = excluded.checkpoint_at, \
     status = excluded.status, where_it_stopped = excluded.where_it_stopped, \
     next_steps = excluded.next_steps, open_question = excluded.open_question, \
     log_entry_id = excluded.log_entry_id, tests_status = excluded.tests_status, \
     tested_at = excluded.tested_at, build_status = excluded.build_status, \
     built_at = excluded.built_at, job_id = excluded.job_id, resume_requested_at = NULL, \
     resume_requested_by = NULL";
const FILL_ANSWER: &str = "UPDATE log_entries SET answer = $1, answered_by = $2, answered_at = $3 \
     WHERE id = $4 AND namespace = $5 AND agent = $6 AND question IS NOT NULL AND answer IS NULL \
     RETURNING id";
const STEP_CHECKMARK: &str = "UPDATE checkmarks SET status = $1, \
     resume_requested_at = COALESCE($2, resume_requested_at), \
     resume_requested_by = COALESCE($3, resume_requested_by) \
     WHERE namespace = $4 AND agent = $5 AND status = $6 AND log_entry_id = $7 RETURNING id";
const ENTRY_BY_ID: &str = concat!(
    "SELECT ",
    entry_cols!(),
    " FROM log_entries WHERE namespace = $1 AND id = $2"
);
const PROMOTE_ENTRY: &str = concat!(
    "UPDATE log_entries SET visibility = $1 WHERE namespace = $2 AND id = $3 AND visibility = $4 \
     RETURNING ",
    entry_cols!()
);
const SHARED: &str = "SELECT key, value, set_by, updated_at FROM shared_context";
const SHARED_PUT: &str = "INSERT INTO shared_context (key, value, set_by, updated_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO UPDATE SET value = excluded.value, \
     set_by = excluded.set_by, updated_at = excluded.updated_at";
const SHARED_DELETE: &str =
    "DELETE FROM shared_context WHERE key = $1 RETURNING key, value, set_by, updated_at";

/// A page of log entries: each condition (`"column ="` or `"id <"` and its value) in order,
/// newest first, at most `limit`.
fn page(conditions: Vec<(&str, Arg)>, limit: usize) -> Stmt {
    let mut sql = String::from(concat!("SELECT ", entry_cols!(), " FROM log_entries"));
    let mut args = Vec::new();
    for (n, (condition, arg)) in conditions.into_iter().enumerate() {
        sql.push_str(if n == 0 { " WHERE " } else { " AND " });
        sql.push_str(&format!("{condition} ${}", n + 1));
        args.push(arg);
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", args.len() + 1));
    Stmt {
        sql: sql.into(),
        args,
    }
    .bind(limit)
}

/// One agent's log page below `before` (the stores' plan checks explain it).
pub fn log_stmt(namespace: &str, agent: &str, before: Option<i64>, limit: usize) -> Stmt {
    let mut conditions = vec![
        ("namespace =", namespace.to_arg()),
        ("agent =", agent.to_arg()),
    ];
    conditions.extend(before.map(|b| ("id <", b.to_arg())));
    page(conditions, limit)
}

/// A page of the global feed, of one namespace when given, below `before` (the stores' plan
/// checks explain it).
pub fn feed_stmt(namespace: Option<&str>, before: Option<i64>, limit: usize) -> Stmt {
    let mut conditions = vec![("visibility =", Visibility::Global.as_str().to_arg())];
    conditions.extend(namespace.map(|ns| ("namespace =", ns.to_arg())));
    conditions.extend(before.map(|b| ("id <", b.to_arg())));
    page(conditions, limit)
}

fn entry(row: &Row) -> Result<LogEntryRow, sqlx::Error> {
    Ok(LogEntryRow {
        id: row.int("id")?,
        namespace: row.text("namespace")?,
        agent: row.text("agent")?,
        created_at: row.time("created_at")?,
        session_id: row.opt_text("session_id")?,
        status: row.word("status", AgentStatus::parse)?,
        summary: row.opt_text("summary")?,
        decisions: row.opt_text("decisions")?,
        question: row.opt_text("question")?,
        answer: row.opt_text("answer")?,
        answered_by: row.opt_text("answered_by")?,
        answered_at: row.opt_time("answered_at")?,
        visibility: row.word("visibility", Visibility::parse)?,
        push_sha: row.opt_text("push_sha")?,
        ci_status: row.word("ci_status", CiStatus::parse)?,
        ci_checked_at: row.opt_time("ci_checked_at")?,
        job_id: row.opt_text("job_id")?,
        cost_usd: row.opt_real("cost_usd")?,
        turns: row.opt_int("turns")?,
    })
}

fn view(row: &Row) -> Result<CheckmarkView, sqlx::Error> {
    let next_steps = serde_json::from_str(&row.text("c_next_steps")?).map_err(|e| {
        sqlx::Error::Decode(format!("next_steps is not a list of strings: {e}").into())
    })?;
    Ok(CheckmarkView {
        checkmark: CheckmarkRow {
            id: row.int("c_id")?,
            namespace: row.text("c_namespace")?,
            agent: row.text("c_agent")?,
            checkpoint_at: row.time("c_checkpoint_at")?,
            status: row.word("c_status", AgentStatus::parse)?,
            where_it_stopped: row.opt_text("c_where_it_stopped")?,
            next_steps,
            open_question: row.opt_text("c_open_question")?,
            log_entry_id: row.int("c_log_entry_id")?,
            tests_status: row.word("c_tests_status", GateStatus::parse)?,
            tested_at: row.opt_time("c_tested_at")?,
            build_status: row.word("c_build_status", GateStatus::parse)?,
            built_at: row.opt_time("c_built_at")?,
            job_id: row.opt_text("c_job_id")?,
            resume_requested_at: row.opt_time("c_resume_requested_at")?,
            resume_requested_by: row.opt_text("c_resume_requested_by")?,
        },
        entry: entry(row)?,
    })
}

fn shared(row: &Row) -> Result<SharedEntry, sqlx::Error> {
    Ok(SharedEntry {
        key: row.text("key")?,
        value: row.text("value")?,
        set_by: row.text("set_by")?,
        updated_at: row.time("updated_at")?,
    })
}

/// The checkmark of `(namespace, agent)` as the unit now sees it, which it has just written.
async fn written_view(x: &mut dyn Exec, namespace: &str, agent: &str) -> TxResult<CheckmarkView> {
    let row = x
        .fetch_optional(Stmt::new(BY_AGENT).bind(namespace).bind(agent))
        .await?;
    match row {
        Some(row) => Ok(view(&row)?),
        None => Err(StoreError::Backend("the checkmark just written is missing".into()).into()),
    }
}

/// `CheckmarkStore::checkpoint`.
pub async fn checkpoint(
    engine: &impl Engine,
    cp: NewCheckpoint,
    audit: CheckpointAuditFn,
) -> StoreResult<CheckmarkView> {
    let (cp, audit) = (&cp, &audit);
    let steps = serde_json::to_string(&cp.next_steps).unwrap_or_else(|_| "[]".into());
    let steps = steps.as_str();
    in_unit!(engine, always, |tx| async {
        let insert = Stmt::new(INSERT_ENTRY)
            .bind(&cp.namespace)
            .bind(&cp.agent)
            .bind(cp.at)
            .bind(cp.session_id.as_deref())
            .bind(cp.status.as_str())
            .bind(cp.summary.as_deref())
            .bind(cp.decisions.as_deref())
            .bind(cp.question.as_deref())
            .bind(cp.visibility.as_str())
            .bind(cp.push_sha.as_deref())
            .bind(cp.ci_status.as_str())
            .bind(cp.job_id.as_deref())
            .bind(cp.cost_usd)
            .bind(cp.turns);
        let Some(row) = tx.fetch_optional(insert).await? else {
            return Err(StoreError::Backend("the log entry insert returned no row".into()).into());
        };
        let logged = entry(&row)?;
        let upsert = Stmt::new(UPSERT_CHECKMARK)
            .bind(&cp.namespace)
            .bind(&cp.agent)
            .bind(cp.at)
            .bind(cp.status.as_str())
            .bind(cp.where_it_stopped.as_deref())
            .bind(steps)
            .bind(cp.question.as_deref())
            .bind(logged.id)
            .bind(cp.tests_status.as_str())
            .bind(cp.tested_at)
            .bind(cp.build_status.as_str())
            .bind(cp.built_at)
            .bind(cp.job_id.as_deref());
        tx.execute(upsert).await?;
        crate::audit::insert(&mut *tx, &audit(&logged)).await?;
        written_view(&mut *tx, &cp.namespace, &cp.agent).await
    }
    .await)
}

/// `CheckmarkStore::checkmark`.
pub async fn checkmark(
    engine: &impl Engine,
    namespace: &str,
    agent: &str,
) -> StoreResult<Option<CheckmarkView>> {
    let stmt = Stmt::new(BY_AGENT).bind(namespace).bind(agent);
    Ok(read_all(engine, stmt, view).await?.pop())
}

/// `CheckmarkStore::checkmarks`: by agent.
pub async fn checkmarks(
    engine: &impl Engine,
    namespace: &str,
    limit: usize,
) -> StoreResult<Vec<CheckmarkView>> {
    read_all(
        engine,
        Stmt::new(BY_NAMESPACE).bind(namespace).bind(limit),
        view,
    )
    .await
}

/// `CheckmarkStore::log_entries`: newest first.
pub async fn log_entries(
    engine: &impl Engine,
    namespace: &str,
    agent: &str,
    before: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<LogEntryRow>> {
    read_all(engine, log_stmt(namespace, agent, before, limit), entry).await
}

/// `CheckmarkStore::global_entries`: newest first.
pub async fn global_entries(
    engine: &impl Engine,
    namespace: Option<&str>,
    before: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<LogEntryRow>> {
    read_all(engine, feed_stmt(namespace, before, limit), entry).await
}

/// `CheckmarkStore::log_entry`.
pub async fn log_entry(
    engine: &impl Engine,
    namespace: &str,
    id: i64,
) -> StoreResult<Option<LogEntryRow>> {
    let stmt = Stmt::new(ENTRY_BY_ID).bind(namespace).bind(id);
    Ok(read_all(engine, stmt, entry).await?.pop())
}

/// `CheckmarkStore::promote_entry`: the keyed update (still `project`) and its audit row;
/// `None`, nothing written, when the guard did not hold.
pub async fn promote_entry(
    engine: &impl Engine,
    namespace: &str,
    id: i64,
    audit: AuditEntry,
) -> StoreResult<Option<LogEntryRow>> {
    let audit = &audit;
    in_unit!(engine, Option::is_some, |tx| async {
        let stmt = Stmt::new(PROMOTE_ENTRY)
            .bind(Visibility::Global.as_str())
            .bind(namespace)
            .bind(id)
            .bind(Visibility::Project.as_str());
        let Some(row) = tx.fetch_optional(stmt).await? else {
            return Ok(None);
        };
        let promoted = entry(&row)?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(Some(promoted))
    }
    .await)
}

/// `CheckmarkStore::transition_checkmark`: `None` (nothing written) when the answer or the
/// step's guard did not hold.
pub async fn transition_checkmark(
    engine: &impl Engine,
    t: CheckmarkTransition,
) -> StoreResult<Option<CheckmarkView>> {
    let t = &t;
    in_unit!(engine, Option::is_some, |tx| async {
        if let Some(fill) = &t.answer {
            let stmt = Stmt::new(FILL_ANSWER)
                .bind(&fill.answer)
                .bind(&fill.by)
                .bind(t.at)
                .bind(t.entry_id)
                .bind(&t.namespace)
                .bind(&t.agent);
            if tx.fetch_optional(stmt).await?.is_none() {
                return Ok(None);
            }
        }
        let step = Stmt::new(STEP_CHECKMARK)
            .bind(t.step.to.as_str())
            .bind(t.resume_by.as_ref().map(|_| t.at))
            .bind(t.resume_by.as_deref())
            .bind(&t.namespace)
            .bind(&t.agent)
            .bind(t.step.from.as_str())
            .bind(t.entry_id);
        if tx.fetch_optional(step).await?.is_none() {
            return Ok(None);
        }
        crate::audit::insert(&mut *tx, &t.audit).await?;
        Ok(Some(written_view(&mut *tx, &t.namespace, &t.agent).await?))
    }
    .await)
}

/// `CheckmarkStore::shared_entry`.
pub async fn shared_entry(engine: &impl Engine, key: &str) -> StoreResult<Option<SharedEntry>> {
    let stmt = Stmt::new(format!("{SHARED} WHERE key = $1")).bind(key);
    Ok(read_all(engine, stmt, shared).await?.pop())
}

/// `CheckmarkStore::shared_entries`: by key.
pub async fn shared_entries(engine: &impl Engine, limit: usize) -> StoreResult<Vec<SharedEntry>> {
    let stmt = Stmt::new(format!("{SHARED} ORDER BY key LIMIT $1")).bind(limit);
    read_all(engine, stmt, shared).await
}

/// `CheckmarkStore::set_shared`: the previous entry.
pub async fn set_shared(
    engine: &impl Engine,
    entry: SharedEntry,
    audit: AuditEntry,
) -> StoreResult<Option<SharedEntry>> {
    let (entry, audit) = (&entry, &audit);
    in_unit!(engine, always, |tx| async {
        let lock = format!("{SHARED} WHERE key = $1{}", engine.lock_row());
        let previous = tx.fetch_optional(Stmt::new(lock).bind(&entry.key)).await?;
        let previous = previous.as_ref().map(shared).transpose()?;
        let put = Stmt::new(SHARED_PUT)
            .bind(&entry.key)
            .bind(&entry.value)
            .bind(&entry.set_by)
            .bind(entry.updated_at);
        tx.execute(put).await?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(previous)
    }
    .await)
}

/// `CheckmarkStore::delete_shared`: the deleted entry; `None` (no audit row) when absent.
pub async fn delete_shared(
    engine: &impl Engine,
    key: &str,
    audit: AuditEntry,
) -> StoreResult<Option<SharedEntry>> {
    let audit = &audit;
    in_unit!(engine, Option::is_some, |tx| async {
        let row = tx
            .fetch_optional(Stmt::new(SHARED_DELETE).bind(key))
            .await?;
        let Some(gone) = row.as_ref().map(shared).transpose()? else {
            return Ok(None);
        };
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(Some(gone))
    }
    .await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sql_numbers_its_parameters() {
        let sql = |s: Stmt| (s.sql.into_owned(), s.args.len());
        let (log, n) = sql(log_stmt("n", "a", None, 5));
        assert!(log.ends_with("WHERE namespace = $1 AND agent = $2 ORDER BY id DESC LIMIT $3"));
        assert_eq!(n, 3);
        let (log, n) = sql(log_stmt("n", "a", Some(9), 5));
        assert!(log.ends_with("AND agent = $2 AND id < $3 ORDER BY id DESC LIMIT $4"));
        assert_eq!(n, 4);
        let (feed, n) = sql(feed_stmt(None, None, 5));
        assert!(feed.ends_with("WHERE visibility = $1 ORDER BY id DESC LIMIT $2"));
        assert_eq!(n, 2);
        let (feed, n) = sql(feed_stmt(Some("n"), Some(9), 5));
        assert!(feed.ends_with(
            "WHERE visibility = $1 AND namespace = $2 AND id < $3 ORDER BY id DESC LIMIT $4"
        ));
        assert_eq!(n, 4);
    }
}
