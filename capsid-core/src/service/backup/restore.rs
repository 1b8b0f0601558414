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
use crate::autonomy::policy::{POLICY_NAMESPACE, disabled};
use crate::backup::PAGE_ROWS;
use crate::backup::integrity::{Provenance, RestoreOptions, check_digest, check_provenance};
use crate::backup::manifest::{
    DumpRefusal, JSON_PREFIX, MANIFEST, Manifest, check_file_header, check_row_count, check_schema,
    parse_manifest, run_key, run_of_key,
};
use crate::backup::rows::{Cell, Row};
use crate::backup::summary::Progress;
use crate::backup::tables::{EXPORTED, SETTINGS, TableSpec};
use crate::caller::Caller;
use crate::jobs::signature::{seal_task, split_signed};
use crate::ports::{
    AuditEntry, BlobError, BlobStore, DocumentWrite, RowSource, TransferError, WriteGuard,
};

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
    /// What a restore under a lost secret re-signed, disabled and brought in (`--re-sign`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub re_signed: Option<ReSigned>,
}

/// What re-signing a dump's queue under this store's secret does (or, before it is
/// confirmed, would do), and what the dump brings in that nothing proves the origin of.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReSigned {
    /// The queued and blocked jobs, re-signed under this store's secret.
    pub jobs: Vec<ReSignedJob>,
    /// The signed policy documents (namespace `capsid`), restored disabled and unsigned.
    pub policies: Vec<String>,
    /// The agents the dump brings in: `name (kind)`, `, revoked` when revoked.
    pub agents: Vec<String>,
    /// The namespaces whose runner settings the dump brings in: `namespace: settings`.
    pub runners: Vec<String>,
}

/// One re-signed job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReSignedJob {
    /// Its id.
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// `queued` or `blocked`.
    pub status: String,
}

impl ReSigned {
    /// Notes what `row` of `table` brings in; with `reseal`, a queued or blocked job's body is
    /// sealed again under that secret (its old signature cannot be checked any more).
    fn observe(&mut self, table: &TableSpec, row: &mut Row, reseal: Option<&str>) {
        let column = |name: &str| table.columns.iter().position(|c| c.name == name);
        let text = |row: &Row, name: &str| -> Option<String> {
            match column(name).and_then(|i| row.get(i)) {
                Some(Cell::Text(s)) => Some(s.clone()),
                _ => None,
            }
        };
        match table.name {
            "jobs" => {
                let status = text(row, "status").unwrap_or_default();
                if status != "queued" && status != "blocked" {
                    return;
                }
                self.jobs.push(ReSignedJob {
                    id: text(row, "id").unwrap_or_default(),
                    namespace: text(row, "namespace").unwrap_or_default(),
                    status,
                });
                if let (Some(secret), Some(at), Some(body)) =
                    (reseal, column("body"), text(row, "body"))
                {
                    row[at] = Cell::Text(seal_task(secret, &body));
                }
            }
            "agents" => {
                let revoked = text(row, "revoked_at").is_some_and(|r| !r.is_empty());
                self.agents.push(format!(
                    "{} ({}){}",
                    text(row, "name").unwrap_or_default(),
                    text(row, "kind").unwrap_or_default(),
                    if revoked { ", revoked" } else { "" }
                ));
            }
            "namespaces" => {
                if let Some(runner) = text(row, "runner").filter(|r| !r.trim().is_empty()) {
                    self.runners.push(format!(
                        "{}: {runner}",
                        text(row, "namespace").unwrap_or_default()
                    ));
                }
            }
            "documents" => {
                let path = text(row, "path").unwrap_or_default();
                if text(row, "namespace").as_deref() == Some(POLICY_NAMESPACE)
                    && path.starts_with("policy/")
                    && text(row, "body").is_some_and(|b| split_signed(&b).is_ok())
                {
                    self.policies.push(path);
                }
            }
            _ => {}
        }
    }
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
        if provenance != Provenance::Unverified {
            verify_digests(source, &manifest, progress).await?;
        }
        let reseal = match provenance {
            Provenance::ReSigned => self.config.signing_secret().map(str::to_owned),
            _ => None,
        };
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
        // A table added after the dump's build is not in it: it stays empty.
        let order: Vec<&'static TableSpec> = order
            .into_iter()
            .filter(|t| manifest.table(t).is_some())
            .collect();
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
            re_signed: reseal.as_ref().map(|_| ReSigned::default()),
            reseal: reseal.as_deref(),
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
        let re_signed = source_rows.re_signed.take();
        progress.step("verifying");
        let mut report = self.verify_restore(&manifest, provenance, progress).await?;
        if let Some(re_signed) = re_signed {
            progress.step("recording the re-signed jobs, disabling the policies");
            self.after_re_sign(&re_signed, options).await?;
            report.re_signed = Some(re_signed);
        }
        Ok(report)
    }

    /// After a re-signing restore: one audit row per re-signed job, and every signed policy
    /// written back unsigned and disabled (audited), so it authorizes nothing until the admin
    /// signs it again.
    async fn after_re_sign(
        &self,
        re_signed: &ReSigned,
        options: &RestoreOptions,
    ) -> Result<(), RestoreError> {
        let caller = Caller::cli(options.operator.as_deref().unwrap_or("restore"));
        let now = self.clock.now();
        let audit = |action: &str, namespace: &str, path: Option<&str>, params| AuditEntry {
            actor: caller.actor(),
            action: action.to_owned(),
            namespace: Some(namespace.to_owned()),
            path: path.map(str::to_owned),
            params,
            at: now,
        };
        for job in &re_signed.jobs {
            self.store
                .append_audit(audit(
                    "job.resigned",
                    &job.namespace,
                    None,
                    serde_json::json!({"job_id": job.id, "status": job.status,
                        "why": "restored under a new signing secret (--re-sign): the old secret is lost"}),
                ))
                .await
                .map_err(failed)?;
        }
        for path in &re_signed.policies {
            let Some(doc) = self
                .store
                .document(POLICY_NAMESPACE, path)
                .await
                .map_err(failed)?
            else {
                continue;
            };
            let stored = doc.body_text().to_owned();
            let unsigned = split_signed(&stored).map_or(stored.as_str(), |p| p.body);
            let write = DocumentWrite {
                namespace: POLICY_NAMESPACE.into(),
                path: path.clone(),
                title: doc.title.clone(),
                body: Some(disabled(unsigned)),
                doc_type: None,
                status: None,
                tags: None,
                links: None,
                at: now,
            };
            let entry = audit(
                "policy.unsigned_on_restore",
                POLICY_NAMESPACE,
                Some(path),
                serde_json::json!({"why": "restored under a new signing secret (--re-sign): disabled and unsigned until the admin signs it again"}),
            );
            self.store
                .write_document(
                    write,
                    WriteGuard::Update {
                        expected_body: Some(stored.clone()),
                    },
                    vec![entry],
                )
                .await
                .map_err(failed)?;
        }
        Ok(())
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
            re_signed: None,
        };
        Ok(report)
    }
}

