//! The backup run (reference 10.4): under the `backup:lease` setting (compare-and-set, 900 s),
//! every table from one snapshot to `backups/json/<run>/`, the sidecars, the manifest last
//! (a conditional create; it lists every file's SHA-256 and is sealed with an HMAC under a
//! key derived from the signing secret, `backup::integrity`), then (only if the preflight passes) the markdown mirror and its
//! pruning, retention by run, reports, and the store's history pruning; `backup:last-ok` is
//! stamped once the dump is safe. Restore is in [`restore`], the credential in
//! [`credential`], the dump's files in [`files`].

mod credential;
mod files;
mod mirror;
mod on_demand;
mod rehearsal;
mod restore;

pub use crate::backup::integrity::RestoreOptions;
pub use credential::{BackupCredential, CredentialError, CredentialObject};
pub use on_demand::{DEFAULT_ON_DEMAND_INTERVAL_MS, OnDemandBackup, on_demand_key};
pub use rehearsal::rehearse_dump;
pub use restore::{
    ReSigned, ReSignedJob, RestoreError, RestoreReport, TableCheck, check_dump_provenance,
    re_sign_plan,
};

use std::sync::Arc;

use serde_json::json;

use super::Service;
use crate::backup::holdout::HoldoutCounts;
use crate::backup::manifest::{
    FORMAT, HOLDOUT_SIDECAR, JSON_PREFIX, MANIFEST, Manifest, ManifestTable, REPORTS_PREFIX,
    SETTINGS_SIDECAR, run_id, run_key, run_of_key,
};
use crate::backup::preflight::{Preflight, probe_term};
use crate::backup::retention::{PruneCutoffs, report_expired, runs_to_delete};
use crate::backup::summary::{BackupSummary, Progress};
use crate::backup::tables::{EXPORTED, SETTINGS, TableSpec};
use crate::backup::{BACKUP_LEASE_KEY, BACKUP_LEASE_MS, PAGE_ROWS};
use crate::error::{Error, Result};
use crate::improve::keys::BACKUP_LAST_OK_KEY;
use crate::ports::{BlobError, BlobStore, DocFilter, TransferError};
use crate::time::Timestamp;

/// The blob stores a backup run writes to and reads counts from.
#[derive(Clone, Default)]
pub(crate) struct BackupWiring {
    media: Option<Arc<dyn BlobStore>>,
    holdout: Option<HoldoutCounts>,
    /// Between two backups on demand by one caller (`None`: the default).
    on_demand_interval_ms: Option<i64>,
    /// Between two scheduled backups.
    every: crate::backup::BackupEvery,
    /// The maker of throwaway stores the scheduled rehearsal restores into.
    scratch: Option<Arc<dyn crate::ports::ScratchStores>>,
    /// Between two scheduled rehearsals.
    rehearse_every: crate::backup::rehearsal::RehearseEvery,
}

impl Service {
    /// Adds the media store (backups, the markdown mirror, reports).
    pub fn with_media(mut self, media: Arc<dyn BlobStore>) -> Service {
        self.backups.media = Some(media);
        self
    }

    /// Adds the counts-only view of the holdout store, for the holdout-manifest sidecar.
    pub fn with_holdout_counts(mut self, counts: HoldoutCounts) -> Service {
        self.backups.holdout = Some(counts);
        self
    }

    /// Sets how often the scheduler takes a dump (default: once a day at 09:00 UTC).
    pub fn with_backup_every(mut self, every: crate::backup::BackupEvery) -> Service {
        self.backups.every = every;
        self
    }

    /// The media store, or why there is none.
    pub(crate) fn media(&self) -> Result<&Arc<dyn BlobStore>> {
        self.backups.media.as_ref().ok_or_else(|| {
            Error::Unavailable("no media store is configured (CAPSID_MEDIA_URL)".to_owned())
        })
    }

    /// The scheduler's run: runs a backup when one is due (a slot of the configured interval
    /// has begun, by default 09:00 UTC daily, and none succeeded since) and a media store is
    /// configured; whether it ran.
    pub async fn scheduled_backup_if_due(&self) -> Result<bool> {
        if self.backups.media.is_none() {
            return Ok(false);
        }
        let now = self.now();
        let last_ok = self
            .store
            .setting(BACKUP_LAST_OK_KEY, now)
            .await?
            .as_deref()
            .and_then(Timestamp::parse);
        if !crate::backup::scheduled_run_due(self.backups.every, now, last_ok) {
            return Ok(false);
        }
        let summary = self.run_backup(&crate::backup::summary::NoProgress).await?;
        Ok(summary.ran)
    }

