//! The document port: the SQL both engines share (point reads, listings, versions and
//! backlinks in [`read`]; a packet's edges and the resource pages in [`gather`]) and
//! [`DocumentEngine`], what each adapter still does its own way: search, globbing, SQLite's
//! read cache, the packet's snapshot and selections, and the writes.

use async_trait::async_trait;
use capsid_core::docs::document::DocumentSummary;
use capsid_core::ports::{
    AuditEntry, DocWithActor, DocumentWrite, EdgeTuple, Packet, PacketRows, SearchHit, StoreResult,
    WriteGuard, WriteReceipt,
};
use capsid_core::time::Timestamp;

use crate::engine::Engine;

pub mod gather;
pub mod read;

pub use gather::{DANGLING_EDGES, EDGES, edge, edges_on, page_documents};

pub use read::{
    DOCUMENT, LAST_ACTOR, SUMMARY_COLUMNS, VERSION, VERSIONS, backlinks, backlinks_on, document,
    document_row, last_actor, list_documents, list_sql, search_hit, summary, version, versions,
    with_actor,
};

/// What the documents port does differently on each engine, which each adapter implements
/// beside its [`Engine`]; [`sql_ports!`](crate::sql_ports) implements `DocumentStore` from
/// these and this module's shared functions.
#[async_trait]
pub trait DocumentEngine: Engine {
    /// `DocumentStore::document_with_actor`: SQLite answers from its read cache.
    async fn document_with_actor(
        &self,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<DocWithActor>>;

    /// `DocumentStore::find_documents`: SQLite's `GLOB`; Postgres's glob as a regex with a
    /// prefix range, under a statement timeout.
    async fn find_documents(
        &self,
        namespace: Option<&str>,
        glob: &str,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>>;

    /// `DocumentStore::search_documents`: FTS5; `tsvector` and GIN.
    async fn search_documents(
        &self,
        query: &str,
        namespace: Option<&str>,
        doc_type: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>>;

    /// `DocumentStore::documents_exist`: Postgres asks once through `unnest`.
    async fn documents_exist(&self, refs: &[(String, String)]) -> StoreResult<Vec<bool>>;

    /// `DocumentStore::read_packet`: each engine's snapshot and selections.
    async fn read_packet(&self, packet: &Packet) -> StoreResult<PacketRows>;

    /// `DocumentStore::write_document`: SQLite under its one writer (with its FTS5
    /// triggers); Postgres's one-statement upsert under row locks, retried.
    async fn write_document(
        &self,
        write: DocumentWrite,
        guard: WriteGuard,
        audit: Vec<AuditEntry>,
    ) -> StoreResult<WriteReceipt>;

    /// `DocumentStore::delete_document`.
    async fn delete_document(
        &self,
        namespace: &str,
        path: &str,
        expected_body: Option<&str>,
        audit: AuditEntry,
    ) -> StoreResult<Vec<EdgeTuple>>;

    /// `DocumentStore::move_document`.
    async fn move_document(
        &self,
        namespace: &str,
        from: &str,
        to: &str,
        expected_body: Option<&str>,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<u64>;

    /// `DocumentStore::archive_documents`.
    async fn archive_documents(
        &self,
        namespace: &str,
        moves: &[(String, String)],
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<u64>;
}