/// The checks a restore makes of a dump's manifest and provenance before it writes anything,
/// without a store: a caller that would create the target first (a new SQLite file, a
/// migrated database) runs these before creating it, so a refused dump leaves nothing behind.
pub async fn check_dump_provenance(
    source: &dyn BlobStore,
    run: Option<&str>,
    secret: Option<&str>,
    options: &RestoreOptions,
) -> Result<Provenance, RestoreError> {
    let run = resolve_run(source, run).await?;
    let manifest = read_manifest(source, &run).await?;
    Ok(check_provenance(
        &run_key(&run, MANIFEST),
        &manifest,
        secret,
        options,
    )?)
}

/// What a restore under a lost secret would re-sign, disable and bring in, read from the
/// dump without writing anything (for the operator to confirm).
pub async fn re_sign_plan(
    source: &dyn BlobStore,
    run: Option<&str>,
) -> Result<(String, ReSigned), RestoreError> {
    let run = resolve_run(source, run).await?;
    let manifest = read_manifest(source, &run).await?;
    let mut plan = ReSigned::default();
    for table in import_order() {
        if !matches!(table.name, "jobs" | "agents" | "namespaces" | "documents") {
            continue;
        }
        let listed = manifest
            .table(table)
            .ok_or_else(|| DumpRefusal::Torn(format!("the manifest lists no {}", table.name)))?;
        let mut file = match TableFile::open(source, &listed.key, table).await {
            Ok(file) => file,
            Err(BlobError::NotFound(_)) => {
                return Err(DumpRefusal::Torn(format!("{} is missing", listed.key)).into());
            }
            Err(e) => return Err(failed(e)),
        };
        while let Some(mut rows) = file
            .next_page(PAGE_ROWS)
            .await
            .map_err(|e| DumpRefusal::Unfit(format!("{}: {e}", listed.key)))?
        {
            for row in &mut rows {
                plan.observe(table, row, None);
            }
        }
    }
    Ok((run, plan))
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
    /// What re-signing did, when the restore re-signs (`reseal` is the secret it signs with).
    re_signed: Option<ReSigned>,
    reseal: Option<&'a str>,
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
        let mut page = page;
        if let (Some(rows), Some(re_signed)) = (page.as_mut(), self.re_signed.as_mut()) {
            let table = self.order[self.next - 1];
            for row in rows.iter_mut() {
                re_signed.observe(table, row, self.reseal);
            }
        }
        if let Some(rows) = &page {
            self.progress.rows_done(rows.len() as u64);
        }
        Ok(page)
    }
}
