//! Migration 0022 where `btree_gin` cannot be created: a role that may create tables in its
//! schema but not extensions in its database (a managed server's application role, say).
//! The migrations still complete, the text indexes keep one column, a search within a
//! namespace answers as before, and the store names what it lacks and how to add it.

mod common;

use capsid_core::ports::{DocumentStore, StoreHealth};
use capsid_store_postgres::PgStore;
use sqlx::{AssertSqlSafe, Row};

#[tokio::test]
async fn migrations_complete_without_the_right_to_create_extensions() {
    let Some((admin, name, url)) =
        common::empty_database("migrations_without_extensions", "").await
    else {
        return;
    };
    let role = format!("{name}_app");
    let as_admin = sqlx::PgPool::connect(&url).await.expect("connect as admin");
    for sql in [
        format!("CREATE ROLE \"{role}\" LOGIN"),
        format!("GRANT CONNECT ON DATABASE \"{name}\" TO \"{role}\""),
        format!("REVOKE CREATE ON DATABASE \"{name}\" FROM PUBLIC"),
        format!("GRANT USAGE, CREATE ON SCHEMA public TO \"{role}\""),
    ] {
        sqlx::query(AssertSqlSafe(sql))
            .execute(&as_admin)
            .await
            .expect("set up the role");
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    let app_url = format!("{url}{separator}user={role}");
    let store = PgStore::connect_with(&app_url, 2)
        .await
        .expect("connect as the role");
    store
        .migrate()
        .await
        .expect("the migrations complete without btree_gin");

    let extensions: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_extension WHERE extname = 'btree_gin'")
            .fetch_one(&as_admin)
            .await
            .expect("extensions");
    assert_eq!(extensions, 0, "the role could not have created btree_gin");
    let indexes = sqlx::query(
        "SELECT indexname, indexdef FROM pg_indexes \
         WHERE tablename = 'documents' AND indexname LIKE 'documents%search' ORDER BY 1",
    )
    .fetch_all(&as_admin)
    .await
    .expect("indexes");
    let definitions: Vec<(String, String)> =
        indexes.iter().map(|row| (row.get(0), row.get(1))).collect();
    assert_eq!(definitions.len(), 2, "{definitions:?}");
    for (index, definition) in &definitions {
        assert!(
            definition.ends_with("USING gin (search)")
                || definition.ends_with("USING gin (title_search)"),
            "{index} keeps its one column: {definition}"
        );
    }

    for (namespace, path, body) in [
        ("alpha", "notes/lease.md", "the lease renews every hour"),
        ("beta", "notes/lease.md", "a lease in another namespace"),
    ] {
        common::put(
            &store,
            common::write(namespace, path, None, body, common::at(0)),
        )
        .await;
    }
    let hits = store
        .search_documents("lease", Some("alpha"), None, 10)
        .await
        .expect("search");
    let found: Vec<(&str, &str)> = hits
        .iter()
        .map(|hit| (hit.namespace.as_str(), hit.path.as_str()))
        .collect();
    assert_eq!(found, [("alpha", "notes/lease.md")]);

    // `capsid doctor` says what is missing and how to add it; the owner's statements it
    // names then give the indexes their namespace, and the store has nothing more to say.
    let limitations = store.limitations().await.expect("limitations");
    assert_eq!(limitations.len(), 1, "{limitations:?}");
    let (why, statements) = limitations[0]
        .split_once("run: ")
        .expect("the limitation names the statements to run");
    assert!(why.contains("btree_gin"), "{why}");
    sqlx::raw_sql(AssertSqlSafe(statements.to_owned()))
        .execute(&as_admin)
        .await
        .expect("the named statements run as the owner");
    assert_eq!(
        store.limitations().await.expect("limitations"),
        Vec::<String>::new()
    );
    let hits = store
        .search_documents("lease", Some("beta"), None, 10)
        .await
        .expect("search on the rebuilt indexes");
    assert_eq!(hits.len(), 1);

    store.close().await;
    as_admin.close().await;
    common::drop_database(&admin, &name).await;
    sqlx::query(AssertSqlSafe(format!("DROP ROLE IF EXISTS \"{role}\"")))
        .execute(&admin)
        .await
        .expect("drop the role");
}
