//! The additive-migration parser: comments stripped, statements split on `;`, and every
//! statement required to be one of three additive forms.
//!
//! Comments go first, so a `DROP` inside a comment is not read as a statement and a `;`
//! inside one does not split.

use std::sync::LazyLock;

use regex::Regex;

use super::{GateRefusal, js_insensitive};

/// An additive statement form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum StatementKind {
    /// `CREATE TABLE IF NOT EXISTS`.
    CreateTableIfNotExists,
    /// `ALTER TABLE <t> ADD [COLUMN]`.
    AlterTableAddColumn,
    /// `CREATE [UNIQUE] INDEX [IF NOT EXISTS]`.
    CreateIndex,
}

impl StatementKind {
    /// The label recorded in the approval detail.
    pub fn label(self) -> &'static str {
        match self {
            StatementKind::CreateTableIfNotExists => "CREATE TABLE IF NOT EXISTS",
            StatementKind::AlterTableAddColumn => "ALTER TABLE ADD COLUMN",
            StatementKind::CreateIndex => "CREATE INDEX",
        }
    }
}

const ADDITIVE: [(&str, StatementKind); 3] = [
    (
        r"^create\s+table\s+if\s+not\s+exists\b",
        StatementKind::CreateTableIfNotExists,
    ),
    (
        r"^alter\s+table\s+\S+\s+add\s+(column\b)?",
        StatementKind::AlterTableAddColumn,
    ),
    (
        r"^create\s+(unique\s+)?index\s+(if\s+not\s+exists\s+)?",
        StatementKind::CreateIndex,
    ),
];

static ADDITIVE_RE: LazyLock<Vec<(Regex, StatementKind)>> = LazyLock::new(|| {
    ADDITIVE
        .iter()
        .map(|(p, k)| (js_insensitive(p), *k))
        .collect()
});
static LINE_COMMENT: LazyLock<Regex> = LazyLock::new(|| js_insensitive(r"--[^\n]*"));
static BLOCK_COMMENT: LazyLock<Regex> = LazyLock::new(|| js_insensitive(r"/\*[\s\S]*?\*/"));

/// The statements of a SQL file: `--` comments stripped, then `/* */` blocks, split on `;`,
/// trimmed, empties dropped.
pub fn split_statements(sql: &str) -> Vec<String> {
    let without_lines = LINE_COMMENT.replace_all(sql, "");
    let without_comments = BLOCK_COMMENT.replace_all(&without_lines, "");
    without_comments
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The first `n` UTF-16 units of `text`, never splitting a character.
fn js_prefix(text: &str, n: usize) -> &str {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &text[..at];
        }
    }
    text
}

/// The kind of every statement, or the refusal naming the first statement that is not additive.
pub fn classify_migration_sql(sql: &str) -> Result<Vec<StatementKind>, GateRefusal> {
    let statements = split_statements(sql);
    if statements.is_empty() {
        return Err(GateRefusal::NoStatements);
    }
    statements
        .iter()
        .map(|statement| {
            ADDITIVE_RE
                .iter()
                .find(|(re, _)| re.is_match(statement))
                .map(|(_, kind)| *kind)
                .ok_or_else(|| GateRefusal::NotAdditive {
                    statement: js_prefix(statement, 80).to_owned(),
                })
        })
        .collect()
}
