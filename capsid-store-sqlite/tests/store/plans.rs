//! Query plans of the hot queries on 5,000-row tables: no full scan of `documents`, `jobs`,
//! `audit_log` or `document_versions`, and search ordered by the FTS index itself.

use crate::common::{store, url};
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;

const ROWS: usize = 5_000;

/// Fills the tables straight through SQL (one transaction), as a store in use would be.
async fn fill(db_url: &str) {
    let mut conn = SqliteConnection::connect(db_url).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    for i in 0..ROWS {
        let ns = format!("ns{}", i % 50);
        let path = format!("notes/{i}.md");
        let at = format!("2026-11-{:02}T00:00:00.000Z", 1 + i % 28);
        sqlx::query(
            "INSERT INTO documents (namespace, path, title, body, type, status, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, 'published', ?, ?)",
        )
        .bind(&ns)
        .bind(&path)
        .bind(format!("Title {i}"))
        .bind(format!("body {i} lease word{} filler text", i % 97))
        .bind(if i % 3 == 0 { "task" } else { "note" })
        .bind(&at)
        .bind(&at)
        .execute(&mut *tx)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO document_versions (document_id, namespace, path, title, body, snapshot_at) \
             VALUES (?, ?, ?, 't', 'b', ?)",
        )
        .bind(i as i64 + 1)
        .bind(&ns)
        .bind(&path)
        .bind(&at)
        .execute(&mut *tx)
        .await
        .unwrap();
        sqlx::query("INSERT INTO audit_log (actor, action, namespace, path, params, at) VALUES (?, 'write', ?, ?, '{}', ?)")
            .bind(format!("agent:a{}", i % 20))
            .bind(&ns)
            .bind(&path)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .unwrap();
        let status = ["queued", "claimed", "done", "failed", "blocked"][i % 5];
        sqlx::query(
            "INSERT INTO jobs (id, namespace, title, body, priority, status, posted_by, claimed_by, lease_expires, \
             created_at, updated_at) VALUES (?, ?, ?, 'b', ?, ?, 'github:o', ?, ?, ?, ?)",
        )
        .bind(format!("job_{i:012}"))
        .bind(&ns)
        .bind(format!("job {i}"))
        .bind((i % 4) as i64)
        .bind(status)
        .bind((status == "claimed").then(|| format!("agent:d{i}")))
        .bind((status == "claimed").then(|| at.clone()))
        .bind(&at)
        .bind(&at)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn hot_queries_use_indexes() {
    let (dir, store) = store().await;
    fill(&url(&dir)).await;
    let plans = store.query_plans().await.unwrap();
    let names: Vec<&str> = plans.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "search",
        "claim candidate",
        "list by namespace",
        "versions",
        "last actor",
        "document with actor",
        "lease sweep",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for (name, plan) in &plans {
        for line in plan.lines().map(str::trim) {
            for table in ["documents", "jobs", "audit_log", "document_versions"] {
                let full_scan =
                    line == format!("SCAN {table}") || line.starts_with(&format!("SCAN {table} "));
                assert!(!full_scan, "{name}: full scan of {table}:\n{plan}");
            }
        }
        if name == "claim candidate" {
            assert!(
                !plan.contains("TEMP B-TREE"),
                "{name} sorts outside jobs_claimable:\n{plan}"
            );
        }
        if name.starts_with("search") {
            assert!(
                plan.contains("documents_fts VIRTUAL TABLE INDEX"),
                "{name}:\n{plan}"
            );
            assert!(
                !plan.contains("TEMP B-TREE"),
                "{name} sorts outside the FTS index:\n{plan}"
            );
        }
    }
}
