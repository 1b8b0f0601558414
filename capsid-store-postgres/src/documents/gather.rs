//! The one-read packets of `brief` and `lint`: several queries in one read-only
//! REPEATABLE READ transaction, so every row comes from the same snapshot.

use capsid_core::docs::document::Document;
use capsid_core::ports::{BriefRows, DocWithActor, LintRows, StoreResult};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgPool, Row};

use super::{EdgeRow, fetch_backlinks};
use crate::error::translate;
use crate::rows::{self, doc_cols, doc_cols_d};

const SNAPSHOT_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// A document with the actor of its newest audit row.
macro_rules! with_actor {
    () => {
        concat!(
            "SELECT ",
            doc_cols_d!(),
            ", (SELECT a.actor FROM audit_log a WHERE a.namespace = d.namespace AND a.path = d.path \
             ORDER BY a.id DESC LIMIT 1) AS last_actor FROM documents d"
        )
    };
}

const DOC_WITH_ACTOR: &str = concat!(with_actor!(), " WHERE d.namespace = $1 AND d.path = $2");

/// Open tasks: type `task`, status not `closed`, not under `archive/`, newest update first.
pub(crate) const OPEN_TASKS: &str = concat!(
    with_actor!(),
    " WHERE d.namespace = $1 AND d.type = 'task' AND d.status <> 'closed' \
     AND d.path NOT LIKE 'archive/%' ORDER BY d.updated_at DESC, d.id DESC"
);

const RECENT_EPISODICS: &str = concat!(
    with_actor!(),
    " WHERE d.namespace = $1 AND d.type = 'episodic' AND d.path NOT LIKE 'archive/%' \
     ORDER BY d.updated_at DESC, d.id DESC LIMIT 3"
);

const WIKI: &str = concat!(
    "SELECT ",
    doc_cols!(),
    " FROM documents WHERE namespace = $1 AND type IN ('concept', 'decision') \
     AND path NOT LIKE 'archive/%' ORDER BY path"
);

const UNCONSOLIDATED: &str = concat!(
    "SELECT ",
    doc_cols!(),
    " FROM documents WHERE namespace = $1 AND type IN ('episodic', 'source') \
     AND path NOT LIKE 'archive/%' ORDER BY created_at, id"
);

/// `capsid/schema.md` then `capsid/conventions.md` (the port's order), when present.
const RULES: &str = concat!(
    "SELECT ",
    doc_cols!(),
    " FROM documents WHERE namespace = 'capsid' AND path IN ('schema.md', 'conventions.md') \
     ORDER BY path DESC"
);

/// Everything else of the namespace not under `archive/`: not `core.md`, not wiki, not
/// unconsolidated, not a rules document.
const OTHERS: &str = concat!(
    "SELECT ",
    doc_cols!(),
    " FROM documents WHERE namespace = $1 AND path NOT LIKE 'archive/%' AND path <> 'core.md' \
     AND type NOT IN ('concept', 'decision', 'episodic', 'source') \
     AND NOT (namespace = 'capsid' AND path IN ('schema.md', 'conventions.md')) ORDER BY path"
);

/// Every document of the namespace under `archive/`.
const ARCHIVED: &str = concat!(
    "SELECT ",
    doc_cols!(),
    " FROM documents WHERE namespace = $1 AND path LIKE 'archive/%' ORDER BY path"
);

/// Every edge with either endpoint in the namespace.
const EDGES: &str = "SELECT type, from_ns, from_path, to_ns, to_path FROM document_links \
     WHERE from_ns = $1 OR to_ns = $1 ORDER BY type, from_ns, from_path, to_ns, to_path";

/// Edges touching the namespace at either end whose other end (or either end) is missing.
const DANGLING_EDGES: &str = "SELECT l.type, l.from_ns, l.from_path, l.to_ns, l.to_path FROM document_links l \
     WHERE (l.from_ns = $1 OR l.to_ns = $1) \
     AND (NOT EXISTS (SELECT 1 FROM documents d WHERE d.namespace = l.from_ns AND d.path = l.from_path) \
       OR NOT EXISTS (SELECT 1 FROM documents d WHERE d.namespace = l.to_ns AND d.path = l.to_path)) \
     ORDER BY l.type, l.from_ns, l.from_path, l.to_ns, l.to_path";

