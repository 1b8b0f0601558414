//! Restore (reference 10.5): a dump into an **empty** store of either engine. The manifest is
//! read and checked first (present, known format), then its provenance, before anything is
//! written: its HMAC under this store's signing secret and the SHA-256 of every file it
//! lists (`backup::integrity`; an unsealed dump only when the operator accepts one); then
//! not a newer schema, the target must hold nothing, every table file's opening must name the manifest's snapshot; then documents are
//! imported first (so full-text search rebuilds as they arrive), every other table, and the
//! settings sidecar, all in one transaction (each file hashed again as it is imported: a file
//! changed since it was verified rolls the transaction back); then the row counts are compared with the
//! manifest and a search must find a restored document.

use async_trait::async_trait;
use serde::Serialize;

use super::Service;
use super::files::{TableFile, file_digest};
use crate::backup::PAGE_ROWS;
use crate::backup::integrity::{Provenance, RestoreOptions, check_digest, check_provenance};
use crate::backup::manifest::{
    DumpRefusal, JSON_PREFIX, MANIFEST, Manifest, check_file_header, check_row_count, check_schema,
    parse_manifest, run_key, run_of_key,
};
use crate::backup::summary::Progress;
use crate::backup::tables::{EXPORTED, SETTINGS, TableSpec};
use crate::ports::{BlobError, BlobStore, RowSource, TransferError};

/// Why a restore did not happen: refused (the dump or the target is not fit; nothing was
/// written) or failed (the store or the blob store broke, or verification disagreed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Refused before anything was written (exit code 2).
    #[error("{0}")]
    Refused(#[from] DumpRefusal),
    /// Failed (exit code 1).
    #[error("{0}")]
    Failed(String),
}

/// What a restore did and verified.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    /// The run restored.
    pub run: String,
    /// The engine the dump came from.
    pub from_engine: String,
    /// The engine it went into.
    pub to_engine: String,
    /// The dump's schema version.
    pub schema_version: Option<String>,
    /// Per table: rows in the manifest and rows in the store afterwards.
    pub tables: Vec<TableCheck>,
    /// The full-text probe on the restored store (`ok`, or why not).
    pub fts: String,
    /// What proved the dump's origin (see `backup::integrity::Provenance::describe`).
    pub provenance: String,
    /// Whether every count matched and the probe found its document.
    pub verified: bool,
}

/// One table's verification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableCheck {
    /// Table name (`settings` for the sidecar).
    pub table: String,
    /// Rows the manifest lists.
    pub expected: u64,
    /// Rows the restored store holds.
    pub restored: u64,
}

fn failed(e: impl std::fmt::Display) -> RestoreError {
    RestoreError::Failed(e.to_string())
}

/// The import order: documents first (the manifest's order is this build's), settings last.
fn import_order() -> Vec<&'static TableSpec> {
    let mut tables: Vec<&'static TableSpec> = EXPORTED.iter().collect();
    tables.push(&SETTINGS);
    tables
}

/// Finds the run to restore: `run` as given, else the newest under `backups/json/`.
async fn resolve_run(source: &dyn BlobStore, run: Option<&str>) -> Result<String, RestoreError> {
    if let Some(run) = run {
        return Ok(run.to_owned());
    }
    let keys = source.list(JSON_PREFIX).await.map_err(failed)?;
    keys.iter()
        .filter_map(|k| run_of_key(k))
        .max()
        .map(str::to_owned)
        .ok_or_else(|| RestoreError::Refused(DumpRefusal::NoDump(JSON_PREFIX.to_owned())))
}

/// Reads and checks the manifest of `run`.
pub(crate) async fn read_manifest(
    source: &dyn BlobStore,
    run: &str,
) -> Result<Manifest, RestoreError> {
    let key = run_key(run, MANIFEST);
    let bytes = match source.get(&key).await {
        Ok(bytes) => bytes,
        Err(BlobError::NotFound(_)) => {
            return Err(DumpRefusal::MissingManifest { key }.into());
        }
        Err(e) => return Err(failed(e)),
    };
    Ok(parse_manifest(&key, &bytes)?)
}

