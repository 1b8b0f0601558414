//! Rows as a dump carries them: typed cells, their JSON form (`{column: value}` in column
//! order), and the streaming reader that splits a table file's `rows` array into one row at a
//! time, whatever the chunk boundaries, so no table is ever held in memory whole.

use serde_json::{Map, Number, Value};

use super::tables::{ColumnKind, TableSpec};

/// One stored value.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// SQL `NULL`.
    Null,
    /// An integer column's value.
    Int(i64),
    /// A real column's value.
    Real(f64),
    /// A text column's value.
    Text(String),
}

/// One row: a cell per column of its [`TableSpec`], in column order.
pub type Row = Vec<Cell>;

/// The JSON object of `row` (columns in table order).
pub fn row_to_json(table: &TableSpec, row: &[Cell]) -> Value {
    let mut map = Map::with_capacity(table.columns.len());
    for (column, cell) in table.columns.iter().zip(row) {
        let value = match cell {
            Cell::Null => Value::Null,
            Cell::Int(n) => Value::from(*n),
            Cell::Real(x) => Number::from_f64(*x).map_or(Value::Null, Value::Number),
            Cell::Text(s) => Value::String(s.clone()),
        };
        map.insert(column.name.to_owned(), value);
    }
    Value::Object(map)
}

/// The row a dump's JSON object stands for, checked against the table's columns: every
/// column a value of its kind or null (absent in a dump older than the column: null), and
/// no column the table lacks.
pub fn row_from_json(table: &TableSpec, object: Map<String, Value>) -> Result<Row, String> {
    if let Some(extra) = object
        .keys()
        .find(|k| !table.column_names().any(|c| c == k.as_str()))
    {
        return Err(format!(
            "{}: a row has column '{extra}', which this schema's table does not have",
            table.name
        ));
    }
    let mut object = object;
    let mut row = Vec::with_capacity(table.columns.len());
    for column in table.columns {
        // A dump made before a migration added a column has no such key: the column is NULL,
        // as the migration left the rows it found (a required column's NOT NULL refuses it).
        let value = object.remove(column.name).unwrap_or(Value::Null);
        let cell = match (column.kind, value) {
            (_, Value::Null) => Cell::Null,
            (ColumnKind::Text, Value::String(s)) => Cell::Text(s),
            (ColumnKind::Integer, Value::Number(n)) if n.is_i64() => {
                Cell::Int(n.as_i64().unwrap_or_default())
            }
            (ColumnKind::Real, Value::Number(n)) => match n.as_f64() {
                Some(x) => Cell::Real(x),
                None => return Err(kind_error(table, column.name, "a number")),
            },
            (ColumnKind::Text, _) => return Err(kind_error(table, column.name, "a string")),
            (ColumnKind::Integer, _) => return Err(kind_error(table, column.name, "an integer")),
            (ColumnKind::Real, _) => return Err(kind_error(table, column.name, "a number")),
        };
        row.push(cell);
    }
    Ok(row)
}

fn kind_error(table: &TableSpec, column: &str, want: &str) -> String {
    format!(
        "{}: column '{column}' holds a value that is not {want} or null",
        table.name
    )
}

/// The opening of a table file, up to the first row: `{"exported_at":…,"table":…,"rows":[`.
pub fn file_opening(exported_at: &str, table: &str) -> Vec<u8> {
    format!(
        "{{\"exported_at\":{},\"table\":{},\"rows\":[",
        Value::from(exported_at),
        Value::from(table)
    )
    .into_bytes()
}

/// The close of a table file.
pub const FILE_CLOSING: &[u8] = b"\n]}\n";

/// One row as it follows the opening (`first` writes no separating comma).
pub fn row_line(table: &TableSpec, row: &[Cell], first: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    if !first {
        out.push(b',');
    }
    out.push(b'\n');
    // A `Value` always serializes.
    out.extend(serde_json::to_vec(&row_to_json(table, row)).unwrap_or_default());
    out
}

/// What the reader has found so far besides rows: the file's other members.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileHeader {
    /// Every member of the top-level object except `rows`.
    pub members: Map<String, Value>,
}

impl FileHeader {
    /// A string member.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.members.get(name).and_then(Value::as_str)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the top-level `{`.
    Start,
    /// Inside the top-level object, collecting one member's text.
    Members,
    /// Inside the `rows` array.
    Rows,
    /// After the top-level `}`.
    Done,
}

/// Splits a table file fed in arbitrary chunks into its header members and row objects.
#[derive(Debug)]
pub struct RowSplitter {
    phase: Phase,
    depth: usize,
    in_string: bool,
    escaped: bool,
    member: Vec<u8>,
    row: Vec<u8>,
    header: FileHeader,
    rows_seen: bool,
}

