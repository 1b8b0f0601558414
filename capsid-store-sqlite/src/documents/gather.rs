//! The multi-part reads: `brief` and `lint` packets (each from one read snapshot) and the
//! keyset-paginated document pages of resources and prompts.

use capsid_core::docs::document::{Document, DocumentSummary};
use capsid_core::ports::{BriefRows, DocWithActor, LintRows, StoreResult};
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteRow};
use sqlx::{QueryBuilder, Row};

use super::{backlinks_on, document_on, last_actor_on};
use crate::error::DbResult;
use crate::rows::{self, doc_columns, limit as sql_limit, summary_columns};
use crate::store::SqliteStore;

/// The namespace holding the shared conventions and rules documents.
const CAPSID: &str = "capsid";

/// Documents with the actor of their newest audit row (a correlated lookup on
/// `audit_log_doc`), of one namespace.
macro_rules! with_actor_from {
    () => {
        concat!(
            "SELECT ",
            doc_columns!(),
            ", (SELECT a.actor FROM audit_log AS a WHERE a.namespace = documents.namespace \
             AND a.path = documents.path ORDER BY a.id DESC LIMIT 1) AS last_actor \
             FROM documents WHERE namespace = ? "
        )
    };
}

/// `brief`'s open tasks: type `task`, status not `closed`, not under `archive/`, newest
/// update first. (`GLOB` is case-sensitive, like the core's `archive/` test.)
pub(crate) const BRIEF_OPEN_TASKS_SQL: &str = concat!(
    with_actor_from!(),
    "AND type = 'task' AND status != 'closed' AND NOT (path GLOB 'archive/*') ORDER BY updated_at DESC, id DESC"
);

const BRIEF_RECENT_EPISODICS_SQL: &str = concat!(
    with_actor_from!(),
    "AND type = 'episodic' AND NOT (path GLOB 'archive/*') ORDER BY updated_at DESC, id DESC LIMIT 3"
);

fn with_actor(row: &SqliteRow) -> Result<DocWithActor, sqlx::Error> {
    Ok(DocWithActor {
        document: rows::document(row)?,
        last_actor: row.try_get("last_actor")?,
    })
}

async fn doc_with_actor(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
) -> Result<Option<DocWithActor>, sqlx::Error> {
    let Some(document) = document_on(&mut *conn, namespace, path).await? else {
        return Ok(None);
    };
    let last_actor = last_actor_on(conn, namespace, path).await?;
    Ok(Some(DocWithActor {
        document,
        last_actor,
    }))
}

pub(crate) async fn brief_rows(store: &SqliteStore, namespace: &str) -> StoreResult<BriefRows> {
    let mut tx = store.begin_read().await?;
    let conventions = doc_with_actor(&mut tx, CAPSID, "conventions.md")
        .await
        .db()?;
    let repo_structure = doc_with_actor(&mut tx, CAPSID, "repo-structure.md")
        .await
        .db()?;
    let core = doc_with_actor(&mut tx, namespace, "core.md").await.db()?;
    let tasks = sqlx::query(BRIEF_OPEN_TASKS_SQL)
        .bind(namespace)
        .fetch_all(&mut *tx)
        .await
        .db()?;
    let episodics = sqlx::query(BRIEF_RECENT_EPISODICS_SQL)
        .bind(namespace)
        .fetch_all(&mut *tx)
        .await
        .db()?;
    let core_links = backlinks_on(&mut tx, namespace, "core.md").await.db()?;
    Ok(BriefRows {
        conventions,
        repo_structure,
        core,
        open_tasks: rows::all(&tasks, with_actor).db()?,
        recent_episodics: rows::all(&episodics, with_actor).db()?,
        core_links,
    })
}

const LINT_WIKI_SQL: &str = concat!(
    "SELECT ",
    doc_columns!(),
    " FROM documents WHERE namespace = ? AND type IN ('concept', 'decision') AND NOT (path GLOB 'archive/*') \
     ORDER BY path"
);

const LINT_UNCONSOLIDATED_SQL: &str = concat!(
    "SELECT ",
    doc_columns!(),
    " FROM documents WHERE namespace = ? AND type IN ('episodic', 'source') AND NOT (path GLOB 'archive/*') \
     ORDER BY created_at, id"
);

/// Everything else of the namespace not under `archive/`: not `core.md`, not wiki, not
/// unconsolidated, not a rules document.
const LINT_OTHERS_SQL: &str = concat!(
    "SELECT ",
    doc_columns!(),
    " FROM documents WHERE namespace = ? AND path != 'core.md' \
     AND type NOT IN ('concept', 'decision', 'episodic', 'source') AND NOT (path GLOB 'archive/*') \
     AND NOT (namespace = 'capsid' AND path IN ('schema.md', 'conventions.md')) ORDER BY path"
);

const LINT_ARCHIVED_SQL: &str = concat!(
    "SELECT ",
    doc_columns!(),
    " FROM documents WHERE namespace = ? AND path GLOB 'archive/*' ORDER BY path"
);

