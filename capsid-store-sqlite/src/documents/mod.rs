//! This store's `DocumentEngine` (what of the document port differs from Postgres; the rest
//! is `capsid_store_sql::documents`): the read cache, `GLOB` finds and the existence checks
//! here; search, the packets' snapshot and selections, and the atomic changes in the
//! submodules.

mod gather;
mod search;
pub(crate) mod write;

use async_trait::async_trait;
use capsid_core::docs::document::DocumentSummary;
use capsid_core::ports::{
    AuditEntry, DocWithActor, DocumentWrite, Packet, PacketRows, SearchHit, StoreResult,
    WriteGuard, WriteReceipt,
};
use capsid_core::time::Timestamp;
use capsid_store_sql::documents::DocumentEngine;
use sqlx::QueryBuilder;
use sqlx::sqlite::Sqlite;

use crate::error::DbResult;
use capsid_store_sql::summary_columns;

use crate::rows::{self, limit as sql_limit};
use crate::store::SqliteStore;

pub(crate) use gather::{DOC_WITH_ACTOR_SQL, push_selection};
pub(crate) use search::{as_phrase, filtered_expression, push_search};
pub(crate) use write::{apply_write, live_row};

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

#[async_trait]
impl DocumentEngine for SqliteStore {
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

    async fn find_documents(
        &self,
        namespace: Option<&str>,
        glob: &str,
        limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        let mut qb = QueryBuilder::new("");
        push_find(&mut qb, namespace, glob, limit);
        let found = qb.build().fetch_all(self.reader()).await.db()?;
        rows::all(found, rows::summary).db()
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