impl Default for RowSplitter {
    fn default() -> Self {
        RowSplitter {
            phase: Phase::Start,
            depth: 0,
            in_string: false,
            escaped: false,
            member: Vec::new(),
            row: Vec::new(),
            header: FileHeader::default(),
            rows_seen: false,
        }
    }
}

/// Members other than `rows` are small; anything past this is refused.
const MAX_MEMBER_BYTES: usize = 64 * 1024;
/// One row is bounded like any stored value (bodies are at most a few MB).
const MAX_ROW_BYTES: usize = 64 * 1024 * 1024;

impl RowSplitter {
    /// The members read so far.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Whether the top-level object has closed.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Feeds the next chunk, returning the row objects it completed (as JSON text).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut rows = Vec::new();
        for &b in chunk {
            self.step(b, &mut rows)?;
        }
        Ok(rows)
    }

    /// Ends the input: the file must have closed, with a `rows` array.
    pub fn finish(&self) -> Result<(), String> {
        if self.phase != Phase::Done {
            return Err("the file ends before its JSON object closes (truncated)".to_owned());
        }
        if !self.rows_seen {
            return Err("the file has no rows array".to_owned());
        }
        Ok(())
    }

    fn step(&mut self, b: u8, rows: &mut Vec<Vec<u8>>) -> Result<(), String> {
        match self.phase {
            Phase::Start => match b {
                b'{' => {
                    self.phase = Phase::Members;
                    self.depth = 1;
                }
                b if b.is_ascii_whitespace() => {}
                _ => return Err("a table file must be one JSON object".to_owned()),
            },
            Phase::Done => {
                if !b.is_ascii_whitespace() {
                    return Err("text after the end of the JSON object".to_owned());
                }
            }
            Phase::Members => self.member_byte(b)?,
            Phase::Rows => self.row_byte(b, rows)?,
        }
        Ok(())
    }

    fn scan_string(&mut self, b: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return true;
        }
        if b == b'"' {
            self.in_string = true;
            return true;
        }
        false
    }

    fn member_byte(&mut self, b: u8) -> Result<(), String> {
        if self.scan_string(b) {
            return self.push_member(b);
        }
        match b {
            b'[' if self.depth == 1 && is_rows_key(&self.member) => {
                if self.rows_seen {
                    return Err("the file has two rows arrays".to_owned());
                }
                self.rows_seen = true;
                self.member.clear();
                self.depth = 2;
                self.phase = Phase::Rows;
                Ok(())
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.push_member(b)
            }
            b'}' | b']' if self.depth > 1 => {
                self.depth -= 1;
                self.push_member(b)
            }
            b',' | b'}' if self.depth == 1 => {
                self.close_member()?;
                if b == b'}' {
                    self.phase = Phase::Done;
                    self.depth = 0;
                }
                Ok(())
            }
            _ => self.push_member(b),
        }
    }

    fn push_member(&mut self, b: u8) -> Result<(), String> {
        if self.member.len() >= MAX_MEMBER_BYTES {
            return Err("a member of the file other than rows is too large".to_owned());
        }
        self.member.push(b);
        Ok(())
    }

    fn close_member(&mut self) -> Result<(), String> {
        let text = std::mem::take(&mut self.member);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let mut wrapped = Vec::with_capacity(text.len() + 2);
        wrapped.push(b'{');
        wrapped.extend(text);
        wrapped.push(b'}');
        let parsed: Map<String, Value> = serde_json::from_slice(&wrapped)
            .map_err(|e| format!("a member of the file is not valid JSON: {e}"))?;
        self.header.members.extend(parsed);
        Ok(())
    }

    fn row_byte(&mut self, b: u8, rows: &mut Vec<Vec<u8>>) -> Result<(), String> {
        if self.depth >= 3 {
            if self.row.len() >= MAX_ROW_BYTES {
                return Err("a row is larger than any stored row can be".to_owned());
            }
            self.row.push(b);
            if self.scan_string(b) {
                return Ok(());
            }
            match b {
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 2 {
                        rows.push(std::mem::take(&mut self.row));
                    }
                }
                _ => {}
            }
            return Ok(());
        }
        match b {
            b'{' => {
                self.depth = 3;
                self.row.push(b);
            }
            b']' => {
                self.depth = 1;
                self.phase = Phase::Members;
            }
            b',' => {}
            b if b.is_ascii_whitespace() => {}
            _ => return Err("every element of rows must be a JSON object".to_owned()),
        }
        Ok(())
    }
}

