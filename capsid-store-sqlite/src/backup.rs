//! The `BackupStore` port: every table streamed from one read transaction (a WAL snapshot) in
//! key order, a dump imported in one `BEGIN IMMEDIATE` transaction (AUTOINCREMENT counters
//! follow the explicit ids), row counts, and the history pruning after a dump. Table and
//! column names come from the core's `TableSpec` constants, never from input.
//!
//! The import suspends the full-text triggers on `documents` inside its transaction and
//! rebuilds the index once from the content table before committing (one pass instead of a
//! trigger per row); the triggers are recreated from their own stored SQL in the same
//! transaction, so a failed import rolls everything back, triggers included. Each page of
//! rows is written while the next one is read from the dump.

use async_trait::async_trait;
use capsid_core::backup::retention::PruneCutoffs;
use capsid_core::backup::rows::{Cell, Row};
use capsid_core::backup::tables::{ColumnKind, TableSpec};
use capsid_core::ports::{BackupStore, DumpSink, Pruned, RowSource, StoreResult, TransferError};
use futures::TryStreamExt;
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::{QueryBuilder, Row as _};

use crate::error::{DbResult, backend};
use crate::rows::count;
use crate::store::{SqliteStore, commit};

/// `SELECT <columns> FROM <table> ORDER BY <key>`.
fn select_all(table: &TableSpec) -> QueryBuilder<Sqlite> {
    let columns: Vec<&str> = table.column_names().collect();
    QueryBuilder::new(format!(
        "SELECT {} FROM {} ORDER BY {}",
        columns.join(", "),
        table.name,
        table.key.join(", ")
    ))
}

fn cell(row: &SqliteRow, at: usize, kind: ColumnKind) -> Result<Cell, sqlx::Error> {
    Ok(match kind {
        ColumnKind::Text => row
            .try_get::<Option<String>, _>(at)?
            .map_or(Cell::Null, Cell::Text),
        ColumnKind::Integer => row
            .try_get::<Option<i64>, _>(at)?
            .map_or(Cell::Null, Cell::Int),
        ColumnKind::Real => row
            .try_get::<Option<f64>, _>(at)?
            .map_or(Cell::Null, Cell::Real),
    })
}

fn to_row(table: &TableSpec, row: &SqliteRow) -> Result<Row, sqlx::Error> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(at, column)| cell(row, at, column.kind))
        .collect()
}

/// The writer connection's page cache while an import runs, in KiB. An import is one
/// transaction, and with SQLite's default 2 MB cache every index, table and full-text page
/// of a large dump spills to the WAL and is read back from it as rows arrive; a fixed 64 MiB
/// keeps the working set in memory (a bound that does not grow with the dump). The previous
/// size is restored when the import ends, committed or not.
const IMPORT_CACHE_KIB: i64 = 64 * 1024;

/// `PRAGMA cache_size = <pages or -KiB>` on `conn`.
async fn set_cache_size(conn: &mut sqlx::SqliteConnection, size: i64) -> Result<(), TransferError> {
    QueryBuilder::<Sqlite>::new(format!("PRAGMA cache_size = {size}"))
        .build()
        .execute(&mut *conn)
        .await
        .map_err(backend)?;
    Ok(())
}

/// Cells per statement: well under SQLite's 32,766 bound variables.
const MAX_CELLS: usize = 16_000;

async fn insert_rows(
    tx: &mut sqlx::SqliteConnection,
    table: &TableSpec,
    rows: &[Row],
) -> Result<(), TransferError> {
    let columns: Vec<&str> = table.column_names().collect();
    let per_statement = (MAX_CELLS / columns.len().max(1)).max(1);
    for chunk in rows.chunks(per_statement) {
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(format!(
            "INSERT INTO {} ({}) ",
            table.name,
            columns.join(", ")
        ));
        let mut bad = None;
        qb.push_values(chunk, |mut values, row| {
            if row.len() != table.columns.len() {
                bad = Some(row.len());
            }
            for (column, cell) in table.columns.iter().zip(row) {
                match (cell, column.kind) {
                    (Cell::Int(n), _) => values.push_bind(*n),
                    (Cell::Real(x), _) => values.push_bind(*x),
                    (Cell::Text(s), _) => values.push_bind(s.clone()),
                    (Cell::Null, _) => values.push_bind(None::<String>),
                };
            }
        });
        if let Some(n) = bad {
            return Err(TransferError::Peer(format!(
                "{}: a row has {n} cells for {} columns",
                table.name,
                table.columns.len()
            )));
        }
        qb.build().execute(&mut *tx).await.map_err(backend)?;
    }
    Ok(())
}

/// Drops the triggers that keep `documents_fts` in step with `documents`, inside the
/// import's transaction: their `CREATE TRIGGER` statements as the schema stores them.
async fn suspend_fts_triggers(
    tx: &mut sqlx::SqliteConnection,
) -> Result<Vec<(String, String)>, TransferError> {
    let triggers: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'documents' \
         ORDER BY name",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(backend)?;
    for (name, _) in &triggers {
        // The name comes from the schema itself; quoted as an identifier all the same.
        QueryBuilder::<Sqlite>::new(format!("DROP TRIGGER \"{}\"", name.replace('"', "\"\"")))
            .build()
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
    }
    Ok(triggers)
}

