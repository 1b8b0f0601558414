//! The document port's SQL both engines share: point reads, listings, versions and edges
//! ([`read`]). Search, the write's index maintenance and SQLite's read cache are still each
//! adapter's.

pub mod gather;
pub mod read;

pub use gather::{DANGLING_EDGES, EDGES, edge, edges_on, page_documents};

pub use read::{
    DOCUMENT, LAST_ACTOR, SUMMARY_COLUMNS, VERSION, VERSIONS, backlinks, backlinks_on, document,
    document_row, last_actor, list_documents, list_sql, search_hit, summary, version, versions,
    with_actor,
};
