//! A statement and its arguments, as the shared SQL writes them: `$n` placeholders (which
//! both drivers read: SQLite's `$NNN` is its `?NNN`), and values of the four kinds the
//! schemas store (every instant is RFC 3339 text, every count and flag an integer).

use std::borrow::Cow;

use capsid_core::time::Timestamp;

/// The kind of a value, which a `NULL` must still carry: Postgres types every parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A 64-bit integer (`BIGINT`, SQLite `INTEGER`).
    Int,
    /// A double (`DOUBLE PRECISION`, SQLite `REAL`).
    Real,
    /// Text.
    Text,
}

/// One bound value.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// `NULL` of a kind.
    Null(Kind),
    /// An integer.
    Int(i64),
    /// A double.
    Real(f64),
    /// Text.
    Text(String),
}

/// A value a statement can bind.
pub trait ToArg {
    /// Its kind (what its `NULL` is).
    const KIND: Kind;
    /// The bound value.
    fn to_arg(self) -> Arg;
}

impl ToArg for i64 {
    const KIND: Kind = Kind::Int;
    fn to_arg(self) -> Arg {
        Arg::Int(self)
    }
}

/// Counts and limits past `i64::MAX` bind as `i64::MAX` (no row count reaches it).
impl ToArg for u64 {
    const KIND: Kind = Kind::Int;
    fn to_arg(self) -> Arg {
        Arg::Int(i64::try_from(self).unwrap_or(i64::MAX))
    }
}

impl ToArg for usize {
    const KIND: Kind = Kind::Int;
    fn to_arg(self) -> Arg {
        Arg::Int(i64::try_from(self).unwrap_or(i64::MAX))
    }
}

/// A flag is stored as 0 or 1 in both schemas.
impl ToArg for bool {
    const KIND: Kind = Kind::Int;
    fn to_arg(self) -> Arg {
        Arg::Int(i64::from(self))
    }
}

impl ToArg for f64 {
    const KIND: Kind = Kind::Real;
    fn to_arg(self) -> Arg {
        Arg::Real(self)
    }
}

impl ToArg for String {
    const KIND: Kind = Kind::Text;
    fn to_arg(self) -> Arg {
        Arg::Text(self)
    }
}

impl ToArg for &str {
    const KIND: Kind = Kind::Text;
    fn to_arg(self) -> Arg {
        Arg::Text(self.to_owned())
    }
}

impl ToArg for &String {
    const KIND: Kind = Kind::Text;
    fn to_arg(self) -> Arg {
        Arg::Text(self.clone())
    }
}

/// An instant is stored as its RFC 3339 text (what [`Timestamp::parse`] reads back).
impl ToArg for Timestamp {
    const KIND: Kind = Kind::Text;
    fn to_arg(self) -> Arg {
        Arg::Text(self.to_string())
    }
}

impl<T: ToArg> ToArg for Option<T> {
    const KIND: Kind = T::KIND;
    fn to_arg(self) -> Arg {
        self.map_or(Arg::Null(T::KIND), ToArg::to_arg)
    }
}

/// A statement: its text and its arguments in `$1..$n` order.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// The SQL.
    pub sql: Cow<'static, str>,
    /// The arguments.
    pub args: Vec<Arg>,
}

impl Stmt {
    /// `sql` with no arguments yet.
    pub fn new(sql: impl Into<Cow<'static, str>>) -> Stmt {
        Stmt {
            sql: sql.into(),
            args: Vec::new(),
        }
    }

    /// Binds the next argument.
    #[must_use]
    pub fn bind(mut self, value: impl ToArg) -> Stmt {
        self.args.push(value.to_arg());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_keep_their_kind_and_big_counts_saturate() {
        let s = Stmt::new("SELECT $1, $2, $3, $4, $5")
            .bind(None::<i64>)
            .bind(None::<&str>)
            .bind(u64::MAX)
            .bind(true)
            .bind(Timestamp::from_millis(0));
        assert_eq!(
            s.args,
            [
                Arg::Null(Kind::Int),
                Arg::Null(Kind::Text),
                Arg::Int(i64::MAX),
                Arg::Int(1),
                Arg::Text("1970-01-01T00:00:00.000Z".into()),
            ]
        );
    }
}
