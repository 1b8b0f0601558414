//! The backup port: every table streamed from one snapshot in key order, a dump imported in
//! one unit of work, row counts, and the history pruning after a dump. Table and column names
//! come from the core's `TableSpec` constants, never from input. What the engines do
//! differently around those statements (how a snapshot is opened, what an import suspends or
//! moves) is each one's [`BackupEngine`].

use async_trait::async_trait;
use capsid_core::backup::retention::PruneCutoffs;
use capsid_core::backup::rows::{Cell, Row as Cells};
use capsid_core::backup::tables::{ColumnKind, TableSpec};
use capsid_core::ports::{DumpSink, Pruned, RowSource, StoreResult, TransferError};
use futures::TryStreamExt;
use sqlx::{Postgres, Sqlite, Transaction};

use crate::engine::in_unit;
use crate::engine::{Engine, always};
use crate::exec::{Exec, Fetch};
use crate::row::Row;
use crate::stmt::{Arg, Kind, Stmt};

/// A read-only transaction that sees one snapshot of every table.
pub enum Snapshot {
    /// A read transaction on a SQLite reader (a WAL snapshot).
    Sqlite(Transaction<'static, Sqlite>),
    /// A `REPEATABLE READ, READ ONLY` Postgres transaction.
    Postgres(Transaction<'static, Postgres>),
}

impl Snapshot {
    fn conn(&mut self) -> &mut dyn Fetch {
        match self {
            Snapshot::Sqlite(tx) => &mut **tx,
            Snapshot::Postgres(tx) => &mut **tx,
        }
    }

    async fn end(self) -> Result<(), sqlx::Error> {
        match self {
            Snapshot::Sqlite(tx) => tx.rollback().await,
            Snapshot::Postgres(tx) => tx.rollback().await,
        }
    }
}

/// What an engine does around an import's rows, inside its unit.
#[derive(Debug, Default)]
pub struct ImportPlan {
    /// Statements run after the last row, before the unit commits.
    pub finish: Vec<String>,
    /// Statements run in a unit of their own once the import's unit ended, committed or not.
    pub restore: Vec<String>,
}

/// The backup differences of an engine.
#[async_trait]
pub trait BackupEngine: Engine {
    /// The engine's name, as a dump's header records it.
    const NAME: &'static str;

    /// Opens a [`Snapshot`].
    async fn begin_snapshot(&self) -> StoreResult<Snapshot>;

    /// What an `INSERT` into `table` says so that the dump's ids are kept. Default: nothing.
    fn keep_ids(&self, table: &TableSpec) -> &'static str {
        let _ = table;
        ""
    }

    /// Readies the import's unit `tx`. Default: nothing to ready, finish or restore.
    async fn import_begins(&self, tx: &mut dyn Exec) -> Result<ImportPlan, sqlx::Error> {
        let _ = tx;
        Ok(ImportPlan::default())
    }

    /// A statement run once `table`'s rows are in. Default: none.
    fn table_imported(&self, table: &TableSpec) -> Option<String> {
        let _ = table;
        None
    }
}

/// Cells per statement: under SQLite's 32,766 and Postgres's 65,535 parameters.
const MAX_CELLS: usize = 16_000;

/// The history tables pruned after a dump, each with the column its cutoff compares.
const PRUNED: [(&str, &str); 3] = [
    ("document_versions", "snapshot_at"),
    ("audit_log", "at"),
    ("improve_jti", "seen_at"),
];

fn cells(table: &TableSpec, row: &Row) -> Result<Cells, sqlx::Error> {
    let cell = |name: &str, kind: ColumnKind| -> Result<Cell, sqlx::Error> {
        Ok(match kind {
            ColumnKind::Text => row.opt_text(name)?.map_or(Cell::Null, Cell::Text),
            ColumnKind::Integer => row.opt_int(name)?.map_or(Cell::Null, Cell::Int),
            ColumnKind::Real => row.opt_real(name)?.map_or(Cell::Null, Cell::Real),
        })
    };
    table.columns.iter().map(|c| cell(c.name, c.kind)).collect()
}

/// A cell bound as its column's kind (a `NULL` keeps the kind; Postgres types every parameter).
fn arg(cell: &Cell, kind: ColumnKind) -> Arg {
    match (cell, kind) {
        (Cell::Int(n), ColumnKind::Real) => Arg::Real(*n as f64),
        (Cell::Int(n), _) => Arg::Int(*n),
        (Cell::Real(x), _) => Arg::Real(*x),
        (Cell::Text(s), _) => Arg::Text(s.clone()),
        (Cell::Null, ColumnKind::Text) => Arg::Null(Kind::Text),
        (Cell::Null, ColumnKind::Integer) => Arg::Null(Kind::Int),
        (Cell::Null, ColumnKind::Real) => Arg::Null(Kind::Real),
    }
}

/// `BackupStore::export_tables`: pages of `page_rows` rows, every table from one snapshot.
pub async fn export_tables(
    engine: &impl BackupEngine,
    tables: &[&'static TableSpec],
    page_rows: usize,
    sink: &mut dyn DumpSink,
) -> Result<(), TransferError> {
    let db = |e| TransferError::Store(engine.translate(e));
    let mut snapshot = engine.begin_snapshot().await?;
    for table in tables {
        sink.begin_table(table).await.map_err(TransferError::Peer)?;
        let columns: Vec<&str> = table.column_names().collect();
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            columns.join(", "),
            table.name,
            table.key.join(", ")
        );
        let mut rows = snapshot.conn().fetch(Stmt::new(sql));
        let mut page = Vec::with_capacity(page_rows);
        while let Some(row) = rows.try_next().await.map_err(db)? {
            page.push(cells(table, &row).map_err(db)?);
            if page.len() >= page_rows.max(1) {
                let full = std::mem::replace(&mut page, Vec::with_capacity(page_rows));
                sink.rows(full).await.map_err(TransferError::Peer)?;
            }
        }
        drop(rows);
        if !page.is_empty() {
            sink.rows(page).await.map_err(TransferError::Peer)?;
        }
        sink.end_table().await.map_err(TransferError::Peer)?;
    }
    snapshot.end().await.map_err(db)
}

/// `BackupStore::count_rows`: every count from one snapshot.
pub async fn count_rows(
    engine: &impl BackupEngine,
    tables: &[&'static TableSpec],
) -> StoreResult<Vec<u64>> {
    let mut snapshot = engine.begin_snapshot().await?;
    let mut out = Vec::with_capacity(tables.len());
    for table in tables {
        let sql = format!("SELECT COUNT(*) AS n FROM {}", table.name);
        let row = snapshot.conn().fetch_optional(Stmt::new(sql)).await;
        let n = row.and_then(|r| r.ok_or(sqlx::Error::RowNotFound)?.count("n"));
        out.push(n.map_err(|e| engine.translate(e))?);
    }
    snapshot.end().await.map_err(|e| engine.translate(e))?;
    Ok(out)
}

/// Writes `rows` of `table` in `tx`, many rows a statement.
async fn insert_rows(
    engine: &impl BackupEngine,
    tx: &mut dyn Exec,
    table: &TableSpec,
    rows: &[Cells],
) -> Result<(), TransferError> {
    let width = table.columns.len();
    if let Some(row) = rows.iter().find(|r| r.len() != width) {
        return Err(TransferError::Peer(format!(
            "{}: a row has {} cells for {width} columns",
            table.name,
            row.len()
        )));
    }
    let columns: Vec<&str> = table.column_names().collect();
    let head = format!(
        "INSERT INTO {} ({}) {}VALUES ",
        table.name,
        columns.join(", "),
        engine.keep_ids(table)
    );
    for chunk in rows.chunks((MAX_CELLS / width.max(1)).max(1)) {
        let mut sql = head.clone();
        let mut args = Vec::with_capacity(chunk.len() * width);
        for (i, row) in chunk.iter().enumerate() {
            sql.push_str(if i == 0 { "(" } else { ", (" });
            for (j, (column, cell)) in table.columns.iter().zip(row).enumerate() {
                args.push(arg(cell, column.kind));
                let sep = if j == 0 { "" } else { ", " };
                sql.push_str(&format!("{sep}${}", args.len()));
            }
            sql.push(')');
        }
        let stmt = Stmt {
            sql: sql.into(),
            args,
        };
        tx.execute(stmt)
            .await
            .map_err(|e| TransferError::Store(engine.translate(e)))?;
    }
    Ok(())
}

/// Runs `sql`, each statement in turn, in `tx`.
async fn run_all(tx: &mut dyn Exec, sql: &[String]) -> Result<(), sqlx::Error> {
    for s in sql {
        tx.execute(Stmt::new(s.clone())).await?;
    }
    Ok(())
}

/// `BackupStore::import_tables`: every row of `source` in one unit (each page written while
/// the next one is read), or none; how many rows.
pub async fn import_tables(
    engine: &impl BackupEngine,
    source: &mut dyn RowSource,
) -> Result<u64, TransferError> {
    let db = |e| TransferError::Store(engine.translate(e));
    let mut tx = engine.begin().await?;
    let mut total = 0u64;
    let mut restore = Vec::new();
    let outcome: Result<(), TransferError> = async {
        let plan = engine.import_begins(&mut *tx).await.map_err(db)?;
        restore = plan.restore;
        while let Some(table) = source.next_table().await.map_err(TransferError::Peer)? {
            let mut next = source.next_rows().await.map_err(TransferError::Peer)?;
            while let Some(rows) = next.take() {
                let (written, read) = futures::join!(
                    insert_rows(engine, &mut *tx, table, &rows),
                    source.next_rows()
                );
                written?;
                total += rows.len() as u64;
                next = read.map_err(TransferError::Peer)?;
            }
            if let Some(sql) = engine.table_imported(table) {
                tx.execute(Stmt::new(sql)).await.map_err(db)?;
            }
        }
        run_all(&mut *tx, &plan.finish).await.map_err(db)
    }
    .await;
    let outcome = match outcome {
        Ok(()) => tx.commit().await.map_err(TransferError::Store),
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    };
    if !restore.is_empty() {
        let restore = &restore;
        in_unit!(engine, always, |tx| Ok(run_all(&mut *tx, restore).await?))?;
    }
    outcome.map(|()| total)
}

/// `BackupStore::prune_history`: the rows older than their cutoff deleted, and counted.
pub async fn prune_history(engine: &impl Engine, cutoffs: PruneCutoffs) -> StoreResult<Pruned> {
    let before = [
        cutoffs.versions_before,
        cutoffs.audit_before,
        cutoffs.nonces_before,
    ];
    let [versions, audit, nonces] = in_unit!(engine, always, |tx| async {
        let mut counts = [0u64; 3];
        for (n, ((table, column), before)) in counts.iter_mut().zip(PRUNED.iter().zip(before)) {
            let sql = format!("SELECT COUNT(*) AS n FROM {table} WHERE {column} < $1");
            if let Some(row) = tx.fetch_optional(Stmt::new(sql).bind(before)).await? {
                *n = row.count("n")?;
            }
            let sql = format!("DELETE FROM {table} WHERE {column} < $1");
            tx.execute(Stmt::new(sql).bind(before)).await?;
        }
        Ok(counts)
    }
    .await)?;
    Ok(Pruned {
        versions,
        audit,
        nonces,
    })
}