/// Every edge with an end in the namespace (indexes `document_links_from`/`_to`).
const LINT_EDGES_SQL: &str = "SELECT type, from_ns, from_path, to_ns, to_path FROM document_links \
     WHERE from_ns = ?1 OR to_ns = ?1 ORDER BY type, from_ns, from_path, to_ns, to_path";

/// Edges with an end in the namespace and an endpoint (either one) that does not exist.
const LINT_DANGLING_SQL: &str = "SELECT l.type, l.from_ns, l.from_path, l.to_ns, l.to_path \
     FROM document_links AS l WHERE (l.from_ns = ?1 OR l.to_ns = ?1) \
     AND (NOT EXISTS (SELECT 1 FROM documents AS s WHERE s.namespace = l.from_ns AND s.path = l.from_path) \
       OR NOT EXISTS (SELECT 1 FROM documents AS t WHERE t.namespace = l.to_ns AND t.path = l.to_path)) \
     ORDER BY l.type, l.from_ns, l.from_path, l.to_ns, l.to_path";

async fn documents_where(
    conn: &mut SqliteConnection,
    sql: &'static str,
    namespace: &str,
) -> StoreResult<Vec<Document>> {
    let found = sqlx::query(sql)
        .bind(namespace)
        .fetch_all(conn)
        .await
        .db()?;
    rows::all(&found, rows::document).db()
}

/// An edge as `(type, from_ns, from_path, to_ns, to_path)`.
pub(crate) type EdgeTuple = (String, String, String, String, String);

/// Maps a row selected as `type, from_ns, from_path, to_ns, to_path`.
pub(crate) fn edge_tuple(row: &SqliteRow) -> Result<EdgeTuple, sqlx::Error> {
    edge_tuple_at(row, 0)
}

/// Maps the five edge columns starting at column `first`.
pub(crate) fn edge_tuple_at(row: &SqliteRow, first: usize) -> Result<EdgeTuple, sqlx::Error> {
    Ok((
        row.try_get(first)?,
        row.try_get(first + 1)?,
        row.try_get(first + 2)?,
        row.try_get(first + 3)?,
        row.try_get(first + 4)?,
    ))
}

async fn edges_where(
    conn: &mut SqliteConnection,
    sql: &'static str,
    namespace: &str,
) -> StoreResult<Vec<EdgeTuple>> {
    let found = sqlx::query(sql)
        .bind(namespace)
        .fetch_all(conn)
        .await
        .db()?;
    rows::all(&found, edge_tuple).db()
}

pub(crate) async fn lint_rows(store: &SqliteStore, namespace: &str) -> StoreResult<LintRows> {
    let mut tx = store.begin_read().await?;
    let core = document_on(&mut tx, namespace, "core.md").await.db()?;
    let wiki = documents_where(&mut tx, LINT_WIKI_SQL, namespace).await?;
    let unconsolidated = documents_where(&mut tx, LINT_UNCONSOLIDATED_SQL, namespace).await?;
    let mut rules = Vec::new();
    for path in ["schema.md", "conventions.md"] {
        if let Some(doc) = document_on(&mut tx, CAPSID, path).await.db()? {
            rules.push(doc);
        }
    }
    let others = documents_where(&mut tx, LINT_OTHERS_SQL, namespace).await?;
    let archived = documents_where(&mut tx, LINT_ARCHIVED_SQL, namespace).await?;
    let edges = edges_where(&mut tx, LINT_EDGES_SQL, namespace).await?;
    let dangling_edges = edges_where(&mut tx, LINT_DANGLING_SQL, namespace).await?;
    Ok(LintRows {
        core,
        wiki,
        unconsolidated,
        rules,
        others,
        archived,
        edges,
        dangling_edges,
    })
}

pub(crate) async fn page_documents(
    store: &SqliteStore,
    namespaces: Option<&[String]>,
    doc_type: Option<&str>,
    after: Option<(&str, &str)>,
    limit: usize,
) -> StoreResult<Vec<DocumentSummary>> {
    if namespaces.is_some_and(<[String]>::is_empty) || limit == 0 {
        return Ok(Vec::new());
    }
    let mut qb = QueryBuilder::<Sqlite>::new(concat!(
        "SELECT ",
        summary_columns!(),
        " FROM documents WHERE 1 = 1"
    ));
    if let Some(namespaces) = namespaces {
        qb.push(" AND namespace IN (");
        let mut list = qb.separated(", ");
        for namespace in namespaces {
            list.push_bind(namespace.clone());
        }
        qb.push(")");
    }
    if let Some(doc_type) = doc_type {
        qb.push(" AND type = ").push_bind(doc_type.to_owned());
    }
    if let Some((namespace, path)) = after {
        qb.push(" AND (namespace, path) > (")
            .push_bind(namespace.to_owned())
            .push(", ")
            .push_bind(path.to_owned())
            .push(")");
    }
    qb.push(" ORDER BY namespace, path LIMIT ")
        .push_bind(sql_limit(limit));
    let found = qb.build().fetch_all(store.reader()).await.db()?;
    rows::all(&found, rows::summary).db()
}
