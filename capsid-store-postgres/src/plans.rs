//! `PgStore::query_plans`: `EXPLAIN` of the exact SQL of the hot queries with seq scans
//! disabled, so a test can fail on a `Seq Scan` that no index could replace.

use capsid_core::docs::packets::brief_packet;
use capsid_core::ports::{AuditFilter, DocFilter, StoreError};
use sqlx::{AssertSqlSafe, Row};

use crate::PgStore;
use crate::documents::search::{CANDIDATES_MAX, Candidates, Parser, search_sql};
use crate::documents::{Bind, DOC_WITH_ACTOR, find_sql, selection_sql};
use crate::error::translate;
use crate::glob;
use crate::jobs::{BEGIN_CLAIM, BEST_CANDIDATE, HELD, SWEEP};
use capsid_store_sql::agents::BY_KEY_HASH;
use capsid_store_sql::audit::recent_audit_stmt;
use capsid_store_sql::checkmarks::{BY_NAMESPACE as CHECKMARKS_BY_NAMESPACE, feed_stmt, log_stmt};
use capsid_store_sql::documents::{DOCUMENT, LAST_ACTOR, VERSIONS, list_sql};
use capsid_store_sql::namespaces::BUDGET;

/// One bound parameter of a probe.
enum Param {
    Text(String),
    Texts(Vec<String>),
    Int(i64),
}

/// A hot query: its name, its SQL, and representative parameters.
struct Probe {
    name: &'static str,
    sql: String,
    params: Vec<Param>,
}

fn text(value: &str) -> Param {
    Param::Text(value.to_owned())
}

/// A search statement's probe: one candidate set, over everything or within `namespace`, of
/// any type or of `doc_type`.
fn search_probe(
    name: &'static str,
    set: Candidates,
    namespace: Option<&str>,
    doc_type: Option<&str>,
) -> Probe {
    let mut params = vec![text("lease")];
    params.extend(namespace.into_iter().chain(doc_type).map(text));
    params.extend([Param::Int(CANDIDATES_MAX), Param::Int(25)]);
    Probe {
        name,
        sql: search_sql(Parser::Web, set, namespace.is_some(), doc_type.is_some()),
        params,
    }
}

fn probes() -> Result<Vec<Probe>, StoreError> {
    let namespace = "capsid";
    let path = "notes/plan.md";
    let glob = glob::to_regex("notes/*.md")
        .ok_or_else(|| StoreError::Backend("the probe glob did not translate".to_owned()))?;
    let upper = glob.prefix_upper_bound().unwrap_or_default();
    let probe = |name, sql: &str, params| Probe {
        name,
        sql: sql.to_owned(),
        params,
    };
    Ok(vec![
        probe("claim_held", HELD, vec![text("agent:driver")]),
        probe(
            "claim_candidate",
            BEST_CANDIDATE,
            vec![text(namespace), text("agent:driver")],
        ),
        probe("lease_sweep", SWEEP, vec![text("2026-11-30T04:09:01.123Z")]),
        probe(
            "claim_budget",
            BUDGET,
            vec![text(namespace), text("2026-11-01T00:00:00.000Z")],
        ),
        search_probe("search", Candidates::Untitled, None, None),
        search_probe("search_titles", Candidates::Titled, None, None),
        search_probe(
            "search_in_namespace",
            Candidates::Untitled,
            Some(namespace),
            Some("decision"),
        ),
        search_probe(
            "search_titles_in_namespace",
            Candidates::Titled,
            Some(namespace),
            Some("decision"),
        ),
        search_probe(
            "search_in_namespace_any_type",
            Candidates::Untitled,
            Some(namespace),
            None,
        ),
        search_probe(
            "search_titles_in_namespace_any_type",
            Candidates::Titled,
            Some(namespace),
            None,
        ),
        probe(
            "list_by_namespace",
            &list_sql(&DocFilter {
                namespace: Some(namespace.to_owned()),
                ..DocFilter::default()
            }),
            vec![text(namespace), Param::Int(501)],
        ),
        probe(
            "find",
            &find_sql(true, &glob),
            vec![
                text(namespace),
                text(&glob.regex),
                text(&glob.prefix),
                text(&upper),
                Param::Int(501),
            ],
        ),
        probe("document", DOCUMENT, vec![text(namespace), text(path)]),
        probe(
            "versions",
            VERSIONS,
            vec![text(namespace), text(path), Param::Int(101)],
        ),
        probe("last_actor", LAST_ACTOR, vec![text(namespace), text(path)]),
        probe(
            "document_with_actor",
            DOC_WITH_ACTOR,
            vec![text(namespace), text(path)],
        ),
        {
            let open_tasks = brief_packet(namespace).selections.swap_remove(0);
            let (sql, binds) = selection_sql(&open_tasks);
            let params = binds
                .into_iter()
                .map(|b| match b {
                    Bind::Text(v) => Param::Text(v),
                    Bind::Texts(v) => Param::Texts(v),
                    Bind::Int(v) => Param::Int(v),
                })
                .collect();
            probe("brief_open_tasks", &sql, params)
        },
        probe(
            "recent_audit_in_namespace",
            &recent_audit_stmt(
                &AuditFilter {
                    namespace: Some(namespace.to_owned()),
                    actor: None,
                },
                50,
            )
            .sql,
            vec![text(namespace), Param::Int(50)],
        ),
        probe(
            "agent_by_key_hash",
            BY_KEY_HASH,
            vec![text(&"0".repeat(64))],
        ),
        probe(
            "checkmark_log_page",
            &log_stmt(namespace, "driver", Some(1_000), 21).sql,
            vec![
                text(namespace),
                text("driver"),
                Param::Int(1_000),
                Param::Int(21),
            ],
        ),
        probe(
            "global_feed_page",
            &feed_stmt(None, Some(1_000), 21).sql,
            vec![text("global"), Param::Int(1_000), Param::Int(21)],
        ),
        probe(
            "checkmarks_of_namespace",
            CHECKMARKS_BY_NAMESPACE,
            vec![text(namespace), Param::Int(501)],
        ),
    ])
}

