//! The text indexes with the namespace, built after the migrations (`search_indexes`):
//! - by a role that may create tables in its schema but not extensions in its database (a
//!   managed server's application role, say): the migrations complete, the indexes keep one
//!   column, a search within a namespace answers as before, and the store names what it
//!   lacks and the statement that adds it; once someone who may runs that statement, the
//!   next migrate, by the same role, builds them;
//! - after a build interrupted between dropping the old index and renaming the new one.

use crate::common;

use capsid_core::ports::{DocumentStore, StoreHealth};
use capsid_store_postgres::PgStore;
use sqlx::{AssertSqlSafe, PgPool};

/// Each text index's definition, by name.
async fn definitions(pool: &PgPool) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT indexname::text, indexdef FROM pg_indexes \
         WHERE tablename = 'documents' AND indexname LIKE 'documents%search%' ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .expect("indexes")
}

/// Both text indexes, each with the namespace when `by_namespace`, and no other.
fn assert_indexes(definitions: &[(String, String)], by_namespace: bool) {
    let expected: Vec<(&str, String)> = [
        ("documents_search", "search"),
        ("documents_title_search", "title_search"),
    ]
    .into_iter()
    .map(|(name, column)| {
        let columns = if by_namespace {
            format!("namespace, {column}")
        } else {
            column.to_owned()
        };
        (name, format!("USING gin ({columns})"))
    })
    .collect();
    assert_eq!(definitions.len(), 2, "{definitions:?}");
    for ((name, definition), (expected_name, ending)) in definitions.iter().zip(&expected) {
        assert_eq!(name, expected_name, "{definitions:?}");
        assert!(definition.ends_with(ending), "{name}: {definition}");
    }
}

/// Finds the one document written in `alpha` and not the one in `beta`.
async fn search_within_alpha(store: &PgStore) {
    let hits = store
        .search_documents("lease", Some("alpha"), None, 10)
        .await
        .expect("search");
    let found: Vec<(&str, &str)> = hits
        .iter()
        .map(|hit| (hit.namespace.as_str(), hit.path.as_str()))
        .collect();
    assert_eq!(found, [("alpha", "notes/lease.md")]);
}

#[tokio::test]
async fn a_role_that_may_not_create_extensions_migrates_and_is_told_what_to_ask_for() {
    let Some((admin, name, url)) = common::empty_database("role_without_extensions", "").await
    else {
        return;
    };
    // A role that does not own the database has no CREATE on it, so it may not create even
    // a trusted extension.
    let role = format!("{name}_app");
    let as_admin = sqlx::PgPool::connect(&url).await.expect("connect as admin");
    for sql in [
        format!("CREATE ROLE \"{role}\" LOGIN"),
        format!("GRANT CONNECT ON DATABASE \"{name}\" TO \"{role}\""),
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
    assert_indexes(&definitions(&as_admin).await, false);
    for (namespace, body) in [
        ("alpha", "the lease renews every hour"),
        ("beta", "a lease in another namespace"),
    ] {
        common::put(
            &store,
            common::write(namespace, "notes/lease.md", None, body, common::at(0)),
        )
        .await;
    }
    search_within_alpha(&store).await;

    // `capsid doctor` says what is missing and the statement that adds it, for a role that
    // may: here the database's owner.
    let limitations = store.limitations().await.expect("limitations");
    assert_eq!(limitations.len(), 1, "{limitations:?}");
    let (why, rest) = limitations[0]
        .split_once("run: ")
        .expect("the limitation names the statement to run");
    assert!(why.contains("btree_gin"), "{why}");
    let (statement, _) = rest
        .split_once(" then ")
        .expect("the statement, then what follows");
    sqlx::raw_sql(AssertSqlSafe(statement.to_owned()))
        .execute(&as_admin)
        .await
        .expect("the named statement runs as the owner");

    // The next migrate, by the application role, builds the indexes.
    store.migrate().await.expect("migrate again");
    assert_indexes(&definitions(&as_admin).await, true);
    assert_eq!(
        store.limitations().await.expect("limitations"),
        Vec::<String>::new()
    );
    search_within_alpha(&store).await;

    store.close().await;
    as_admin.close().await;
    common::drop_database(&admin, &name).await;
    sqlx::query(AssertSqlSafe(format!("DROP ROLE IF EXISTS \"{role}\"")))
        .execute(&admin)
        .await
        .expect("drop the role");
}

#[tokio::test]
async fn a_build_interrupted_before_its_rename_is_finished_by_the_next_migrate() {
    let Some(db) = common::TestDb::new("interrupted_index_build", 2).await else {
        return;
    };
    let pool = sqlx::PgPool::connect(&db.url).await.expect("connect");
    assert_indexes(&definitions(&pool).await, true);
    for namespace in ["alpha", "beta"] {
        common::put(
            &db.store,
            common::write(
                namespace,
                "notes/lease.md",
                None,
                "the lease renews",
                common::at(0),
            ),
        )
        .await;
    }
    // The state a build leaves when stopped after dropping the old index: the new one under
    // its building name, the old name gone.
    sqlx::raw_sql(
        "DROP INDEX documents_search; \
         CREATE INDEX documents_search_by_namespace ON documents USING GIN (namespace, search)",
    )
    .execute(&pool)
    .await
    .expect("interrupt");
    assert_eq!(
        db.store.limitations().await.expect("limitations").len(),
        1,
        "a missing index is a limitation"
    );

    db.store.migrate().await.expect("migrate again");
    assert_indexes(&definitions(&pool).await, true);
    assert_eq!(
        db.store.limitations().await.expect("limitations"),
        Vec::<String>::new()
    );
    search_within_alpha(&db.store).await;
    pool.close().await;
    db.finish().await;
}
