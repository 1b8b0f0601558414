//! Group commit on the one writer connection: concurrent write units share one outer
//! `BEGIN IMMEDIATE` transaction and one durable `COMMIT`, each unit under its own savepoint.
//!
//! A unit ([`WriteUnit`]) holds the writer alone while it runs. Its `commit` releases its
//! savepoint and then either commits the batch (no other unit is waiting for the writer, or
//! the batch reached [`MAX_UNITS`] or [`MAX_AGE`]) or hands the writer to the next waiting
//! unit; either way it returns only after the batch's `COMMIT` came back, with that
//! `COMMIT`'s outcome (so an acknowledged unit is durable, `synchronous=FULL`, and a failed
//! `COMMIT` acknowledges none of its units). A unit that fails, is rolled back or is dropped
//! undoes only its own savepoint. The transaction statements are plain SQL: sqlx's own
//! transaction depth stays 0 on the writer, so every path that might leave the connection
//! inside a transaction closes it instead of returning it to the pool.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use capsid_core::ports::{StoreError, StoreResult};
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqlitePool};
use sqlx::{Executor, raw_sql};
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot};

use crate::error::backend;

/// A batch commits once it holds this many units, even with more waiting.
pub(crate) const MAX_UNITS: usize = 64;
/// A batch commits once it has been open this long, even with more units waiting: the bound
/// on how long an early unit of a busy batch waits for its acknowledgement.
pub(crate) const MAX_AGE: Duration = Duration::from_millis(5);
/// Under a page cap ([`Group::set_cap`]) with fewer free pages than this, every unit commits
/// alone: SQLite answers a statement that overruns the cap by rolling back the whole
/// transaction, and batch-mates must not go down with the one unit that overran.
pub(crate) const HEADROOM_PAGES: u64 = 8192;
/// `max_page_count` when nothing set it (SQLite's default ceiling).
const NO_CAP: u64 = u64::MAX;

/// What a unit's acknowledgement carries: the outcome of its batch's `COMMIT`.
type Ack = oneshot::Sender<StoreResult<()>>;

/// The writer's batching state, shared by every clone of the store.
pub(crate) struct Group {
    pool: SqlitePool,
    slot: Arc<Mutex<Slot>>,
    /// Units that asked for the writer and do not hold it yet.
    waiting: Arc<AtomicUsize>,
    /// The writer's `max_page_count` when the store capped it, else [`NO_CAP`].
    cap: Arc<AtomicU64>,
}

/// Who holds the writer holds this (through the mutex guard).
#[derive(Default)]
struct Slot {
    batch: Option<Batch>,
    /// Totals since the store opened.
    counts: CommitCounts,
}

/// How many write units were acknowledged, and in how many durable `COMMIT`s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitCounts {
    /// Units acknowledged (their batch's `COMMIT` succeeded).
    pub units: u64,
    /// Successful batch `COMMIT`s.
    pub commits: u64,
}

/// One open outer transaction on the writer connection.
struct Batch {
    conn: PoolConnection<Sqlite>,
    /// Whether `BEGIN IMMEDIATE` came back: until then the connection's state is unknown.
    begun: bool,
    opened: Instant,
    /// The acknowledgements of the units whose savepoints were released into this batch.
    acks: Vec<Ack>,
}

impl Group {
    /// Batching over `pool`, the writer pool (one connection).
    pub(crate) fn new(pool: SqlitePool) -> Group {
        Group {
            pool,
            slot: Arc::new(Mutex::new(Slot::default())),
            waiting: Arc::new(AtomicUsize::new(0)),
            cap: Arc::new(AtomicU64::new(NO_CAP)),
        }
    }

    /// Records the page cap the writer connection now has (see [`HEADROOM_PAGES`]).
    pub(crate) fn set_cap(&self, pages: u64) {
        self.cap.store(pages, Ordering::SeqCst);
    }

    /// The totals so far (waits for the writer).
    pub(crate) async fn counts(&self) -> CommitCounts {
        self.slot.lock().await.counts
    }

