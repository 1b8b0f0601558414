//! This store's backup differences ([`BackupEngine`]): a dump reads one WAL snapshot on a
//! reader; an import (one unit on the writer, AUTOINCREMENT counters following the explicit
//! ids) suspends the full-text triggers on `documents` and rebuilds the index once from the
//! content table before committing (one pass instead of a trigger per row). The triggers are
//! recreated from their own stored SQL in the same unit, so a failed import rolls everything
//! back, triggers included.

use async_trait::async_trait;
use capsid_core::ports::StoreResult;
use capsid_store_sql::backup::{BackupEngine, ImportPlan, Snapshot};
use capsid_store_sql::{Exec, Stmt};

use crate::store::SqliteStore;

/// The writer connection's page cache while an import runs, in KiB. An import is one
/// transaction, and with SQLite's default 2 MB cache every index, table and full-text page
/// of a large dump spills to the WAL and is read back from it as rows arrive; a fixed 64 MiB
/// keeps the working set in memory (a bound that does not grow with the dump). The previous
/// size is restored when the import ends, committed or not.
const IMPORT_CACHE_KIB: i64 = 64 * 1024;

const FTS_TRIGGERS: &str = "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' \
     AND tbl_name = 'documents' ORDER BY name";

#[async_trait]
impl BackupEngine for SqliteStore {
    const NAME: &'static str = "sqlite";

    async fn begin_snapshot(&self) -> StoreResult<Snapshot> {
        Ok(Snapshot::Sqlite(self.begin_read().await?))
    }

    async fn import_begins(&self, tx: &mut dyn Exec) -> Result<ImportPlan, sqlx::Error> {
        let cache = tx.fetch_optional(Stmt::new("PRAGMA cache_size")).await?;
        let cache = cache.ok_or(sqlx::Error::RowNotFound)?.int("cache_size")?;
        tx.execute(Stmt::new(format!(
            "PRAGMA cache_size = -{IMPORT_CACHE_KIB}"
        )))
        .await?;
        let mut finish =
            vec!["INSERT INTO documents_fts (documents_fts) VALUES ('rebuild')".to_owned()];
        for trigger in tx.fetch_all(Stmt::new(FTS_TRIGGERS)).await? {
            // The name comes from the schema itself; quoted as an identifier all the same.
            let name = trigger.text("name")?.replace('"', "\"\"");
            tx.execute(Stmt::new(format!("DROP TRIGGER \"{name}\"")))
                .await?;
            finish.push(trigger.text("sql")?);
        }
        Ok(ImportPlan {
            finish,
            // The writer is one connection: its page cache goes back to what it was.
            restore: vec![format!("PRAGMA cache_size = {cache}")],
        })
    }
}
