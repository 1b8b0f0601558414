//! This store's health differences (its catalogue, its FTS5 probe) and
//! [`SqliteStore::query_plans`]: `EXPLAIN QUERY PLAN` of the exact SQL of the hot queries, so a
//! test can refuse a full scan.

use async_trait::async_trait;
use capsid_core::docs::packets::brief_packet;
use capsid_core::ports::{AuditFilter, DocFilter, StoreError, StoreResult};
use capsid_store_sql::health::HealthEngine;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{Sqlite, SqliteArguments};
use sqlx::{Arguments, QueryBuilder, Row};

use crate::documents::{
    DOC_WITH_ACTOR_SQL, filtered_expression, push_find, push_search, push_selection,
};
use crate::error::DbResult;
use crate::jobs::{BEST_QUEUED_SQL, SWEEP_SQL};
use crate::store::SqliteStore;
use capsid_store_sql::audit::recent_audit_stmt;
use capsid_store_sql::documents::{LAST_ACTOR, VERSIONS, list_sql};
use capsid_store_sql::jobs::HELD as HELD_SQL;

/// The plan of one statement as text, one `detail` line per step, indented by depth.
async fn plan_of(store: &SqliteStore, mut qb: QueryBuilder<Sqlite>) -> StoreResult<String> {
    let steps = qb.build().fetch_all(store.reader()).await.db()?;
    let mut depth: Vec<(i64, usize)> = Vec::new();
    let mut lines = Vec::with_capacity(steps.len());
    for step in &steps {
        let id: i64 = step.try_get(0).db()?;
        let parent: i64 = step.try_get(1).db()?;
        let detail: String = step.try_get(3).db()?;
        let level = depth
            .iter()
            .find(|(node, _)| *node == parent)
            .map_or(0, |(_, l)| l + 1);
        depth.push((id, level));
        lines.push(format!("{}{detail}", "  ".repeat(level)));
    }
    Ok(lines.join("\n"))
}

fn explain() -> QueryBuilder<Sqlite> {
    QueryBuilder::new("EXPLAIN QUERY PLAN ")
}

/// A representative parameter of a static statement.
enum Param<'a> {
    Text(&'a str),
    Int(i64),
}

/// `EXPLAIN QUERY PLAN` of a static statement bound to `params`.
fn explain_static(sql: &str, params: &[Param<'_>]) -> StoreResult<QueryBuilder<Sqlite>> {
    let mut args = SqliteArguments::default();
    for param in params {
        let added = match param {
            Param::Text(text) => args.add(text.to_string()),
            Param::Int(n) => args.add(*n),
        };
        added.map_err(|e| StoreError::Backend(format!("cannot bind a plan parameter: {e}")))?;
    }
    Ok(QueryBuilder::with_arguments(
        format!("EXPLAIN QUERY PLAN {sql}"),
        args,
    ))
}

impl SqliteStore {
    /// `EXPLAIN QUERY PLAN` of the hot queries with representative parameters, as
    /// `(name, plan)` pairs. A plan line `SCAN documents` (or `jobs`, `audit_log`,
    /// `document_versions`) is a full scan; `SCAN documents_fts VIRTUAL TABLE INDEX ...` is
    /// the FTS index.
    pub async fn query_plans(&self) -> StoreResult<Vec<(String, String)>> {
        use Param::{Int, Text};
        let ns = "capsid".to_owned();
        let mut plans: Vec<(&str, QueryBuilder<Sqlite>)> = Vec::new();

        let mut qb = explain();
        push_search(&mut qb, "lease", None, None, 25);
        plans.push(("search", qb));
        let mut qb = explain();
        let expression = filtered_expression("lease", Some(&ns), Some("note"));
        push_search(&mut qb, &expression, Some(&ns), Some("note"), 25);
        plans.push(("search in namespace and type", qb));
        let filter = DocFilter {
            namespace: Some(ns.clone()),
            ..DocFilter::default()
        };
        plans.push((
            "list by namespace",
            explain_static(&list_sql(&filter), &[Text(&ns), Int(501)])?,
        ));
        let filter = DocFilter {
            namespace: Some(ns.clone()),
            doc_type: Some("decision".to_owned()),
            status: None,
        };
        plans.push((
            "list by namespace and type",
            explain_static(&list_sql(&filter), &[Text(&ns), Text("decision"), Int(501)])?,
        ));
        let mut qb = explain();
        push_find(&mut qb, Some(&ns), "notes/*", 501);
        plans.push(("find in namespace", qb));
        plans.push((
            "versions",
            explain_static(VERSIONS, &[Text(&ns), Text("core.md"), Int(101)])?,
        ));
        plans.push((
            "last actor",
            explain_static(LAST_ACTOR, &[Text(&ns), Text("core.md")])?,
        ));
        plans.push((
            "document with actor",
            explain_static(DOC_WITH_ACTOR_SQL, &[Text(&ns), Text("core.md")])?,
        ));
        let open_tasks = brief_packet(&ns).selections.swap_remove(0);
        let mut qb = explain();
        push_selection(&mut qb, &open_tasks);
        plans.push(("brief open tasks", qb));
        let filter = AuditFilter {
            namespace: Some(ns.clone()),
            actor: None,
        };
        plans.push((
            "recent audit in namespace",
            explain_static(&recent_audit_stmt(&filter, 50).sql, &[Text(&ns), Int(50)])?,
        ));
        plans.push((
            "claim candidate",
            explain_static(BEST_QUEUED_SQL, &[Text(&ns)])?,
        ));
        plans.push((
            "held claim",
            explain_static(HELD_SQL, &[Text("agent:driver")])?,
        ));
        plans.push((
            "lease sweep",
            explain_static(SWEEP_SQL, &[Text("2026-11-30T04:09:01.123Z")])?,
        ));
        plans.push((
            "claim budget",
            explain_static(
                capsid_store_sql::namespaces::BUDGET,
                &[Text(&ns), Text("2026-11-01T00:00:00.000Z")],
            )?,
        ));

        let mut out = Vec::with_capacity(plans.len());
        for (name, qb) in plans {
            out.push((name.to_owned(), plan_of(self, qb).await?));
        }
        Ok(out)
    }
}

/// SQLite's catalogue, and its FTS5 index.
#[async_trait]
impl HealthEngine for SqliteStore {
    const MIGRATIONS_TABLE: &'static str = "SELECT COUNT(*) AS n FROM sqlite_master \
         WHERE type = 'table' AND name = '_sqlx_migrations'";

    fn migrator(&self) -> &'static Migrator {
        &crate::MIGRATOR
    }

    async fn fts_probe(&self, term: &str) -> StoreResult<u64> {
        if term.trim().is_empty() {
            return Ok(0);
        }
        // As one quoted phrase: always a valid FTS5 expression.
        let phrase = crate::documents::as_phrase(term);
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM documents_fts WHERE documents_fts MATCH ?")
                .bind(phrase)
                .fetch_one(self.reader())
                .await
                .db()?;
        Ok(crate::rows::count(n))
    }
}