    /// Waits for the writer, joins (or opens) a batch and starts a unit in it.
    pub(crate) async fn begin(&self) -> StoreResult<WriteUnit> {
        let waiter = Waiter::new(self);
        let guard = self.slot.clone().lock_owned().await;
        waiter.arrived();
        let mut unit = WriteUnit {
            held: Some(Held {
                guard,
                waiting: self.waiting.clone(),
                cap: self.cap.clone(),
                unit_open: false,
            }),
        };
        unit.start(&self.pool).await?;
        Ok(unit)
    }
}

/// Counts a unit waiting for the writer; a waiter dropped before it got the writer (its
/// future cancelled) makes sure a batch it was expected to continue still commits.
struct Waiter {
    slot: Arc<Mutex<Slot>>,
    waiting: Arc<AtomicUsize>,
    armed: bool,
}

impl Waiter {
    fn new(group: &Group) -> Waiter {
        group.waiting.fetch_add(1, Ordering::SeqCst);
        Waiter {
            slot: group.slot.clone(),
            waiting: group.waiting.clone(),
            armed: true,
        }
    }

    fn arrived(mut self) {
        self.armed = false;
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if self.waiting.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last waiter left: a holder that handed the writer on may have counted on it.
            let (slot, waiting) = (self.slot.clone(), self.waiting.clone());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let guard = slot.lock_owned().await;
                    settle(guard, &waiting);
                });
            }
        }
    }
}

/// The writer while a unit holds it.
struct Held {
    guard: OwnedMutexGuard<Slot>,
    waiting: Arc<AtomicUsize>,
    cap: Arc<AtomicU64>,
    /// Whether the unit's savepoint is (or may be) open.
    unit_open: bool,
}

/// One unit of write work: a savepoint inside the writer's current batch. Derefs to the
/// writer connection; finish it with [`WriteUnit::commit`] or [`WriteUnit::rollback`].
/// Dropped unfinished, its savepoint is rolled back and the batch goes on without it.
pub(crate) struct WriteUnit {
    /// `Some` from `begin` until `commit`, `rollback` or drop takes it.
    held: Option<Held>,
}

impl std::fmt::Debug for WriteUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteUnit").finish_non_exhaustive()
    }
}

/// Runs `sql` (transaction control, no rows) on `conn`.
async fn control(conn: &mut SqliteConnection, sql: &'static str) -> Result<(), sqlx::Error> {
    conn.execute(raw_sql(sql)).await.map(|_| ())
}

impl WriteUnit {
    fn held(&mut self) -> StoreResult<&mut Held> {
        self.held
            .as_mut()
            .ok_or_else(|| StoreError::Backend("the write unit is already finished".to_owned()))
    }

    fn batch(&mut self) -> StoreResult<&mut Batch> {
        self.held()?
            .guard
            .batch
            .as_mut()
            .ok_or_else(|| StoreError::Backend("the write batch was abandoned".to_owned()))
    }

    /// Opens the batch if there is none, then the unit's savepoint.
    async fn start(&mut self, pool: &SqlitePool) -> StoreResult<()> {
        let held = self.held()?;
        if held.guard.batch.as_ref().is_some_and(|batch| !batch.begun) {
            // A unit cancelled while its `BEGIN IMMEDIATE` was in flight left this behind.
            if let Some(batch) = held.guard.batch.take() {
                abandon(batch, None).await;
            }
        }
        if held.guard.batch.is_none() {
            let conn = pool.acquire().await.map_err(backend)?;
            let batch = held.guard.batch.insert(Batch {
                conn,
                begun: false,
                opened: Instant::now(),
                acks: Vec::new(),
            });
            if let Err(e) = control(&mut batch.conn, "BEGIN IMMEDIATE").await {
                if let Some(batch) = held.guard.batch.take() {
                    abandon(batch, None).await;
                }
                return Err(backend(e));
            }
            batch.begun = true;
        }
        held.unit_open = true;
        let batch = self.batch()?;
        if let Err(e) = control(&mut batch.conn, "SAVEPOINT capsid_unit").await {
            // The outer transaction is in a state this unit cannot vouch for.
            let err = backend(e);
            let held = self.held()?;
            held.unit_open = false;
            if let Some(batch) = held.guard.batch.take() {
                abandon(batch, Some(err.clone())).await;
            }
            return Err(err);
        }
        Ok(())
    }

