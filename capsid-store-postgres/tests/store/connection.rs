//! Connection settings and migrations: every pooled connection commits synchronously and
//! reads committed whatever the server's defaults, and replicas migrating at once agree.

use capsid_core::ports::StoreHealth;
use capsid_store_postgres::PgStore;
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPoolOptions;

use crate::common::{drop_database, empty_database};

#[tokio::test]
async fn every_connection_commits_synchronously() {
    let Some((admin, name, url)) =
        empty_database("every_connection_commits_synchronously", "").await
    else {
        return;
    };
    for setting in [
        "SET synchronous_commit TO off",
        "SET default_transaction_isolation TO 'serializable'",
    ] {
        sqlx::query(AssertSqlSafe(format!(
            "ALTER DATABASE \"{name}\" {setting}"
        )))
        .execute(&admin)
        .await
        .expect("alter database");
    }
    let plain = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("plain pool");
    let off: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&plain)
        .await
        .expect("show");
    assert_eq!(
        off, "off",
        "the database default is off, so the store's setting is what is tested"
    );
    plain.close().await;

    let store = PgStore::connect_with(&url, 6).await.expect("connect");
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(store.pool().acquire().await.expect("connection"));
    }
    for conn in &mut held {
        let commit: String = sqlx::query_scalar("SHOW synchronous_commit")
            .fetch_one(&mut **conn)
            .await
            .expect("show");
        let isolation: String = sqlx::query_scalar("SHOW transaction_isolation")
            .fetch_one(&mut **conn)
            .await
            .expect("show");
        assert_eq!(
            (commit.as_str(), isolation.as_str()),
            ("on", "read committed")
        );
    }
    drop(held);
    store.close().await;
    drop_database(&admin, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_migrating_at_once_agree() {
    let Some((admin, name, url)) = empty_database("replicas_migrating_at_once_agree", "").await
    else {
        return;
    };
    let first = PgStore::connect_with(&url, 2).await.expect("connect");
    assert_eq!(
        first.schema_version().await.expect("version"),
        None,
        "nothing applied yet"
    );
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let store = PgStore::connect_with(&url, 2).await.expect("connect");
            let version = store.migrate().await.expect("migrate");
            store.close().await;
            version
        }));
    }
    for task in tasks {
        assert_eq!(
            task.await.expect("replica").as_deref(),
            Some(newest().as_str())
        );
    }
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(first.pool())
        .await
        .expect("count");
    assert_eq!(
        applied,
        i64::try_from(capsid_store_postgres::MIGRATOR.iter().count()).expect("count")
    );
    assert_eq!(
        first.migrate().await.expect("again").as_deref(),
        Some(newest().as_str()),
        "idempotent"
    );
    first.ping().await.expect("ping");
    first.close().await;
    assert!(first.ping().await.is_err(), "a closed store refuses calls");
    drop_database(&admin, &name).await;
}

#[tokio::test]
async fn a_bad_url_is_a_backend_error_that_hides_the_password() {
    let err = PgStore::connect("postgres://user:s3cret@[::1")
        .await
        .expect_err("unparsable");
    assert!(!err.to_string().contains("s3cret"), "{err}");
}

/// The newest embedded migration, as `schema_version` names it.
fn newest() -> String {
    capsid_store_postgres::MIGRATOR
        .iter()
        .last()
        .map(|m| format!("{:04}_{}", m.version, m.description.replace(' ', "_")))
        .expect("at least one migration")
}