    /// Runs one backup now, unless another run holds the lease (then `ran: false,
    /// skipped: "lease-held"`).
    pub async fn run_backup(&self, progress: &dyn Progress) -> Result<BackupSummary> {
        let media = self.media()?.clone();
        let now = self.now();
        let run = run_id(now);
        let until = now.plus_millis(BACKUP_LEASE_MS);
        let leased = self
            .store
            .compare_and_set_setting(BACKUP_LEASE_KEY, None, Some(&run), Some(until), now)
            .await?;
        if !leased {
            return Ok(BackupSummary::lease_held());
        }
        let outcome = self.backup_under_lease(&media, &run, now, progress).await;
        // A failed release only delays the next run: the lease expires on its own.
        let _ = self
            .store
            .compare_and_set_setting(BACKUP_LEASE_KEY, Some(&run), None, None, self.now())
            .await;
        outcome
    }

    async fn backup_under_lease(
        &self,
        media: &Arc<dyn BlobStore>,
        run: &str,
        now: Timestamp,
        progress: &dyn Progress,
    ) -> Result<BackupSummary> {
        let schema_version = self.store.schema_version().await?;
        let exported_at = now.to_string();
        let mut tables: Vec<&'static TableSpec> = EXPORTED.iter().collect();
        tables.push(&SETTINGS);
        let roster = self.roster().await?;
        let mut sink =
            files::DumpWriter::new(media.clone(), run, &exported_at, progress, roster.clone());
        let exported = self
            .store
            .export_tables(&tables, PAGE_ROWS, &mut sink)
            .await;
        // The last point a cancelled run stops at: past it the manifest makes the run whole.
        if (exported.is_ok() && progress.cancelled()) || is_cancellation(&exported) {
            return Err(match sink.discard().await {
                Ok(()) => Error::Cancelled(format!(
                    "{}: nothing of run {run} was kept",
                    files::CANCELLED
                )),
                Err(e) => Error::Cancelled(format!(
                    "{}, but its partial files under run {run} could not all be removed ({e}); a restore never reads a run without its manifest",
                    files::CANCELLED
                )),
            });
        }
        let counts = match exported {
            Ok(()) => sink.into_counts(),
            Err(e) => {
                sink.abandon().await;
                return Err(match e {
                    TransferError::Peer(m) => Error::Unavailable(format!("the dump failed: {m}")),
                    TransferError::Store(s) => s.into(),
                });
            }
        };
        let mut json_keys: Vec<String> = counts
            .iter()
            .map(|w| files::file_key(run, w.table))
            .collect();
        let holdout_manifests = match &self.backups.holdout {
            Some(holdout) => {
                let manifests = holdout
                    .counts(roster.namespaces())
                    .await
                    .map_err(blob_error)?;
                let key = run_key(run, HOLDOUT_SIDECAR);
                let body = json!({"exported_at": exported_at, "manifests": manifests});
                let bytes = serde_json::to_vec(&body).unwrap_or_default();
                let digest = crate::crypto::sha256_hex(&bytes);
                media.put(&key, bytes).await.map_err(blob_error)?;
                json_keys.push(key.clone());
                Some((key, digest))
            }
            None => None,
        };
        let line = |written: &files::Written| ManifestTable {
            table: written.table.name.to_owned(),
            rows: written.rows,
            key: files::file_key(run, written.table),
            sha256: Some(written.sha256.clone()),
        };
        let settings = counts
            .iter()
            .find(|w| w.table.name == SETTINGS.name)
            .map(line)
            .ok_or_else(|| {
                Error::Internal(format!("the export wrote no {} file", SETTINGS_SIDECAR))
            })?;
        let mut manifest = Manifest {
            format: FORMAT.to_owned(),
            run: run.to_owned(),
            exported_at: exported_at.clone(),
            engine: self.store.engine().to_owned(),
            schema_version,
            tables: counts
                .iter()
                .filter(|w| w.table.name != SETTINGS.name)
                .map(line)
                .collect(),
            settings,
            holdout_manifests_sha256: holdout_manifests.as_ref().map(|(_, d)| d.clone()),
            holdout_manifests: holdout_manifests.map(|(k, _)| k),
            integrity: None,
        };
        // Sealed under the signing secret; a server without one writes digests unsealed,
        // which a restore refuses unless told to accept an unverified dump.
        if let Some(secret) = self.config.signing_secret() {
            crate::backup::integrity::seal(&mut manifest, secret);
        }
        let rendered = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| Error::Internal(format!("could not render the manifest: {e}")))?;
        media
            .put_new(&run_key(run, MANIFEST), rendered)
            .await
            .map_err(blob_error)?;
        json_keys.push(run_key(run, MANIFEST));

