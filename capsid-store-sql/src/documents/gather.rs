//! What the gathers share: a namespace's edges and its dangling edges, read on the packet's
//! snapshot (each engine opens its own: a SQLite read transaction, a Postgres `REPEATABLE
//! READ` one), and `page_documents`, the keyset-paginated pages of resources and prompts.

use capsid_core::docs::document::DocumentSummary;
use capsid_core::ports::{EdgeTuple, StoreResult};

use crate::engine::{Engine, read_all};
use crate::exec::Exec;
use crate::row::{Row, all};
use crate::stmt::Stmt;

use super::read::{SUMMARY_COLUMNS, summary};

/// Every edge with an end in the namespace (indexes `document_links_from`/`_to`).
pub const EDGES: &str = "SELECT type, from_ns, from_path, to_ns, to_path FROM document_links \
     WHERE from_ns = $1 OR to_ns = $1 ORDER BY type, from_ns, from_path, to_ns, to_path";

/// Edges with an end in the namespace and an endpoint (either one) that does not exist.
pub const DANGLING_EDGES: &str = "SELECT l.type, l.from_ns, l.from_path, l.to_ns, l.to_path \
     FROM document_links AS l WHERE (l.from_ns = $1 OR l.to_ns = $1) \
     AND (NOT EXISTS (SELECT 1 FROM documents AS s WHERE s.namespace = l.from_ns AND s.path = l.from_path) \
       OR NOT EXISTS (SELECT 1 FROM documents AS t WHERE t.namespace = l.to_ns AND t.path = l.to_path)) \
     ORDER BY l.type, l.from_ns, l.from_path, l.to_ns, l.to_path";

/// An edge from a row selected as `type, from_ns, from_path, to_ns, to_path`.
pub fn edge(row: &Row) -> Result<EdgeTuple, sqlx::Error> {
    Ok((
        row.text("type")?,
        row.text("from_ns")?,
        row.text("from_path")?,
        row.text("to_ns")?,
        row.text("to_path")?,
    ))
}

/// The edges of `sql` ([`EDGES`] or [`DANGLING_EDGES`]) for `namespace`, read on `x`.
pub async fn edges_on(
    x: &mut (impl Exec + ?Sized),
    sql: &'static str,
    namespace: &str,
) -> Result<Vec<EdgeTuple>, sqlx::Error> {
    let rows = x.fetch_all(Stmt::new(sql).bind(namespace)).await?;
    all(&rows, edge)
}

/// `$n` for `value`, the next argument of `args`.
fn placeholder<'a>(args: &mut Vec<&'a str>, value: &'a str) -> String {
    args.push(value);
    format!("${}", args.len())
}

/// `DocumentStore::page_documents`: summaries in `(namespace, path)` order after the keyset
/// position `after`, of the given namespaces and type when given.
pub async fn page_documents(
    engine: &impl Engine,
    namespaces: Option<&[String]>,
    doc_type: Option<&str>,
    after: Option<(&str, &str)>,
    limit: usize,
) -> StoreResult<Vec<DocumentSummary>> {
    if namespaces.is_some_and(<[String]>::is_empty) || limit == 0 {
        return Ok(Vec::new());
    }
    let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM documents WHERE 1 = 1");
    let mut args = Vec::new();
    if let Some(namespaces) = namespaces {
        let list: Vec<String> = namespaces
            .iter()
            .map(|namespace| placeholder(&mut args, namespace))
            .collect();
        sql.push_str(&format!(" AND namespace IN ({})", list.join(", ")));
    }
    if let Some(doc_type) = doc_type {
        let p = placeholder(&mut args, doc_type);
        sql.push_str(&format!(" AND type = {p}"));
    }
    if let Some((namespace, path)) = after {
        let (n, p) = (
            placeholder(&mut args, namespace),
            placeholder(&mut args, path),
        );
        sql.push_str(&format!(" AND (namespace, path) > ({n}, {p})"));
    }
    sql.push_str(&format!(
        " ORDER BY namespace, path LIMIT ${}",
        args.len() + 1
    ));
    let stmt = args.into_iter().fold(Stmt::new(sql), Stmt::bind);
    read_all(engine, stmt.bind(limit), summary).await
}
