//! The `StoreHealth` port: a trivial query, a full-text probe, the newest applied migration
//! as `NNNN_name`, and why the server cannot be reached.

use async_trait::async_trait;
use capsid_core::ports::{StoreHealth, StoreResult};

use crate::PgStore;
use crate::documents::search;
use crate::error::translate;

const MIGRATIONS_TABLE_EXISTS: &str = "SELECT to_regclass('_sqlx_migrations') IS NOT NULL";
const NEWEST_MIGRATION: &str =
    "SELECT version, description FROM _sqlx_migrations WHERE success ORDER BY version DESC LIMIT 1";

/// `0001_init` from version 1 and description `init` (sqlx stores `_` as spaces).
pub(crate) fn version_name(version: i64, description: &str) -> String {
    format!("{version:04}_{}", description.replace(' ', "_"))
}

#[async_trait]
impl StoreHealth for PgStore {
    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(translate)?;
        Ok(())
    }

    async fn fts_probe(&self, term: &str) -> StoreResult<u64> {
        search::count_matches(&self.pool, term).await
    }

    async fn schema_version(&self) -> StoreResult<Option<String>> {
        let exists: bool = sqlx::query_scalar(MIGRATIONS_TABLE_EXISTS)
            .fetch_one(&self.pool)
            .await
            .map_err(translate)?;
        if !exists {
            return Ok(None);
        }
        let newest: Option<(i64, String)> = sqlx::query_as(NEWEST_MIGRATION)
            .fetch_optional(&self.pool)
            .await
            .map_err(translate)?;
        Ok(newest.map(|(version, description)| version_name(version, &description)))
    }

    /// One connection attempt, bounded by the connect timeout and shared by the callers
    /// asking within half a second: the pool's own timeout hides a refused connection.
    async fn outage_cause(&self) -> Option<String> {
        self.outage.cause().await
    }

    fn newest_migration(&self) -> Option<String> {
        crate::MIGRATOR
            .iter()
            .map(|m| version_name(m.version, &m.description))
            .next_back()
    }
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
