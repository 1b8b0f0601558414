//! The baselines `store-bench` prints beside each figure, measured in the same run on the same
//! database: the raw SQL a store's operation comes down to, run through sqlx with no Capsid
//! code around it. A durable one-row commit for writes, the bare full-text statement on the
//! seeded corpus for search, and a bare claim-and-complete loop for the queue. The ratio of a
//! store's figure to its baseline is what a change must move; the absolute figures move with
//! the machine. [`http`] is the transport's baseline `capsid-load` prints.

pub mod http;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Executor};

/// A second connection to the benchmark's database, outside the store.
#[derive(Clone, Debug)]
pub enum RawDb {
    /// The store's SQLite file, with the store's durability (`WAL`, `synchronous=FULL`).
    Sqlite(SqlitePool),
    /// The benchmark database (`synchronous_commit` as the server has it).
    Postgres(PgPool),
}

impl RawDb {
    /// `sqlite` or `postgres`.
    pub fn engine(&self) -> &'static str {
        match self {
            RawDb::Sqlite(_) => "sqlite",
            RawDb::Postgres(_) => "postgres",
        }
    }

    /// Opens the SQLite file at `path`: one connection for writes (as the store has one
    /// writer), `readers` for reads.
    pub async fn sqlite(path: &std::path::Path, readers: u32) -> anyhow::Result<RawDb> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(readers.max(1))
            .connect_with(options)
            .await?;
        Ok(RawDb::Sqlite(pool))
    }

    /// Connects to the Postgres database at `url` with `connections` connections.
    pub async fn postgres(url: &str, connections: u32) -> anyhow::Result<RawDb> {
        let pool = PgPoolOptions::new()
            .max_connections(connections.max(1))
            .connect(url)
            .await?;
        Ok(RawDb::Postgres(pool))
    }

    async fn exec(&self, sql: &str) -> anyhow::Result<()> {
        match self {
            RawDb::Sqlite(pool) => {
                pool.execute(AssertSqlSafe(sql.to_owned())).await?;
            }
            RawDb::Postgres(pool) => {
                pool.execute(AssertSqlSafe(sql.to_owned())).await?;
            }
        }
        Ok(())
    }

    /// Closes the pool.
    pub async fn close(&self) {
        match self {
            RawDb::Sqlite(pool) => pool.close().await,
            RawDb::Postgres(pool) => pool.close().await,
        }
    }
}

/// Writes per second of `count` single-row durable commits (`INSERT` of a namespace, path and
/// body into a scratch table, one autocommit statement each) by `writers` concurrent tasks.
pub async fn raw_writes(
    db: &RawDb,
    bodies: Arc<Vec<String>>,
    writers: usize,
) -> anyhow::Result<f64> {
    db.exec("DROP TABLE IF EXISTS bench_raw_writes").await?;
    db.exec(
        "CREATE TABLE bench_raw_writes (namespace TEXT NOT NULL, path TEXT NOT NULL, \
         body TEXT NOT NULL, PRIMARY KEY (namespace, path))",
    )
    .await?;
    let began = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers.max(1) {
        let db = db.clone();
        let bodies = bodies.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..bodies.len()).step_by(writers.max(1)) {
                let path = format!("raw/{i}.md");
                match &db {
                    RawDb::Sqlite(pool) => {
                        sqlx::query(
                            "INSERT INTO bench_raw_writes (namespace, path, body) VALUES (?, ?, ?)",
                        )
                        .bind("bench")
                        .bind(path)
                        .bind(&bodies[i])
                        .execute(pool)
                        .await?;
                    }
                    RawDb::Postgres(pool) => {
                        sqlx::query(
                            "INSERT INTO bench_raw_writes (namespace, path, body) VALUES ($1, $2, $3)",
                        )
                        .bind("bench")
                        .bind(path)
                        .bind(&bodies[i])
                        .execute(pool)
                        .await?;
                    }
                }
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let rate = bodies.len() as f64 / began.elapsed().as_secs_f64();
    db.exec("DROP TABLE bench_raw_writes").await?;
    Ok(rate)
}

/// Writes per second of `writers` tasks each looping `BEGIN IMMEDIATE; INSERT; COMMIT` over
/// one shared SQLite connection (WAL, `synchronous=FULL`): the store's own write path (one
/// writer connection) with nothing of the store around it, one durable commit per row.
pub async fn raw_writes_one_connection(
    path: &std::path::Path,
    bodies: Arc<Vec<String>>,
    writers: usize,
) -> anyhow::Result<f64> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(30));
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(600))
        .connect_with(options)
        .await?;
    pool.execute("DROP TABLE IF EXISTS bench_raw_one").await?;
    pool.execute(
        "CREATE TABLE bench_raw_one (namespace TEXT NOT NULL, path TEXT NOT NULL, \
         body TEXT NOT NULL, PRIMARY KEY (namespace, path))",
    )
    .await?;
    let began = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers.max(1) {
        let pool = pool.clone();
        let bodies = bodies.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..bodies.len()).step_by(writers.max(1)) {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                sqlx::query("INSERT INTO bench_raw_one (namespace, path, body) VALUES (?, ?, ?)")
                    .bind("bench")
                    .bind(format!("raw/{i}.md"))
                    .bind(&bodies[i])
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let rate = bodies.len() as f64 / began.elapsed().as_secs_f64();
    pool.execute("DROP TABLE bench_raw_one").await?;
    pool.close().await;
    Ok(rate)
}

