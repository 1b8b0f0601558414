//! Fresh stores for every test: SQLite in a temporary folder, Postgres in a new database
//! created through the admin URL in `CAPSID_TEST_POSTGRES_URL` (a missing URL fails under
//! `CI=true` and is reported loudly as "not run" elsewhere), plus a raw SQL probe for the few
//! facts no port reads (outcome PR rows) and the plan inspection helpers.

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use capsid_core::ports::{Store, StoreError};
use capsid_store_postgres::PgStore;
use capsid_store_sqlite::SqliteStore;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, PgPool, SqlitePool};
use tempfile::TempDir;

/// The environment variable naming the Postgres admin database.
pub const POSTGRES_URL_VAR: &str = "CAPSID_TEST_POSTGRES_URL";

/// Connections of each Postgres test store: the adapter's default. The 64-claimer race
/// contends through them; more connections than that only slow a 2-core machine down.
pub const POSTGRES_CONNECTIONS: u32 = capsid_store_postgres::DEFAULT_MAX_CONNECTIONS;

/// A raw connection to the same database as the store under test.
#[derive(Clone)]
pub enum Probe {
    /// SQLite.
    Sqlite(SqlitePool),
    /// Postgres.
    Postgres(PgPool),
}

impl Probe {
    /// The single integer `sql` selects (portable SQL only).
    pub async fn count(&self, sql: &str) -> i64 {
        let owned = AssertSqlSafe(sql.to_owned());
        match self {
            Probe::Sqlite(pool) => sqlx::query_scalar::<_, i64>(owned).fetch_one(pool).await,
            Probe::Postgres(pool) => sqlx::query_scalar::<_, i64>(owned).fetch_one(pool).await,
        }
        .unwrap_or_else(|e| panic!("probe {sql}: {e}"))
    }

    /// Runs a statement (test setup only, e.g. `ANALYZE`).
    pub async fn execute(&self, sql: &str) {
        let done = match self {
            Probe::Sqlite(pool) => sqlx::query(AssertSqlSafe(sql.to_owned()))
                .execute(pool)
                .await
                .map(|_| ()),
            Probe::Postgres(pool) => sqlx::query(AssertSqlSafe(sql.to_owned()))
                .execute(pool)
                .await
                .map(|_| ()),
        };
        done.unwrap_or_else(|e| panic!("probe {sql}: {e}"));
    }

    async fn close(&self) {
        match self {
            Probe::Sqlite(pool) => pool.close().await,
            Probe::Postgres(pool) => pool.close().await,
        }
    }
}

enum Cleanup {
    Folder(#[allow(dead_code)] TempDir),
    Database(TestDatabase),
}

/// A database created for one test. Dropped by [`TestDatabase::remove`] at the end of the
/// test, or, when the test panicked first, by `Drop` on a thread of its own.
pub struct TestDatabase {
    admin_url: String,
    name: String,
    removed: bool,
}

impl TestDatabase {
    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn drop_sql(&self) -> AssertSqlSafe<String> {
        AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.name
        ))
    }

    /// Drops the database (connections still open to it are terminated).
    pub async fn remove(mut self) {
        self.removed = true;
        match PgPool::connect(&self.admin_url).await {
            Ok(admin) => {
                if let Err(e) = sqlx::query(self.drop_sql()).execute(&admin).await {
                    eprintln!("note: could not drop test database {}: {e}", self.name);
                }
                admin.close().await;
            }
            Err(e) => eprintln!("note: could not drop test database {}: {e}", self.name),
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        // A panicking test never reached `remove`: drop the database from a fresh runtime.
        let (admin_url, sql) = (self.admin_url.clone(), self.drop_sql());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let admin = PgPool::connect(&admin_url).await.ok()?;
                sqlx::query(sql).execute(&admin).await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("note: could not drop test database {}", self.name);
        }
    }
}

/// A migrated store of one backend, alone in its own file or database.
pub struct Fresh<S> {
    /// The store under test.
    pub store: Arc<S>,
    /// Raw SQL on the same database.
    pub probe: Probe,
    /// The store's URL, for [`Backend::another`].
    pub url: String,
    cleanup: Cleanup,
}

