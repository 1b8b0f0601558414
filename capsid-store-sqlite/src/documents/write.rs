//! The atomic document changes: write (guard, snapshot, upsert, edges, audit), delete, move
//! and archive, each one `BEGIN IMMEDIATE` transaction that commits whole or not at all.

use capsid_core::docs::document::Document;
use capsid_core::docs::packets::{DEFAULT_STATUS, DEFAULT_TYPE};
use capsid_core::ports::{
    AuditEntry, DocumentWrite, EdgeTuple, StoreError, StoreResult, WriteGuard, WriteReceipt,
};
use capsid_core::time::Timestamp;
use sqlx::Row;
use sqlx::sqlite::SqliteConnection;

use crate::error::{DbResult, conflict_or_backend};
use capsid_store_sql::audit::insert as insert_audit;
use capsid_store_sql::documents::edge;
use capsid_store_sql::{Row as SqlRow, doc_columns};

use crate::rows;
use crate::store::{SqliteStore, commit};

/// The live row's id and body, read inside the caller's transaction.
pub(crate) async fn live_row(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
) -> StoreResult<Option<(i64, Option<String>)>> {
    let row = sqlx::query("SELECT id, body FROM documents WHERE namespace = ? AND path = ?")
        .bind(namespace)
        .bind(path)
        .fetch_optional(conn)
        .await
        .db()?;
    row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .transpose()
        .db()
}

/// Copies the live row (title, body and metadata) into `document_versions`.
async fn snapshot(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
    at: Timestamp,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO document_versions (document_id, namespace, path, title, body, type, status, tags, snapshot_at) \
         SELECT id, namespace, path, title, body, type, status, tags, ? FROM documents \
         WHERE namespace = ? AND path = ?",
    )
    .bind(at.to_string())
    .bind(namespace)
    .bind(path)
    .execute(conn)
    .await
    .db()?;
    Ok(())
}

const UPSERT_SQL: &str = concat!(
    "INSERT INTO documents (namespace, path, title, body, type, status, tags, created_at, updated_at) \
     VALUES (?1, ?2, ?3, ?4, COALESCE(?5, ?9), COALESCE(?6, ?10), ?7, ?8, ?8) \
     ON CONFLICT (namespace, path) DO UPDATE SET \
     title = COALESCE(?3, title), body = COALESCE(?4, body), type = COALESCE(?5, type), \
     status = COALESCE(?6, status), tags = COALESCE(?7, tags), updated_at = ?8 \
     RETURNING ",
    doc_columns!()
);

/// A new row with the defaults; the unique `(namespace, path)` refuses a taken path.
const INSERT_SQL: &str = concat!(
    "INSERT INTO documents (namespace, path, title, body, type, status, tags, created_at, updated_at) \
     VALUES (?1, ?2, ?3, ?4, COALESCE(?5, ?9), COALESCE(?6, ?10), ?7, ?8, ?8) RETURNING ",
    doc_columns!()
);

/// Binds `?1`..`?10` of [`INSERT_SQL`] and [`UPSERT_SQL`]: the write's fields, its time, and
/// a new row's type and status when the write names none (the core's defaults).
fn bind_write<'q>(
    query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    write: &'q DocumentWrite,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    query
        .bind(&write.namespace)
        .bind(&write.path)
        .bind(&write.title)
        .bind(&write.body)
        .bind(&write.doc_type)
        .bind(&write.status)
        .bind(&write.tags)
        .bind(write.at.to_string())
        .bind(DEFAULT_TYPE.as_str())
        .bind(DEFAULT_STATUS.as_str())
}

/// Inserts `write` as a new document (and its edges): a `Conflict` when the path is taken,
/// found by the insert itself rather than a read before it (one statement fewer on the
/// writer for every create).
async fn insert_new(conn: &mut SqliteConnection, write: &DocumentWrite) -> StoreResult<Document> {
    let row = bind_write(sqlx::query(INSERT_SQL), write)
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| {
            conflict_or_backend(e, |_| {
                format!(
                    "create collision: {}/{} already exists; nothing was written",
                    write.namespace, write.path
                )
            })
        })?;
    let document = rows::document(row).db()?;
    replace_links(conn, write).await?;
    Ok(document)
}

