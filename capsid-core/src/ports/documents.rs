//! Document and namespace ports: reads the tools need, and the atomic units of work that
//! change documents (write, delete, move, archive), each one transaction with its audit rows.

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::docs::document::{Document, DocumentSummary};
use crate::docs::links::Link;
use crate::time::Timestamp;

/// Filters for `list`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocFilter {
    /// Only this namespace.
    pub namespace: Option<String>,
    /// Only this type.
    pub doc_type: Option<String>,
    /// Only this status.
    pub status: Option<String>,
}

/// A search hit: the row's summary and a snippet with `[`/`]` around matched terms.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct SearchHit {
    /// Row id.
    pub id: i64,
    /// Namespace.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Title.
    pub title: Option<String>,
    /// Type.
    #[serde(rename = "type")]
    pub doc_type: String,
    /// Status.
    pub status: String,
    /// Last write.
    pub updated_at: Timestamp,
    /// Matched text with `[`/`]` marks and ` ... ` elisions.
    pub snippet: String,
}

/// One version snapshot, without its body.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct VersionSummary {
    /// Version id.
    pub id: i64,
    /// When the snapshot was taken.
    pub snapshot_at: Timestamp,
    /// Title at that time.
    pub title: Option<String>,
    /// Body length in bytes (UTF-8).
    pub bytes: u64,
}

/// One version snapshot with its content and metadata.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct VersionRow {
    /// Version id.
    pub id: i64,
    /// The document's row id at the time.
    pub document_id: i64,
    /// Namespace.
    pub namespace: String,
    /// Path at the time.
    pub path: String,
    /// Title.
    pub title: Option<String>,
    /// Body.
    pub body: Option<String>,
    /// Type at the time.
    #[serde(rename = "type")]
    pub doc_type: Option<String>,
    /// Status at the time.
    pub status: Option<String>,
    /// Tags at the time.
    pub tags: Option<String>,
    /// When the snapshot was taken.
    pub snapshot_at: Timestamp,
}

/// Typed edges out of and into one document, sorted by type, namespace, path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Backlinks {
    /// `(type, to_ns, to_path)`.
    pub outgoing: Vec<(String, String, String)>,
    /// `(type, from_ns, from_path)`.
    pub incoming: Vec<(String, String, String)>,
}

/// A document together with the actor of its newest audit row (the brief's input row).
pub type DocWithActor = crate::docs::brief::BriefSource;

/// Which document types a [`Selection`] takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kinds {
    /// Every type.
    Any,
    /// Only these types.
    Only(Vec<String>),
    /// Every type but these.
    Except(Vec<String>),
}

/// Which paths a [`Selection`] takes, by prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prefix {
    /// Every path.
    Any,
    /// Only paths starting with it.
    Inside(String),
    /// Only paths not starting with it.
    Outside(String),
}

/// The order of a [`Selection`]'s rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// By path.
    Path,
    /// Oldest created first.
    OldestFirst,
    /// Newest update first.
    NewestUpdateFirst,
}

/// Some of one namespace's documents, as a packet reads them. The core decides which (the
/// brief's open tasks, lint's unconsolidated material); the store only filters and orders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The namespace.
    pub namespace: String,
    /// Which types.
    pub kinds: Kinds,
    /// Which paths.
    pub prefix: Prefix,
    /// Leave out rows with this status.
    pub status_not: Option<String>,
    /// Leave out these paths of the namespace.
    pub except_paths: Vec<String>,
    /// Row order.
    pub order: Order,
    /// At most this many rows.
    pub limit: Option<usize>,
}

/// A packet: named documents, selections, the links of some documents and the edges touching
/// a namespace, all read from one snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    /// Documents by `(namespace, path)`.
    pub documents: Vec<(String, String)>,
    /// Selections.
    pub selections: Vec<Selection>,
    /// Documents whose typed links to read, by `(namespace, path)`.
    pub links_of: Vec<(String, String)>,
    /// The namespace whose edges (and dangling edges) to read.
    pub edges_of: Option<String>,
}

/// An edge as `(type, from_ns, from_path, to_ns, to_path)`.
pub type EdgeTuple = (String, String, String, String, String);

/// What a [`Packet`] read, in the request's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketRows {
    /// One per requested document (`None`: absent), each with its last actor.
    pub documents: Vec<Option<DocWithActor>>,
    /// One list per selection, each row with its last actor.
    pub selections: Vec<Vec<DocWithActor>>,
    /// One per `links_of` document.
    pub links: Vec<Backlinks>,
    /// Every edge with either endpoint in `edges_of`, sorted.
    pub edges: Vec<EdgeTuple>,
    /// Those edges whose other endpoint (or either endpoint) is missing, sorted.
    pub dangling_edges: Vec<EdgeTuple>,
}

