//! This store's `DocumentEngine` (what of the document port differs from SQLite; the rest is
//! `capsid_store_sql::documents`): glob finds and the existence check here, units of work in
//! [`write`], full-text search in [`search`], the packets' snapshot and selections in
//! [`gather`].

mod gather;

pub(crate) use gather::{Bind, DOC_WITH_ACTOR, selection_sql};
pub(crate) mod search;
pub(crate) mod write;

pub(crate) use write::{bind_write, write_in_tx};

use async_trait::async_trait;
use capsid_core::docs::document::DocumentSummary;
use capsid_core::ports::{
    AuditEntry, DocWithActor, DocumentWrite, EdgeTuple, Packet, PacketRows, SearchHit, StoreResult,
    WriteGuard, WriteReceipt,
};
use capsid_core::time::Timestamp;
use capsid_store_sql::documents::DocumentEngine;
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgRow;

use crate::PgStore;
use crate::error::{limit, translate};
use crate::glob;
use capsid_store_sql::summary_columns;

use crate::rows;
use crate::sql::SqlText;

const DOCUMENTS_EXIST: &str = "SELECT r.ord FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(ns, path, ord) \
     WHERE EXISTS (SELECT 1 FROM documents d WHERE d.namespace = r.ns AND d.path = r.path)";

/// The SQL of `find_documents`: namespace (when given), regex, prefix range (`>=`, and `<`
/// when bounded), then the limit.
pub(crate) fn find_sql(namespace: bool, glob: &glob::GlobRegex) -> String {
    let mut sql = SqlText::new(concat!("SELECT ", summary_columns!(), " FROM documents"));
    if namespace {
        sql.and("namespace = $?");
    }
    sql.and("path ~ $?");
    if !glob.prefix.is_empty() {
        sql.and("path >= $?");
        if glob.prefix_upper_bound().is_some() {
            sql.and("path < $?");
        }
    }
    sql.push(" ORDER BY namespace, path LIMIT $?");
    sql.finish()
}

fn summaries(rows: Vec<PgRow>) -> StoreResult<Vec<DocumentSummary>> {
    rows.into_iter()
        .map(rows::summary)
        .collect::<Result<_, _>>()
        .map_err(translate)
}

#[async_trait]
impl DocumentEngine for PgStore {
    async fn document_with_actor(
        &self,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<DocWithActor>> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        gather::one_with_actor(&mut conn, namespace, path)
            .await
            .map_err(translate)
    }

    async fn find_documents(
        &self,
        namespace: Option<&str>,
        glob: &str,
        max: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        let Some(pattern) = glob::to_regex(glob) else {
            return Ok(Vec::new());
        };
        let upper = pattern.prefix_upper_bound();
        let mut query = sqlx::query(AssertSqlSafe(find_sql(namespace.is_some(), &pattern)));
        if let Some(namespace) = namespace {
            query = query.bind(namespace);
        }
        query = query.bind(&pattern.regex);
        if !pattern.prefix.is_empty() {
            query = query.bind(&pattern.prefix);
            if let Some(upper) = &upper {
                query = query.bind(upper);
            }
        }
        // Bounded in work as search is: read-only under a statement timeout. A glob the
        // database cancels finds nothing (and is logged), as a cancelled search does.
        let found = async {
            let mut tx = self.pool.begin_with(search::BOUNDED_READ).await?;
            let rows = query.bind(limit(max)).fetch_all(&mut *tx).await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(rows)
        }
        .await;
        match found {
            Ok(rows) => summaries(rows),
            Err(sqlx::Error::Database(e))
                if e.code().as_deref() == Some(search::QUERY_CANCELED) =>
            {
                tracing::warn!(pattern = %pattern.regex, "find cancelled by its statement timeout; answering with no rows");
                Ok(Vec::new())
            }
            Err(e) => Err(translate(e)),
        }
    }

    async fn search_documents(
        &self,
        query: &str,
        namespace: Option<&str>,
        doc_type: Option<&str>,
        max: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        search::search(&self.pool, query, namespace, doc_type, max).await
    }

    async fn documents_exist(&self, refs: &[(String, String)]) -> StoreResult<Vec<bool>> {
        if refs.is_empty() {
            return Ok(Vec::new());
        }
        let (namespaces, paths): (Vec<&str>, Vec<&str>) =
            refs.iter().map(|(n, p)| (n.as_str(), p.as_str())).unzip();
        let found: Vec<i64> = sqlx::query_scalar(DOCUMENTS_EXIST)
            .bind(namespaces)
            .bind(paths)
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        let mut exist = vec![false; refs.len()];
        for ordinal in found {
            // Ordinals count from 1.
            if let Some(slot) = usize::try_from(ordinal - 1)
                .ok()
                .and_then(|i| exist.get_mut(i))
            {
                *slot = true;
            }
        }
        Ok(exist)
    }

    async fn read_packet(&self, packet: &Packet) -> StoreResult<PacketRows> {
        gather::read_packet(&self.pool, packet).await
    }

    async fn write_document(
        &self,
        write: DocumentWrite,
        guard: WriteGuard,
        audit: Vec<AuditEntry>,
    ) -> StoreResult<WriteReceipt> {
        write::write_document(&self.pool, &write, &guard, &audit).await
    }

    async fn delete_document(
        &self,
        namespace: &str,
        path: &str,
        expected_body: Option<&str>,
        audit: AuditEntry,
    ) -> StoreResult<Vec<EdgeTuple>> {
        write::delete_document(&self.pool, namespace, path, expected_body, &audit).await
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
        write::move_document(&self.pool, namespace, from, to, expected_body, at, &audit).await
    }

    async fn archive_documents(
        &self,
        namespace: &str,
        moves: &[(String, String)],
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<u64> {
        write::archive_documents(&self.pool, namespace, moves, at, &audit).await
    }
}
