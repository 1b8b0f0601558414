//! The backup's table list, derived from both engines' migrations in both directions (as the
//! reference's test does): every table a migration creates is exported or named as left out
//! with its reason, every exported table exists in both engines, and every exported table's
//! columns and kinds are exactly the stored (not generated) columns of both engines.

use std::collections::BTreeMap;

use capsid_core::backup::tables::{ColumnKind, EXPORTED, NOT_EXPORTED, SETTINGS};

/// `table -> [(column, kind)]` of one engine's migrations; virtual tables have no columns.
fn schema(crate_dir: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("migrations");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the migrations folder")
        .map(|e| e.expect("an entry").path())
        .collect();
    files.sort();
    let mut tables: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for file in files {
        let sql = std::fs::read_to_string(&file).expect("a migration");
        let lines: Vec<&str> = sql.lines().map(str::trim).collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            if let Some(rest) = line.strip_prefix("CREATE VIRTUAL TABLE ") {
                let name = rest.split_whitespace().next().expect("a name");
                tables.insert(name.to_owned(), Vec::new());
            } else if let Some(rest) = line.strip_prefix("CREATE TABLE ") {
                let name = rest.split_whitespace().next().expect("a name").to_owned();
                let mut columns = Vec::new();
                i += 1;
                while !lines[i].starts_with(");") {
                    let column = lines[i];
                    let first = column.split_whitespace().next().unwrap_or("");
                    let skip = column.is_empty()
                        || column.starts_with("--")
                        || ["UNIQUE", "PRIMARY", "CONSTRAINT", "CHECK", "FOREIGN"].contains(&first)
                        || column.contains(" GENERATED ALWAYS AS (")
                            && !column.contains("IDENTITY");
                    if !skip {
                        let mut words = column.split_whitespace();
                        let name = words.next().expect("a column").to_owned();
                        let kind = words
                            .next()
                            .expect("a type")
                            .trim_end_matches(',')
                            .to_owned();
                        columns.push((name, kind));
                    }
                    i += 1;
                }
                tables.insert(name, columns);
            } else if let Some(rest) = line.strip_prefix("ALTER TABLE ") {
                let mut words = rest.split_whitespace();
                let table = words.next().expect("a table").to_owned();
                let generated = line.contains("GENERATED ALWAYS AS");
                if words.next() == Some("ADD") && words.next() == Some("COLUMN") && !generated {
                    let column = words.next().expect("a column").to_owned();
                    let kind = words
                        .next()
                        .expect("a type")
                        .trim_end_matches(';')
                        .to_owned();
                    tables.entry(table).or_default().push((column, kind));
                }
            }
            i += 1;
        }
    }
    tables
}

fn kind_of(engine_type: &str) -> ColumnKind {
    match engine_type {
        "TEXT" => ColumnKind::Text,
        "INTEGER" | "BIGINT" => ColumnKind::Integer,
        "REAL" | "DOUBLE" => ColumnKind::Real,
        other => panic!("a column type the backup does not know: {other}"),
    }
}

#[test]
fn every_migrated_table_is_exported_or_left_out_with_a_reason() {
    for engine in ["capsid-store-sqlite", "capsid-store-postgres"] {
        let tables = schema(engine);
        for name in tables.keys() {
            let exported = EXPORTED.iter().any(|t| t.name == name);
            let left_out = NOT_EXPORTED.iter().any(|(t, _)| t == name);
            assert!(
                exported ^ left_out,
                "{engine}: table {name} is neither exported nor left out (or both)"
            );
        }
        for table in EXPORTED.iter().chain([&SETTINGS]) {
            let columns = tables
                .get(table.name)
                .unwrap_or_else(|| panic!("{engine} has no table {}", table.name));
            let stored: Vec<(&str, ColumnKind)> = columns
                .iter()
                .map(|(c, k)| (c.as_str(), kind_of(k)))
                .collect();
            let listed: Vec<(&str, ColumnKind)> =
                table.columns.iter().map(|c| (c.name, c.kind)).collect();
            assert_eq!(listed, stored, "{engine}: the columns of {}", table.name);
        }
        for (name, _) in NOT_EXPORTED {
            assert!(
                tables.contains_key(name)
                    || (name == "documents_fts" && engine.ends_with("postgres")),
                "{engine}: NOT_EXPORTED names {name}, which no migration creates"
            );
        }
    }
}