/// A namespace row with its unconsolidated count.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct NamespaceRow {
    /// Name.
    pub namespace: String,
    /// JSON text `[{repo, label}]`.
    pub repos: Option<String>,
    /// When registered.
    pub created_at: Timestamp,
    /// `episodic`/`source` documents not under `archive/` (status ignored).
    pub unconsolidated: u64,
    /// The runner settings for agent hosts (the core's JSON), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// Its own monthly budget in US dollars, when set (else the server's default applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monthly_budget_usd: Option<f64>,
}

/// A namespace's own budget and its spend since a given instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NamespaceBudget {
    /// Its own monthly budget in US dollars, when set.
    pub budget_usd: Option<f64>,
    /// The sum of its outcomes' reported `cost_usd` since the instant.
    pub spent_usd: f64,
}

/// What one namespace's finished jobs cost since a given instant.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NamespaceSpend {
    /// The namespace.
    pub namespace: String,
    /// The sum of its outcomes' reported `cost_usd`.
    pub spent_usd: f64,
}

/// A document change: the fields to set. `None` keeps the stored value (or takes the default
/// on insert: type `note`, status `published`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentWrite {
    /// Namespace.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// New title.
    pub title: Option<String>,
    /// New body.
    pub body: Option<String>,
    /// New type.
    pub doc_type: Option<String>,
    /// New status.
    pub status: Option<String>,
    /// New tags.
    pub tags: Option<String>,
    /// `Some` replaces every outgoing edge of the document (`Some(vec![])` clears them);
    /// `None` leaves edges alone.
    pub links: Option<Vec<Link>>,
    /// The write time (`updated_at`, and `created_at` on insert).
    pub at: Timestamp,
}

/// The commit-time guard of a document write. A guard that fails aborts the whole unit of
/// work with [`super::StoreError::Conflict`] (or `NotFound` for a vanished row); nothing is
/// written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteGuard {
    /// The row must not exist ("create collision" otherwise).
    Create,
    /// The row must exist ("deleted in flight" otherwise); with `expected_body`, its body must
    /// still equal it byte for byte (an `if_match`, or a human's confirmation going stale).
    Update {
        /// The body the caller's decision was based on.
        expected_body: Option<String>,
    },
    /// Insert or update, whichever applies (mirror documents the server owns).
    Upsert,
}

/// What a document write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteReceipt {
    /// Whether the row was inserted.
    pub created: bool,
    /// Whether the prior row was snapshotted into `document_versions`.
    pub snapshotted: bool,
    /// The row as committed.
    pub document: Document,
}

