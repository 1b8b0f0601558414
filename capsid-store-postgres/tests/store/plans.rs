//! `query_plans`: with seq scans disabled, every hot query is served by an index (a `Seq Scan`
//! on documents, jobs, audit_log, document_versions, log_entries or checkmarks means none could
//! serve it).

use crate::common::TestDb;

const HOT_TABLES: [&str; 6] = [
    "documents",
    "jobs",
    "audit_log",
    "document_versions",
    "log_entries",
    "checkmarks",
];

fn seq_scans(plan: &str) -> Vec<&str> {
    plan.lines()
        .filter(|line| {
            line.split("Seq Scan on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|table| HOT_TABLES.contains(&table))
        })
        .collect()
}

#[test]
fn seq_scan_detection_can_fail() {
    assert_eq!(
        seq_scans("Limit\n  ->  Seq Scan on jobs  (cost=1)"),
        ["  ->  Seq Scan on jobs  (cost=1)"]
    );
    assert!(seq_scans("Seq Scan on namespaces").is_empty());
    assert!(seq_scans("Index Scan using jobs_claimable on jobs").is_empty());
}

/// The plan named `name` among `plans`.
fn plan_of<'p>(plans: &'p [(String, String)], name: &str) -> &'p str {
    plans
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, plan)| plan.as_str())
        .unwrap_or_else(|| panic!("no plan for {name}"))
}

/// 12,000 documents of a few rows a page (`fillfactor`, as the benchmark's rows of several
/// KB), spread over the namespaces `namespace` (an SQL expression of `i`) names, with `lease`
/// in one title in thirty and one body in three (a common word's share in `store-bench`),
/// `extra_body` (an SQL expression, possibly NULL) added to each body; then analysed.
async fn seed_common_word(url: &str, namespace: &str, extra_body: &str) {
    let pool = sqlx::PgPool::connect(url).await.expect("connect");
    let corpus = format!(
        "ALTER TABLE documents SET (fillfactor = 10); \
         INSERT INTO documents (namespace, path, title, body, created_at, updated_at) \
         SELECT {namespace}, 'c/' || i || '.md', \
                concat_ws(' ', 'note', CASE WHEN i % 30 = 0 THEN 'lease' END, i), \
                concat_ws(' ', CASE WHEN i % 3 = 0 THEN 'the lease runs' END, \
                    {extra_body}, repeat('filler text ', 20)), \
                '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z' \
         FROM generate_series(1, 12000) AS i; \
         ANALYZE documents"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(corpus))
        .execute(&pool)
        .await
        .expect("corpus");
    pool.close().await;
}

#[tokio::test]
async fn hot_queries_use_their_indexes() {
    let Some(db) = TestDb::new("hot_queries_use_their_indexes", 2).await else {
        return;
    };
    let plans = db.store.query_plans().await.expect("plans");
    let names: Vec<&str> = plans.iter().map(|(n, _)| n.as_str()).collect();
    for required in [
        "claim_held",
        "claim_candidate",
        "lease_sweep",
        "search",
        "search_titles",
        "search_in_namespace",
        "search_titles_in_namespace",
        "search_in_namespace_any_type",
        "search_titles_in_namespace_any_type",
        "list_by_namespace",
        "find",
        "document",
        "versions",
        "last_actor",
        "document_with_actor",
        "brief_open_tasks",
        "recent_audit_in_namespace",
        "checkmark_log_page",
        "global_feed_page",
        "checkmarks_of_namespace",
    ] {
        assert!(
            names.contains(&required),
            "no plan for {required}: {names:?}"
        );
    }
    let mut full = Vec::new();
    for (name, plan) in &plans {
        assert!(!plan.trim().is_empty(), "{name} has an empty plan");
        for line in seq_scans(plan) {
            full.push(format!("{name}: {line}\n{plan}"));
        }
    }
    assert!(
        full.is_empty(),
        "full scans of hot tables:\n{}",
        full.join("\n\n")
    );
    let plan = |name: &str| {
        plans
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_str())
            .unwrap_or_default()
    };
    for (name, index) in [
        ("claim_candidate", "jobs_claimable"),
        ("claim_held", "jobs_one_claim"),
        ("search", "documents_search"),
        ("search_titles", "documents_title_search"),
        ("versions", "document_versions_doc"),
        ("last_actor", "audit_log_doc"),
        ("document_with_actor", "audit_log_doc"),
        ("list_by_namespace", "documents_namespace_path_key"),
        ("find", "documents_namespace_path_key"),
        ("checkmark_log_page", "log_entries_agent"),
        ("global_feed_page", "log_entries_global"),
        ("checkmarks_of_namespace", "checkmarks_namespace_agent_key"),
    ] {
        assert!(
            plan(name).contains(index),
            "{name} should use {index}:\n{}",
            plan(name)
        );
    }
    // A title match is checked against the whole text row by row, never by intersecting
    // with the whole-text index (whose bitmap for a common word cost more than the rest).
    for name in ["search_titles", "search_titles_in_namespace"] {
        assert!(
            !plan(name).contains("documents_search"),
            "{name} should not read the whole-text index:\n{}",
            plan(name)
        );
    }
    assert!(
        !plan("claim_candidate").contains("Sort"),
        "the index hands out claim order:\n{}",
        plan("claim_candidate")
    );
    assert!(
        !plan("list_by_namespace").contains("Sort"),
        "the index hands out byte order:\n{}",
        plan("list_by_namespace")
    );
    db.finish().await;
}

