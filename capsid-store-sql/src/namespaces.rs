//! The namespace port: registered namespaces with their unconsolidated counts, registration
//! and the keyed repos and runner updates, each change audited in its unit of work. The row
//! a keyed update reads is locked the engine's way ([`Engine::lock_row`]).

use capsid_core::ports::{
    AuditEntry, NamespaceBudget, NamespaceRow, NamespaceSpend, StoreError, StoreResult,
};
use capsid_core::time::Timestamp;

use crate::engine::in_unit;
use crate::engine::{Engine, TxError, TxResult, always, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::{Stmt, ToArg};

/// Namespaces with the count of their `episodic`/`source` documents not under `archive/`
/// (a correlated count on the `(namespace, type)` index; `substr` compares the prefix
/// exactly and alike on both engines, where `LIKE` folds case on SQLite).
const SELECT: &str = "SELECT n.namespace, n.repos, n.created_at, n.runner, n.monthly_budget_usd, \
     (SELECT COUNT(*) FROM documents d WHERE d.namespace = n.namespace \
      AND d.type IN ('episodic', 'source') AND substr(d.path, 1, 8) <> 'archive/') AS unconsolidated \
     FROM namespaces n";
const EXISTS: &str = "SELECT COUNT(*) AS n FROM namespaces WHERE namespace = $1";
const REGISTER: &str = "INSERT INTO namespaces (namespace, repos, created_at) VALUES ($1, $2, $3) \
     ON CONFLICT (namespace) DO NOTHING RETURNING namespace";

fn namespace_row(row: &Row) -> Result<NamespaceRow, sqlx::Error> {
    Ok(NamespaceRow {
        namespace: row.text("namespace")?,
        repos: row.opt_text("repos")?,
        created_at: row.time("created_at")?,
        unconsolidated: row.count("unconsolidated")?,
        runner: row.opt_text("runner")?,
        monthly_budget_usd: row.opt_real("monthly_budget_usd")?,
    })
}

fn not_registered(name: &str) -> TxError {
    StoreError::NotFound(format!("namespace '{name}' is not registered")).into()
}

/// `NamespaceStore::namespaces`.
pub async fn namespaces(engine: &impl Engine) -> StoreResult<Vec<NamespaceRow>> {
    let sql = format!("{SELECT} ORDER BY n.namespace");
    read_all(engine, Stmt::new(sql), namespace_row).await
}

/// `NamespaceStore::namespace`.
pub async fn namespace(engine: &impl Engine, name: &str) -> StoreResult<Option<NamespaceRow>> {
    let sql = format!("{SELECT} WHERE n.namespace = $1");
    Ok(read_all(engine, Stmt::new(sql).bind(name), namespace_row)
        .await?
        .pop())
}

/// `NamespaceStore::namespace_runner`: the runner column alone, by key.
pub async fn namespace_runner(engine: &impl Engine, name: &str) -> StoreResult<Option<String>> {
    let stmt = Stmt::new("SELECT runner FROM namespaces WHERE namespace = $1").bind(name);
    let found = read_all(engine, stmt, |r| r.opt_text("runner")).await?;
    Ok(found.into_iter().next().flatten())
}

/// `NamespaceStore::namespace_exists`: the key only.
pub async fn namespace_exists(engine: &impl Engine, name: &str) -> StoreResult<bool> {
    let found = read_all(engine, Stmt::new(EXISTS).bind(name), |r| r.count("n")).await?;
    Ok(found.first().is_some_and(|n| *n > 0))
}

/// `NamespaceStore::register_namespace`: `Conflict` when it exists.
pub async fn register_namespace(
    engine: &impl Engine,
    name: &str,
    repos_json: &str,
    at: Timestamp,
    audit: AuditEntry,
) -> StoreResult<()> {
    let audit = &audit;
    in_unit!(engine, always, |tx| async {
        let stmt = Stmt::new(REGISTER).bind(name).bind(repos_json).bind(at);
        if tx.fetch_optional(stmt).await?.is_none() {
            return Err(
                StoreError::Conflict(format!("namespace '{name}' is already registered")).into(),
            );
        }
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(())
    }
    .await)
}

/// Replaces `column` (`repos`, `runner` or `monthly_budget_usd`) of a registered namespace,
/// returning what it held (read as `read`): the row read locked, then written, then
/// audited, in one unit.
async fn replace<T: ToArg>(
    engine: &impl Engine,
    tx: &mut dyn Exec,
    column: &'static str,
    name: &str,
    value: T,
    audit: &AuditEntry,
    read: fn(&Row) -> Result<T, sqlx::Error>,
) -> TxResult<T> {
    let sql = format!(
        "SELECT {column} AS previous FROM namespaces WHERE namespace = $1{}",
        engine.lock_row()
    );
    let Some(row) = tx.fetch_optional(Stmt::new(sql).bind(name)).await? else {
        return Err(not_registered(name));
    };
    let previous = read(&row)?;
    let write = format!("UPDATE namespaces SET {column} = $2 WHERE namespace = $1");
    tx.execute(Stmt::new(write).bind(name).bind(value)).await?;
    crate::audit::insert(tx, audit).await?;
    Ok(previous)
}

fn previous_text(row: &Row) -> Result<Option<String>, sqlx::Error> {
    row.opt_text("previous")
}

/// `NamespaceStore::update_namespace`: the previous repos JSON; `NotFound` when unknown.
pub async fn update_namespace(
    engine: &impl Engine,
    name: &str,
    repos_json: &str,
    audit: AuditEntry,
) -> StoreResult<Option<String>> {
    let audit = &audit;
    in_unit!(engine, always, |tx| replace(
        engine,
        &mut *tx,
        "repos",
        name,
        Some(repos_json.to_owned()),
        audit,
        previous_text
    )
    .await)
}

/// `NamespaceStore::set_namespace_runner`: the previous runner JSON; `NotFound` when unknown.
pub async fn set_namespace_runner(
    engine: &impl Engine,
    name: &str,
    runner_json: Option<String>,
    audit: AuditEntry,
) -> StoreResult<Option<String>> {
    let (audit, runner) = (&audit, &runner_json);
    in_unit!(engine, always, |tx| replace(
        engine,
        &mut *tx,
        "runner",
        name,
        runner.clone(),
        audit,
        previous_text
    )
    .await)
}

/// `NamespaceStore::set_namespace_budget`: the previous budget; `NotFound` when unknown.
pub async fn set_namespace_budget(
    engine: &impl Engine,
    name: &str,
    budget_usd: Option<f64>,
    audit: AuditEntry,
) -> StoreResult<Option<f64>> {
    let audit = &audit;
    in_unit!(engine, always, |tx| replace(
        engine,
        &mut *tx,
        "monthly_budget_usd",
        name,
        budget_usd,
        audit,
        |row| row.opt_real("previous")
    )
    .await)
}

/// The ledger's calls summed per namespace from those recorded at or after `$1` (the index
/// `job_calls_spend`, read alone), in micro-dollars.
const SPEND: &str = "SELECT namespace, CAST(SUM(cost_micros) AS BIGINT) AS spent_micros \
     FROM job_calls WHERE recorded_at >= $1";

/// `NamespaceStore::spend_since`.
pub async fn spend_since(
    engine: &impl Engine,
    since: Timestamp,
) -> StoreResult<Vec<NamespaceSpend>> {
    let sql = format!("{SPEND} GROUP BY namespace ORDER BY namespace");
    read_all(engine, Stmt::new(sql).bind(since), |r| {
        Ok(NamespaceSpend {
            namespace: r.text("namespace")?,
            spent_usd: dollars(r.int("spent_micros")?),
        })
    })
    .await
}

/// Stored micro-dollars as dollars (never negative: the core writes only `Usd`).
pub fn dollars(micros: i64) -> f64 {
    crate::jobs::micros(micros).dollars()
}

/// A namespace's own budget and the ledger's calls of the namespace recorded at or after
/// `$2`, in one read (the index `job_calls_spend`, read alone), in micro-dollars.
pub const BUDGET: &str = "SELECT n.monthly_budget_usd, \
     (SELECT CAST(COALESCE(SUM(c.cost_micros), 0) AS BIGINT) FROM job_calls c \
      WHERE c.namespace = n.namespace AND c.recorded_at >= $2) AS spent_micros \
     FROM namespaces n WHERE n.namespace = $1";

/// `NamespaceStore::namespace_budget`.
pub async fn namespace_budget(
    engine: &impl Engine,
    name: &str,
    since: Timestamp,
) -> StoreResult<Option<NamespaceBudget>> {
    let stmt = Stmt::new(BUDGET).bind(name).bind(since);
    let found = read_all(engine, stmt, |r| {
        Ok(NamespaceBudget {
            budget_usd: r.opt_real("monthly_budget_usd")?,
            spent_usd: dollars(r.int("spent_micros")?),
        })
    })
    .await?;
    Ok(found.first().copied())
}
