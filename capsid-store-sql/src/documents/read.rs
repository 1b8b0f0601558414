//! Point reads, listings, versions and edges: one statement each, the same text on both
//! engines.

use capsid_core::docs::document::{Document, DocumentSummary};
use capsid_core::ports::{
    Backlinks, DocFilter, DocWithActor, SearchHit, StoreResult, VersionRow, VersionSummary,
};

use crate::engine::{Engine, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::Stmt;

/// The `documents` columns a [`DocumentSummary`] is read from.
#[macro_export]
macro_rules! summary_columns {
    () => {
        "id, namespace, path, title, type, status, tags, created_at, updated_at"
    };
}

/// The `documents` columns a [`Document`] is read from.
#[macro_export]
macro_rules! doc_columns {
    () => {
        "id, namespace, path, title, type, status, tags, created_at, updated_at, body"
    };
}

/// The columns a [`DocumentSummary`] is read from.
pub const SUMMARY_COLUMNS: &str = summary_columns!();

/// `document`: one document by its key (the UNIQUE index).
pub const DOCUMENT: &str = concat!(
    "SELECT ",
    doc_columns!(),
    " FROM documents WHERE namespace = $1 AND path = $2"
);

/// `last_actor`: the newest audit row of the document (index `audit_log_doc`).
pub const LAST_ACTOR: &str =
    "SELECT actor FROM audit_log WHERE namespace = $1 AND path = $2 ORDER BY id DESC LIMIT 1";

/// `versions`: snapshots of one document, newest first (index `document_versions_doc`).
pub const VERSIONS: &str = "SELECT id, snapshot_at, title, \
     CAST(COALESCE(octet_length(body), 0) AS BIGINT) AS bytes \
     FROM document_versions WHERE namespace = $1 AND path = $2 ORDER BY id DESC LIMIT $3";

/// `version`: one snapshot of one document.
pub const VERSION: &str = "SELECT id, document_id, namespace, path, title, body, type, status, \
     tags, snapshot_at FROM document_versions WHERE id = $1 AND namespace = $2 AND path = $3";

const BACKLINKS: &str = "SELECT 'out' AS dir, type, to_ns AS ns, to_path AS path \
     FROM document_links WHERE from_ns = $1 AND from_path = $2 \
     UNION ALL \
     SELECT 'in', type, from_ns, from_path FROM document_links WHERE to_ns = $3 AND to_path = $4";

/// A [`Document`] from a row selected as [`DOCUMENT`] does.
pub fn document_row(row: &Row) -> Result<Document, sqlx::Error> {
    let summary = summary(row)?;
    Ok(Document {
        id: summary.id,
        namespace: summary.namespace,
        path: summary.path,
        title: summary.title,
        doc_type: summary.doc_type,
        status: summary.status,
        tags: summary.tags,
        created_at: summary.created_at,
        updated_at: summary.updated_at,
        body: row.opt_text("body")?,
    })
}

/// A [`DocWithActor`] from a row selected as [`DOCUMENT`] does, with the actor of the
/// document's newest audit row as `last_actor`.
pub fn with_actor(row: &Row) -> Result<DocWithActor, sqlx::Error> {
    Ok(DocWithActor {
        document: document_row(row)?,
        last_actor: row.opt_text("last_actor")?,
    })
}

/// A [`SearchHit`] from a row of either engine's search (a `NULL` snippet read as empty).
pub fn search_hit(row: &Row) -> Result<SearchHit, sqlx::Error> {
    Ok(SearchHit {
        id: row.int("id")?,
        namespace: row.text("namespace")?,
        path: row.text("path")?,
        title: row.opt_text("title")?,
        doc_type: row.text("type")?,
        status: row.text("status")?,
        updated_at: row.time("updated_at")?,
        snippet: row.opt_text("snippet")?.unwrap_or_default(),
    })
}

/// A [`DocumentSummary`] from a row selected with [`SUMMARY_COLUMNS`].
pub fn summary(row: &Row) -> Result<DocumentSummary, sqlx::Error> {
    Ok(DocumentSummary {
        id: row.int("id")?,
        namespace: row.text("namespace")?,
        path: row.text("path")?,
        title: row.opt_text("title")?,
        doc_type: row.text("type")?,
        status: row.text("status")?,
        tags: row.opt_text("tags")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
    })
}

fn pair(sql: &'static str, namespace: &str, path: &str) -> Stmt {
    Stmt::new(sql).bind(namespace).bind(path)
}

/// `DocumentStore::document`.
pub async fn document(
    engine: &impl Engine,
    namespace: &str,
    path: &str,
) -> StoreResult<Option<Document>> {
    let found = read_all(engine, pair(DOCUMENT, namespace, path), document_row).await?;
    Ok(found.into_iter().next())
}

/// `DocumentStore::last_actor`.
pub async fn last_actor(
    engine: &impl Engine,
    namespace: &str,
    path: &str,
) -> StoreResult<Option<String>> {
    let found = read_all(engine, pair(LAST_ACTOR, namespace, path), |r| {
        r.opt_text("actor")
    })
    .await?;
    Ok(found.into_iter().next().flatten())
}

/// The SQL of `list_documents` for `filter`: its set filters in order (namespace, type,
/// status), then the limit, ordered by namespace, path (the UNIQUE index).
pub fn list_sql(filter: &DocFilter) -> String {
    let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM documents WHERE 1 = 1");
    let mut n = 0;
    for (column, set) in [
        ("namespace", filter.namespace.is_some()),
        ("type", filter.doc_type.is_some()),
        ("status", filter.status.is_some()),
    ] {
        if set {
            n += 1;
            sql.push_str(&format!(" AND {column} = ${n}"));
        }
    }
    sql + &format!(" ORDER BY namespace, path LIMIT ${}", n + 1)
}

/// `DocumentStore::list_documents`.
pub async fn list_documents(
    engine: &impl Engine,
    filter: &DocFilter,
    limit: usize,
) -> StoreResult<Vec<DocumentSummary>> {
    let mut stmt = Stmt::new(list_sql(filter));
    for value in [&filter.namespace, &filter.doc_type, &filter.status]
        .into_iter()
        .flatten()
    {
        stmt = stmt.bind(value);
    }
    read_all(engine, stmt.bind(limit), summary).await
}

/// `DocumentStore::versions`.
pub async fn versions(
    engine: &impl Engine,
    namespace: &str,
    path: &str,
    limit: usize,
) -> StoreResult<Vec<VersionSummary>> {
    read_all(engine, pair(VERSIONS, namespace, path).bind(limit), |row| {
        Ok(VersionSummary {
            id: row.int("id")?,
            snapshot_at: row.time("snapshot_at")?,
            title: row.opt_text("title")?,
            bytes: row.count("bytes")?,
        })
    })
    .await
}

/// `DocumentStore::version`.
pub async fn version(
    engine: &impl Engine,
    id: i64,
    namespace: &str,
    path: &str,
) -> StoreResult<Option<VersionRow>> {
    let stmt = Stmt::new(VERSION).bind(id).bind(namespace).bind(path);
    let found = read_all(engine, stmt, |row| {
        Ok(VersionRow {
            id: row.int("id")?,
            document_id: row.int("document_id")?,
            namespace: row.text("namespace")?,
            path: row.text("path")?,
            title: row.opt_text("title")?,
            body: row.opt_text("body")?,
            doc_type: row.opt_text("type")?,
            status: row.opt_text("status")?,
            tags: row.opt_text("tags")?,
            snapshot_at: row.time("snapshot_at")?,
        })
    })
    .await?;
    Ok(found.into_iter().next())
}

/// Edges out of and into `(namespace, path)`, read on `conn` in one statement (so from one
/// snapshot), each side sorted by type, namespace, path in byte order.
pub async fn backlinks_on(
    conn: &mut (impl Exec + ?Sized),
    namespace: &str,
    path: &str,
) -> Result<Backlinks, sqlx::Error> {
    let stmt = pair(BACKLINKS, namespace, path).bind(namespace).bind(path);
    let rows = conn.fetch_all(stmt).await?;
    backlinks_from(&rows)
}

fn backlinks_from(rows: &[Row]) -> Result<Backlinks, sqlx::Error> {
    let mut links = Backlinks::default();
    for row in rows {
        let edge = (row.text("type")?, row.text("ns")?, row.text("path")?);
        if row.text("dir")? == "out" {
            links.outgoing.push(edge);
        } else {
            links.incoming.push(edge);
        }
    }
    links.outgoing.sort();
    links.incoming.sort();
    Ok(links)
}

/// `DocumentStore::backlinks`.
pub async fn backlinks(
    engine: &impl Engine,
    namespace: &str,
    path: &str,
) -> StoreResult<Backlinks> {
    let rows = engine
        .read(pair(BACKLINKS, namespace, path).bind(namespace).bind(path))
        .await?;
    backlinks_from(&rows).map_err(|e| engine.translate(e))
}
