//! Running a [`Stmt`] on either driver's connection: the one place arguments are bound.

use futures::TryStreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use sqlx::postgres::PgConnection;
use sqlx::sqlite::SqliteConnection;
use sqlx::{AssertSqlSafe, Executor};

use crate::row::Row;
use crate::stmt::{Arg, Kind, Stmt};

/// A connection (or a transaction on one) the shared SQL runs statements on.
pub trait Exec: Send {
    /// Runs `stmt`; the number of rows it changed.
    fn execute(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<u64, sqlx::Error>>;
    /// Runs `stmt`; every row it returns.
    fn fetch_all(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<Vec<Row>, sqlx::Error>>;
    /// Runs `stmt`; its first row, if any.
    fn fetch_optional(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<Option<Row>, sqlx::Error>>;
}

/// Binds `args` to `query`, each as the driver's type for its kind.
macro_rules! bind_all {
    ($query:expr, $args:expr) => {{
        let mut query = $query;
        for arg in $args {
            query = match arg {
                Arg::Null(Kind::Int) => query.bind(None::<i64>),
                Arg::Null(Kind::Real) => query.bind(None::<f64>),
                Arg::Null(Kind::Text) => query.bind(None::<String>),
                Arg::Int(v) => query.bind(v),
                Arg::Real(v) => query.bind(v),
                Arg::Text(v) => query.bind(v),
            };
        }
        query
    }};
}

/// A statement's query, its arguments bound (the driver follows from where it runs).
macro_rules! query {
    ($stmt:expr) => {{
        let Stmt { sql, args } = $stmt;
        bind_all!(sqlx::query(AssertSqlSafe(sql.into_owned())), args)
    }};
}

/// `Exec` for one driver's connection, its rows wrapped as `$row`.
macro_rules! exec_for {
    ($conn:ty, $row:path) => {
        impl Exec for $conn {
            fn execute(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<u64, sqlx::Error>> {
                Box::pin(async move {
                    let done = Executor::execute(&mut *self, query!(stmt)).await?;
                    Ok(done.rows_affected())
                })
            }

            fn fetch_all(&mut self, stmt: Stmt) -> BoxFuture<'_, Result<Vec<Row>, sqlx::Error>> {
                Box::pin(async move {
                    let rows = Executor::fetch_all(&mut *self, query!(stmt)).await?;
                    Ok(rows.into_iter().map($row).collect())
                })
            }

            fn fetch_optional(
                &mut self,
                stmt: Stmt,
            ) -> BoxFuture<'_, Result<Option<Row>, sqlx::Error>> {
                Box::pin(async move {
                    let row = Executor::fetch_optional(&mut *self, query!(stmt)).await?;
                    Ok(row.map($row))
                })
            }
        }
    };
}

exec_for!(SqliteConnection, Row::Sqlite);
exec_for!(PgConnection, Row::Postgres);

/// A connection whose rows are read as they arrive: a dump's table need not fit in memory.
pub trait Fetch: Exec {
    /// Runs `stmt`; its rows, one at a time.
    fn fetch(&mut self, stmt: Stmt) -> BoxStream<'_, Result<Row, sqlx::Error>>;
}

/// `Fetch` for one driver's connection, its rows wrapped as `$row`.
macro_rules! fetch_for {
    ($conn:ty, $row:path) => {
        impl Fetch for $conn {
            fn fetch(&mut self, stmt: Stmt) -> BoxStream<'_, Result<Row, sqlx::Error>> {
                Box::pin(Executor::fetch(&mut *self, query!(stmt)).map_ok($row))
            }
        }
    };
}

fetch_for!(SqliteConnection, Row::Sqlite);
fetch_for!(PgConnection, Row::Postgres);
