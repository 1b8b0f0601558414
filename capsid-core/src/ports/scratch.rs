//! The throwaway-store port: a migrated, empty store that nothing else uses, for a restore
//! rehearsal to restore into, and its removal afterwards. The core cannot make a store (no
//! IO); the process hosting it (the `capsid` binary) makes a temporary SQLite file or a scratch
//! database on the Postgres server it runs on.

use std::sync::Arc;

use async_trait::async_trait;

use super::Store;

/// One throwaway store, and the name its maker removes it by.
pub struct ScratchStore {
    /// The store, migrated and empty.
    pub store: Arc<dyn Store>,
    /// What [`ScratchStores::discard`] removes (a folder, a database name).
    pub name: String,
}

/// Makes and removes throwaway stores.
#[async_trait]
pub trait ScratchStores: Send + Sync {
    /// A new migrated, empty store (the error names what failed).
    async fn create(&self) -> Result<ScratchStore, String>;
    /// Removes the store `name` (its handle has been dropped). A failure is the maker's to
    /// report (a leftover scratch store is no failure of the rehearsal's verdict).
    async fn discard(&self, name: &str);
}
