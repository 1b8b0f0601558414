//! The `DocumentStore` port: reads here, units of work in [`write`], full-text search in
//! [`search`], the `brief` and `lint` reads in [`gather`].

mod gather;

pub(crate) use gather::{Bind, DOC_WITH_ACTOR, selection_sql};
pub(crate) mod search;
pub(crate) mod write;

pub(crate) use write::{bind_write, write_in_tx};

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::docs::document::{Document, DocumentSummary};
use capsid_core::ports::{
    AuditEntry, Backlinks, DocFilter, DocWithActor, DocumentStore, DocumentWrite, Packet,
    PacketRows, SearchHit, StoreResult, VersionRow, VersionSummary, WriteGuard, WriteReceipt,
};
use capsid_core::time::Timestamp;
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection, Row};

use crate::PgStore;
use crate::error::{count, limit, translate};
use crate::glob;
use crate::rows::{self, doc_cols, summary_cols};
use crate::sql::SqlText;

/// One edge: `(type, from_ns, from_path, to_ns, to_path)`.
pub(crate) type EdgeRow = (String, String, String, String, String);

pub(crate) const DOCUMENT: &str = concat!(
    "SELECT ",
    doc_cols!(),
    " FROM documents WHERE namespace = $1 AND path = $2"
);

pub(crate) const LAST_ACTOR: &str =
    "SELECT actor FROM audit_log WHERE namespace = $1 AND path = $2 ORDER BY id DESC LIMIT 1";

pub(crate) const VERSIONS: &str = "SELECT id, snapshot_at, title, coalesce(octet_length(body), 0)::bigint AS bytes \
     FROM document_versions WHERE namespace = $1 AND path = $2 ORDER BY id DESC LIMIT $3";

const VERSION: &str = "SELECT id, document_id, namespace, path, title, body, type, status, tags, snapshot_at \
     FROM document_versions WHERE id = $1 AND namespace = $2 AND path = $3";

const BACKLINKS: &str = "SELECT 'out' AS dir, type, to_ns AS ns, to_path AS path FROM document_links \
     WHERE from_ns = $1 AND from_path = $2 \
     UNION ALL \
     SELECT 'in', type, from_ns, from_path FROM document_links WHERE to_ns = $1 AND to_path = $2";

const DOCUMENTS_EXIST: &str = "SELECT r.ord FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(ns, path, ord) \
     WHERE EXISTS (SELECT 1 FROM documents d WHERE d.namespace = r.ns AND d.path = r.path)";

/// The SQL of `list_documents` for `filter`: its set filters in order (namespace, type,
/// status), then the limit.
pub(crate) fn list_sql(filter: &DocFilter) -> String {
    let mut sql = SqlText::new(concat!("SELECT ", summary_cols!(), " FROM documents"));
    if filter.namespace.is_some() {
        sql.and("namespace = $?");
    }
    if filter.doc_type.is_some() {
        sql.and("type = $?");
    }
    if filter.status.is_some() {
        sql.and("status = $?");
    }
    sql.push(" ORDER BY namespace, path LIMIT $?");
    sql.finish()
}