/// The bare full-text statement a search comes down to, on the store's own index: FTS5
/// `MATCH` ordered by `rank` (SQLite), `@@ websearch_to_tsquery` ordered by `ts_rank`
/// (Postgres), 25 rows, no filter and no join. Each query's words are quoted for FTS5 as the
/// store quotes them. Returns the latency of each query.
pub async fn raw_search(db: &RawDb, queries: &[String]) -> anyhow::Result<Vec<Duration>> {
    let mut out = Vec::with_capacity(queries.len());
    for text in queries {
        let began = Instant::now();
        match db {
            RawDb::Sqlite(pool) => {
                let fts: Vec<String> = text
                    .split_whitespace()
                    .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
                    .collect();
                sqlx::query(
                    "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? \
                     ORDER BY rank LIMIT 25",
                )
                .bind(fts.join(" "))
                .fetch_all(pool)
                .await?;
            }
            RawDb::Postgres(pool) => {
                sqlx::query(
                    "SELECT id FROM documents WHERE search @@ websearch_to_tsquery('simple', $1) \
                     ORDER BY ts_rank(search, websearch_to_tsquery('simple', $1), 1) DESC LIMIT 25",
                )
                .bind(text)
                .fetch_all(pool)
                .await?;
            }
        }
        out.push(began.elapsed());
    }
    Ok(out)
}

/// Claims and completions per second of a bare queue: `jobs` rows in a scratch table, and
/// `claimers` tasks that each claim the best queued row with one statement (`UPDATE … WHERE id =
/// (SELECT … FOR UPDATE SKIP LOCKED) RETURNING id` on Postgres, the same without the lock
/// clause on SQLite, whose one writer serializes it) and complete it with a second, until none
/// is left. Returns (claims per second, rows claimed twice).
pub async fn raw_claims(db: &RawDb, jobs: usize, claimers: usize) -> anyhow::Result<(f64, usize)> {
    db.exec("DROP TABLE IF EXISTS bench_raw_jobs").await?;
    db.exec(
        "CREATE TABLE bench_raw_jobs (id BIGINT PRIMARY KEY, priority BIGINT NOT NULL, \
         status TEXT NOT NULL, holder TEXT, claims BIGINT NOT NULL DEFAULT 0)",
    )
    .await?;
    db.exec("CREATE INDEX bench_raw_jobs_queue ON bench_raw_jobs (status, priority DESC, id)")
        .await?;
    db.exec(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {jobs}) \
         INSERT INTO bench_raw_jobs (id, priority, status) SELECT i, i % 7, 'queued' FROM n"
    ))
    .await?;
    let began = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..claimers.max(1) {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let holder = format!("agent:raw{c}");
            let mut claimed = 0usize;
            loop {
                let id: Option<i64> = match &db {
                    RawDb::Sqlite(pool) => {
                        sqlx::query_scalar(
                            "UPDATE bench_raw_jobs SET status = 'claimed', holder = ?, claims = claims + 1 \
                             WHERE id = (SELECT id FROM bench_raw_jobs WHERE status = 'queued' \
                             ORDER BY priority DESC, id LIMIT 1) RETURNING id",
                        )
                        .bind(&holder)
                        .fetch_optional(pool)
                        .await?
                    }
                    RawDb::Postgres(pool) => {
                        sqlx::query_scalar(
                            "UPDATE bench_raw_jobs SET status = 'claimed', holder = $1, claims = claims + 1 \
                             WHERE id = (SELECT id FROM bench_raw_jobs WHERE status = 'queued' \
                             ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id",
                        )
                        .bind(&holder)
                        .fetch_optional(pool)
                        .await?
                    }
                };
                let Some(id) = id else { break };
                claimed += 1;
                match &db {
                    RawDb::Sqlite(pool) => {
                        sqlx::query("UPDATE bench_raw_jobs SET status = 'done' WHERE id = ?")
                            .bind(id)
                            .execute(pool)
                            .await?;
                    }
                    RawDb::Postgres(pool) => {
                        sqlx::query("UPDATE bench_raw_jobs SET status = 'done' WHERE id = $1")
                            .bind(id)
                            .execute(pool)
                            .await?;
                    }
                }
            }
            anyhow::Ok(claimed)
        }));
    }
    let mut claimed = 0;
    for task in tasks {
        claimed += task.await??;
    }
    let rate = claimed as f64 / began.elapsed().as_secs_f64();
    let doubled: i64 = match db {
        RawDb::Sqlite(pool) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM bench_raw_jobs WHERE claims > 1")
                .fetch_one(pool)
                .await?
        }
        RawDb::Postgres(pool) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM bench_raw_jobs WHERE claims > 1")
                .fetch_one(pool)
                .await?
        }
    };
    db.exec("DROP TABLE bench_raw_jobs").await?;
    Ok((rate, usize::try_from(doubled).unwrap_or(usize::MAX)))
}