/// What the suite needs of a backend beyond the ports.
pub trait Backend: Store + Sized + 'static {
    /// `sqlite` or `postgres`.
    const NAME: &'static str;
    /// A fresh migrated store, or `None` when the backend is not available here (reported).
    fn fresh(case: &str) -> impl Future<Output = Option<Fresh<Self>>> + Send;
    /// `(name, plan)` of the adapter's hot queries.
    fn plans(&self) -> impl Future<Output = Result<Vec<(String, String)>, StoreError>> + Send;
    /// Closes the store's connections.
    fn shut(&self) -> impl Future<Output = ()> + Send;
    /// A second store on the database at `url`, with connections (and caches) of its own, as
    /// another server or the CLI on the same database has.
    fn another(url: &str) -> impl Future<Output = Self> + Send;
}

impl Backend for SqliteStore {
    const NAME: &'static str = "sqlite";

    async fn fresh(_case: &str) -> Option<Fresh<Self>> {
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("capsid.db");
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::open(&url).await.expect("open sqlite");
        store.migrate().await.expect("migrate sqlite");
        let probe = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(
                SqliteConnectOptions::new()
                    .filename(&path)
                    .busy_timeout(std::time::Duration::from_secs(10)),
            )
            .await
            .expect("probe connection");
        Some(Fresh {
            store: Arc::new(store),
            probe: Probe::Sqlite(probe),
            url,
            cleanup: Cleanup::Folder(dir),
        })
    }

    async fn plans(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.query_plans().await
    }

    async fn shut(&self) {
        self.close().await;
    }

    async fn another(url: &str) -> Self {
        SqliteStore::open(url).await.expect("open sqlite again")
    }
}

impl Backend for PgStore {
    const NAME: &'static str = "postgres";

    async fn fresh(case: &str) -> Option<Fresh<Self>> {
        let (database, url) = fresh_database(case).await?;
        let store = PgStore::connect_with(&url, POSTGRES_CONNECTIONS)
            .await
            .expect("connect postgres");
        store.migrate().await.expect("migrate postgres");
        let probe = PgPoolOptions::new()
            .max_connections(2)
            .connect(&url)
            .await
            .expect("probe connection");
        Some(Fresh {
            store: Arc::new(store),
            probe: Probe::Postgres(probe),
            url,
            cleanup: Cleanup::Database(database),
        })
    }

    async fn plans(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.query_plans().await
    }

    async fn shut(&self) {
        self.close().await;
    }

    async fn another(url: &str) -> Self {
        PgStore::connect_with(url, 4)
            .await
            .expect("connect postgres again")
    }
}

impl<S: Backend> Fresh<S> {
    /// A second store on the same database ([`Backend::another`]).
    pub async fn another(&self) -> S {
        S::another(&self.url).await
    }

    /// Closes the store and removes its file or database.
    pub async fn finish(self) {
        self.store.shut().await;
        self.probe.close().await;
        match self.cleanup {
            Cleanup::Folder(dir) => drop(dir),
            Cleanup::Database(database) => database.remove().await,
        }
    }
}

/// The admin URL, or `None` (after a loud notice) when it is missing outside CI. Under
/// `CI=true` a missing URL fails the calling test.
pub fn postgres_admin_url(case: &str) -> Option<String> {
    match std::env::var(POSTGRES_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "{POSTGRES_URL_VAR} is not set and CI=true: the Postgres case {case} cannot run, and CI must not skip it"
            )
        }
        _ => {
            eprintln!(
                "\n!!!!! POSTGRES CASE NOT RUN: postgres::{case}\n!!!!! {POSTGRES_URL_VAR} is not set; run \
                 `source scripts/postgres.sh && capsid_pg_start` first. This is NOT a pass.\n"
            );
            None
        }
    }
}

/// `url` with its database name replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{database}?{q}"),
        None => format!("{base}/{database}"),
    }
}

static DATABASES: AtomicU64 = AtomicU64::new(0);

/// Creates a uniquely named database through the admin URL and returns it with its URL. The database collates with ICU `en-US` where the server allows it, so a
/// query that relies on the default collation for byte order is caught.
pub async fn fresh_database(case: &str) -> Option<(TestDatabase, String)> {
    let admin_url = postgres_admin_url(case)?;
    let options = PgConnectOptions::from_str(&admin_url).expect("parse the Postgres admin URL");
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .expect("connect to the Postgres admin database");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "capsid_t_{}_{}_{nanos}",
        std::process::id(),
        DATABASES.fetch_add(1, Ordering::SeqCst)
    );
    let icu = format!(
        "CREATE DATABASE \"{name}\" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
    );
    if let Err(e) = sqlx::query(AssertSqlSafe(icu)).execute(&admin).await {
        eprintln!("note: no ICU en-US database ({e}); using the server's default collation");
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&admin)
            .await
            .expect("create the test database");
    }
    admin.close().await;
    let url = with_database(&admin_url, &name);
    Some((
        TestDatabase {
            admin_url,
            name,
            removed: false,
        },
        url,
    ))
}