/// Snapshots the live row when `exists`, upserts `write` and, when `write.links` is `Some`,
/// replaces the document's outgoing edges. The caller has checked its guard and owns the
/// transaction (and the audit rows).
pub(crate) async fn apply_write(
    conn: &mut SqliteConnection,
    write: &DocumentWrite,
    exists: bool,
) -> StoreResult<Document> {
    if exists {
        snapshot(conn, &write.namespace, &write.path, write.at).await?;
    }
    let row = bind_write(sqlx::query(UPSERT_SQL), write)
        .fetch_one(&mut *conn)
        .await
        .db()?;
    let document = rows::document(row).db()?;
    replace_links(conn, write).await?;
    Ok(document)
}

/// When `write.links` is `Some`, replaces the document's outgoing edges with them.
async fn replace_links(conn: &mut SqliteConnection, write: &DocumentWrite) -> StoreResult<()> {
    if let Some(links) = &write.links {
        sqlx::query("DELETE FROM document_links WHERE from_ns = ? AND from_path = ?")
            .bind(&write.namespace)
            .bind(&write.path)
            .execute(&mut *conn)
            .await
            .db()?;
        for link in links {
            sqlx::query(
                "INSERT OR IGNORE INTO document_links (from_ns, from_path, type, to_ns, to_path, created_at) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .bind(&write.namespace)
            .bind(&write.path)
            .bind(link.link_type.as_str())
            .bind(link.to_ns.as_str())
            .bind(link.to_path.as_str())
            .bind(write.at.to_string())
            .execute(&mut *conn)
            .await
            .db()?;
        }
    }
    Ok(())
}

/// Whether the stored body (NULL reads as `""`) still equals what the caller decided on.
fn body_matches(stored: Option<&str>, expected: Option<&str>) -> bool {
    expected.is_none_or(|expected| stored.unwrap_or("") == expected)
}

fn changed_in_flight(namespace: &str, path: &str) -> StoreError {
    StoreError::Conflict(format!(
        "{namespace}/{path} changed since it was read; nothing was written"
    ))
}

fn vanished(namespace: &str, path: &str) -> StoreError {
    StoreError::NotFound(format!(
        "{namespace}/{path} no longer exists; nothing was written"
    ))
}

/// Checks `guard` and writes `write` in the caller's transaction, which owns the audit rows.
pub(crate) async fn write_in_unit(
    conn: &mut SqliteConnection,
    write: &DocumentWrite,
    guard: &WriteGuard,
) -> StoreResult<WriteReceipt> {
    if matches!(guard, WriteGuard::Create) {
        let document = insert_new(conn, write).await?;
        return Ok(WriteReceipt {
            created: true,
            snapshotted: false,
            document,
        });
    }
    let live = live_row(conn, &write.namespace, &write.path).await?;
    match (guard, &live) {
        (WriteGuard::Update { .. }, None) => return Err(vanished(&write.namespace, &write.path)),
        (WriteGuard::Update { expected_body }, Some((_, body)))
            if !body_matches(body.as_deref(), expected_body.as_deref()) =>
        {
            return Err(changed_in_flight(&write.namespace, &write.path));
        }
        _ => {}
    }
    let exists = live.is_some();
    let document = apply_write(conn, write, exists).await?;
    Ok(WriteReceipt {
        created: !exists,
        snapshotted: exists,
        document,
    })
}

pub(crate) async fn write_document(
    store: &SqliteStore,
    write: DocumentWrite,
    guard: WriteGuard,
    audit: Vec<AuditEntry>,
) -> StoreResult<WriteReceipt> {
    let mut tx = store.begin_write().await?;
    let receipt = write_in_unit(&mut tx, &write, &guard).await?;
    for entry in &audit {
        insert_audit(&mut tx, entry).await.db()?;
    }
    commit(tx).await?;
    Ok(receipt)
}

/// Checks that `(namespace, path)` exists and, with `expected_body`, still holds it.
async fn require_live(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
    expected_body: Option<&str>,
) -> StoreResult<()> {
    match live_row(conn, namespace, path).await? {
        None => Err(vanished(namespace, path)),
        Some((_, body)) if !body_matches(body.as_deref(), expected_body) => {
            Err(changed_in_flight(namespace, path))
        }
        Some(_) => Ok(()),
    }
}

pub(crate) async fn delete_document(
    store: &SqliteStore,
    namespace: &str,
    path: &str,
    expected_body: Option<&str>,
    audit: AuditEntry,
) -> StoreResult<Vec<EdgeTuple>> {
    let mut tx = store.begin_write().await?;
    require_live(&mut tx, namespace, path, expected_body).await?;
    snapshot(&mut tx, namespace, path, audit.at).await?;
    let removed = sqlx::query(
        "DELETE FROM document_links WHERE (from_ns = ?1 AND from_path = ?2) OR (to_ns = ?1 AND to_path = ?2) \
         RETURNING id, type, from_ns, from_path, to_ns, to_path",
    )
    .bind(namespace)
    .bind(path)
    .fetch_all(&mut *tx)
    .await
    .db()?;
    // In creation order.
    let mut numbered = removed
        .into_iter()
        .map(|row| {
            let row = SqlRow::Sqlite(row);
            Ok((row.int("id")?, edge(&row)?))
        })
        .collect::<Result<Vec<(i64, EdgeTuple)>, sqlx::Error>>()
        .db()?;
    numbered.sort_by_key(|(id, _)| *id);
    let edges = numbered.into_iter().map(|(_, edge)| edge).collect();
    sqlx::query("DELETE FROM documents WHERE namespace = ? AND path = ?")
        .bind(namespace)
        .bind(path)
        .execute(&mut *tx)
        .await
        .db()?;
    insert_audit(&mut tx, &audit).await.db()?;
    commit(tx).await?;
    Ok(edges)
}

/// Renames `from` to `to` inside the caller's transaction: the source must exist (and hold
/// `expected_body`), the target must not; snapshot, rename, repoint edges at both ends.
/// Returns the number of edges repointed.
async fn rename(
    conn: &mut SqliteConnection,
    namespace: &str,
    from: &str,
    to: &str,
    expected_body: Option<&str>,
    at: Timestamp,
) -> StoreResult<u64> {
    require_live(conn, namespace, from, expected_body).await?;
    if live_row(conn, namespace, to).await?.is_some() {
        return Err(StoreError::Conflict(format!(
            "move target {namespace}/{to} already exists; nothing changed"
        )));
    }
    snapshot(conn, namespace, from, at).await?;
    sqlx::query("UPDATE documents SET path = ?, updated_at = ? WHERE namespace = ? AND path = ? RETURNING id")
        .bind(to)
        .bind(at.to_string())
        .bind(namespace)
        .bind(from)
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| conflict_or_backend(e, |m| format!("move onto {namespace}/{to} collided ({m}); nothing changed")))?;
    // An edge that already exists at the new path absorbs the repointed one (OR REPLACE), so
    // a dangling edge to the target never blocks the move. Counted per statement, so an edge
    // from the document to itself counts twice (as the Worker's change counts did).
    let mut repointed = 0;
    for sql in [
        "UPDATE OR REPLACE document_links SET from_path = ?1 WHERE from_ns = ?2 AND from_path = ?3 RETURNING id",
        "UPDATE OR REPLACE document_links SET to_path = ?1 WHERE to_ns = ?2 AND to_path = ?3 RETURNING id",
    ] {
        let ids: Vec<i64> = sqlx::query_scalar(sql)
            .bind(to)
            .bind(namespace)
            .bind(from)
            .fetch_all(&mut *conn)
            .await
            .db()?;
        repointed += ids.len() as u64;
    }
    Ok(repointed)
}

pub(crate) async fn move_document(
    store: &SqliteStore,
    namespace: &str,
    from: &str,
    to: &str,
    expected_body: Option<&str>,
    at: Timestamp,
    audit: AuditEntry,
) -> StoreResult<u64> {
    let mut tx = store.begin_write().await?;
    let repointed = rename(&mut tx, namespace, from, to, expected_body, at).await?;
    insert_audit(&mut tx, &audit).await.db()?;
    commit(tx).await?;
    Ok(repointed)
}

/// Moves every pair as [`move_document`] does, in one transaction with one audit row.
/// Returns the total number of edges repointed.
pub(crate) async fn archive_documents(
    store: &SqliteStore,
    namespace: &str,
    moves: &[(String, String)],
    at: Timestamp,
    audit: AuditEntry,
) -> StoreResult<u64> {
    let mut tx = store.begin_write().await?;
    let mut repointed = 0;
    for (from, to) in moves {
        repointed += rename(&mut tx, namespace, from, to, None, at).await?;
    }
    insert_audit(&mut tx, &audit).await.db()?;
    commit(tx).await?;
    Ok(repointed)
}
