//! The document port: point reads, listings, versions and edges here; search, the brief and
//! lint gathers, and the atomic changes in the submodules.

mod gather;
mod search;
pub(crate) mod write;

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::docs::document::{Document, DocumentSummary};
use capsid_core::ports::{
    AuditEntry, Backlinks, DocFilter, DocWithActor, DocumentStore, DocumentWrite, Packet,
    PacketRows, SearchHit, StoreResult, VersionRow, VersionSummary, WriteGuard, WriteReceipt,
};
use capsid_core::time::Timestamp;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteRow};
use sqlx::{QueryBuilder, Row};

use crate::error::DbResult;
use crate::rows::{self, doc_columns, limit as sql_limit, summary_columns};
use crate::store::SqliteStore;

pub(crate) use gather::{DOC_WITH_ACTOR_SQL, push_selection};
pub(crate) use search::{as_phrase, filtered_expression, push_search};
pub(crate) use write::{apply_write, live_row};

/// `last_actor`: the newest audit row of the document (index `audit_log_doc`).
pub(crate) const LAST_ACTOR_SQL: &str =
    "SELECT actor FROM audit_log WHERE namespace = ? AND path = ? ORDER BY id DESC LIMIT 1";

/// `versions`: snapshots of one document, newest first (index `document_versions_doc`).
pub(crate) const VERSIONS_SQL: &str = "SELECT id, snapshot_at, title, COALESCE(octet_length(body), 0) AS bytes \
     FROM document_versions WHERE namespace = ? AND path = ? ORDER BY id DESC LIMIT ?";

const DOCUMENT_SQL: &str = concat!(
    "SELECT ",
    doc_columns!(),
    " FROM documents WHERE namespace = ? AND path = ?"
);

/// Pushes `list`'s query: filters as given, ordered by namespace, path (the UNIQUE index).
pub(crate) fn push_list(qb: &mut QueryBuilder<Sqlite>, filter: &DocFilter, limit: usize) {
    qb.push(concat!(
        "SELECT ",
        summary_columns!(),
        " FROM documents WHERE 1 = 1"
    ));
    if let Some(namespace) = &filter.namespace {
        qb.push(" AND namespace = ").push_bind(namespace.clone());
    }
    if let Some(doc_type) = &filter.doc_type {
        qb.push(" AND type = ").push_bind(doc_type.clone());
    }
    if let Some(status) = &filter.status {
        qb.push(" AND status = ").push_bind(status.clone());
    }
    qb.push(" ORDER BY namespace, path LIMIT ")
        .push_bind(sql_limit(limit));
}

/// Pushes `find`'s query: `path GLOB ?` (case-sensitive), ordered by namespace, path.
pub(crate) fn push_find(
    qb: &mut QueryBuilder<Sqlite>,
    namespace: Option<&str>,
    glob: &str,
    limit: usize,
) {
    qb.push(concat!(
        "SELECT ",
        summary_columns!(),
        " FROM documents WHERE "
    ));
    if let Some(namespace) = namespace {
        qb.push("namespace = ")
            .push_bind(namespace.to_owned())
            .push(" AND ");
    }
    qb.push("path GLOB ").push_bind(glob.to_owned());
    qb.push(" ORDER BY namespace, path LIMIT ")
        .push_bind(sql_limit(limit));
}

/// One document, read on `conn`.
pub(crate) async fn document_on(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
) -> Result<Option<Document>, sqlx::Error> {
    let row = sqlx::query(DOCUMENT_SQL)
        .bind(namespace)
        .bind(path)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(rows::document).transpose()
}

/// The actor of the newest audit row of `(namespace, path)`, read on `conn`.
pub(crate) async fn last_actor_on(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
) -> Result<Option<String>, sqlx::Error> {
    let actor: Option<Option<String>> = sqlx::query_scalar(LAST_ACTOR_SQL)
        .bind(namespace)
        .bind(path)
        .fetch_optional(conn)
        .await?;
    Ok(actor.flatten())
}

/// A document's size as the read cache counts it.
fn doc_size(found: &DocWithActor) -> usize {
    let d = &found.document;
    let text = |v: &Option<String>| v.as_ref().map_or(0, String::len);
    d.namespace.len()
        + d.path.len()
        + text(&d.title)
        + text(&d.body)
        + text(&d.tags)
        + text(&found.last_actor)
        + 256
}

fn edge_triple(row: &SqliteRow) -> Result<(String, String, String), sqlx::Error> {
    Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))
}

/// Edges out of and into `(namespace, path)`, each side sorted by type, namespace, path.
pub(crate) async fn backlinks_on(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
) -> Result<Backlinks, sqlx::Error> {
    let outgoing = sqlx::query(
        "SELECT type, to_ns, to_path FROM document_links WHERE from_ns = ? AND from_path = ? \
         ORDER BY type, to_ns, to_path",
    )
    .bind(namespace)
    .bind(path)
    .fetch_all(&mut *conn)
    .await?;
    let incoming = sqlx::query(
        "SELECT type, from_ns, from_path FROM document_links WHERE to_ns = ? AND to_path = ? \
         ORDER BY type, from_ns, from_path",
    )
    .bind(namespace)
    .bind(path)
    .fetch_all(&mut *conn)
    .await?;
    Ok(Backlinks {
        outgoing: rows::all(&outgoing, edge_triple)?,
        incoming: rows::all(&incoming, edge_triple)?,
    })
}