/// The newest migration, `NNNN_name`, as both adapters must report it (their folders hold the
/// same names).
pub fn newest_migration() -> String {
    let names = |crate_dir: &str| -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(crate_dir)
            .join("migrations");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|entry| {
                entry
                    .ok()?
                    .file_name()
                    .to_str()?
                    .strip_suffix(".sql")
                    .map(str::to_owned)
            })
            .collect();
        names.sort();
        names
    };
    let sqlite = names("capsid-store-sqlite");
    assert_eq!(
        sqlite,
        names("capsid-store-postgres"),
        "both adapters carry the same migrations"
    );
    sqlite.last().cloned().expect("at least one migration")
}

/// The plan lines that read a whole hot table: SQLite `SCAN <table>` without `USING`,
/// Postgres `Seq Scan on <table>`. `aliases` names other spellings of the hot tables.
pub fn full_scans(plan: &str, aliases: &[&str]) -> Vec<String> {
    let hot = [
        "documents",
        "jobs",
        "audit_log",
        "document_versions",
        "job_outcomes",
    ];
    plan.lines()
        .filter(|line| {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("SCAN ") {
                let table = rest.split_whitespace().next().unwrap_or("");
                (hot.contains(&table) || aliases.contains(&table)) && !rest.contains(" USING ")
            } else if let Some(at) = line.find("Seq Scan on ") {
                let table = line[at + "Seq Scan on ".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("");
                hot.contains(&table)
            } else {
                false
            }
        })
        .map(str::to_owned)
        .collect()
}

/// A database the benchmark binaries (`store-bench`, `capsid-load`) create on the server an
/// admin URL names, named `<prefix>_<pid>`, and drop when they are done with it.
pub struct ScratchDatabase {
    admin: PgPool,
    /// The database's name.
    pub name: String,
    /// Its URL (the admin URL with the database replaced).
    pub url: String,
}

impl ScratchDatabase {
    /// Creates the database.
    pub async fn create(admin_url: &str, prefix: &str) -> anyhow::Result<ScratchDatabase> {
        use anyhow::Context;
        let admin = PgPool::connect(admin_url)
            .await
            .context("connect to the Postgres admin database")?;
        let name = format!("{prefix}_{}", std::process::id());
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&admin)
            .await
            .with_context(|| format!("create the scratch database {name}"))?;
        let url = with_database(admin_url, &name);
        Ok(ScratchDatabase { admin, name, url })
    }

    /// Drops the database; connections still open to it are ended (`WITH (FORCE)`).
    pub async fn drop_database(self) -> anyhow::Result<()> {
        use anyhow::Context;
        sqlx::query(AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.name
        )))
        .execute(&self.admin)
        .await
        .with_context(|| format!("drop the scratch database {}", self.name))?;
        self.admin.close().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_replace_the_path() {
        assert_eq!(
            with_database("postgres://u@h:5/postgres", "x"),
            "postgres://u@h:5/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/postgres?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }

    #[test]
    fn full_scans_are_recognised() {
        let plan = "SCAN documents\nSEARCH jobs USING INDEX jobs_claimable (namespace=?)\n  SCAN documents_fts VIRTUAL TABLE INDEX 0:M1\nSCAN audit_log USING INDEX audit_log_at\nSCAN d\nUSE TEMP B-TREE FOR ORDER BY";
        assert_eq!(
            full_scans(plan, &["d"]),
            vec!["SCAN documents".to_owned(), "SCAN d".to_owned()]
        );
        let pg = "Limit\n  ->  Seq Scan on jobs j  (cost=0.00..1.00 rows=1 width=8)\n  ->  Index Scan using documents_pkey on documents";
        assert_eq!(
            full_scans(pg, &[]),
            vec!["  ->  Seq Scan on jobs j  (cost=0.00..1.00 rows=1 width=8)".to_owned()]
        );
        assert!(full_scans("Seq Scan on namespaces", &[]).is_empty());
    }
}
