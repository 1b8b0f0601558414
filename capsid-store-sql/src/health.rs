//! The health port: a trivial query and the newest applied migration as `NNNN_name` (sqlx
//! stores the name with spaces for underscores), written once; what differs per engine (its
//! catalogue, its full-text index, whether there is a server to lose) is its [`HealthEngine`].

use async_trait::async_trait;
use capsid_core::ports::StoreResult;
use sqlx::migrate::Migrator;

use crate::engine::{Engine, read_all};
use crate::stmt::Stmt;

const NEWEST: &str = "SELECT version, description FROM _sqlx_migrations WHERE success \
     ORDER BY version DESC LIMIT 1";

/// The health differences of an engine.
#[async_trait]
pub trait HealthEngine: Engine {
    /// One row whose `n` is 1 when `_sqlx_migrations` exists, 0 before the first migration
    /// (each engine's catalogue says it its own way).
    const MIGRATIONS_TABLE: &'static str;

    /// The migrations this binary embeds.
    fn migrator(&self) -> &'static Migrator;

    /// `StoreHealth::fts_probe`: how many documents match `term` in the engine's own
    /// full-text index.
    async fn fts_probe(&self, term: &str) -> StoreResult<u64>;

    /// `StoreHealth::outage_cause`. Default: none (a file has no server to lose).
    async fn outage_cause(&self) -> Option<String> {
        None
    }

    /// `StoreHealth::limitations`. Default: none.
    async fn limitations(&self) -> StoreResult<Vec<String>> {
        Ok(Vec::new())
    }
}

/// `0001_init` from version 1 and description `init`.
pub fn version_name(version: i64, description: &str) -> String {
    format!("{version:04}_{}", description.replace(' ', "_"))
}

/// `StoreHealth::ping`.
pub async fn ping(engine: &impl Engine) -> StoreResult<()> {
    engine.read(Stmt::new("SELECT 1")).await.map(drop)
}

/// `StoreHealth::schema_version`: `None` before the first migration.
pub async fn schema_version<E: HealthEngine>(engine: &E) -> StoreResult<Option<String>> {
    let present = read_all(engine, Stmt::new(E::MIGRATIONS_TABLE), |r| r.count("n")).await?;
    if present.first().is_none_or(|n| *n == 0) {
        return Ok(None);
    }
    let newest = read_all(engine, Stmt::new(NEWEST), |r| {
        Ok(version_name(r.int("version")?, &r.text("description")?))
    })
    .await?;
    Ok(newest.into_iter().next())
}

/// `StoreHealth::newest_migration`.
pub fn newest_migration(engine: &impl HealthEngine) -> Option<String> {
    engine
        .migrator()
        .iter()
        .map(|m| version_name(m.version, &m.description))
        .next_back()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_like_their_file_names() {
        assert_eq!(version_name(1, "init"), "0001_init");
        assert_eq!(version_name(12, "job outcomes"), "0012_job_outcomes");
    }
}
