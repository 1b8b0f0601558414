//! The `BackupStore` port: every table streamed from one `REPEATABLE READ, READ ONLY`
//! transaction (one snapshot) in key order, a dump imported in one transaction (identity ids
//! kept with `OVERRIDING SYSTEM VALUE`, then each identity moved past the largest imported id;
//! the `tsvector` columns generate themselves), row counts, and the history pruning after a
//! dump. Table and column names come from the core's `TableSpec` constants, never from input.

use async_trait::async_trait;
use capsid_core::backup::retention::PruneCutoffs;
use capsid_core::backup::rows::{Cell, Row};
use capsid_core::backup::tables::{ColumnKind, TableSpec};
use capsid_core::ports::{BackupStore, DumpSink, Pruned, RowSource, StoreResult, TransferError};
use futures::TryStreamExt;
use sqlx::postgres::{PgRow, Postgres};
use sqlx::{PgConnection, QueryBuilder, Row as _};

use crate::PgStore;
use crate::error::{count, translate};

fn select_all(table: &TableSpec) -> QueryBuilder<Postgres> {
    let columns: Vec<&str> = table.column_names().collect();
    QueryBuilder::new(format!(
        "SELECT {} FROM {} ORDER BY {}",
        columns.join(", "),
        table.name,
        table.key.join(", ")
    ))
}

fn cell(row: &PgRow, at: usize, kind: ColumnKind) -> Result<Cell, sqlx::Error> {
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

fn to_row(table: &TableSpec, row: &PgRow) -> Result<Row, sqlx::Error> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(at, column)| cell(row, at, column.kind))
        .collect()
}

/// Parameters per statement: under Postgres's 65,535.
const MAX_CELLS: usize = 30_000;

async fn insert_rows(
    tx: &mut PgConnection,
    table: &TableSpec,
    rows: &[Row],
) -> Result<(), TransferError> {
    let columns: Vec<&str> = table.column_names().collect();
    let per_statement = (MAX_CELLS / columns.len().max(1)).max(1);
    let overriding = if table.identity.is_some() {
        "OVERRIDING SYSTEM VALUE "
    } else {
        ""
    };
    for chunk in rows.chunks(per_statement) {
        if let Some(row) = chunk.iter().find(|r| r.len() != table.columns.len()) {
            return Err(TransferError::Peer(format!(
                "{}: a row has {} cells for {} columns",
                table.name,
                row.len(),
                table.columns.len()
            )));
        }
        let mut qb: QueryBuilder<Postgres> = QueryBuilder::new(format!(
            "INSERT INTO {} ({}) {overriding}",
            table.name,
            columns.join(", ")
        ));
        qb.push_values(chunk, |mut values, row| {
            for (column, cell) in table.columns.iter().zip(row) {
                // A NULL is bound with its column's type, so Postgres accepts it.
                match (cell, column.kind) {
                    (Cell::Int(n), ColumnKind::Real) => values.push_bind(*n as f64),
                    (Cell::Int(n), _) => values.push_bind(*n),
                    (Cell::Real(x), _) => values.push_bind(*x),
                    (Cell::Text(s), _) => values.push_bind(s.clone()),
                    (Cell::Null, ColumnKind::Text) => values.push_bind(None::<String>),
                    (Cell::Null, ColumnKind::Integer) => values.push_bind(None::<i64>),
                    (Cell::Null, ColumnKind::Real) => values.push_bind(None::<f64>),
                };
            }
        });
        qb.build()
            .execute(&mut *tx)
            .await
            .map_err(|e| TransferError::Store(translate(e)))?;
    }
    Ok(())
}

/// Moves `table`'s identity past its largest id, so the next insert numbers after the import.
async fn advance_identity(tx: &mut PgConnection, table: &TableSpec) -> Result<(), sqlx::Error> {
    let Some(id) = table.identity else {
        return Ok(());
    };
    QueryBuilder::<Postgres>::new(format!(
        "SELECT setval(pg_get_serial_sequence('{table}', '{id}'), COALESCE((SELECT MAX({id}) FROM {table}), 0) + 1, false)",
        table = table.name
    ))
    .build()
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[async_trait]
impl BackupStore for PgStore {
    fn engine(&self) -> &'static str {
        "postgres"
    }

    async fn export_tables(
        &self,
        tables: &[&'static TableSpec],
        page_rows: usize,
        sink: &mut dyn DumpSink,
    ) -> Result<(), TransferError> {
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
            .map_err(translate)?;
        for table in tables {
            sink.begin_table(table).await.map_err(TransferError::Peer)?;
            let mut qb = select_all(table);
            let mut stream = qb.build().fetch(&mut *tx);
            let mut page = Vec::with_capacity(page_rows);
            while let Some(row) = stream.try_next().await.map_err(translate)? {
                page.push(to_row(table, &row).map_err(translate)?);
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
        tx.rollback().await.map_err(translate)?;
        Ok(())
    }

    async fn count_rows(&self, tables: &[&'static TableSpec]) -> StoreResult<Vec<u64>> {
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
            .map_err(translate)?;
        let mut out = Vec::with_capacity(tables.len());
        for table in tables {
            let n: i64 =
                QueryBuilder::<Postgres>::new(format!("SELECT COUNT(*) FROM {}", table.name))
                    .build_query_scalar()
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(translate)?;
            out.push(count(n));
        }
        tx.rollback().await.map_err(translate)?;
        Ok(out)
    }

    async fn import_tables(&self, source: &mut dyn RowSource) -> Result<u64, TransferError> {
        let mut tx = self.pool.begin().await.map_err(translate)?;
        let mut total = 0u64;
        let outcome: Result<(), TransferError> = async {
            while let Some(table) = source.next_table().await.map_err(TransferError::Peer)? {
                let mut next = source.next_rows().await.map_err(TransferError::Peer)?;
                while let Some(rows) = next.take() {
                    // The next page is read and parsed while the server writes this one.
                    let (written, read) =
                        futures::join!(insert_rows(&mut tx, table, &rows), source.next_rows());
                    written?;
                    total += rows.len() as u64;
                    next = read.map_err(TransferError::Peer)?;
                }
                advance_identity(&mut tx, table).await.map_err(translate)?;
            }
            Ok(())
        }
        .await;
        match outcome {
            Ok(()) => {
                tx.commit().await.map_err(translate)?;
                Ok(total)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    async fn prune_history(&self, cutoffs: PruneCutoffs) -> StoreResult<Pruned> {
        let mut tx = self.pool.begin().await.map_err(translate)?;
        let mut prune = async |table: &str, column: &str, before: String| -> StoreResult<u64> {
            let n: i64 = QueryBuilder::<Postgres>::new(format!(
                "WITH gone AS (DELETE FROM {table} WHERE {column} < "
            ))
            .push_bind(before)
            .push(" RETURNING 1) SELECT COUNT(*) FROM gone")
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .map_err(translate)?;
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
        tx.commit().await.map_err(translate)?;
        Ok(Pruned {
            versions,
            audit,
            nonces,
        })
    }
}
