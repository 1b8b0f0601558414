//! Conformance cases for the `BackupStore` port: an export is one snapshot streamed in key
//! order and imports back row for row (ids kept, identities moved past them, the full-text
//! index rebuilt); counts; pruning takes exactly what is older than its cutoffs.

use async_trait::async_trait;
use capsid_core::backup::retention::PruneCutoffs;
use capsid_core::backup::rows::{Cell, Row};
use capsid_core::backup::tables::{
    AUDIT_LOG, DOCUMENT_VERSIONS, DOCUMENTS, EXPORTED, SETTINGS, TableSpec,
};
use capsid_core::ports::{DumpSink, RowSource, Store};

use capsid_core::checkmarks::AgentStatus;
use capsid_core::ports::SharedEntry;

use super::checkmarks::{cp, plain_audit, record};
use super::support::{at, audit, put, write};

/// Collects every exported row in memory (test tables are small).
#[derive(Default)]
pub struct Collect {
    /// `(table, rows)` in export order.
    pub tables: Vec<(&'static TableSpec, Vec<Row>)>,
    pages: usize,
}

#[async_trait]
impl DumpSink for Collect {
    async fn begin_table(&mut self, table: &'static TableSpec) -> Result<(), String> {
        self.tables.push((table, Vec::new()));
        Ok(())
    }
    async fn rows(&mut self, rows: Vec<Row>) -> Result<(), String> {
        assert!(rows.len() <= 2, "pages are bounded by page_rows");
        self.pages += 1;
        let (_, all) = self.tables.last_mut().ok_or("no table")?;
        all.extend(rows);
        Ok(())
    }
    async fn end_table(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Replays collected rows, optionally failing before the end.
struct Replay {
    tables: Vec<(&'static TableSpec, Vec<Row>)>,
    at: usize,
    sent: bool,
    fail_at_table: Option<&'static str>,
}

#[async_trait]
impl RowSource for Replay {
    async fn next_table(&mut self) -> Result<Option<&'static TableSpec>, String> {
        let Some((table, _)) = self.tables.get(self.at) else {
            return Ok(None);
        };
        if Some(table.name) == self.fail_at_table {
            return Err(format!("the source broke at {}", table.name));
        }
        self.at += 1;
        self.sent = false;
        Ok(Some(table))
    }
    async fn next_rows(&mut self) -> Result<Option<Vec<Row>>, String> {
        if self.sent {
            return Ok(None);
        }
        self.sent = true;
        Ok(Some(self.tables[self.at - 1].1.clone()))
    }
}

fn all_tables() -> Vec<&'static TableSpec> {
    let mut tables: Vec<&'static TableSpec> = EXPORTED.iter().collect();
    tables.push(&SETTINGS);
    tables
}

async fn seed<S: Store>(store: &S) {
    store
        .register_namespace(
            "alpha",
            "[]",
            at(0),
            audit("agent:a", "register_namespace", "alpha", "", at(0)),
        )
        .await
        .expect("namespace");
    put(
        store,
        write(
            "alpha",
            "a.md",
            Some("Alpha"),
            Some("first body of the walrus"),
            at(1),
        ),
    )
    .await;
    put(
        store,
        write(
            "alpha",
            "a.md",
            Some("Alpha"),
            Some("second body of the walrus"),
            at(2),
        ),
    )
    .await;
    put(
        store,
        write(
            "alpha",
            "b.md",
            Some("Beta"),
            Some("another document"),
            at(3),
        ),
    )
    .await;
    put(store, write("alpha", "c.md", None, None, at(4))).await;
    store
        .put_setting("improve_mode", "off", None)
        .await
        .expect("setting");
    // An agent's checkmark, its log entry and a shared fact are the user's data too.
    record(store, cp("alpha", "builder", AgentStatus::Working, 5)).await;
    store
        .set_shared(
            SharedEntry {
                key: "staging-url".into(),
                value: "https://staging.example".into(),
                set_by: "agent:builder".into(),
                updated_at: at(6),
            },
            plain_audit("shared-set", None, "staging-url", at(6)),
        )
        .await
        .expect("shared");
}

/// Export is ordered and complete; an import into an empty store reproduces every row.
pub async fn backup_export_imports_row_for_row<S: Store>(store: &S) {
    seed(store).await;
    let mut sink = Collect::default();
    store
        .export_tables(&all_tables(), 2, &mut sink)
        .await
        .expect("export");
    assert_eq!(sink.tables.len(), EXPORTED.len() + 1);
    assert_eq!(sink.tables[0].0.name, "documents");
    let docs = &sink.tables[0].1;
    assert_eq!(docs.len(), 3);
    let ids: Vec<i64> = docs
        .iter()
        .map(|r| match r[0] {
            Cell::Int(n) => n,
            _ => panic!("an integer id"),
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "key order: {ids:?}");
    assert_eq!(docs[2][3], Cell::Null, "a NULL title stays NULL");
    let versions = sink
        .tables
        .iter()
        .find(|(t, _)| t.name == "document_versions")
        .expect("versions");
    assert_eq!(versions.1.len(), 1);
    for name in ["log_entries", "checkmarks", "shared_context"] {
        let (_, rows) = sink
            .tables
            .iter()
            .find(|(t, _)| t.name == name)
            .unwrap_or_else(|| panic!("{name} is exported"));
        assert_eq!(rows.len(), 1, "{name}");
    }
    let counts = store.count_rows(&all_tables()).await.expect("counts");
    for ((table, rows), n) in sink.tables.iter().zip(&counts) {
        assert_eq!(rows.len() as u64, *n, "{}", table.name);
    }

    // Into the same store it collides: an import is for empty stores, and all-or-nothing.
    let mut replay = Replay {
        tables: sink.tables.clone(),
        at: 0,
        sent: false,
        fail_at_table: None,
    };
    assert!(
        store.import_tables(&mut replay).await.is_err(),
        "importing over rows fails"
    );
    assert_eq!(
        store.count_rows(&all_tables()).await.expect("counts"),
        counts,
        "nothing changed"
    );

    // A source that breaks midway rolls the whole import back.
    let mut broken = Replay {
        tables: sink.tables.clone(),
        at: 0,
        sent: false,
        fail_at_table: Some("audit_log"),
    };
    assert!(store.import_tables(&mut broken).await.is_err());
    assert_eq!(
        store.count_rows(&all_tables()).await.expect("counts"),
        counts
    );
}

/// An import into an empty store: rows as given, search rebuilt, identities advanced.
pub async fn backup_import_into_empty_store<S: Store>(store: &S) {
    let spec = |name: &str| EXPORTED.iter().find(|t| t.name == name).expect("table");
    let text = |s: &str| Cell::Text(s.to_owned());
    let doc = |id: i64, path: &str, body: &str| -> Row {
        vec![
            Cell::Int(id),
            text("alpha"),
            text(path),
            text("Title"),
            text(body),
            text("note"),
            text("published"),
            Cell::Null,
            Cell::Null,
            Cell::Null,
            text("2026-03-01T09:00:00.000Z"),
            text("2026-03-01T09:00:00.000Z"),
        ]
    };
    let tables = vec![
        (
            &DOCUMENTS,
            vec![
                doc(7, "x.md", "an aardvark restored"),
                doc(9, "y.md", "nothing here"),
            ],
        ),
        (
            spec("namespaces"),
            vec![vec![
                text("alpha"),
                Cell::Null,
                text("2026-03-01T09:00:00.000Z"),
                Cell::Null,
                Cell::Real(12.5),
            ]],
        ),
        (
            spec("improve_scores"),
            vec![vec![
                Cell::Int(3),
                text("alpha"),
                text("m"),
                Cell::Real(0.25),
                text("r"),
                Cell::Null,
                text("2026-03-01T09:00:00.000Z"),
            ]],
        ),
        (
            &SETTINGS,
            vec![vec![text("improve_mode"), text("off"), Cell::Null]],
        ),
    ];
    let mut replay = Replay {
        tables,
        at: 0,
        sent: false,
        fail_at_table: None,
    };
    assert_eq!(store.import_tables(&mut replay).await.expect("import"), 5);
    assert_eq!(
        store
            .namespace("alpha")
            .await
            .expect("namespace")
            .and_then(|n| n.monthly_budget_usd),
        Some(12.5),
        "the budget column round-trips"
    );
    let hits = store
        .search_documents("aardvark", None, None, 10)
        .await
        .expect("search");
    assert_eq!(
        hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        vec!["x.md"]
    );
    assert_eq!(hits[0].id, 7, "ids are kept");
    assert_eq!(
        store
            .setting("improve_mode", at(0))
            .await
            .expect("get")
            .as_deref(),
        Some("off")
    );
    let receipt = put(
        store,
        write("alpha", "z.md", Some("New"), Some("after"), at(5)),
    )
    .await;
    assert!(
        receipt.document.id > 9,
        "new rows number after the imported ids"
    );
    let mut sink = Collect::default();
    store
        .export_tables(&[spec("improve_scores")], 10, &mut sink)
        .await
        .expect("export");
    assert_eq!(sink.tables[0].1[0][3], Cell::Real(0.25), "reals survive");
}

/// Pruning removes exactly the rows older than each cutoff, and counts them.
pub async fn backup_prune_takes_only_old_history<S: Store>(store: &S) {
    seed(store).await;
    store
        .claim_nonce("backup", "old", at(0))
        .await
        .expect("nonce");
    store
        .claim_nonce("backup", "new", at(100))
        .await
        .expect("nonce");
    let before = store
        .count_rows(&[&DOCUMENT_VERSIONS, &AUDIT_LOG])
        .await
        .expect("counts");
    // Five rows of the documents seeded at minutes 0 to 4, the checkpoint (5), the shared fact (6).
    assert_eq!(before, vec![1, 7]);
    // Versions before minute 3 (the one at minute 2), audit before minute 2 (minutes 0, 1).
    let pruned = store
        .prune_history(PruneCutoffs {
            versions_before: at(3),
            audit_before: at(2),
            nonces_before: at(50),
        })
        .await
        .expect("prune");
    assert_eq!((pruned.versions, pruned.audit, pruned.nonces), (1, 2, 1));
    assert_eq!(
        store
            .count_rows(&[&DOCUMENT_VERSIONS, &AUDIT_LOG])
            .await
            .expect("counts"),
        vec![0, 5]
    );
    assert!(
        !store
            .claim_nonce("backup", "new", at(101))
            .await
            .expect("nonce"),
        "the young nonce stays"
    );
    assert!(
        store
            .claim_nonce("backup", "old", at(101))
            .await
            .expect("nonce"),
        "the old one went"
    );
    let again = store
        .prune_history(PruneCutoffs {
            versions_before: at(3),
            audit_before: at(2),
            nonces_before: at(50),
        })
        .await
        .expect("prune");
    assert_eq!((again.versions, again.audit), (0, 0));
}
