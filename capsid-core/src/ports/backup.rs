//! The store side of backups: export every table from one read transaction to a sink, page by
//! page; import a dump into an empty store in one write transaction, pulling rows from a
//! source; count rows; prune history once a dump is safe. The store owns both transactions and
//! the core owns the bytes: the sink and source are the core's, so no table ever sits in
//! memory and no rule sits in SQL.

use async_trait::async_trait;

use super::{StoreError, StoreResult};
use crate::backup::retention::PruneCutoffs;
use crate::backup::rows::Row;
use crate::backup::tables::TableSpec;

/// Why a transfer stopped: the core's side (the sink or source refused or failed) or the
/// store's. Either way nothing was committed by an import.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransferError {
    /// The sink or source stopped the transfer; the message is the core's.
    #[error("{0}")]
    Peer(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where an export goes, table by table.
#[async_trait]
pub trait DumpSink: Send {
    /// A table begins.
    async fn begin_table(&mut self, table: &'static TableSpec) -> Result<(), String>;
    /// The next page of its rows, in key order.
    async fn rows(&mut self, rows: Vec<Row>) -> Result<(), String>;
    /// The table is done.
    async fn end_table(&mut self) -> Result<(), String>;
}

/// Where an import comes from, table by table.
#[async_trait]
pub trait RowSource: Send {
    /// The next table to import, or `None` when the dump is done.
    async fn next_table(&mut self) -> Result<Option<&'static TableSpec>, String>;
    /// The next page of the current table's rows, or `None` when it is done.
    async fn next_rows(&mut self) -> Result<Option<Vec<Row>>, String>;
}

/// Rows removed by [`BackupStore::prune_history`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Version snapshots.
    pub versions: u64,
    /// Audit rows.
    pub audit: u64,
    /// Replay-cache rows.
    pub nonces: u64,
}

/// Backups and restore, store side.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait BackupStore: Send + Sync {
    /// `sqlite` or `postgres`.
    fn engine(&self) -> &'static str;
    /// Streams every row of `tables` (in order, each in key order, pages of at most
    /// `page_rows`) to `sink`, all from one read transaction: one consistent snapshot.
    async fn export_tables(
        &self,
        tables: &[&'static TableSpec],
        page_rows: usize,
        sink: &mut dyn DumpSink,
    ) -> Result<(), TransferError>;
    /// The row count of each of `tables`, in order.
    async fn count_rows(&self, tables: &[&'static TableSpec]) -> StoreResult<Vec<u64>>;
    /// Imports every table `source` yields, rows as given (ids kept), in one write
    /// transaction; identity counters move past the imported ids. Any failure of the source
    /// or the store rolls everything back.
    async fn import_tables(&self, source: &mut dyn RowSource) -> Result<u64, TransferError>;
    /// Deletes versions, audit rows and replay-cache rows older than `cutoffs`, in one
    /// transaction.
    async fn prune_history(&self, cutoffs: PruneCutoffs) -> StoreResult<Pruned>;
}
