//! The documents area: the twelve document tools (`read.rs`: list, read, brief, backlinks,
//! find, search, namespaces, history; `write.rs`: write, delete, move, restore) and the
//! surfaces that read documents outside tools (`surfaces.rs`: resources, prompts,
//! completions). Its handlers see only the document and namespace ports and the clock.

mod read;
mod surfaces;
mod write;

pub use read::*;
pub use surfaces::{
    CompletionRef, PromptArgument, PromptListing, RESOURCE_TEMPLATE, RenderedPrompt,
    ResourceListing, ResourcePage, parse_resource_uri,
};
pub use write::*;

use super::Area;
use crate::ports::{DocumentStore, NamespaceStore};
use crate::time::Clock;

/// What the documents area's handlers reach.
#[derive(Clone, Copy)]
pub struct DocumentsCx<'a> {
    /// Documents, versions and links.
    pub docs: &'a dyn DocumentStore,
    /// Registered namespaces.
    pub namespaces: &'a dyn NamespaceStore,
    /// Now.
    pub clock: &'a dyn Clock,
}

impl Area for DocumentsCx<'_> {
    fn clock(&self) -> &dyn Clock {
        self.clock
    }
}
