//! The maintenance area: `lint` (the consolidation loop and the truth report, `lint.rs`) and
//! the namespace tools (`namespaces.rs`). Lint compares canon with the primary repository's
//! tree, so its context carries the repo area's.

mod lint;
mod namespaces;

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
}

impl Area for MaintenanceCx<'_> {
    fn clock(&self) -> &dyn Clock {
        self.clock
    }
}

#[cfg(test)]
mod tests;
