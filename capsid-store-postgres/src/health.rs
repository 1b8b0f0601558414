//! This store's health differences: its catalogue, its `tsvector` probe, why the server
//! cannot be reached, and what it runs without.

use async_trait::async_trait;
use capsid_core::ports::StoreResult;
use capsid_store_sql::health::HealthEngine;
use sqlx::migrate::Migrator;

use crate::PgStore;
use crate::documents::search;
use crate::error::translate;

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

    /// The text indexes without the namespace: migration 0022 could not create `btree_gin`
    /// (its warning said so once; this says it on every `capsid doctor`).
    async fn limitations(&self) -> StoreResult<Vec<String>> {
        let definitions: Vec<String> = sqlx::query_scalar(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() \
             AND tablename = 'documents' \
             AND indexname IN ('documents_search', 'documents_title_search')",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(translate)?;
        let by_namespace = definitions
            .iter()
            .filter(|definition| definition.contains("(namespace, "))
            .count();
        if definitions.is_empty() || by_namespace == definitions.len() {
            return Ok(Vec::new());
        }
        Ok(vec![SEARCH_WITHOUT_NAMESPACE.to_owned()])
    }
}

/// What `limitations` says of text indexes without the namespace, and how to add it.
const SEARCH_WITHOUT_NAMESPACE: &str = "the document text indexes lack the namespace \
     (btree_gin could not be created when migration 0022 ran), so a search within one \
     namespace is slower on a large store; as the database's owner, run: CREATE EXTENSION \
     btree_gin; DROP INDEX documents_search; CREATE INDEX documents_search ON documents USING \
     GIN (namespace, search); DROP INDEX documents_title_search; CREATE INDEX \
     documents_title_search ON documents USING GIN (namespace, title_search);";