    /// Keeps the unit's work: releases its savepoint into the batch, then waits until the
    /// batch's `COMMIT` is durable (or failed: then nothing of the batch is acknowledged).
    pub(crate) async fn commit(mut self) -> StoreResult<()> {
        let batch = self.batch()?;
        if let Err(e) = control(&mut batch.conn, "RELEASE capsid_unit").await {
            let err = backend(e);
            self.undo().await;
            if let Some(held) = self.held.take() {
                settle(held.guard, &held.waiting);
            }
            return Err(err);
        }
        let held = self.held()?;
        held.unit_open = false;
        let near_full = match held.cap.load(Ordering::SeqCst) {
            NO_CAP => false,
            cap => {
                let batch = self.batch()?;
                // Unknown counts as near: commit alone.
                sqlx::query_scalar::<_, i64>("PRAGMA page_count")
                    .fetch_one(&mut *batch.conn)
                    .await
                    .map_or(true, |used| {
                        cap.saturating_sub(u64::try_from(used).unwrap_or(0)) < HEADROOM_PAGES
                    })
            }
        };
        let Some(held) = self.held.take() else {
            return Err(StoreError::Backend(
                "the write unit is already finished".to_owned(),
            ));
        };
        // From here to the hand-over there is no await: the unit cannot be cut short
        // between joining the batch and passing the writer on.
        let Held {
            mut guard, waiting, ..
        } = held;
        let (ack, acknowledged) = oneshot::channel();
        let due = match guard.batch.as_mut() {
            Some(batch) => {
                batch.acks.push(ack);
                batch.acks.len() >= MAX_UNITS || batch.opened.elapsed() >= MAX_AGE
            }
            None => {
                return Err(StoreError::Backend(
                    "the write batch was abandoned".to_owned(),
                ));
            }
        };
        if due || near_full || waiting.load(Ordering::SeqCst) == 0 {
            commit_on_task(guard);
        } else {
            drop(guard);
        }
        acknowledged.await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the write was not committed (the writer stopped)".to_owned(),
            ))
        })
    }

    /// Discards the unit's work (its savepoint only); the batch goes on.
    pub(crate) async fn rollback(mut self) -> StoreResult<()> {
        self.undo().await;
        if let Some(held) = self.held.take() {
            settle(held.guard, &held.waiting);
        }
        Ok(())
    }

    /// Rolls the unit's savepoint back; if that fails the batch cannot be trusted and is
    /// abandoned (its units get the error, none is acknowledged).
    async fn undo(&mut self) {
        let Some(held) = self.held.as_mut() else {
            return;
        };
        if !held.unit_open {
            return;
        }
        // Cleared first: a unit cancelled in here must not undo twice (the statements sent
        // run in order on the connection either way).
        held.unit_open = false;
        undo_on(&mut held.guard).await;
    }
}

/// Rolls the current unit's savepoint of `slot`'s batch back, abandoning the batch if that
/// fails.
async fn undo_on(slot: &mut Slot) {
    let Some(batch) = slot.batch.as_mut() else {
        return;
    };
    let undone = async {
        control(&mut batch.conn, "ROLLBACK TO capsid_unit").await?;
        control(&mut batch.conn, "RELEASE capsid_unit").await
    }
    .await;
    if let Err(e) = undone {
        tracing::warn!(error = %e, "a write unit could not be rolled back alone; its batch is abandoned");
        if let Some(batch) = slot.batch.take() {
            abandon(
                batch,
                Some(StoreError::Unavailable(
                    "the write was not committed (a write in the same batch failed)".to_owned(),
                )),
            )
            .await;
        }
    }
}

