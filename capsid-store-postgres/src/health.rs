//! This store's health differences: its catalogue, its `tsvector` probe, why the server
//! cannot be reached, and what it runs without.

use async_trait::async_trait;
use capsid_core::ports::StoreResult;
use capsid_store_sql::health::HealthEngine;
use sqlx::migrate::Migrator;

use crate::PgStore;
use crate::documents::search;
use crate::error::translate;
use crate::search_indexes;

#[async_trait]
impl HealthEngine for PgStore {
    /// `to_regclass` is `NULL` for a table that does not exist (`COUNT` makes it a `BIGINT`).
    const MIGRATIONS_TABLE: &'static str = "SELECT COUNT(to_regclass('_sqlx_migrations')) AS n";

    fn migrator(&self) -> &'static Migrator {
        &crate::MIGRATOR
    }

    async fn fts_probe(&self, term: &str) -> StoreResult<u64> {
        search::count_matches(&self.pool, term).await
    }

    /// One connection attempt, bounded by the connect timeout and shared by the callers
    /// asking within half a second: the pool's own timeout hides a refused connection.
    async fn outage_cause(&self) -> Option<String> {
        self.outage.cause().await
    }

    /// The text indexes without the namespace (see `search_indexes`), and what would add it.
    async fn limitations(&self) -> StoreResult<Vec<String>> {
        let mut conn = self.pool.acquire().await.map_err(translate)?;
        if search_indexes::lacking(&mut conn)
            .await
            .map_err(translate)?
            .is_empty()
        {
            return Ok(Vec::new());
        }
        let installed = search_indexes::extension_installed(&mut conn)
            .await
            .map_err(translate)?;
        Ok(vec![if installed {
            INDEXES_NOT_BUILT.to_owned()
        } else {
            EXTENSION_MISSING.to_owned()
        }])
    }
}

/// `limitations` when `btree_gin` is missing.
const EXTENSION_MISSING: &str = "the document text indexes lack the namespace, so a search \
     within one namespace is slower on a large store: btree_gin is not installed in this \
     database (this role may not create it, or the server lacks PostgreSQL's contrib \
     modules). Where contrib is installed, a role with CREATE on the database (its owner, \
     say) can run: CREATE EXTENSION IF NOT EXISTS btree_gin; then the next capsid migrate (or \
     capsid serve start) builds the indexes without blocking reads or writes.";

/// `limitations` when the extension is there but the indexes were not built (yet).
const INDEXES_NOT_BUILT: &str = "the document text indexes lack the namespace (their build has \
     not run yet, or was interrupted), so a search within one namespace is slower on a large \
     store; the next capsid migrate (or capsid serve start) builds them without blocking reads \
     or writes.";
