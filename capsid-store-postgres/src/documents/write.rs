//! Document units of work: write (guard, snapshot, upsert, edges, audit), delete, move and
//! archive, each one transaction, except a write with one audit row and no links (a create,
//! an upsert or a guarded update), which is one statement committed on its own. Guards are
//! row locks (or, for a create, the unique `(namespace, path)`) checked inside the
//! transaction or the statement; a failed guard refuses before anything is written, and the
//! transaction is rolled back before the caller hears it.

use capsid_core::docs::links::Link;
use capsid_core::docs::packets::{DEFAULT_STATUS, DEFAULT_TYPE};
use capsid_core::ports::{
    AuditEntry, DocumentWrite, EdgeTuple, StoreError, StoreResult, WriteGuard, WriteReceipt,
};
use capsid_core::time::Timestamp;
use sqlx::{PgConnection, PgPool, Row};

use crate::audit::{self, audited};
use crate::error::{TxResult, always, finish, with_retry};
use capsid_store_sql::documents::edge;
use capsid_store_sql::{Row as SqlRow, all, doc_columns};

use crate::rows::{self, doc_cols_d};

/// Locks the live row and says whether its body still equals `$3` (always, when `$3` is
/// NULL). A NULL body compares as `""`.
const LOCK_DOCUMENT: &str = "SELECT id, ($3::text IS NULL OR coalesce(body, '') = $3) AS body_matches \
     FROM documents WHERE namespace = $1 AND path = $2 FOR UPDATE";

/// Inserts a new row with the defaults; nothing when another transaction created it first.
macro_rules! insert_document {
    () => {
        concat!(
            "INSERT INTO documents (namespace, path, title, body, type, status, tags, created_at, updated_at) ",
            "VALUES ($1, $2, $3, $4, coalesce($5, $9), coalesce($6, $10), $7, $8, $8) ",
            "ON CONFLICT (namespace, path) DO NOTHING RETURNING ",
            doc_columns!()
        )
    };
}

const INSERT_DOCUMENT: &str = insert_document!();

/// [`INSERT_DOCUMENT`] with its audit row (`$11`..`$16`), written only when the row is.
const INSERT_DOCUMENT_AUDITED: &str = audited!(insert_document!(), "$11, $12, $13, $14, $15, $16");

/// The CTEs both one-statement rewrites share: lock the live row (its latest version, so the
/// snapshot holds exactly what is overwritten), snapshot it, and update it, NULL inputs keeping
/// the stored values. `$prior` adds columns to the locked row, `$snapshot` and `$update`
/// conditions to the snapshot and the update; `updated` is left open after its columns.
macro_rules! locked_rewrite_ctes {
    ($prior:expr, $snapshot:expr, $update:expr) => { concat!(
    "WITH prior AS (SELECT id, namespace, path, title, body, type, status, tags",
    $prior,
    " FROM documents WHERE namespace = $1 AND path = $2 FOR UPDATE), ",
    "snapshot AS (INSERT INTO document_versions ",
    "(document_id, namespace, path, title, body, type, status, tags, snapshot_at) ",
    "SELECT id, namespace, path, title, body, type, status, tags, $8 FROM prior",
    $snapshot,
    "), ",
    "updated AS (UPDATE documents d SET title = coalesce($3, d.title), body = coalesce($4, d.body), ",
    "type = coalesce($5, d.type), status = coalesce($6, d.status), tags = coalesce($7, d.tags), updated_at = $8 ",
    "FROM prior WHERE d.id = prior.id",
    $update,
    " RETURNING ",
    doc_cols_d!()
    ) };
}

/// The whole upsert in one statement: the locked rewrite, or an insert when there is no live
/// row. No row comes back when another transaction created the document after this statement
/// began (then the caller retries, and finds the row to update).
macro_rules! upsert_ctes {
    () => { concat!(
    locked_rewrite_ctes!("", "", ""),
    ", false AS created), ",
    "inserted AS (INSERT INTO documents (namespace, path, title, body, type, status, tags, created_at, updated_at) ",
    "SELECT $1, $2, $3, $4, coalesce($5, $9), coalesce($6, $10), $7, $8, $8 ",
    "WHERE NOT EXISTS (SELECT 1 FROM prior) ON CONFLICT (namespace, path) DO NOTHING RETURNING ",
    doc_columns!(),
    ", true AS created)"
    ) };
}

