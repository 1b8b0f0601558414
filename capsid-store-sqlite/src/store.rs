//! The store handle: opening the file (one writer connection, a pool of readers), migrating,
//! closing, and the `BEGIN IMMEDIATE` transaction every unit of work runs in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use capsid_core::ports::{StoreError, StoreResult};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection, Executor, Row, Sqlite, Transaction};

use capsid_core::ports::{AgentRow, DocWithActor, SearchHit};

use crate::cache::{CacheCounts, DataVersion, ReadCache};
use crate::error::backend;
use crate::group::{CommitCounts, Group, WriteUnit};

/// How long a connection waits on a lock held by another connection or process.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a call waits for the writer (or a reader) before it fails as unavailable: a
/// quick 503 with `Retry-After` rather than a hung request.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// Read connections: enough for a 2-core machine, each one a SQLite worker thread.
const READERS: u32 = 4;
/// The WAL is truncated back to this size after a checkpoint (bounds its growth).
const JOURNAL_SIZE_LIMIT: &str = "67108864";
/// The document read cache: at most this many documents and bytes of them (a document over
/// an eighth of the bytes is never cached).
const DOCUMENT_CACHE_ENTRIES: usize = 4_096;
const DOCUMENT_CACHE_BYTES: usize = 8 * 1024 * 1024;
/// The agent rows cached by key hash (one per live key in use).
const AGENT_CACHE_ENTRIES: usize = 1_024;
const AGENT_CACHE_BYTES: usize = 1024 * 1024;
/// Search answers cached by query, filters and limit (a page of hits with its snippets).
const SEARCH_CACHE_ENTRIES: usize = 512;
const SEARCH_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// What a search answer is cached under: the query as given, the namespace and type
/// filters and the limit.
pub(crate) type SearchKey = (String, Option<String>, Option<String>, usize);

/// The SQLite store: every store port of `capsid-core` over one database file.
///
/// Cheap to clone (one `Arc`). Writes are serialized through one connection; reads run on a
/// pool of `query_only` connections and see every committed write (WAL).
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Pools>,
}

struct Pools {
    writer: SqlitePool,
    reader: SqlitePool,
    /// Group commit over `writer`: every `begin_write` unit goes through it.
    group: Group,
    /// The database's data version, which tags every cached read ([`crate::cache`]).
    version: DataVersion,
    /// `document_with_actor` answers (hits and misses), by `(namespace, path)`.
    documents: ReadCache<(String, String), Option<DocWithActor>>,
    /// `agent_by_key_hash` answers, by key hash.
    agents: ReadCache<String, Option<AgentRow>>,
    /// `search_documents` answers, by [`SearchKey`].
    searches: ReadCache<SearchKey, Vec<SearchHit>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

/// The file a `sqlite://<path>`, `sqlite:<path>` or bare-path URL names (query parameters,
/// which other sqlx users append, are ignored: this store sets its own options).
pub fn database_path(url: &str) -> StoreResult<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    if path.is_empty() {
        return Err(StoreError::Backend(format!("no database file in {url:?}")));
    }
    if path == ":memory:" {
        return Err(StoreError::Backend(
            "an in-memory SQLite database cannot be shared by the writer and the readers; give a file path".to_owned(),
        ));
    }
    Ok(PathBuf::from(path))
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` (`sqlite://<path>`, `sqlite:<path>` or
    /// a bare path). Does not migrate: call [`SqliteStore::migrate`].
    pub async fn open(url: &str) -> StoreResult<SqliteStore> {
        let path = database_path(url)?;
        let base = SqliteConnectOptions::new()
            .filename(&path)
            .foreign_keys(true)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT);
        let writer_options = base
            .clone()
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("journal_size_limit", JOURNAL_SIZE_LIMIT);
        // The writer opens first: it creates the file and switches it to WAL (a persistent
        // setting), so the readers never race it for that.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            // SQLite rolls a transaction back by itself on some errors (a full disk); the
            // driver's own rollback then fails and it still counts the transaction as open,
            // so every later write would be refused. And the group commit's transactions are
            // plain SQL the driver does not count, so a unit cancelled mid-statement could
            // hand back a connection still inside one. On release the connection runs a
            // `ROLLBACK` (queued after anything still in flight): a connection it finds in
            // a transaction, or one the driver counts in one, is closed and the pool opens a
            // fresh one.
            .after_release(|conn, _| {
                Box::pin(async move {
                    let dirty = conn.execute(sqlx::raw_sql("ROLLBACK")).await.is_ok();
                    Ok(!dirty && !conn.is_in_transaction())
                })
            })
            .connect_with(writer_options)
            .await
            .map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let reader = SqlitePoolOptions::new()
            .max_connections(READERS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(base.pragma("query_only", "ON"))
            .await
            .map_err(|e| {
                StoreError::Backend(format!("cannot open {} for reading: {e}", path.display()))
            })?;
        let group = Group::new(writer.clone());
        Ok(SqliteStore {
            inner: Arc::new(Pools {
                writer,
                reader,
                group,
                // SQLite names the index after the file a link points to.
                version: DataVersion::new(&std::fs::canonicalize(&path).unwrap_or(path)),
                documents: ReadCache::new(DOCUMENT_CACHE_ENTRIES, DOCUMENT_CACHE_BYTES),
                agents: ReadCache::new(AGENT_CACHE_ENTRIES, AGENT_CACHE_BYTES),
                searches: ReadCache::new(SEARCH_CACHE_ENTRIES, SEARCH_CACHE_BYTES),
            }),
        })
    }

