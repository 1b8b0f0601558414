//! The multi-part reads: packets (named documents, selections, links and edges from one read
//! snapshot; the core decides what `brief` and `lint` select). The edges' statements are
//! the shared ones (`capsid_store_sql::documents::gather`).

use capsid_core::ports::{
    DocWithActor, Kinds, Order, Packet, PacketRows, Prefix, Selection, StoreResult,
};
use capsid_store_sql::documents::{DANGLING_EDGES, EDGES, edges_on};
use capsid_store_sql::{Row as SqlRow, doc_columns};
use sqlx::QueryBuilder;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteRow};

use crate::error::DbResult;
use crate::rows::{self, limit as sql_limit};
use crate::store::SqliteStore;

/// A document row with the actor of its newest audit row (a correlated lookup on
/// `audit_log_doc`).
macro_rules! with_actor_select {
    () => {
        concat!(
            "SELECT ",
            doc_columns!(),
            ", (SELECT a.actor FROM audit_log AS a WHERE a.namespace = documents.namespace \
             AND a.path = documents.path ORDER BY a.id DESC LIMIT 1) AS last_actor \
             FROM documents WHERE namespace = "
        )
    };
}

fn with_actor(row: SqliteRow) -> Result<DocWithActor, sqlx::Error> {
    capsid_store_sql::documents::with_actor(&SqlRow::Sqlite(row))
}

/// One document with its last actor: the row and the correlated `audit_log_doc` lookup in
/// one statement (what `read` and the packets' named documents run).
pub(crate) const DOC_WITH_ACTOR_SQL: &str = concat!(with_actor_select!(), "? AND path = ?");

/// One document with the actor of its newest audit row, read on `conn` in one statement.
pub(crate) async fn doc_with_actor(
    conn: &mut SqliteConnection,
    namespace: &str,
    path: &str,
) -> Result<Option<DocWithActor>, sqlx::Error> {
    let row = sqlx::query(DOC_WITH_ACTOR_SQL)
        .bind(namespace)
        .bind(path)
        .fetch_optional(conn)
        .await?;
    row.map(with_actor).transpose()
}

/// Pushes `, 'a', 'b'` ... as bound values.
fn push_list(qb: &mut QueryBuilder<Sqlite>, values: &[String]) {
    let mut list = qb.separated(", ");
    for value in values {
        list.push_bind(value.clone());
    }
}

/// Pushes the query of one selection onto `qb` (also what the plan check explains). A prefix
/// is compared with `substr`, so no character of it is a pattern.
pub(crate) fn push_selection(qb: &mut QueryBuilder<Sqlite>, selection: &Selection) {
    qb.push(with_actor_select!());
    qb.push_bind(selection.namespace.clone());
    match &selection.kinds {
        Kinds::Any => {}
        Kinds::Only(types) => {
            qb.push(" AND type IN (");
            push_list(qb, types);
            qb.push(")");
        }
        Kinds::Except(types) => {
            qb.push(" AND type NOT IN (");
            push_list(qb, types);
            qb.push(")");
        }
    }
    match &selection.prefix {
        Prefix::Any => {}
        Prefix::Inside(prefix) => {
            qb.push(" AND substr(path, 1, ")
                .push_bind(prefix.chars().count() as i64)
                .push(") = ")
                .push_bind(prefix.clone());
        }
        Prefix::Outside(prefix) => {
            qb.push(" AND substr(path, 1, ")
                .push_bind(prefix.chars().count() as i64)
                .push(") != ")
                .push_bind(prefix.clone());
        }
    }
    if let Some(status) = &selection.status_not {
        qb.push(" AND status != ").push_bind(status.clone());
    }
    if !selection.except_paths.is_empty() {
        qb.push(" AND path NOT IN (");
        push_list(qb, &selection.except_paths);
        qb.push(")");
    }
    qb.push(match selection.order {
        Order::Path => " ORDER BY path",
        Order::OldestFirst => " ORDER BY created_at, id",
        Order::NewestUpdateFirst => " ORDER BY updated_at DESC, id DESC",
    });
    if let Some(limit) = selection.limit {
        qb.push(" LIMIT ").push_bind(sql_limit(limit));
    }
}

/// `DocumentStore::read_packet`: every part from one read transaction.
pub(crate) async fn read_packet(store: &SqliteStore, packet: &Packet) -> StoreResult<PacketRows> {
    let mut tx = store.begin_read().await?;
    let mut out = PacketRows::default();
    for (namespace, path) in &packet.documents {
        out.documents
            .push(doc_with_actor(&mut tx, namespace, path).await.db()?);
    }
    for selection in &packet.selections {
        let mut qb = QueryBuilder::<Sqlite>::new("");
        push_selection(&mut qb, selection);
        let found = qb.build().fetch_all(&mut *tx).await.db()?;
        out.selections.push(rows::all(found, with_actor).db()?);
    }
    for (namespace, path) in &packet.links_of {
        out.links.push(
            capsid_store_sql::documents::backlinks_on(&mut *tx, namespace, path)
                .await
                .db()?,
        );
    }
    if let Some(namespace) = &packet.edges_of {
        out.edges = edges_on(&mut *tx, EDGES, namespace).await.db()?;
        out.dangling_edges = edges_on(&mut *tx, DANGLING_EDGES, namespace).await.db()?;
    }
    Ok(out)
}