/// Whether a member's text so far is exactly the key `"rows"` and its colon.
fn is_rows_key(member: &[u8]) -> bool {
    let text = String::from_utf8_lossy(member);
    let text = text.trim();
    text.strip_suffix(':')
        .is_some_and(|key| key.trim() == "\"rows\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::tables::{DOCUMENTS, SETTINGS};
    use proptest::prelude::*;

    fn settings_row(key: &str, value: &str) -> Row {
        vec![Cell::Text(key.into()), Cell::Text(value.into()), Cell::Null]
    }

    fn file(rows: &[Row]) -> Vec<u8> {
        let mut out = file_opening("2026-03-01T09:00:00.000Z", "settings");
        for (n, row) in rows.iter().enumerate() {
            out.extend(row_line(&SETTINGS, row, n == 0));
        }
        out.extend(FILE_CLOSING);
        out
    }

    fn split_all(bytes: &[u8], chunk: usize) -> Result<(FileHeader, Vec<Row>), String> {
        let mut splitter = RowSplitter::default();
        let mut rows = Vec::new();
        for piece in bytes.chunks(chunk.max(1)) {
            for raw in splitter.feed(piece)? {
                let object: Map<String, Value> =
                    serde_json::from_slice(&raw).map_err(|e| e.to_string())?;
                rows.push(row_from_json(&SETTINGS, object)?);
            }
        }
        splitter.finish()?;
        Ok((splitter.header().clone(), rows))
    }

    #[test]
    fn a_written_file_is_valid_json_of_the_reference_shape() {
        let rows = vec![settings_row("a", "x"), settings_row("b", "y\"}]")];
        let parsed: Value = serde_json::from_slice(&file(&rows)).expect("valid JSON");
        assert_eq!(parsed["table"], "settings");
        assert_eq!(parsed["exported_at"], "2026-03-01T09:00:00.000Z");
        assert_eq!(parsed["rows"][1]["value"], "y\"}]");
        assert_eq!(parsed["rows"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn a_pretty_printed_dump_splits_the_same() {
        let rows = vec![settings_row("a", "x"), settings_row("b", "y")];
        let compact: Value = serde_json::from_slice(&file(&rows)).expect("valid JSON");
        let pretty = serde_json::to_vec_pretty(&compact).expect("render");
        let (header, split) = split_all(&pretty, 7).expect("split");
        assert_eq!(split, rows);
        assert_eq!(header.text("table"), Some("settings"));
    }

    #[test]
    fn truncated_and_malformed_files_are_refused() {
        let whole = file(&[settings_row("a", "x")]);
        let cut = &whole[..whole.len() - 4];
        assert!(split_all(cut, 5).unwrap_err().contains("truncated"));
        assert!(split_all(b"[1,2]", 3).is_err());
        assert!(split_all(br#"{"table":"x","rows":[1]}"#, 3).is_err());
        assert!(
            split_all(br#"{"table":"x"}"#, 3)
                .unwrap_err()
                .contains("no rows")
        );
    }

    #[test]
    fn rows_are_checked_against_their_table() {
        let mut object = Map::new();
        object.insert("key".into(), Value::from("k"));
        object.insert("value".into(), Value::from(3));
        object.insert("expires_at".into(), Value::Null);
        assert!(
            row_from_json(&SETTINGS, object.clone())
                .unwrap_err()
                .contains("'value'")
        );
        object.insert("value".into(), Value::from("v"));
        object.insert("surprise".into(), Value::Null);
        assert!(
            row_from_json(&SETTINGS, object.clone())
                .unwrap_err()
                .contains("surprise")
        );
        object.remove("surprise");
        object.remove("expires_at");
        // A dump older than a column has no key for it: the column reads as NULL.
        assert_eq!(
            row_from_json(&SETTINGS, object),
            Ok(vec![
                Cell::Text("k".into()),
                Cell::Text("v".into()),
                Cell::Null
            ])
        );
    }

    #[test]
    fn cells_round_trip_through_json() {
        let row = vec![
            Cell::Int(7),
            Cell::Text("ns".into()),
            Cell::Text("a/b.md".into()),
            Cell::Null,
            Cell::Text("body with \u{2603} and \"quotes\"".into()),
            Cell::Text("note".into()),
            Cell::Text("published".into()),
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Text("2026-03-01T09:00:00.000Z".into()),
            Cell::Text("2026-03-01T09:00:00.000Z".into()),
        ];
        let Value::Object(object) = row_to_json(&DOCUMENTS, &row) else {
            panic!("an object")
        };
        assert_eq!(row_from_json(&DOCUMENTS, object).expect("decode"), row);
    }

    proptest! {
        #[test]
        fn any_chunking_yields_the_same_rows(
            pairs in proptest::collection::vec(("[a-z:]{1,8}", "\\PC{0,20}"), 0..12),
            chunk in 1usize..40,
        ) {
            let rows: Vec<Row> = pairs.iter().map(|(k, v)| settings_row(k, v)).collect();
            let (header, split) = split_all(&file(&rows), chunk).expect("split");
            prop_assert_eq!(split, rows);
            prop_assert_eq!(header.text("exported_at"), Some("2026-03-01T09:00:00.000Z"));
        }
    }
}