const UPSERT: &str = concat!(
    upsert_ctes!(),
    " SELECT * FROM updated UNION ALL SELECT * FROM inserted"
);

/// [`UPSERT`] with its audit row (`$11`..`$16`), written only when the document is.
const UPSERT_AUDITED: &str = concat!(
    upsert_ctes!(),
    ", logged AS (INSERT INTO audit_log (actor, action, namespace, path, params, at) ",
    "SELECT $11, $12, $13, $14, $15, $16 FROM (SELECT 1 FROM updated UNION ALL SELECT 1 FROM inserted) written) ",
    "SELECT * FROM updated UNION ALL SELECT * FROM inserted"
);

/// A guarded update in one statement: the locked rewrite, only when the live row's body
/// matches `$9` (any body when NULL). One row comes back when the document exists, saying
/// whether the body matched, with the updated columns when it did.
macro_rules! update_ctes {
    () => {
        concat!(
            locked_rewrite_ctes!(
                ", ($9::text IS NULL OR coalesce(body, '') = $9) AS body_matches",
                " WHERE body_matches",
                " AND prior.body_matches"
            ),
            ")"
        )
    };
}

const UPDATE: &str = concat!(
    update_ctes!(),
    " SELECT prior.body_matches, updated.* FROM prior LEFT JOIN updated ON true"
);

/// [`UPDATE`] with its audit row (`$10`..`$15`), written only when the document is.
const UPDATE_AUDITED: &str = concat!(
    update_ctes!(),
    ", logged AS (INSERT INTO audit_log (actor, action, namespace, path, params, at) ",
    "SELECT $10, $11, $12, $13, $14, $15 FROM updated) ",
    "SELECT prior.body_matches, updated.* FROM prior LEFT JOIN updated ON true"
);

const SNAPSHOT_AND_DELETE: &str = "WITH snapshot AS (\
     INSERT INTO document_versions (document_id, namespace, path, title, body, type, status, tags, snapshot_at) \
     SELECT id, namespace, path, title, body, type, status, tags, $2 FROM documents WHERE id = $1) \
     DELETE FROM documents WHERE id = $1";

const SNAPSHOT_AND_RENAME: &str = "WITH snapshot AS (\
     INSERT INTO document_versions (document_id, namespace, path, title, body, type, status, tags, snapshot_at) \
     SELECT id, namespace, path, title, body, type, status, tags, $3 FROM documents WHERE id = $1) \
     UPDATE documents SET path = $2, updated_at = $3 WHERE id = $1";

/// Removes every edge touching the document, returned in creation order.
const REMOVE_EDGES: &str = "WITH gone AS (DELETE FROM document_links \
     WHERE (from_ns = $1 AND from_path = $2) OR (to_ns = $1 AND to_path = $2) \
     RETURNING id, type, from_ns, from_path, to_ns, to_path) \
     SELECT type, from_ns, from_path, to_ns, to_path FROM gone ORDER BY id";

const DELETE_OUTGOING: &str = "DELETE FROM document_links WHERE from_ns = $1 AND from_path = $2";

const INSERT_EDGES: &str = "INSERT INTO document_links (from_ns, from_path, type, to_ns, to_path, created_at) \
     SELECT $1, $2, l.type, l.ns, l.path, $3 \
     FROM unnest($4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS l(type, ns, path, ord) \
     ORDER BY l.ord ON CONFLICT DO NOTHING";

const TARGET_EXISTS: &str =
    "SELECT EXISTS (SELECT 1 FROM documents WHERE namespace = $1 AND path = $2)";
const REPOINT_FROM: &str =
    "UPDATE document_links SET from_path = $3 WHERE from_ns = $1 AND from_path = $2";
const REPOINT_TO: &str = "UPDATE document_links SET to_path = $3 WHERE to_ns = $1 AND to_path = $2";

/// How often an upsert runs again after losing a create race.
const UPSERT_ATTEMPTS: usize = 3;

fn create_collision(namespace: &str, path: &str) -> StoreError {
    StoreError::Conflict(format!(
        "create collision: {namespace}/{path} already exists; nothing was written"
    ))
}