/// After a unit left the writer without committing the batch: commits it when no one else
/// is waiting to add to it (or it is full), so no released unit waits for nothing.
fn settle(guard: OwnedMutexGuard<Slot>, waiting: &AtomicUsize) {
    let due = guard.batch.as_ref().is_some_and(|batch| {
        waiting.load(Ordering::SeqCst) == 0
            || batch.acks.len() >= MAX_UNITS
            || batch.opened.elapsed() >= MAX_AGE
    });
    if due {
        commit_on_task(guard);
    }
}

/// Commits the batch of `guard` on a task of its own, holding the writer until done: a
/// caller that stops waiting cannot cut the `COMMIT` short and leave the other units of the
/// batch without their answer.
fn commit_on_task(mut guard: OwnedMutexGuard<Slot>) {
    if let Some(batch) = guard.batch.take() {
        tokio::spawn(async move {
            let units = finish(batch).await;
            if units > 0 {
                guard.counts.units += units;
                guard.counts.commits += 1;
            }
            drop(guard);
        });
    }
}

/// Commits `batch` and answers each of its units with the outcome; the connection goes back
/// to the pool, or is closed when the `COMMIT` failed. Returns how many units it
/// acknowledged.
async fn finish(mut batch: Batch) -> u64 {
    if batch.acks.is_empty() {
        // Nothing was kept: nothing to make durable.
        match control(&mut batch.conn, "ROLLBACK").await {
            Ok(()) => drop(batch.conn),
            Err(_) => abandon(batch, None).await,
        }
        return 0;
    }
    match control(&mut batch.conn, "COMMIT").await {
        Ok(()) => {
            let units = batch.acks.len() as u64;
            for ack in batch.acks.drain(..) {
                let _ = ack.send(Ok(()));
            }
            drop(batch.conn);
            units
        }
        Err(e) => {
            let err = backend(e);
            abandon(batch, Some(err)).await;
            0
        }
    }
}

/// Gives up on `batch`: answers every unit with `err` (none is acknowledged), rolls back
/// what SQLite still holds and closes the connection (the pool opens a fresh one).
async fn abandon(mut batch: Batch, err: Option<StoreError>) {
    let err = err.unwrap_or_else(|| {
        StoreError::Unavailable("the write was not committed (the batch failed)".to_owned())
    });
    for ack in batch.acks.drain(..) {
        let _ = ack.send(Err(err.clone()));
    }
    let _ = control(&mut batch.conn, "ROLLBACK").await;
    let _ = batch.conn.close().await;
}

impl Drop for WriteUnit {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // Cancelled or dropped unfinished: undo this unit only, then let the batch
                // commit if no one else will.
                runtime.spawn(async move {
                    let Held {
                        mut guard,
                        waiting,
                        unit_open,
                        ..
                    } = held;
                    if unit_open {
                        undo_on(&mut guard).await;
                    }
                    settle(guard, &waiting);
                });
            }
            Err(_) => {
                // No runtime to undo on: the whole batch is dropped unacknowledged and its
                // connection closed with it (SQLite rolls back an open transaction on close).
                let Held { mut guard, .. } = held;
                if let Some(batch) = guard.batch.take() {
                    drop(batch.acks);
                    drop(batch.conn.detach());
                }
            }
        }
    }
}

impl Deref for WriteUnit {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        match self
            .held
            .as_ref()
            .and_then(|held| held.guard.batch.as_ref())
        {
            Some(batch) => &batch.conn,
            // `held` is `Some` and holds its batch from `begin` until `commit`, `rollback`
            // or drop, each of which consumes the unit.
            None => unreachable!("a write unit is used only while it holds the writer"),
        }
    }
}

impl DerefMut for WriteUnit {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        match self
            .held
            .as_mut()
            .and_then(|held| held.guard.batch.as_mut())
        {
            Some(batch) => &mut batch.conn,
            None => unreachable!("a write unit is used only while it holds the writer"),
        }
    }
}

#[cfg(test)]
mod tests;
