//! What an adapter gives the shared SQL: reads on its read connections, a unit of work's
//! transaction (SQLite: a savepoint in the group commit's batch on the one writer; Postgres:
//! a transaction from the pool), which errors are worth running the unit again for
//! (Postgres: a serialization failure or deadlock), and its error translation (constraint
//! names, outages).

use async_trait::async_trait;
use capsid_core::ports::{AgentRow, DocumentWrite, PoolUsage, StoreError, StoreResult, WriteGuard};
use futures::future::BoxFuture;

use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::Stmt;

/// How many times a unit of work runs at most when it keeps failing in a retryable way.
pub const MAX_ATTEMPTS: u32 = 5;

/// Why a unit of work stopped: the driver failed (translated by the engine, and retried
/// when the engine says so), or the unit refused on its own terms.
#[derive(Debug)]
pub enum TxError {
    /// A driver error.
    Db(sqlx::Error),
    /// A refusal or error already in the core's words.
    Store(StoreError),
}

impl From<sqlx::Error> for TxError {
    fn from(error: sqlx::Error) -> Self {
        TxError::Db(error)
    }
}

impl From<StoreError> for TxError {
    fn from(error: StoreError) -> Self {
        TxError::Store(error)
    }
}

/// A unit of work's result.
pub type TxResult<T> = Result<T, TxError>;

/// An open unit of work: its statements run on it, then it commits or rolls back whole.
pub trait Tx: Exec {
    /// Makes the unit's writes durable (and visible).
    fn commit(self: Box<Self>) -> BoxFuture<'static, StoreResult<()>>;
    /// Undoes the unit's writes.
    fn rollback(self: Box<Self>) -> BoxFuture<'static, StoreResult<()>>;
    /// Writes a document in this unit as the documents port writes one (its guard checked,
    /// the live row snapshotted, the row upserted, its edges replaced), without audit rows:
    /// the document write is still each adapter's own ([`crate::documents::DocumentEngine`]:
    /// SQLite's FTS5 triggers, Postgres's `tsvector` column), so a unit of another port that
    /// writes a document asks its adapter.
    fn write_document<'a>(
        &'a mut self,
        write: &'a DocumentWrite,
        guard: &'a WriteGuard,
    ) -> BoxFuture<'a, TxResult<()>>;
}

/// An engine: the adapter's connections and its dialect's few differences.
#[async_trait]
pub trait Engine: Send + Sync {
    /// Runs `stmt` on a read connection; every row.
    async fn read(&self, stmt: Stmt) -> StoreResult<Vec<Row>>;

    /// Opens a unit of work.
    async fn begin(&self) -> StoreResult<Box<dyn Tx>>;

    /// Whether a unit that failed with `error` should run again from the start (a
    /// transaction a concurrent one made fail). Default: never.
    fn retryable(&self, error: &sqlx::Error) -> bool {
        let _ = error;
        false
    }

    /// What a read of a row the unit then updates ends with, so that a concurrent unit
    /// waits for it: `" FOR UPDATE"` on Postgres; nothing where one writer already
    /// serializes every unit (SQLite).
    fn lock_row(&self) -> &'static str {
        ""
    }

    /// The agent a bearer key's hash names: every authenticated request asks, so an engine
    /// with a read cache answers from it (SQLite). Default: the query itself.
    async fn agent_by_key_hash_cached(&self, key_hash: &str) -> StoreResult<Option<AgentRow>>
    where
        Self: Sized,
    {
        crate::agents::agent_by_key_hash(self, key_hash).await
    }

    /// How full the engine's connection pools are, for `/metrics`.
    fn pool_usage(&self) -> Vec<PoolUsage>;

    /// A driver error in the core's words (a unique violation as the conflict it means, an
    /// unreachable database as unavailable).
    fn translate(&self, error: sqlx::Error) -> StoreError;
}

/// `keep` for units whose every `Ok` commits.
pub fn always<T>(_: &T) -> bool {
    true
}

/// Commits `tx` when `result` is an `Ok` that `keep` accepts; rolls it back otherwise.
pub async fn finish<T>(
    tx: Box<dyn Tx>,
    result: TxResult<T>,
    keep: impl FnOnce(&T) -> bool,
) -> TxResult<T> {
    match result {
        Ok(value) if keep(&value) => {
            tx.commit().await?;
            Ok(value)
        }
        Ok(value) => {
            tx.rollback().await?;
            Ok(value)
        }
        Err(error) => {
            // The unit's own error is the one to report; a failed rollback leaves nothing
            // committed either way.
            let _ = tx.rollback().await;
            Err(error)
        }
    }
}

/// Runs `attempt` (which opens its own unit with [`Engine::begin`] and finishes it) until
/// it succeeds, refuses, or fails in a way the engine does not retry; at most
/// [`MAX_ATTEMPTS`] times.
pub async fn unit<'a, T>(
    engine: &impl Engine,
    mut attempt: impl FnMut() -> BoxFuture<'a, TxResult<T>>,
) -> StoreResult<T> {
    let mut attempts = 1;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(TxError::Db(e)) if attempts < MAX_ATTEMPTS && engine.retryable(&e) => {
                attempts += 1;
            }
            Err(TxError::Db(e)) => return Err(engine.translate(e)),
            Err(TxError::Store(e)) => return Err(e),
        }
    }
}

/// Runs `$work` (an expression that may use `$tx`, the unit's open transaction) as one unit of
/// work on `$engine`: begun, then committed when `$keep` accepts its `Ok` value and rolled back
/// otherwise, the whole run again when the engine retries ([`unit`], [`finish`]).
macro_rules! in_unit {
    ($engine:ident, $keep:expr, |$tx:ident| $work:expr) => {
        $crate::engine::unit($engine, || {
            Box::pin(async move {
                let mut $tx = $engine.begin().await?;
                let result: $crate::engine::TxResult<_> = $work;
                $crate::engine::finish($tx, result, $keep).await
            })
        })
        .await
    };
}
pub(crate) use in_unit;

/// Reads with `engine` and maps every row.
pub async fn read_all<T>(
    engine: &impl Engine,
    stmt: Stmt,
    map: impl Fn(&Row) -> Result<T, sqlx::Error>,
) -> StoreResult<Vec<T>> {
    let rows = engine.read(stmt).await?;
    crate::row::all(&rows, map).map_err(|e| engine.translate(e))
}