fn body_changed(namespace: &str, path: &str) -> StoreError {
    StoreError::Conflict(format!(
        "the body of {namespace}/{path} changed since it was read; nothing was written"
    ))
}

fn not_found(namespace: &str, path: &str) -> StoreError {
    StoreError::NotFound(format!("not found: {namespace}/{path}"))
}

/// Locks `(namespace, path)`: its id, or `NotFound`; `Conflict` when `expected_body` no
/// longer matches.
async fn lock_existing(
    conn: &mut PgConnection,
    namespace: &str,
    path: &str,
    expected_body: Option<&str>,
) -> TxResult<i64> {
    let prior: Option<(i64, bool)> = sqlx::query_as(LOCK_DOCUMENT)
        .bind(namespace)
        .bind(path)
        .bind(expected_body)
        .fetch_optional(conn)
        .await?;
    match prior {
        None => Err(not_found(namespace, path).into()),
        Some((_, false)) => Err(body_changed(namespace, path).into()),
        Some((id, true)) => Ok(id),
    }
}

/// The write itself, inside the caller's transaction: guard, snapshot, upsert, edges. Also
/// used for job mirrors (with [`WriteGuard::Upsert`]).
pub(crate) async fn write_in_tx(
    conn: &mut PgConnection,
    write: &DocumentWrite,
    guard: &WriteGuard,
) -> TxResult<WriteReceipt> {
    let at = write.at.to_string();
    let receipt = match guard {
        WriteGuard::Create => create(&mut *conn, write, None).await?,
        WriteGuard::Upsert => upsert(&mut *conn, write, None).await?,
        WriteGuard::Update { expected_body } => {
            update(&mut *conn, write, expected_body.as_deref(), None).await?
        }
    };
    if let Some(links) = &write.links {
        replace_links(&mut *conn, &write.namespace, &write.path, links, &at).await?;
    }
    Ok(receipt)
}

/// Binds `$1`..`$10` of [`INSERT_DOCUMENT`], [`UPSERT`] and a job mirror's upsert: the
/// write's fields, its time, and a new row's type and status when the write names none (the
/// core's defaults).
pub(crate) fn bind_write<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    write: &'q DocumentWrite,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(&write.namespace)
        .bind(&write.path)
        .bind(write.title.as_deref())
        .bind(write.body.as_deref())
        .bind(write.doc_type.as_deref())
        .bind(write.status.as_deref())
        .bind(write.tags.as_deref())
        .bind(write.at.to_string())
        .bind(DEFAULT_TYPE.as_str())
        .bind(DEFAULT_STATUS.as_str())
}

/// Binds a write's `$1`..`$10` to `sql`, and its audit row's `$11`..`$16` when it carries one
/// (`audited` names the SQL that does).
fn bind_write_audited<'q>(
    sql: &'static str,
    audited: &'static str,
    write: &'q DocumentWrite,
    entry: Option<&'q AuditEntry>,
) -> Result<sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>, StoreError> {
    match entry {
        None => Ok(bind_write(sqlx::query(sql), write)),
        Some(entry) => audit::bind(bind_write(sqlx::query(audited), write), entry),
    }
}

/// Inserts the row (with `entry`'s audit row in the same statement, when given); the unique
/// `(namespace, path)` decides a create race.
async fn create(
    conn: &mut PgConnection,
    write: &DocumentWrite,
    entry: Option<&AuditEntry>,
) -> TxResult<WriteReceipt> {
    let row = bind_write_audited(INSERT_DOCUMENT, INSERT_DOCUMENT_AUDITED, write, entry)?
        .fetch_optional(conn)
        .await?;
    match row {
        Some(row) => Ok(WriteReceipt {
            created: true,
            snapshotted: false,
            document: rows::document(row)?,
        }),
        None => Err(create_collision(&write.namespace, &write.path).into()),
    }
}