/// The SQL of `find_documents`: namespace (when given), regex, prefix range (`>=`, and `<`
/// when bounded), then the limit.
pub(crate) fn find_sql(namespace: bool, glob: &glob::GlobRegex) -> String {
    let mut sql = SqlText::new(concat!("SELECT ", summary_cols!(), " FROM documents"));
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

/// The SQL of `page_documents`: namespaces, type, keyset position (each when given), limit.
fn page_sql(namespaces: bool, doc_type: bool, after: bool) -> String {
    let mut sql = SqlText::new(concat!("SELECT ", summary_cols!(), " FROM documents"));
    if namespaces {
        sql.and("namespace = ANY($?)");
    }
    if doc_type {
        sql.and("type = $?");
    }
    if after {
        sql.and("(namespace, path) > ($?, $?)");
    }
    sql.push(" ORDER BY namespace, path LIMIT $?");
    sql.finish()
}

fn summaries(rows: &[PgRow]) -> StoreResult<Vec<DocumentSummary>> {
    rows.iter()
        .map(rows::summary)
        .collect::<Result<_, _>>()
        .map_err(translate)
}

/// One document, read on `conn`.
pub(crate) async fn fetch_document(
    conn: &mut PgConnection,
    namespace: &str,
    path: &str,
) -> Result<Option<Document>, sqlx::Error> {
    let row = sqlx::query(DOCUMENT)
        .bind(namespace)
        .bind(path)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(rows::document).transpose()
}

/// Edges out of and into one document, sorted by type, namespace, path (byte order).
pub(crate) async fn fetch_backlinks(
    conn: &mut PgConnection,
    namespace: &str,
    path: &str,
) -> Result<Backlinks, sqlx::Error> {
    let rows = sqlx::query(BACKLINKS)
        .bind(namespace)
        .bind(path)
        .fetch_all(conn)
        .await?;
    let mut links = Backlinks::default();
    for row in &rows {
        let dir: String = row.try_get("dir")?;
        let edge = (
            row.try_get("type")?,
            row.try_get("ns")?,
            row.try_get("path")?,
        );
        if dir == "out" {
            links.outgoing.push(edge);
        } else {
            links.incoming.push(edge);
        }
    }
    links.outgoing.sort();
    links.incoming.sort();
    Ok(links)
}

#[async_trait]
impl DocumentStore for PgStore {
    async fn document(&self, namespace: &str, path: &str) -> StoreResult<Option<Document>> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        fetch_document(&mut conn, namespace, path)
            .await
            .map_err(translate)
    }

    async fn last_actor(&self, namespace: &str, path: &str) -> StoreResult<Option<String>> {
        let actor: Option<Option<String>> = sqlx::query_scalar(LAST_ACTOR)
            .bind(namespace)
            .bind(path)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        Ok(actor.flatten())
    }

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

    async fn list_documents(
        &self,
        filter: &DocFilter,
        max: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        let mut query = sqlx::query(AssertSqlSafe(list_sql(filter)));
        for value in [&filter.namespace, &filter.doc_type, &filter.status]
            .into_iter()
            .flatten()
        {
            query = query.bind(value);
        }
        let rows = query
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        summaries(&rows)
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
            Ok(rows) => summaries(&rows),
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

    async fn versions(
        &self,
        namespace: &str,
        path: &str,
        max: usize,
    ) -> StoreResult<Vec<VersionSummary>> {
        let rows = sqlx::query(VERSIONS)
            .bind(namespace)
            .bind(path)
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(|row| {
                Ok(VersionSummary {
                    id: row.try_get("id")?,
                    snapshot_at: row.time("snapshot_at")?,
                    title: row.try_get("title")?,
                    bytes: count(row.try_get("bytes")?),
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(translate)
    }

    async fn version(
        &self,
        id: i64,
        namespace: &str,
        path: &str,
    ) -> StoreResult<Option<VersionRow>> {
        let row = sqlx::query(VERSION)
            .bind(id)
            .bind(namespace)
            .bind(path)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        let Some(row) = row else { return Ok(None) };
        let version = (|| -> Result<VersionRow, sqlx::Error> {
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
        })();
        version.map(Some).map_err(translate)
    }

    async fn backlinks(&self, namespace: &str, path: &str) -> StoreResult<Backlinks> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        fetch_backlinks(&mut conn, namespace, path)
            .await
            .map_err(translate)
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

    async fn page_documents(
        &self,
        namespaces: Option<&[String]>,
        doc_type: Option<&str>,
        after: Option<(&str, &str)>,
        max: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        if namespaces.is_some_and(<[String]>::is_empty) {
            return Ok(Vec::new());
        }
        let sql = page_sql(namespaces.is_some(), doc_type.is_some(), after.is_some());
        let mut query = sqlx::query(AssertSqlSafe(sql));
        if let Some(namespaces) = namespaces {
            query = query.bind(namespaces);
        }
        if let Some(doc_type) = doc_type {
            query = query.bind(doc_type);
        }
        if let Some((namespace, path)) = after {
            query = query.bind(namespace).bind(path);
        }
        let rows = query
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        summaries(&rows)
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
    ) -> StoreResult<Vec<EdgeRow>> {
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