/// Documents: reads and atomic changes.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait DocumentStore: Send + Sync {
    /// One document.
    async fn document(&self, namespace: &str, path: &str) -> StoreResult<Option<Document>>;
    /// The actor of the newest audit row for `(namespace, path)`.
    async fn last_actor(&self, namespace: &str, path: &str) -> StoreResult<Option<String>>;
    /// One document with the actor of its newest audit row, in one statement (what `read`
    /// returns): `None` when the document does not exist.
    async fn document_with_actor(
        &self,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<DocWithActor>>;
    /// Documents matching `filter`, ordered by namespace, path; at most `limit` rows.
    async fn list_documents(
        &self,
        filter: &DocFilter,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>>;
    /// Documents whose path matches `glob` with SQLite `GLOB` semantics (case-sensitive `*`,
    /// `?`, `[...]`), ordered by namespace, path; at most `limit` rows.
    async fn find_documents(
        &self,
        namespace: Option<&str>,
        glob: &str,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>>;
    /// Full-text search, best first (bm25-like), at most `limit` hits. Any user text is safe:
    /// the adapter quotes or escapes it (retrying as one phrase where its engine can refuse a
    /// query), so a caller never sees a query-syntax error.
    async fn search_documents(
        &self,
        query: &str,
        namespace: Option<&str>,
        doc_type: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>>;
    /// Version snapshots of `(namespace, path)`, newest first, at most `limit`.
    async fn versions(
        &self,
        namespace: &str,
        path: &str,
        limit: usize,
    ) -> StoreResult<Vec<VersionSummary>>;
    /// One version, looked up by id *and* namespace *and* path.
    async fn version(
        &self,
        id: i64,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<VersionRow>>;
    /// Edges out of and into one document.
    async fn backlinks(&self, namespace: &str, path: &str) -> StoreResult<Backlinks>;
    /// Which of `(namespace, path)` pairs exist, in order.
    async fn documents_exist(&self, refs: &[(String, String)]) -> StoreResult<Vec<bool>>;
    /// Reads `packet` from one snapshot (the brief's and lint's packets, which the core
    /// assembles from the rows).
    async fn read_packet(&self, packet: &Packet) -> StoreResult<PacketRows>;
    /// Documents of the given type in readable namespaces, keyset-paginated by
    /// `(namespace, path)` after `after`, at most `limit` (resources and prompts).
    async fn page_documents(
        &self,
        namespaces: Option<&[String]>,
        doc_type: Option<&str>,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>>;

    /// One unit of work: check `guard`; snapshot the live row (title, body and metadata, read
    /// inside the transaction); upsert; replace outgoing edges when `write.links` is `Some`;
    /// append `audit` rows.
    async fn write_document(
        &self,
        write: DocumentWrite,
        guard: WriteGuard,
        audit: Vec<AuditEntry>,
    ) -> StoreResult<WriteReceipt>;
    /// One unit of work: the row must exist (and, with `expected_body`, still hold it);
    /// snapshot it; delete every edge touching it at either end; delete it; audit. Returns the
    /// removed edges as `(type, from_ns, from_path, to_ns, to_path)`.
    async fn delete_document(
        &self,
        namespace: &str,
        path: &str,
        expected_body: Option<&str>,
        audit: AuditEntry,
    ) -> StoreResult<Vec<(String, String, String, String, String)>>;
    /// One unit of work: the source must exist (and, with `expected_body`, still hold it) and
    /// the target must not; snapshot; rename; repoint edges at both ends; audit. Returns the
    /// number of edges repointed. A target that exists is a `Conflict` with nothing changed.
    async fn move_document(
        &self,
        namespace: &str,
        from: &str,
        to: &str,
        expected_body: Option<&str>,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<u64>;
    /// One unit of work for `lint finalize`: each `(from, to)` moves as [`move_document`]
    /// does (snapshot, rename, edges repointed); one audit row for the batch. Any failure
    /// leaves every path where it was.
    ///
    /// [`move_document`]: DocumentStore::move_document
    async fn archive_documents(
        &self,
        namespace: &str,
        moves: &[(String, String)],
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<u64>;
}

/// Namespaces and their repository mapping.
#[cfg_attr(test, capsid_refusing::refused)]
#[cfg_attr(test, mockall::automock)]
#[async_trait]
pub trait NamespaceStore: Send + Sync {
    /// Every namespace with its unconsolidated count, by name.
    async fn namespaces(&self) -> StoreResult<Vec<NamespaceRow>>;
    /// One namespace.
    async fn namespace(&self, name: &str) -> StoreResult<Option<NamespaceRow>>;
    /// Whether the namespace is registered. Every namespaced tool call asks this, so it
    /// reads the key only, never the unconsolidated count that `namespace` computes.
    async fn namespace_exists(&self, name: &str) -> StoreResult<bool>;
    /// Creates a namespace; `Conflict` if it exists. Audited in the same transaction.
    async fn register_namespace(
        &self,
        name: &str,
        repos_json: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<()>;
    /// Replaces the repos of an existing namespace and returns the previous JSON (keyed
    /// update); `NotFound` if it does not exist. Audited in the same transaction.
    async fn update_namespace(
        &self,
        name: &str,
        repos_json: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<String>>;
    /// Replaces the runner settings of an existing namespace (`None` clears them) and returns
    /// the previous JSON (keyed update); `NotFound` if it does not exist. Audited in the same
    /// transaction.
    async fn set_namespace_runner(
        &self,
        name: &str,
        runner_json: Option<String>,
        audit: AuditEntry,
    ) -> StoreResult<Option<String>>;
    /// Replaces the monthly budget of an existing namespace (`None` clears it, so the
    /// server's default applies) and returns the previous one (keyed update); `NotFound` if
    /// it does not exist. Audited in the same transaction.
    async fn set_namespace_budget(
        &self,
        name: &str,
        budget_usd: Option<f64>,
        audit: AuditEntry,
    ) -> StoreResult<Option<f64>>;
    /// What each namespace's finished jobs cost since `since` (outcomes recorded at or after
    /// it), every namespace with a reported cost, by name.
    async fn spend_since(&self, since: Timestamp) -> StoreResult<Vec<NamespaceSpend>>;
    /// One namespace's runner settings (the core's JSON) alone, without the counts
    /// [`NamespaceStore::namespace`] adds (a claim asks it for the namespace's default job
    /// cap); `None` when unset or the namespace is not registered.
    async fn namespace_runner(&self, name: &str) -> StoreResult<Option<String>>;
    /// One namespace's own monthly budget and what its finished jobs cost since `since`, in
    /// one read (a claim asks it); `None` when the namespace is not registered.
    async fn namespace_budget(
        &self,
        name: &str,
        since: Timestamp,
    ) -> StoreResult<Option<NamespaceBudget>>;
}