/// Updates (with a snapshot) or inserts, whichever applies (with `entry`'s audit row in the
/// same statement, when given).
async fn upsert(
    conn: &mut PgConnection,
    write: &DocumentWrite,
    entry: Option<&AuditEntry>,
) -> TxResult<WriteReceipt> {
    for _ in 0..UPSERT_ATTEMPTS {
        let row = bind_write_audited(UPSERT, UPSERT_AUDITED, write, entry)?
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(row) = row {
            let created: bool = row.try_get("created")?;
            return Ok(WriteReceipt {
                created,
                snapshotted: !created,
                document: rows::document(row)?,
            });
        }
        // Another transaction created the row after this statement began: go again (the
        // attempt wrote nothing, its audit row included).
    }
    Err(StoreError::Conflict(format!(
        "{}/{} kept changing under the write; nothing was written",
        write.namespace, write.path
    ))
    .into())
}

/// [`UPDATE`]: locks the row, checks `expected_body`, snapshots and updates it (with `entry`'s
/// audit row in the same statement, when given); a row gone or a body changed is refused with
/// nothing written.
async fn update(
    conn: &mut PgConnection,
    write: &DocumentWrite,
    expected_body: Option<&str>,
    entry: Option<&AuditEntry>,
) -> TxResult<WriteReceipt> {
    let (namespace, path) = (write.namespace.as_str(), write.path.as_str());
    let sql = if entry.is_some() {
        UPDATE_AUDITED
    } else {
        UPDATE
    };
    let query = sqlx::query(sql)
        .bind(namespace)
        .bind(path)
        .bind(write.title.as_deref())
        .bind(write.body.as_deref())
        .bind(write.doc_type.as_deref())
        .bind(write.status.as_deref())
        .bind(write.tags.as_deref())
        .bind(write.at.to_string())
        .bind(expected_body);
    let query = match entry {
        Some(entry) => audit::bind(query, entry)?,
        None => query,
    };
    let Some(row) = query.fetch_optional(conn).await? else {
        return Err(StoreError::NotFound(format!(
            "deleted in flight: {namespace}/{path} is gone; nothing was written"
        ))
        .into());
    };
    if !row.try_get::<bool, _>("body_matches")? {
        return Err(body_changed(namespace, path).into());
    }
    Ok(WriteReceipt {
        created: false,
        snapshotted: true,
        document: rows::document(row)?,
    })
}

/// Replaces every outgoing edge of `(namespace, path)` with `links`.
async fn replace_links(
    conn: &mut PgConnection,
    namespace: &str,
    path: &str,
    links: &[Link],
    at: &str,
) -> TxResult<()> {
    sqlx::query(DELETE_OUTGOING)
        .bind(namespace)
        .bind(path)
        .execute(&mut *conn)
        .await?;
    if links.is_empty() {
        return Ok(());
    }
    let types: Vec<&str> = links.iter().map(|l| l.link_type.as_str()).collect();
    let namespaces: Vec<&str> = links.iter().map(|l| l.to_ns.as_str()).collect();
    let paths: Vec<&str> = links.iter().map(|l| l.to_path.as_str()).collect();
    sqlx::query(INSERT_EDGES)
        .bind(namespace)
        .bind(path)
        .bind(at)
        .bind(types)
        .bind(namespaces)
        .bind(paths)
        .execute(conn)
        .await?;
    Ok(())
}

/// `DocumentStore::write_document`.
pub(crate) async fn write_document(
    pool: &PgPool,
    write: &DocumentWrite,
    guard: &WriteGuard,
    audit: &[AuditEntry],
) -> StoreResult<WriteReceipt> {
    if let ([entry], None) = (audit, &write.links) {
        // The common write (a create, an upsert or a guarded update with one audit row and no
        // links) is one statement, atomic by itself: one round trip where a transaction takes
        // four or five (BEGIN, the lock, the write, the audit row, COMMIT), and a pooled
        // connection held that much less.
        return with_retry(|| {
            Box::pin(async move {
                let mut conn = pool.acquire().await?;
                match guard {
                    WriteGuard::Create => create(&mut conn, write, Some(entry)).await,
                    WriteGuard::Upsert => upsert(&mut conn, write, Some(entry)).await,
                    WriteGuard::Update { expected_body } => {
                        update(&mut conn, write, expected_body.as_deref(), Some(entry)).await
                    }
                }
            })
        })
        .await;
    }
    with_retry(|| {
        Box::pin(async move {
            let mut tx = pool.begin().await?;
            let result = async {
                let receipt = write_in_tx(&mut tx, write, guard).await?;
                audit::insert_all(&mut tx, audit).await?;
                Ok(receipt)
            }
            .await;
            finish(tx, result, always).await
        })
    })
    .await
}