fn with_actor(row: &PgRow) -> Result<DocWithActor, sqlx::Error> {
    Ok(DocWithActor {
        document: rows::document(row)?,
        last_actor: row.try_get("last_actor")?,
    })
}

async fn one_with_actor(
    conn: &mut PgConnection,
    namespace: &str,
    path: &str,
) -> Result<Option<DocWithActor>, sqlx::Error> {
    let row = sqlx::query(DOC_WITH_ACTOR)
        .bind(namespace)
        .bind(path)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(with_actor).transpose()
}

async fn many_with_actor(
    conn: &mut PgConnection,
    sql: &'static str,
    namespace: &str,
) -> Result<Vec<DocWithActor>, sqlx::Error> {
    let rows = sqlx::query(sql).bind(namespace).fetch_all(conn).await?;
    rows.iter().map(with_actor).collect()
}

async fn documents(
    conn: &mut PgConnection,
    sql: &'static str,
    namespace: Option<&str>,
) -> Result<Vec<Document>, sqlx::Error> {
    let mut query = sqlx::query(sql);
    if let Some(namespace) = namespace {
        query = query.bind(namespace);
    }
    let rows = query.fetch_all(conn).await?;
    rows.iter().map(rows::document).collect()
}

/// Edge rows `(type, from_ns, from_path, to_ns, to_path)` of `sql` for `namespace`.
async fn edge_rows(
    conn: &mut PgConnection,
    sql: &'static str,
    namespace: &str,
) -> Result<Vec<EdgeRow>, sqlx::Error> {
    let rows = sqlx::query(sql).bind(namespace).fetch_all(conn).await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("type")?,
                row.try_get("from_ns")?,
                row.try_get("from_path")?,
                row.try_get("to_ns")?,
                row.try_get("to_path")?,
            ))
        })
        .collect()
}

/// `DocumentStore::brief_rows`.
pub(crate) async fn brief_rows(pool: &PgPool, namespace: &str) -> StoreResult<BriefRows> {
    let read = async {
        let mut tx = pool.begin_with(SNAPSHOT_READ).await?;
        let rows = BriefRows {
            conventions: one_with_actor(&mut tx, "capsid", "conventions.md").await?,
            repo_structure: one_with_actor(&mut tx, "capsid", "repo-structure.md").await?,
            core: one_with_actor(&mut tx, namespace, "core.md").await?,
            open_tasks: many_with_actor(&mut tx, OPEN_TASKS, namespace).await?,
            recent_episodics: many_with_actor(&mut tx, RECENT_EPISODICS, namespace).await?,
            core_links: fetch_backlinks(&mut tx, namespace, "core.md").await?,
        };
        tx.commit().await?;
        Ok::<_, sqlx::Error>(rows)
    };
    read.await.map_err(translate)
}

/// `DocumentStore::lint_rows`.
pub(crate) async fn lint_rows(pool: &PgPool, namespace: &str) -> StoreResult<LintRows> {
    let read = async {
        let mut tx = pool.begin_with(SNAPSHOT_READ).await?;
        let core = super::fetch_document(&mut tx, namespace, "core.md").await?;
        let wiki = documents(&mut tx, WIKI, Some(namespace)).await?;
        let unconsolidated = documents(&mut tx, UNCONSOLIDATED, Some(namespace)).await?;
        let rules = documents(&mut tx, RULES, None).await?;
        let others = documents(&mut tx, OTHERS, Some(namespace)).await?;
        let archived = documents(&mut tx, ARCHIVED, Some(namespace)).await?;
        let edges = edge_rows(&mut tx, EDGES, namespace).await?;
        let dangling_edges = edge_rows(&mut tx, DANGLING_EDGES, namespace).await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(LintRows {
            core,
            wiki,
            unconsolidated,
            rules,
            others,
            archived,
            edges,
            dangling_edges,
        })
    };
    read.await.map_err(translate)
}