fn version_summary(row: &SqliteRow) -> Result<VersionSummary, sqlx::Error> {
    Ok(VersionSummary {
        id: row.try_get("id")?,
        snapshot_at: row.time("snapshot_at")?,
        title: row.try_get("title")?,
        bytes: rows::count(row.try_get("bytes")?),
    })
}

fn version_row(row: &SqliteRow) -> Result<VersionRow, sqlx::Error> {
    Ok(VersionRow {
        id: row.try_get("id")?,
        document_id: row.try_get("document_id")?,
        namespace: row.try_get("namespace")?,
        path: row.try_get("path")?,
        title: row.try_get("title")?,
        body: row.try_get("body")?,
        doc_type: row.try_get("type")?,
        status: row.try_get("status")?,
        tags: row.try_get("tags")?,
        snapshot_at: row.time("snapshot_at")?,
    })
}

#[async_trait]
impl DocumentStore for SqliteStore {
    async fn document(&self, namespace: &str, path: &str) -> StoreResult<Option<Document>> {
        let mut conn = self.reader().acquire().await.db()?;
        document_on(&mut conn, namespace, path).await.db()
    }

    async fn last_actor(&self, namespace: &str, path: &str) -> StoreResult<Option<String>> {
        let mut conn = self.reader().acquire().await.db()?;
        last_actor_on(&mut conn, namespace, path).await.db()
    }

    async fn document_with_actor(
        &self,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<DocWithActor>> {
        // `read`'s one statement, answered from memory while the database has not changed
        // since the answer was read (any commit, in any process, empties the cache).
        crate::cache::read_through(
            self.data_version(),
            self.document_cache(),
            (namespace.to_owned(), path.to_owned()),
            |(ns, path), found| ns.len() + path.len() + found.as_ref().map_or(0, doc_size),
            async {
                let mut conn = self.reader().acquire().await.db()?;
                gather::doc_with_actor(&mut conn, namespace, path)
                    .await
                    .db()
            },
        )
        .await
    }

    async fn list_documents(
        &self,
        filter: &DocFilter,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        let mut qb = QueryBuilder::new("");
        push_list(&mut qb, filter, limit);
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(&found, rows::summary).db()
    }

    async fn find_documents(
        &self,
        namespace: Option<&str>,
        glob: &str,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        let mut qb = QueryBuilder::new("");
        push_find(&mut qb, namespace, glob, limit);
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(&found, rows::summary).db()
    }

    async fn search_documents(
        &self,
        query: &str,
        namespace: Option<&str>,
        doc_type: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        search::search(self, query, namespace, doc_type, limit).await
    }

    async fn versions(
        &self,
        namespace: &str,
        path: &str,
        limit: usize,
    ) -> StoreResult<Vec<VersionSummary>> {
        let found = sqlx::query(VERSIONS_SQL)
            .bind(namespace)
            .bind(path)
            .bind(sql_limit(limit))
            .fetch_all(self.reader())
            .await
            .db()?;
        rows::all(&found, version_summary).db()
    }

    async fn version(
        &self,
        id: i64,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<VersionRow>> {
        let row = sqlx::query(
            "SELECT id, document_id, namespace, path, title, body, type, status, tags, snapshot_at \
             FROM document_versions WHERE id = ? AND namespace = ? AND path = ?",
        )
        .bind(id)
        .bind(namespace)
        .bind(path)
        .fetch_optional(self.reader())
        .await
        .db()?;
        row.as_ref().map(version_row).transpose().db()
    }

    async fn backlinks(&self, namespace: &str, path: &str) -> StoreResult<Backlinks> {
        let mut tx = self.begin_read().await?;
        backlinks_on(&mut tx, namespace, path).await.db()
    }

    async fn documents_exist(&self, refs: &[(String, String)]) -> StoreResult<Vec<bool>> {
        let mut tx = self.begin_read().await?;
        let mut exist = Vec::with_capacity(refs.len());
        for (namespace, path) in refs {
            let found: Option<i64> =
                sqlx::query_scalar("SELECT 1 FROM documents WHERE namespace = ? AND path = ?")
                    .bind(namespace)
                    .bind(path)
                    .fetch_optional(&mut *tx)
                    .await
                    .db()?;
            exist.push(found.is_some());
        }
        Ok(exist)
    }

    async fn read_packet(&self, packet: &Packet) -> StoreResult<PacketRows> {
        gather::read_packet(self, packet).await
    }

    async fn page_documents(
        &self,
        namespaces: Option<&[String]>,
        doc_type: Option<&str>,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        gather::page_documents(self, namespaces, doc_type, after, limit).await
    }

    async fn write_document(
        &self,
        write: DocumentWrite,
        guard: WriteGuard,
        audit: Vec<AuditEntry>,
    ) -> StoreResult<WriteReceipt> {
        write::write_document(self, write, guard, audit).await
    }

    async fn delete_document(
        &self,
        namespace: &str,
        path: &str,
        expected_body: Option<&str>,
        audit: AuditEntry,
    ) -> StoreResult<Vec<(String, String, String, String, String)>> {
        write::delete_document(self, namespace, path, expected_body, audit).await
    }

    async fn move_document(
        &self,
        namespace: &str,
        from: &str,
        to: &str,
        expected_body: Option<&str>,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<u64> {
        write::move_document(self, namespace, from, to, expected_body, at, audit).await
    }

    async fn archive_documents(
        &self,
        namespace: &str,
        moves: &[(String, String)],
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<u64> {
        write::archive_documents(self, namespace, moves, at, audit).await
    }
}
