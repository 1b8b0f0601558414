//! Packets (the core decides what `brief` and `lint` select): named documents, selections,
//! links and edges, several queries in one read-only REPEATABLE READ transaction, so every row
//! comes from the same snapshot.

use capsid_core::ports::{
    DocWithActor, Kinds, Order, Packet, PacketRows, Prefix, Selection, StoreResult,
};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection, PgPool};

use crate::error::translate;
use crate::rows::doc_cols_d;
use capsid_store_sql::documents::{DANGLING_EDGES, EDGES, edges_on};

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

pub(crate) const DOC_WITH_ACTOR: &str =
    concat!(with_actor!(), " WHERE d.namespace = $1 AND d.path = $2");

/// One bound value of a selection's query.
pub(crate) enum Bind {
    /// Text.
    Text(String),
    /// A list of text (`= ANY($n)`).
    Texts(Vec<String>),
    /// A number.
    Int(i64),
}

/// The query of one selection and its bound values (also what the plan check explains). A
/// prefix is compared with `left`, so no character of it is a pattern.
pub(crate) fn selection_sql(selection: &Selection) -> (String, Vec<Bind>) {
    let mut sql = String::from(concat!(with_actor!(), " WHERE d.namespace = $1"));
    let mut binds = vec![Bind::Text(selection.namespace.clone())];
    let next = |bind: Bind, binds: &mut Vec<Bind>| {
        binds.push(bind);
        format!("${}", binds.len())
    };
    match &selection.kinds {
        Kinds::Any => {}
        Kinds::Only(types) => {
            let n = next(Bind::Texts(types.clone()), &mut binds);
            sql.push_str(&format!(" AND d.type = ANY({n})"));
        }
        Kinds::Except(types) => {
            let n = next(Bind::Texts(types.clone()), &mut binds);
            sql.push_str(&format!(" AND NOT (d.type = ANY({n}))"));
        }
    }
    match &selection.prefix {
        Prefix::Any => {}
        Prefix::Inside(prefix) => {
            let n = next(Bind::Text(prefix.clone()), &mut binds);
            sql.push_str(&format!(" AND left(d.path, length({n})) = {n}"));
        }
        Prefix::Outside(prefix) => {
            let n = next(Bind::Text(prefix.clone()), &mut binds);
            sql.push_str(&format!(" AND left(d.path, length({n})) <> {n}"));
        }
    }
    if let Some(status) = &selection.status_not {
        let n = next(Bind::Text(status.clone()), &mut binds);
        sql.push_str(&format!(" AND d.status <> {n}"));
    }
    if !selection.except_paths.is_empty() {
        let n = next(Bind::Texts(selection.except_paths.clone()), &mut binds);
        sql.push_str(&format!(" AND NOT (d.path = ANY({n}))"));
    }
    sql.push_str(match selection.order {
        Order::Path => " ORDER BY d.path",
        Order::OldestFirst => " ORDER BY d.created_at, d.id",
        Order::NewestUpdateFirst => " ORDER BY d.updated_at DESC, d.id DESC",
    });
    if let Some(limit) = selection.limit {
        let n = next(
            Bind::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
            &mut binds,
        );
        sql.push_str(&format!(" LIMIT {n}"));
    }
    (sql, binds)
}

fn with_actor(row: PgRow) -> Result<DocWithActor, sqlx::Error> {
    capsid_store_sql::documents::with_actor(&capsid_store_sql::Row::Postgres(row))
}

/// One document with the actor of its newest audit row, in one statement, read on `conn`.
pub(crate) async fn one_with_actor(
    conn: &mut PgConnection,
    namespace: &str,
    path: &str,
) -> Result<Option<DocWithActor>, sqlx::Error> {
    let row = sqlx::query(DOC_WITH_ACTOR)
        .bind(namespace)
        .bind(path)
        .fetch_optional(conn)
        .await?;
    row.map(with_actor).transpose()
}

async fn selected(
    conn: &mut PgConnection,
    selection: &Selection,
) -> Result<Vec<DocWithActor>, sqlx::Error> {
    let (sql, binds) = selection_sql(selection);
    let mut query = sqlx::query(AssertSqlSafe(sql));
    for bind in binds {
        query = match bind {
            Bind::Text(v) => query.bind(v),
            Bind::Texts(v) => query.bind(v),
            Bind::Int(v) => query.bind(v),
        };
    }
    let rows = query.fetch_all(conn).await?;
    rows.into_iter().map(with_actor).collect()
}

/// `DocumentStore::read_packet`: every part from one read-only REPEATABLE READ transaction.
pub(crate) async fn read_packet(pool: &PgPool, packet: &Packet) -> StoreResult<PacketRows> {
    let read = async {
        let mut tx = pool.begin_with(SNAPSHOT_READ).await?;
        let mut out = PacketRows::default();
        for (namespace, path) in &packet.documents {
            out.documents
                .push(one_with_actor(&mut tx, namespace, path).await?);
        }
        for selection in &packet.selections {
            out.selections.push(selected(&mut tx, selection).await?);
        }
        for (namespace, path) in &packet.links_of {
            out.links
                .push(capsid_store_sql::documents::backlinks_on(&mut *tx, namespace, path).await?);
        }
        if let Some(namespace) = &packet.edges_of {
            out.edges = edges_on(&mut *tx, EDGES, namespace).await?;
            out.dangling_edges = edges_on(&mut *tx, DANGLING_EDGES, namespace).await?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(out)
    };
    read.await.map_err(translate)
}