/// Checks the SHA-256 of every file `manifest` lists (tables, the settings sidecar, the
/// holdout sidecar) against the file's bytes, before anything is written.
async fn verify_digests(
    source: &dyn BlobStore,
    manifest: &Manifest,
    progress: &dyn Progress,
) -> Result<(), RestoreError> {
    progress.step("verifying every file's SHA-256");
    let sidecar = manifest
        .holdout_manifests
        .as_deref()
        .map(|key| (key, manifest.holdout_manifests_sha256.as_deref()));
    let files = manifest
        .tables
        .iter()
        .chain([&manifest.settings])
        .map(|t| (t.key.as_str(), t.sha256.as_deref()))
        .chain(sidecar);
    for (key, expected) in files {
        let found = match file_digest(source, key).await {
            Ok(found) => found,
            Err(BlobError::NotFound(_)) => {
                return Err(DumpRefusal::Torn(format!("{key} is missing")).into());
            }
            Err(e) => return Err(failed(e)),
        };
        check_digest(key, expected, &found)?;
    }
    Ok(())
}

impl Service {
    /// Restores the dump `run` (the newest when `None`) from `source` into this service's
    /// store, which must be migrated and empty; only a dump sealed under this store's signing
    /// secret (see [`Service::restore_dump_with`]).
    pub async fn restore_dump(
        &self,
        source: &dyn BlobStore,
        run: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<RestoreReport, RestoreError> {
        self.restore_dump_with(source, run, &RestoreOptions::default(), progress)
            .await
    }

    /// As [`Service::restore_dump`], with what `options` allow beyond a sealed dump.
    pub async fn restore_dump_with(
        &self,
        source: &dyn BlobStore,
        run: Option<&str>,
        options: &RestoreOptions,
        progress: &dyn Progress,
    ) -> Result<RestoreReport, RestoreError> {
        let run = resolve_run(source, run).await?;
        let manifest = read_manifest(source, &run).await?;
        progress.step("verifying the manifest's HMAC");
        let provenance = check_provenance(
            &run_key(&run, MANIFEST),
            &manifest,
            self.config.signing_secret(),
            options,
        )?;
        if provenance == Provenance::Sealed {
            verify_digests(source, &manifest, progress).await?;
        }
        let target_schema = self.store.schema_version().await.map_err(failed)?;
        check_schema(manifest.schema_version.as_deref(), target_schema.as_deref())?;
        let order = import_order();
        let counts = self.store.count_rows(&order).await.map_err(failed)?;
        let found: Vec<String> = order
            .iter()
            .zip(&counts)
            .filter(|(_, n)| **n > 0)
            .map(|(t, n)| format!("{}: {n} rows", t.name))
            .collect();
        if !found.is_empty() {
            return Err(DumpRefusal::TargetNotEmpty {
                found: found.join(", "),
            }
            .into());
        }
        progress.step("checking that every table is from one snapshot");
        for table in &order {
            let listed = manifest.table(table).ok_or_else(|| {
                DumpRefusal::Torn(format!("the manifest lists no {}", table.name))
            })?;
            let mut file = match TableFile::open(source, &listed.key, table).await {
                Ok(file) => file,
                Err(BlobError::NotFound(_)) => {
                    return Err(DumpRefusal::Torn(format!("{} is missing", listed.key)).into());
                }
                Err(e) => return Err(failed(e)),
            };
            let header = file
                .header()
                .await
                .map_err(|e| DumpRefusal::Torn(format!("{}: {e}", listed.key)))?;
            check_file_header(
                &manifest,
                listed,
                header.text("table"),
                header.text("exported_at"),
            )?;
        }
        let mut source_rows = DumpSource {
            source,
            manifest: &manifest,
            order,
            next: 0,
            current: None,
            refusal: None,
            progress,
        };
        match self.store.import_tables(&mut source_rows).await {
            Ok(_) => {}
            Err(TransferError::Peer(message)) => {
                return Err(match source_rows.refusal.take() {
                    Some(refusal) => refusal.into(),
                    None => RestoreError::Failed(message),
                });
            }
            Err(TransferError::Store(e)) => return Err(failed(e)),
        }
        progress.step("verifying");
        self.verify_restore(&manifest, provenance, progress).await
    }

    async fn verify_restore(
        &self,
        manifest: &Manifest,
        provenance: Provenance,
        progress: &dyn Progress,
    ) -> Result<RestoreReport, RestoreError> {
        let order = import_order();
        let counts = self.store.count_rows(&order).await.map_err(failed)?;
        let tables: Vec<TableCheck> = order
            .iter()
            .zip(counts)
            .map(|(t, restored)| TableCheck {
                table: t.name.to_owned(),
                expected: manifest.table(t).map_or(0, |l| l.rows),
                restored,
            })
            .collect();
        let documents = tables.first().map_or(0, |t| t.restored);
        let fts = if documents == 0 {
            "skipped: no documents".to_owned()
        } else {
            self.fts_finds_a_document().await.map_err(failed)?
        };
        let counts_match = tables.iter().all(|t| t.expected == t.restored);
        let fts_ok = fts == "ok" || documents == 0;
        progress.step(if counts_match && fts_ok {
            "verified"
        } else {
            "verification failed"
        });
        let report = RestoreReport {
            run: manifest.run.clone(),
            from_engine: manifest.engine.clone(),
            to_engine: self.store.engine().to_owned(),
            schema_version: manifest.schema_version.clone(),
            tables,
            fts,
            provenance: provenance.describe().to_owned(),
            verified: counts_match && fts_ok,
        };
        Ok(report)
    }
}

/// The import's source: the manifest's tables in order, each file checked as it is read.
struct DumpSource<'a> {
    source: &'a dyn BlobStore,
    manifest: &'a Manifest,
    order: Vec<&'static TableSpec>,
    next: usize,
    current: Option<TableFile>,
    refusal: Option<DumpRefusal>,
    progress: &'a dyn Progress,
}

