//! The restore rehearsal (reference 10.5): the newest dump (or one named) restored into a
//! throwaway store from the [`ScratchStores`] port and verified there (its seal and digests
//! before anything is written, then the row counts against the manifest and a search), the
//! store removed afterwards. `capsid restore --rehearse` and the scheduler's weekly
//! `rehearsal` task run the same [`rehearse_dump`]; the scheduled one records its verdict in
//! the `backup:rehearsal:last` setting (and an audit row), which `capsid doctor`, the console
//! and `/metrics` read.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Service;
use super::restore::{RestoreError, RestoreReport, check_dump_provenance};
use crate::backup::integrity::RestoreOptions;
use crate::backup::manifest::{MANIFEST, run_key};
use crate::backup::rehearsal::{
    REHEARSAL_KEY, RehearsalOutcome, RehearsalRecord, RehearseEvery, RehearsedTable, rehearsal_due,
};
use crate::backup::summary::{NoProgress, Progress};
use crate::error::{Error, Result};
use crate::ports::{AuditEntry, BlobStore, ScratchStores, Store};

/// Restores `run` (the newest when `None`) from `source` into a throwaway store made by
/// `scratch`, restored by the service `over` makes over it (the caller's clock and signing
/// secret), and removes the store afterwards. The dump's provenance (`secret`, `options`) is
/// checked before the store is made, so a refused dump leaves nothing behind.
pub async fn rehearse_dump(
    source: &dyn BlobStore,
    run: Option<&str>,
    secret: Option<&str>,
    options: &RestoreOptions,
    scratch: &dyn ScratchStores,
    over: &(dyn Fn(Arc<dyn Store>) -> Service + Send + Sync),
    progress: &dyn Progress,
) -> std::result::Result<RestoreReport, RestoreError> {
    check_dump_provenance(source, run, secret, options).await?;
    let target = scratch.create().await.map_err(|e| {
        RestoreError::Failed(format!(
            "the rehearsal's throwaway store could not be made: {e}"
        ))
    })?;
    let name = target.name;
    let outcome = {
        let service = over(target.store);
        service
            .restore_dump_with(source, run, options, progress)
            .await
    };
    // The service (and with it the store's connections) is dropped before the store goes.
    scratch.discard(&name).await;
    outcome
}

impl Service {
    /// Adds the maker of throwaway stores the scheduled rehearsal restores into.
    pub fn with_scratch_stores(mut self, scratch: Arc<dyn ScratchStores>) -> Service {
        self.backups.scratch = Some(scratch);
        self
    }

    /// Sets how often the scheduler rehearses a restore (default: weekly).
    pub fn with_rehearse_every(mut self, every: RehearseEvery) -> Service {
        self.backups.rehearse_every = every;
        self
    }

    /// This service's clock, entropy and configuration over another store.
    pub(crate) fn over_store(&self, store: Arc<dyn Store>) -> Service {
        let mut other = self.clone();
        other.store = store;
        other
    }

    /// The last rehearsal's record, when one is recorded and reads.
    pub async fn last_rehearsal(&self) -> Result<Option<RehearsalRecord>> {
        let now = self.now();
        Ok(self
            .store
            .setting(REHEARSAL_KEY, now)
            .await?
            .as_deref()
            .and_then(RehearsalRecord::parse))
    }

    /// The scheduler's run: rehearses when one is due (none recorded, or the last began an
    /// interval ago), a media store and a maker of throwaway stores are configured, and a dump
    /// exists; its report says whether it ran and, if so, the verdict.
    pub async fn scheduled_rehearsal_if_due(&self) -> Result<Value> {
        let (Some(media), Some(_)) = (&self.backups.media, &self.backups.scratch) else {
            return Ok(
                json!({"rehearsed": false, "why": "no media store or throwaway store is configured"}),
            );
        };
        let last = self.last_rehearsal().await?;
        if !rehearsal_due(self.backups.rehearse_every, self.now(), last.as_ref()) {
            return Ok(json!({"rehearsed": false}));
        }
        let keys = media
            .list(crate::backup::manifest::JSON_PREFIX)
            .await
            .map_err(super::blob_error)?;
        if !keys.iter().any(|k| k.ends_with(MANIFEST)) {
            // A fresh install: nothing to rehearse yet, and nothing failed.
            return Ok(json!({"rehearsed": false, "why": "no dump yet"}));
        }
        let record = self.rehearse_and_record().await?;
        Ok(json!({"rehearsed": true, "ok": record.ok, "run": record.run, "reason": record.reason}))
    }