/// An `EXPLAIN`'s rows as one text, a line each.
fn plan_text(rows: &[sqlx::postgres::PgRow]) -> Result<String, StoreError> {
    let lines = rows
        .iter()
        .map(|row| row.try_get::<String, _>(0))
        .collect::<Result<Vec<_>, _>>()
        .map_err(translate)?;
    Ok(lines.join("\n"))
}

impl PgStore {
    /// The plan of each hot query (claim candidate selection, search, list by namespace,
    /// find, versions, last actor, ...) as `(name, EXPLAIN text)`, planned with
    /// `enable_seqscan = off` inside a transaction that is rolled back. A `Seq Scan` that
    /// remains means no index can serve the query.
    pub async fn query_plans(&self) -> Result<Vec<(String, String)>, StoreError> {
        let probes = probes()?;
        let mut tx = self.pool.begin().await.map_err(translate)?;
        sqlx::query("SET LOCAL enable_seqscan = off")
            .execute(&mut *tx)
            .await
            .map_err(translate)?;
        let mut plans = Vec::with_capacity(probes.len());
        for probe in &probes {
            let mut query = sqlx::query(AssertSqlSafe(format!("EXPLAIN {}", probe.sql)));
            for param in &probe.params {
                query = match param {
                    Param::Text(value) => query.bind(value.as_str()),
                    Param::Texts(values) => query.bind(values.clone()),
                    Param::Int(value) => query.bind(*value),
                };
            }
            let rows = query.fetch_all(&mut *tx).await.map_err(translate)?;
            plans.push((probe.name.to_owned(), plan_text(&rows)?));
        }
        tx.rollback().await.map_err(translate)?;
        Ok(plans)
    }

    /// The claim candidate's plan when the planner is misled into thinking an index scan
    /// costs a thousand times a sequential page (as stale statistics misled it once), planned
    /// `(in the claim's own transaction, in a plain one)`. The first must walk the index in
    /// claim order; the second shows what the claim transaction's settings prevent.
    pub async fn claim_candidate_plans_misled(&self) -> Result<(String, String), StoreError> {
        Ok((
            self.misled_candidate_plan(BEGIN_CLAIM).await?,
            self.misled_candidate_plan("BEGIN").await?,
        ))
    }

    async fn misled_candidate_plan(&self, begin: &'static str) -> Result<String, StoreError> {
        let mut tx = self.pool.begin_with(begin).await.map_err(translate)?;
        sqlx::query("SET LOCAL random_page_cost = 1000")
            .execute(&mut *tx)
            .await
            .map_err(translate)?;
        let rows = sqlx::query(AssertSqlSafe(format!("EXPLAIN {BEST_CANDIDATE}")))
            .bind("capsid")
            .bind("agent:driver")
            .fetch_all(&mut *tx)
            .await
            .map_err(translate)?;
        tx.rollback().await.map_err(translate)?;
        plan_text(&rows)
    }
}
