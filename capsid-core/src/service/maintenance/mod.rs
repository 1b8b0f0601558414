//! The maintenance area: `lint` (the consolidation loop and the truth report, `lint.rs`),
//! the namespace tools (`namespaces.rs`) and a backup on demand (`backup.rs`). Lint compares
//! canon with the primary repository's tree, so its context carries the repo area's.

mod backup;
mod lint;
mod namespaces;

pub use backup::*;
pub use lint::*;
pub use namespaces::*;

use super::Area;
use super::repo::RepoCx;
use crate::ports::{DocumentStore, NamespaceStore};
use crate::time::Clock;

/// What the maintenance area's handlers reach.
#[derive(Clone, Copy)]
pub struct MaintenanceCx<'a> {
    /// Documents, versions and links.
    pub docs: &'a dyn DocumentStore,
    /// Registered namespaces.
    pub namespaces: &'a dyn NamespaceStore,
    /// The repo area, for the primary repository's tree.
    pub repo: RepoCx<'a>,
    /// Now.
    pub clock: &'a dyn Clock,
    /// The backup run (the service's own maintenance, reached only through this).
    pub backups: &'a dyn BackupRunner,
}

impl Area for MaintenanceCx<'_> {
    fn clock(&self) -> &dyn Clock {
        self.clock
    }
}

#[cfg(test)]
mod tests;