/// Stale statistics once made a sort of every queued job look cheaper than walking
/// `jobs_claimable` (90 ms a claim at 8,000 queued jobs). Misled the same way, a plain
/// transaction sorts; the claim's own transaction still walks the index in claim order.
#[tokio::test]
async fn the_claim_walks_its_index_even_when_the_planner_is_misled() {
    let Some(db) = TestDb::new("claim_walks_its_index_when_misled", 2).await else {
        return;
    };
    let (guarded, unguarded) = db
        .store
        .claim_candidate_plans_misled()
        .await
        .expect("plans");
    assert!(
        unguarded.contains("Sort"),
        "the misled planner should choose a sort outside the claim transaction:\n{unguarded}"
    );
    assert!(
        !guarded.contains("Sort") && guarded.contains("jobs_claimable"),
        "the claim transaction must walk jobs_claimable in claim order:\n{guarded}"
    );
    db.finish().await;
}

/// On a corpus where the probe's word is in one title in thirty and one body in three (a
/// common word's share in `store-bench`), with a few rows a page (`fillfactor`, as the
/// benchmark's rows of several KB), the title set checks its title matches against the whole
/// text row by row. Before, the planner intersected them with the whole-text index, building a
/// bitmap of every body match first (7 of 20 ms for such a word at 100,000 documents); this
/// test failed then. The namespaced probe also filters on a type no document has, so its plan
/// may use neither word index.
#[tokio::test]
async fn title_matches_of_a_common_word_skip_the_whole_text_index() {
    let Some(db) = TestDb::new("title_matches_skip_whole_text_index", 2).await else {
        return;
    };
    seed_common_word(
        &db.url,
        "CASE WHEN i % 4 = 0 THEN 'capsid' ELSE 'other' END",
        "CASE WHEN i % 7 = 0 THEN 'a decision' END",
    )
    .await;
    let plans = db.store.query_plans().await.expect("plans");
    for name in ["search_titles", "search_titles_in_namespace"] {
        let plan = plan_of(&plans, name);
        assert!(
            !plan.contains("documents_search"),
            "{name} should not read the whole-text index:\n{plan}"
        );
    }
    let titles = plan_of(&plans, "search_titles");
    assert!(
        titles.contains("documents_title_search"),
        "the title set is found by the title index:\n{titles}"
    );
    db.finish().await;
}

/// The index condition of the scan of `index` in `plan`, if the plan scans it.
fn index_condition<'p>(plan: &'p str, index: &str) -> Option<&'p str> {
    let mut lines = plan.lines();
    lines.find(|line| line.contains(&format!("Index Scan on {index} ")))?;
    lines.next().filter(|line| line.contains("Index Cond:"))
}

#[test]
fn index_condition_detection_can_fail() {
    let plan = "Bitmap Heap Scan on documents\n  ->  Bitmap Index Scan on documents_search  (cost=1)\n        Index Cond: (search @@ q)";
    assert_eq!(
        index_condition(plan, "documents_search"),
        Some("        Index Cond: (search @@ q)")
    );
    assert_eq!(index_condition(plan, "documents_title_search"), None);
}

/// A word in a third of the documents (and one title in thirty), searched within one namespace
/// of twenty: the text indexes hold the namespace too, so one index scan finds the namespace's
/// matches. Before (the indexes of migration 0001), the planner built the word's bitmap over
/// every namespace and intersected it with the namespace's (15 of 28 ms for a word in 88,000
/// of 100,000 documents); this test failed then. Outside CI it checks no plan where
/// `btree_gin` cannot be created, as the store then keeps the old indexes.
#[tokio::test]
async fn a_common_word_within_a_namespace_is_found_by_one_index_scan() {
    let Some(db) = TestDb::new("common_word_within_a_namespace", 2).await else {
        return;
    };
    let pool = sqlx::PgPool::connect(&db.url).await.expect("connect");
    let btree_gin: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin')",
    )
    .fetch_one(&pool)
    .await
    .expect("extensions");
    if !btree_gin && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("btree_gin was not created by migrate: the test server ships contrib");
    }
    if btree_gin {
        assert_eq!(
            capsid_core::ports::StoreHealth::limitations(&db.store)
                .await
                .expect("limitations"),
            Vec::<String>::new(),
            "indexes with their namespace leave nothing to say"
        );
    }
    // The probes name `capsid`: one namespace of twenty.
    seed_common_word(
        &db.url,
        "CASE WHEN i % 20 = 10 THEN 'capsid' ELSE 'ns' || (i % 20) END",
        "NULL",
    )
    .await;
    pool.close().await;
    if !btree_gin {
        db.finish().await;
        return;
    }
    let plans = db.store.query_plans().await.expect("plans");
    for (name, index, word) in [
        (
            "search_in_namespace_any_type",
            "documents_search",
            "(search @@",
        ),
        (
            "search_titles_in_namespace_any_type",
            "documents_title_search",
            "(title_search @@",
        ),
    ] {
        let plan = plan_of(&plans, name);
        let condition = index_condition(plan, index)
            .unwrap_or_else(|| panic!("{name} should scan {index}:\n{plan}"));
        assert!(
            condition.contains("(namespace = ") && condition.contains(word),
            "{name} should find the namespace and the word in one scan of {index}:\n{plan}"
        );
        assert!(
            !plan.contains("BitmapAnd"),
            "{name} should not intersect two bitmaps:\n{plan}"
        );
    }
    db.finish().await;
}