        let documents = manifest.tables.first().map_or(0, |t| t.rows);
        progress.step("preflight");
        let preflight = self.preflight(documents).await;
        let mut summary = BackupSummary {
            ran: true,
            run: Some(run.to_owned()),
            json_key_count: json_keys.len() as u64,
            json_keys,
            tables: manifest
                .tables
                .iter()
                .map(|t| (t.table.clone(), t.rows))
                .collect(),
            prune_refused: preflight.prune_refusal(),
            preflight: Some(preflight),
            ..BackupSummary::default()
        };
        if summary.prune_refused.is_none() {
            progress.step("markdown mirror");
            let mirrored = mirror::mirror_documents(media.as_ref(), &manifest).await?;
            summary.markdown_written = mirrored.written;
            summary.markdown_pruned = mirrored.pruned;
            progress.step("retention");
            summary.json_backups_pruned = prune_runs(media.as_ref(), now).await?;
            summary.reports_pruned = prune_reports(media.as_ref(), now).await?;
            progress.step("pruning versions and audit");
            let pruned = self.store.prune_history(PruneCutoffs::at(now)).await?;
            summary.versions_pruned = pruned.versions;
            summary.audit_pruned = pruned.audit;
        }
        self.store
            .put_setting(BACKUP_LAST_OK_KEY, &self.now().to_string(), None)
            .await?;
        Ok(summary)
    }

    /// The preflight: documents in the snapshot, and a search that finds a document the
    /// store holds by its longest word.
    async fn preflight(&self, documents: u64) -> Preflight {
        let fts = if documents == 0 {
            "skipped: no documents".to_owned()
        } else {
            match self.fts_finds_a_document().await {
                Ok(verdict) => verdict,
                Err(e) => {
                    let mut text = format!("error: {e}");
                    text.truncate(120);
                    text
                }
            }
        };
        Preflight { documents, fts }
    }

    /// `ok` when a search for a sampled document's word returns that document.
    pub(crate) async fn fts_finds_a_document(&self) -> Result<String> {
        let sample = self.store.list_documents(&DocFilter::default(), 5).await?;
        for summary in sample {
            let Some(doc) = self
                .store
                .document(&summary.namespace, &summary.path)
                .await?
            else {
                continue;
            };
            let Some(term) = probe_term(doc.title.as_deref(), doc.body.as_deref()) else {
                continue;
            };
            let hits = self
                .store
                .search_documents(&term, Some(&doc.namespace), None, 25)
                .await?;
            return Ok(if hits.iter().any(|h| h.path == doc.path) {
                "ok".to_owned()
            } else {
                format!("no match for '{term}' in {}/{}", doc.namespace, doc.path)
            });
        }
        Ok("skipped: no document has a word to probe".to_owned())
    }
}

/// Whether the export stopped because its caller cancelled it.
fn is_cancellation(exported: &std::result::Result<(), TransferError>) -> bool {
    matches!(exported, Err(TransferError::Peer(m)) if m == files::CANCELLED)
}

/// Deletes whole runs past retention; returns how many.
async fn prune_runs(media: &dyn BlobStore, now: Timestamp) -> Result<u64> {
    let keys = media.list(JSON_PREFIX).await.map_err(blob_error)?;
    let mut runs: Vec<String> = keys
        .iter()
        .filter_map(|k| run_of_key(k).map(str::to_owned))
        .collect();
    runs.dedup();
    let gone = runs_to_delete(&runs, now);
    let doomed: Vec<String> = keys
        .into_iter()
        .filter(|k| run_of_key(k).is_some_and(|r| gone.iter().any(|g| g == r)))
        .collect();
    media.delete_many(doomed).await.map_err(blob_error)?;
    Ok(gone.len() as u64)
}

/// Deletes report objects past 30 days; returns how many.
async fn prune_reports(media: &dyn BlobStore, now: Timestamp) -> Result<u64> {
    let doomed: Vec<String> = media
        .list_meta(REPORTS_PREFIX)
        .await
        .map_err(blob_error)?
        .into_iter()
        .filter(|m| report_expired(m.last_modified, now))
        .map(|m| m.key)
        .collect();
    let n = doomed.len() as u64;
    media.delete_many(doomed).await.map_err(blob_error)?;
    Ok(n)
}

pub(crate) fn blob_error(e: BlobError) -> Error {
    match e {
        BlobError::NotFound(_) => Error::NotFound(e.to_string()),
        BlobError::Exists(_) => Error::Conflict(e.to_string()),
        BlobError::InvalidKey(_) => Error::Invalid(e.to_string()),
        BlobError::Backend(_) => Error::Unavailable(e.to_string()),
    }
}