/// `DocumentStore::delete_document`.
pub(crate) async fn delete_document(
    pool: &PgPool,
    namespace: &str,
    path: &str,
    expected_body: Option<&str>,
    audit: &AuditEntry,
) -> StoreResult<Vec<EdgeTuple>> {
    with_retry(|| {
        Box::pin(async move {
            let mut tx = pool.begin().await?;
            let result = async {
                let id = lock_existing(&mut tx, namespace, path, expected_body).await?;
                let rows = sqlx::query(REMOVE_EDGES)
                    .bind(namespace)
                    .bind(path)
                    .fetch_all(&mut *tx)
                    .await?;
                let rows: Vec<_> = rows.into_iter().map(SqlRow::Postgres).collect();
                let edges = all(&rows, edge)?;
                sqlx::query(SNAPSHOT_AND_DELETE)
                    .bind(id)
                    .bind(audit.at.to_string())
                    .execute(&mut *tx)
                    .await?;
                audit::insert(&mut tx, audit).await?;
                Ok(edges)
            }
            .await;
            finish(tx, result, always).await
        })
    })
    .await
}

/// One move inside the caller's transaction: the source must exist (and still hold
/// `expected_body`), the target must not; snapshot, rename, repoint edges at both ends.
/// Returns the number of edges repointed.
async fn move_in_tx(
    conn: &mut PgConnection,
    namespace: &str,
    from: &str,
    to: &str,
    expected_body: Option<&str>,
    at: &str,
) -> TxResult<u64> {
    let id = lock_existing(&mut *conn, namespace, from, expected_body).await?;
    let taken: bool = sqlx::query_scalar(TARGET_EXISTS)
        .bind(namespace)
        .bind(to)
        .fetch_one(&mut *conn)
        .await?;
    if taken {
        return Err(StoreError::Conflict(format!(
            "move failed, nothing changed: {namespace}/{to} already exists"
        ))
        .into());
    }
    // A target created concurrently surfaces here as a unique violation (a Conflict).
    sqlx::query(SNAPSHOT_AND_RENAME)
        .bind(id)
        .bind(to)
        .bind(at)
        .execute(&mut *conn)
        .await?;
    let mut repointed = 0;
    for sql in [REPOINT_FROM, REPOINT_TO] {
        let done = sqlx::query(sql)
            .bind(namespace)
            .bind(from)
            .bind(to)
            .execute(&mut *conn)
            .await?;
        repointed += done.rows_affected();
    }
    Ok(repointed)
}

/// `DocumentStore::move_document`.
pub(crate) async fn move_document(
    pool: &PgPool,
    namespace: &str,
    from: &str,
    to: &str,
    expected_body: Option<&str>,
    at: Timestamp,
    audit: &AuditEntry,
) -> StoreResult<u64> {
    let at = at.to_string();
    let at = at.as_str();
    with_retry(|| {
        Box::pin(async move {
            let mut tx = pool.begin().await?;
            let result = async {
                let repointed = move_in_tx(&mut tx, namespace, from, to, expected_body, at).await?;
                audit::insert(&mut tx, audit).await?;
                Ok(repointed)
            }
            .await;
            finish(tx, result, always).await
        })
    })
    .await
}

/// `DocumentStore::archive_documents`: every move or none, one audit row.
pub(crate) async fn archive_documents(
    pool: &PgPool,
    namespace: &str,
    moves: &[(String, String)],
    at: Timestamp,
    audit: &AuditEntry,
) -> StoreResult<u64> {
    let at = at.to_string();
    let at = at.as_str();
    with_retry(|| {
        Box::pin(async move {
            let mut tx = pool.begin().await?;
            let result = async {
                let mut repointed = 0;
                for (from, to) in moves {
                    repointed += move_in_tx(&mut tx, namespace, from, to, None, at).await?;
                }
                audit::insert(&mut tx, audit).await?;
                Ok(repointed)
            }
            .await;
            finish(tx, result, always).await
        })
    })
    .await
}
