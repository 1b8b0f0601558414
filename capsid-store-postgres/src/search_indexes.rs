//! The document text indexes with each document's namespace: `GIN (namespace, search)` and
//! `GIN (namespace, title_search)`, under the names migration 0001 gave the one-column ones.
//!
//! A search within one namespace then finds its candidates in one index scan: GIN walks the
//! namespace's posting list and skips ahead in the word's, instead of building the word's
//! bitmap over every namespace and intersecting it with the namespace's. For a word in 88,000
//! of 100,000 documents, searched in a namespace of 5,400, the bitmap alone took 15 ms and the
//! statement 28; with the namespace in the index, 12 (docs/perf/2026-12-05.md, fourth round).
//! A search over everything uses them as before: a GIN index on several columns answers a
//! condition on any of them.
//!
//! This is not a migration. A migration runs in one transaction, and rebuilding an index
//! there locks the documents table against every read and write until it commits, for
//! seconds per 100,000 documents on a live deployment. Here each index is built with
//! `CREATE INDEX CONCURRENTLY` beside the old one, which is then dropped the same way, so reads
//! and writes go on. It runs after the migrations on every [`PgStore::migrate`], by one replica
//! at a time (the others go on at once), and does nothing once both indexes have their
//! namespace. An interrupted build leaves an invalid index, which the next run drops first.
//!
//! A text column in a GIN index needs the `btree_gin` extension (PostgreSQL's contrib,
//! trusted since 13: a role with `CREATE` on the database may create it). Where this role may
//! not, the indexes keep one column, a warning says why, and `capsid doctor` lists it among
//! the store's limitations until someone who may creates the extension; the next migrate
//! then builds them.
//!
//! [`PgStore::migrate`]: crate::PgStore::migrate

use sqlx::{AssertSqlSafe, PgConnection, PgPool};

/// The two indexes and the column each covers beside the namespace.
const INDEXES: [(&str, &str); 2] = [
    ("documents_search", "search"),
    ("documents_title_search", "title_search"),
];

/// The session advisory lock one replica holds while it builds (an arbitrary constant of
/// Capsid's; sqlx's migrations use another).
const BUILD_LOCK: i64 = 0x6361_7073_6964_0022;

/// SQLSTATEs of `CREATE EXTENSION` that mean "not here, not by this role": no privilege
/// (42501), no such extension installed on the server (58P01, its control file missing) or
/// not supported (0A000). Anything else (a lock timeout, a full disk) is an error of the
/// migrate, which is retried the next time.
const REFUSED: [&str; 3] = ["42501", "58P01", "0A000"];

/// The text indexes that lack the namespace: missing, invalid (an interrupted build) or of
/// one column. Resolved as the store's statements resolve `documents`, through the search
/// path.
pub(crate) async fn lacking(conn: &mut PgConnection) -> Result<Vec<&'static str>, sqlx::Error> {
    let mut lacking = Vec::new();
    for (name, _) in INDEXES {
        let columns: Option<i16> = sqlx::query_scalar(
            "SELECT i.indnatts FROM pg_index i \
             WHERE i.indexrelid = to_regclass($1) AND i.indrelid = to_regclass('documents') \
             AND i.indisvalid",
        )
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?;
        if columns != Some(2) {
            lacking.push(name);
        }
    }
    Ok(lacking)
}

/// Whether the relation `name` exists, resolved through the search path.
async fn exists(conn: &mut PgConnection, name: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(name)
        .fetch_one(&mut *conn)
        .await
}

/// Whether `btree_gin` is installed in this database.
pub(crate) async fn extension_installed(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin')")
        .fetch_one(&mut *conn)
        .await
}

/// Builds the indexes that lack the namespace, unless another replica is at it or the
/// extension cannot be created.
pub(crate) async fn ensure(pool: &PgPool) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    if lacking(&mut conn).await?.is_empty() {
        return Ok(());
    }
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(BUILD_LOCK)
        .fetch_one(&mut *conn)
        .await?;
    if !locked {
        tracing::info!(
            "another replica is building the document text indexes with the namespace; going on"
        );
        return Ok(());
    }
    let built = build(&mut conn).await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(BUILD_LOCK)
        .execute(&mut *conn)
        .await;
    built?;
    unlocked.map(drop)
}

/// Under the build lock: the extension, then each lacking index built beside the old one.
async fn build(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    if !extension_installed(conn).await? {
        match sqlx::raw_sql("CREATE EXTENSION IF NOT EXISTS btree_gin")
            .execute(&mut *conn)
            .await
        {
            Ok(_) => {}
            Err(sqlx::Error::Database(refusal))
                if refusal
                    .code()
                    .is_some_and(|code| REFUSED.contains(&code.as_ref())) =>
            {
                tracing::warn!(
                    error = %refusal,
                    "btree_gin could not be created: the document text indexes keep one column, \
                     and a search within one namespace is slower on a large store (capsid doctor \
                     says how to add it)"
                );
                return Ok(());
            }
            Err(other) => return Err(other),
        }
    }
    // Lacking again: another replica may have finished between the first look and the lock.
    let names = lacking(conn).await?;
    for (name, column) in INDEXES.into_iter().filter(|(n, _)| names.contains(n)) {
        let building = format!("{name}_by_namespace");
        tracing::info!(
            index = name,
            "building the index with the namespace (CREATE INDEX CONCURRENTLY: reads and writes go on)"
        );
        // What an interrupted build left (invalid, or built but not yet renamed) goes first.
        let mut statements = Vec::new();
        if exists(conn, &building).await? {
            statements.push(format!("DROP INDEX CONCURRENTLY {building}"));
        }
        statements.push(format!(
            "CREATE INDEX CONCURRENTLY {building} ON documents USING GIN (namespace, {column})"
        ));
        if exists(conn, name).await? {
            statements.push(format!("DROP INDEX CONCURRENTLY {name}"));
        }
        statements.push(format!("ALTER INDEX {building} RENAME TO {name}"));
        for sql in statements {
            sqlx::raw_sql(AssertSqlSafe(sql))
                .execute(&mut *conn)
                .await?;
        }
        tracing::info!(index = name, "built with the namespace");
    }
    Ok(())
}
