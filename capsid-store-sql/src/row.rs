//! A row from either engine, read by column name into the core's types: a missing column,
//! a value of another type, an instant no form of [`Timestamp::parse`] reads, or a word the
//! core does not know is a decode error naming the column, never a default.

use capsid_core::time::Timestamp;
use sqlx::Row as _;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;

/// One row of a result.
#[derive(Debug)]
pub enum Row {
    /// From the SQLite store.
    Sqlite(SqliteRow),
    /// From the Postgres store.
    Postgres(PgRow),
}

/// Reads a column of either driver's row as `$t`.
macro_rules! get {
    ($row:expr, $column:expr, $t:ty) => {
        match $row {
            Row::Sqlite(r) => r.try_get::<$t, _>($column),
            Row::Postgres(r) => r.try_get::<$t, _>($column),
        }
    };
}

fn decode(message: String) -> sqlx::Error {
    sqlx::Error::Decode(message.into())
}

fn instant(column: &str, text: &str) -> Result<Timestamp, sqlx::Error> {
    Timestamp::parse(text).ok_or_else(|| {
        decode(format!(
            "column {column} holds '{}', which is not an instant",
            text.chars().take(40).collect::<String>()
        ))
    })
}

impl Row {
    /// A text column.
    pub fn text(&self, column: &str) -> Result<String, sqlx::Error> {
        get!(self, column, String)
    }

    /// A text column that may be `NULL`.
    pub fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        get!(self, column, Option<String>)
    }

    /// An integer column.
    pub fn int(&self, column: &str) -> Result<i64, sqlx::Error> {
        get!(self, column, i64)
    }

    /// An integer column that may be `NULL`.
    pub fn opt_int(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        get!(self, column, Option<i64>)
    }

    /// A count or a number that cannot be negative (a negative one reads as 0).
    pub fn count(&self, column: &str) -> Result<u64, sqlx::Error> {
        Ok(u64::try_from(self.int(column)?).unwrap_or(0))
    }

    /// A double column.
    pub fn real(&self, column: &str) -> Result<f64, sqlx::Error> {
        get!(self, column, f64)
    }

    /// A double column that may be `NULL`.
    pub fn opt_real(&self, column: &str) -> Result<Option<f64>, sqlx::Error> {
        get!(self, column, Option<f64>)
    }

    /// A flag stored as 0 or 1.
    pub fn flag(&self, column: &str) -> Result<bool, sqlx::Error> {
        Ok(self.int(column)? != 0)
    }

    /// An instant stored as text.
    pub fn time(&self, column: &str) -> Result<Timestamp, sqlx::Error> {
        instant(column, &self.text(column)?)
    }

    /// An instant stored as text, or `NULL`.
    pub fn opt_time(&self, column: &str) -> Result<Option<Timestamp>, sqlx::Error> {
        self.opt_text(column)?
            .map(|t| instant(column, &t))
            .transpose()
    }

    /// One word of a closed vocabulary (an agent kind, a verdict), read by `parse`.
    pub fn word<T>(
        &self,
        column: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, sqlx::Error> {
        let text = self.text(column)?;
        parse(&text).ok_or_else(|| {
            decode(format!(
                "column {column} holds an unknown value {:?}",
                text.chars().take(40).collect::<String>()
            ))
        })
    }
}

/// Every row of `rows` through `map`, failing on the first that does not decode.
pub fn all<T>(
    rows: &[Row],
    map: impl Fn(&Row) -> Result<T, sqlx::Error>,
) -> Result<Vec<T>, sqlx::Error> {
    rows.iter().map(map).collect()
}
