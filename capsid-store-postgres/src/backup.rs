//! This store's backup differences ([`BackupEngine`]): a dump reads one `REPEATABLE READ,
//! READ ONLY` transaction; an import keeps identity ids with `OVERRIDING SYSTEM VALUE`, then
//! moves each identity past the largest imported id (the `tsvector` columns generate
//! themselves).

use async_trait::async_trait;
use capsid_core::backup::tables::TableSpec;
use capsid_core::ports::StoreResult;
use capsid_store_sql::backup::{BackupEngine, Snapshot};

use crate::PgStore;
use crate::error::translate;

#[async_trait]
impl BackupEngine for PgStore {
    const NAME: &'static str = "postgres";

    async fn begin_snapshot(&self) -> StoreResult<Snapshot> {
        let tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
            .map_err(translate)?;
        Ok(Snapshot::Postgres(tx))
    }

    fn keep_ids(&self, table: &TableSpec) -> &'static str {
        if table.identity.is_some() {
            "OVERRIDING SYSTEM VALUE "
        } else {
            ""
        }
    }

    fn table_imported(&self, table: &TableSpec) -> Option<String> {
        table.identity.map(|id| {
            format!(
                "SELECT setval(pg_get_serial_sequence('{t}', '{id}'), \
                 COALESCE((SELECT MAX({id}) FROM {t}), 0) + 1, false)",
                t = table.name
            )
        })
    }
}