/// Rebuilds the full-text index from the imported documents in one pass, then puts the
/// suspended triggers back exactly as they were.
async fn rebuild_fts(
    tx: &mut sqlx::SqliteConnection,
    triggers: &[(String, String)],
) -> Result<(), TransferError> {
    sqlx::query("INSERT INTO documents_fts (documents_fts) VALUES ('rebuild')")
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
    for (_, sql) in triggers {
        QueryBuilder::<Sqlite>::new(sql.as_str())
            .build()
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
    }
    Ok(())
}

#[async_trait]
impl BackupStore for SqliteStore {
    fn engine(&self) -> &'static str {
        "sqlite"
    }

    async fn export_tables(
        &self,
        tables: &[&'static TableSpec],
        page_rows: usize,
        sink: &mut dyn DumpSink,
    ) -> Result<(), TransferError> {
        let mut tx = self.begin_read().await?;
        for table in tables {
            sink.begin_table(table).await.map_err(TransferError::Peer)?;
            let mut qb = select_all(table);
            let mut stream = qb.build().fetch(&mut *tx);
            let mut page = Vec::with_capacity(page_rows);
            while let Some(row) = stream.try_next().await.map_err(backend)? {
                page.push(to_row(table, &row).map_err(backend)?);
                if page.len() >= page_rows.max(1) {
                    let full = std::mem::replace(&mut page, Vec::with_capacity(page_rows));
                    sink.rows(full).await.map_err(TransferError::Peer)?;
                }
            }
            drop(stream);
            if !page.is_empty() {
                sink.rows(page).await.map_err(TransferError::Peer)?;
            }
            sink.end_table().await.map_err(TransferError::Peer)?;
        }
        tx.rollback().await.map_err(backend)?;
        Ok(())
    }

    async fn count_rows(&self, tables: &[&'static TableSpec]) -> StoreResult<Vec<u64>> {
        let mut tx = self.begin_read().await?;
        let mut out = Vec::with_capacity(tables.len());
        for table in tables {
            let n: i64 =
                QueryBuilder::<Sqlite>::new(format!("SELECT COUNT(*) FROM {}", table.name))
                    .build_query_scalar()
                    .fetch_one(&mut *tx)
                    .await
                    .db()?;
            out.push(count(n));
        }
        tx.rollback().await.db()?;
        Ok(out)
    }

    async fn import_tables(&self, source: &mut dyn RowSource) -> Result<u64, TransferError> {
        let mut tx = self.begin_write().await?;
        let cache: i64 = sqlx::query_scalar("PRAGMA cache_size")
            .fetch_one(&mut *tx)
            .await
            .map_err(backend)?;
        let mut total = 0u64;
        let outcome: Result<(), TransferError> = async {
            set_cache_size(&mut tx, -IMPORT_CACHE_KIB).await?;
            let triggers = suspend_fts_triggers(&mut tx).await?;
            while let Some(table) = source.next_table().await.map_err(TransferError::Peer)? {
                let mut next = source.next_rows().await.map_err(TransferError::Peer)?;
                while let Some(rows) = next.take() {
                    // The next page is read and parsed while this one is written: sqlx runs
                    // SQLite on the connection's own thread, so the two overlap.
                    let (written, read) =
                        futures::join!(insert_rows(&mut tx, table, &rows), source.next_rows());
                    written?;
                    total += rows.len() as u64;
                    next = read.map_err(TransferError::Peer)?;
                }
            }
            rebuild_fts(&mut tx, &triggers).await
        }
        .await;
        let outcome = match outcome {
            Ok(()) => commit(tx).await.map_err(TransferError::Store),
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        };
        // The writer is one connection: its page cache goes back to what it was.
        let mut conn = self.writer().acquire().await.map_err(backend)?;
        set_cache_size(&mut conn, cache).await?;
        outcome.map(|()| total)
    }

    async fn prune_history(&self, cutoffs: PruneCutoffs) -> StoreResult<Pruned> {
        let mut tx = self.begin_write().await?;
        let mut prune = async |table: &str, column: &str, before: String| -> StoreResult<u64> {
            let n: i64 = QueryBuilder::<Sqlite>::new(format!(
                "SELECT COUNT(*) FROM {table} WHERE {column} < "
            ))
            .push_bind(before.clone())
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .db()?;
            QueryBuilder::<Sqlite>::new(format!("DELETE FROM {table} WHERE {column} < "))
                .push_bind(before)
                .build()
                .execute(&mut *tx)
                .await
                .db()?;
            Ok(count(n))
        };
        let versions = prune(
            "document_versions",
            "snapshot_at",
            cutoffs.versions_before.to_string(),
        )
        .await?;
        let audit = prune("audit_log", "at", cutoffs.audit_before.to_string()).await?;
        let nonces = prune("improve_jti", "seen_at", cutoffs.nonces_before.to_string()).await?;
        commit(tx).await?;
        Ok(Pruned {
            versions,
            audit,
            nonces,
        })
    }
}