    /// Applies every pending migration of [`crate::MIGRATOR`] and returns the schema version
    /// (the newest applied migration as `NNNN_name`).
    pub async fn migrate(&self) -> StoreResult<Option<String>> {
        crate::MIGRATOR
            .run(&self.inner.writer)
            .await
            .map_err(|e| StoreError::Backend(format!("migration failed: {e}")))?;
        capsid_store_sql::health::schema_version(self).await
    }

    /// Closes both pools, waiting for connections in use to be returned.
    pub async fn close(&self) {
        self.inner.writer.close().await;
        self.inner.reader.close().await;
        self.inner.version.release();
    }

    /// The connection settings as SQLite reports them, for `capsid doctor` and tests:
    /// `writer.<pragma>` and `reader.<pragma>` pairs (`journal_mode`, `synchronous`,
    /// `foreign_keys`, `busy_timeout`, `query_only`).
    pub async fn pragmas(&self) -> StoreResult<Vec<(String, String)>> {
        let mut out = Vec::new();
        for (role, pool) in [
            ("writer", &self.inner.writer),
            ("reader", &self.inner.reader),
        ] {
            let mut conn = pool.acquire().await.map_err(backend)?;
            for (pragma, sql) in [
                ("journal_mode", "PRAGMA journal_mode"),
                ("synchronous", "PRAGMA synchronous"),
                ("foreign_keys", "PRAGMA foreign_keys"),
                ("busy_timeout", "PRAGMA busy_timeout"),
                ("query_only", "PRAGMA query_only"),
            ] {
                let row = sqlx::query(sql)
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(backend)?;
                // Text for journal_mode, integers for the rest.
                let value = row
                    .try_get::<String, _>(0)
                    .or_else(|_| row.try_get::<i64, _>(0).map(|n| n.to_string()))
                    .map_err(backend)?;
                out.push((format!("{role}.{pragma}"), value));
            }
        }
        Ok(out)
    }

