//! Test support: a fresh, migrated database per test, created through the admin URL in
//! `CAPSID_TEST_POSTGRES_URL`. Without the variable a test fails under `CI=true` and
//! otherwise says loudly that it did not run.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use capsid_core::ports::{AuditEntry, DocumentStore, DocumentWrite, WriteGuard, WriteReceipt};
use capsid_core::time::{MINUTE_MS, Timestamp};
use capsid_store_postgres::PgStore;
use sqlx::postgres::PgPoolOptions;
use sqlx::{AssertSqlSafe, PgPool};

/// The environment variable naming the admin database.
pub const URL_VAR: &str = "CAPSID_TEST_POSTGRES_URL";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A database of its own for one test.
pub struct TestDb {
    /// The store, migrated.
    pub store: PgStore,
    /// The database URL.
    pub url: String,
    admin: PgPool,
    name: String,
}

/// The admin URL, or `None` after a loud notice (a panic under `CI=true`).
pub fn admin_url(test: &str) -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{URL_VAR} is not set and CI=true: the Postgres test {test} must run")
        }
        _ => {
            eprintln!(
                "\n!!!!! POSTGRES TEST NOT RUN: {test}\n!!!!! {URL_VAR} is not set; run \
                 `source scripts/postgres.sh && capsid_pg_start` first. This is NOT a pass.\n"
            );
            None
        }
    }
}

/// `url` with its database replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[start..].find('/') {
        Some(slash) => &base[..start + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{database}?{q}"),
        None => format!("{base}/{database}"),
    }
}

/// Creates an empty database (with `create_options` appended to `CREATE DATABASE`).
pub async fn empty_database(test: &str, create_options: &str) -> Option<(PgPool, String, String)> {
    let admin_url = admin_url(test)?;
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(&admin_url)
        .await
        .expect("connect to the admin database");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "capsid_pg_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    sqlx::query(AssertSqlSafe(format!(
        "CREATE DATABASE \"{name}\" {create_options}"
    )))
    .execute(&admin)
    .await
    .expect("create the test database");
    let url = with_database(&admin_url, &name);
    Some((admin, name, url))
}

impl TestDb {
    /// A fresh migrated store with `connections` connections.
    pub async fn new(test: &str, connections: u32) -> Option<TestDb> {
        let (admin, name, url) = empty_database(test, "").await?;
        let store = PgStore::connect_with(&url, connections)
            .await
            .expect("connect");
        store.migrate().await.expect("migrate");
        Some(TestDb {
            store,
            url,
            admin,
            name,
        })
    }

    /// Closes the store and drops the database.
    pub async fn finish(self) {
        self.store.close().await;
        drop_database(&self.admin, &self.name).await;
    }
}

/// Drops `name` (forcing other sessions off).
pub async fn drop_database(admin: &PgPool, name: &str) {
    let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
    if let Err(e) = sqlx::query(AssertSqlSafe(sql)).execute(admin).await {
        eprintln!("note: could not drop {name}: {e}");
    }
}

/// 2026-03-01T09:00:00.000Z plus `minutes`.
pub fn at(minutes: i64) -> Timestamp {
    Timestamp::parse("2026-03-01T09:00:00.000Z")
        .expect("epoch")
        .plus_millis(minutes * MINUTE_MS)
}

/// An audit row for a write.
pub fn audit(actor: &str, namespace: &str, path: &str, when: Timestamp) -> AuditEntry {
    AuditEntry {
        actor: actor.to_owned(),
        action: "write".to_owned(),
        namespace: Some(namespace.to_owned()),
        path: Some(path.to_owned()),
        params: serde_json::json!({ "path": path }),
        at: when,
    }
}

/// A title-and-body write.
pub fn write(
    namespace: &str,
    path: &str,
    title: Option<&str>,
    body: &str,
    when: Timestamp,
) -> DocumentWrite {
    DocumentWrite {
        namespace: namespace.to_owned(),
        path: path.to_owned(),
        title: title.map(str::to_owned),
        body: Some(body.to_owned()),
        doc_type: None,
        status: None,
        tags: None,
        links: None,
        at: when,
    }
}

/// Upserts `change` as `agent:test`.
pub async fn put(store: &PgStore, change: DocumentWrite) -> WriteReceipt {
    let entry = audit("agent:test", &change.namespace, &change.path, change.at);
    store
        .write_document(change, WriteGuard::Upsert, vec![entry])
        .await
        .expect("write")
}