    /// Rehearses the newest dump now and records the verdict (the setting and an audit row).
    pub async fn rehearse_and_record(&self) -> Result<RehearsalRecord> {
        let media = self.media()?.clone();
        let scratch = self.backups.scratch.clone().ok_or_else(|| {
            Error::Unavailable("no throwaway store is configured for the rehearsal".to_owned())
        })?;
        let at = self.now();
        let me = self.clone();
        let over = move |store: Arc<dyn Store>| me.over_store(store);
        let outcome = rehearse_dump(
            media.as_ref(),
            None,
            self.config.signing_secret(),
            &RestoreOptions::default(),
            scratch.as_ref(),
            &over,
            &NoProgress,
        )
        .await;
        let record = record_of(at.to_string(), outcome);
        self.store
            .put_setting(REHEARSAL_KEY, &record.to_json(), None)
            .await?;
        self.store
            .append_audit(AuditEntry {
                actor: "improve-loop".to_owned(),
                action: "backup.rehearsed".to_owned(),
                namespace: None,
                path: record.key.clone(),
                params: serde_json::to_value(&record).unwrap_or(Value::Null),
                at: self.now(),
            })
            .await?;
        Ok(record)
    }
}

/// The durable record of a rehearsal that began `at` and ended with `outcome`.
fn record_of(
    at: String,
    outcome: std::result::Result<RestoreReport, RestoreError>,
) -> RehearsalRecord {
    match outcome {
        Ok(report) => {
            let tables: Vec<RehearsedTable> = report
                .tables
                .iter()
                .map(|t| RehearsedTable {
                    table: t.table.clone(),
                    expected: t.expected,
                    restored: t.restored,
                })
                .collect();
            let differ: Vec<String> = tables
                .iter()
                .filter(|t| t.expected != t.restored)
                .map(|t| {
                    format!(
                        "{}: {} rows restored, the manifest says {}",
                        t.table, t.restored, t.expected
                    )
                })
                .collect();
            let reason = (!report.verified).then(|| {
                if differ.is_empty() {
                    format!("the search found no restored document ({})", report.fts)
                } else {
                    differ.join("; ")
                }
            });
            RehearsalRecord {
                at,
                key: Some(run_key(&report.run, MANIFEST)),
                run: Some(report.run),
                ok: report.verified,
                outcome: if report.verified {
                    RehearsalOutcome::Verified
                } else {
                    RehearsalOutcome::Mismatch
                },
                tables,
                fts: Some(report.fts),
                reason,
            }
        }
        Err(e) => {
            let outcome = match e {
                RestoreError::Refused(_) => RehearsalOutcome::Refused,
                RestoreError::Failed(_) => RehearsalOutcome::Failed,
            };
            let message = e.to_string();
            let run = run_named_in(&message);
            RehearsalRecord {
                at,
                key: run.as_deref().map(|r| run_key(r, MANIFEST)),
                run,
                ok: false,
                outcome,
                tables: Vec::new(),
                fts: None,
                reason: Some(message),
            }
        }
    }
}

/// The run a refusal's message names (`backups/json/<run>/...`), when it names one.
fn run_named_in(message: &str) -> Option<String> {
    let prefix = crate::backup::manifest::JSON_PREFIX;
    let at = message.find(prefix)?;
    let rest = &message[at + prefix.len()..];
    let run: String = rest
        .chars()
        .take_while(|c| *c != '/' && !c.is_whitespace())
        .collect();
    (!run.is_empty()).then_some(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::manifest::DumpRefusal;

    #[test]
    fn a_refusal_is_recorded_with_its_reason_and_the_run_it_names() {
        let record = record_of(
            "2026-03-02T10:00:00.000Z".into(),
            Err(RestoreError::Refused(DumpRefusal::Torn(
                "backups/json/2026-03-02T09-00-00-000Z/documents.json is missing".into(),
            ))),
        );
        assert!(!record.ok);
        assert_eq!(record.outcome, RehearsalOutcome::Refused);
        assert_eq!(record.run.as_deref(), Some("2026-03-02T09-00-00-000Z"));
        assert!(
            record
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("documents.json is missing"))
        );
    }
}