impl DumpSource<'_> {
    fn refuse(&mut self, refusal: DumpRefusal) -> String {
        let text = refusal.to_string();
        self.refusal = Some(refusal);
        text
    }

    /// Closes the current file: it must have held exactly the manifest's rows and named the
    /// manifest's snapshot.
    fn close_current(&mut self) -> Result<(), String> {
        let Some(file) = self.current.take() else {
            return Ok(());
        };
        let table = self.order[self.next - 1];
        let Some(listed) = self.manifest.table(table) else {
            return Err(self.refuse(DumpRefusal::Torn(format!(
                "no manifest line for {}",
                table.name
            ))));
        };
        let checked = check_file_header(
            self.manifest,
            listed,
            file.members().text("table"),
            file.members().text("exported_at"),
        )
        .and_then(|()| check_row_count(listed, file.rows_read()))
        .and_then(|()| match file.digest() {
            // Hashed again as imported: a file changed since it was verified is refused, and
            // the import's transaction rolls back.
            Some(found) => check_digest(&listed.key, listed.sha256.as_deref(), &found),
            None => Err(DumpRefusal::Torn(format!(
                "{} was not read to its end",
                listed.key
            ))),
        });
        if let Err(refusal) = checked {
            return Err(self.refuse(refusal));
        }
        self.progress.table_done(table.name, file.rows_read());
        Ok(())
    }
}

#[async_trait]
impl RowSource for DumpSource<'_> {
    async fn next_table(&mut self) -> Result<Option<&'static TableSpec>, String> {
        self.close_current()?;
        let Some(table) = self.order.get(self.next).copied() else {
            return Ok(None);
        };
        self.next += 1;
        let Some(listed) = self.manifest.table(table) else {
            return Err(self.refuse(DumpRefusal::Torn(format!(
                "no manifest line for {}",
                table.name
            ))));
        };
        let file = TableFile::open(self.source, &listed.key, table)
            .await
            .map_err(|e| e.to_string())?;
        self.progress.table_started(table.name, Some(listed.rows));
        self.current = Some(file);
        Ok(Some(table))
    }

    async fn next_rows(&mut self) -> Result<Option<Vec<crate::backup::rows::Row>>, String> {
        let Some(file) = self.current.as_mut() else {
            return Ok(None);
        };
        let page = match file.next_page(PAGE_ROWS).await {
            Ok(page) => page,
            Err(e) => {
                let key = self
                    .manifest
                    .table(self.order[self.next - 1])
                    .map_or(String::new(), |l| l.key.clone());
                return Err(self.refuse(DumpRefusal::Unfit(format!("{key}: {e}"))));
            }
        };
        if let Some(rows) = &page {
            self.progress.rows_done(rows.len() as u64);
        }
        Ok(page)
    }
}