    /// Caps the database at `pages` pages (`PRAGMA max_page_count` on the writer connection,
    /// for that connection's life) and returns the cap SQLite set, which is never below the
    /// pages already in use. A write past the cap is refused as [`StoreError::Unavailable`]
    /// ("the database is full") with nothing written: what a full disk looks like, without
    /// filling one. Tests of that refusal use it. Within a few thousand pages of the cap,
    /// writes stop sharing commits, so a write refused there takes no other write with it.
    pub async fn cap_pages(&self, pages: u64) -> StoreResult<u64> {
        let mut conn = self.inner.writer.acquire().await.map_err(backend)?;
        let set: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "PRAGMA max_page_count = {pages}"
        )))
        .fetch_one(&mut *conn)
        .await
        .map_err(backend)?;
        let set = u64::try_from(set).unwrap_or(0);
        // Near the cap the group commit stops batching (see `group::HEADROOM_PAGES`).
        self.inner.group.set_cap(set);
        Ok(set)
    }

    /// How many write units were acknowledged so far, in how many durable `COMMIT`s (the
    /// group commit's batching, for benchmarks and `capsid doctor`-style reports).
    pub async fn commit_counts(&self) -> CommitCounts {
        self.inner.group.counts().await
    }

    /// The group commit itself, for its tests.
    #[cfg(test)]
    pub(crate) fn group(&self) -> &Group {
        &self.inner.group
    }

    /// The single writer connection's pool.
    pub(crate) fn writer(&self) -> &SqlitePool {
        &self.inner.writer
    }

    /// The read pool.
    pub(crate) fn reader(&self) -> &SqlitePool {
        &self.inner.reader
    }

    /// The database's data version (what validates the read caches).
    pub(crate) fn data_version(&self) -> &DataVersion {
        &self.inner.version
    }

    /// The document read cache.
    pub(crate) fn document_cache(&self) -> &ReadCache<(String, String), Option<DocWithActor>> {
        &self.inner.documents
    }

    /// The agent-by-key-hash cache.
    pub(crate) fn agent_cache(&self) -> &ReadCache<String, Option<AgentRow>> {
        &self.inner.agents
    }

    /// The search answer cache.
    pub(crate) fn search_cache(&self) -> &ReadCache<SearchKey, Vec<SearchHit>> {
        &self.inner.searches
    }

    /// Hits and misses of the document and agent read caches (in that order) since open.
    pub fn cache_counts(&self) -> (CacheCounts, CacheCounts) {
        (self.inner.documents.counts(), self.inner.agents.counts())
    }

    /// Hits and misses of the search answer cache since open.
    pub fn search_cache_counts(&self) -> CacheCounts {
        self.inner.searches.counts()
    }

    /// A unit of write work on the writer connection: a savepoint in the writer's current
    /// batch, whose outer transaction took the write lock up front (`BEGIN IMMEDIATE`, so a
    /// contending process waits on the busy timeout instead of failing at its first write).
    /// Concurrent units share one durable `COMMIT` ([`crate::group`]); [`commit`] returns
    /// once it is durable.
    pub(crate) async fn begin_write(&self) -> StoreResult<WriteUnit> {
        self.inner.group.begin().await
    }

    /// A read transaction (one consistent snapshot) on a reader connection.
    pub(crate) async fn begin_read(&self) -> StoreResult<Transaction<'static, Sqlite>> {
        self.inner.reader.begin().await.map_err(backend)
    }
}

/// Commits the write unit `tx`: returns once its batch's `COMMIT` is durable, or with that
/// `COMMIT`'s error (then nothing of the unit was written).
pub(crate) async fn commit(tx: WriteUnit) -> StoreResult<()> {
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_file() {
        assert_eq!(
            database_path("sqlite://data/c.db").unwrap(),
            PathBuf::from("data/c.db")
        );
        assert_eq!(
            database_path("sqlite:///abs/c.db").unwrap(),
            PathBuf::from("/abs/c.db")
        );
        assert_eq!(database_path("sqlite:c.db").unwrap(), PathBuf::from("c.db"));
        assert_eq!(database_path("c.db").unwrap(), PathBuf::from("c.db"));
        assert_eq!(
            database_path("sqlite://c.db?mode=rwc").unwrap(),
            PathBuf::from("c.db")
        );
        assert!(database_path("sqlite://").is_err());
        assert!(database_path("sqlite::memory:").is_err());
    }
}
