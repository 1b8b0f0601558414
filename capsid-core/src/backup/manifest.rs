//! Where a dump lives and what its manifest says: run ids, the blob keys of a run
//! (`backups/json/<run>/<table>.json`, `manifest.json`, the sidecars), the manifest's shape,
//! and the checks a restore makes before it touches anything (a manifest present and of a
//! known format, no newer schema, every table file from the same snapshot). What proves the
//! dump's origin (digests, HMAC, the secret's fingerprint) is in [`super::integrity`].

use serde::{Deserialize, Serialize};

use super::tables::{EXPORTED, TableSpec};
use crate::time::Timestamp;

/// Where every JSON dump lives in the media store.
pub const JSON_PREFIX: &str = "backups/json/";
/// Where the markdown mirror lives.
pub const MARKDOWN_PREFIX: &str = "backups/markdown/";
/// Everything the backup credential may read.
pub const BACKUPS_PREFIX: &str = "backups/";
/// Report objects (retention deletes them after 30 days).
pub const REPORTS_PREFIX: &str = "reports/";
/// The manifest's format tag.
pub const FORMAT: &str = "capsid-backup/1";
/// The settings sidecar's file name.
pub const SETTINGS_SIDECAR: &str = "_kv.json";
/// The holdout-manifest sidecar's file name.
pub const HOLDOUT_SIDECAR: &str = "_holdout-manifests.json";
/// The manifest's file name, written last: a run without it did not finish.
pub const MANIFEST: &str = "manifest.json";

/// The run id of a dump taken at `at`: its instant with `:` and `.` as `-`
/// (`2026-03-01T09-00-00-000Z`), so ids sort as time and are safe as key segments.
pub fn run_id(at: Timestamp) -> String {
    at.to_string().replace([':', '.'], "-")
}

/// The calendar date a run id starts with, when it has one.
pub fn run_date(run: &str) -> Option<Timestamp> {
    let date = run.get(..10)?;
    Timestamp::parse(&format!("{date}T00:00:00Z"))
}

/// `backups/json/<run>/<file>`.
pub fn run_key(run: &str, file: &str) -> String {
    format!("{JSON_PREFIX}{run}/{file}")
}

/// `backups/json/<run>/<table>.json`.
pub fn table_key(run: &str, table: &str) -> String {
    run_key(run, &format!("{table}.json"))
}

/// The run a key under [`JSON_PREFIX`] belongs to (its first segment).
pub fn run_of_key(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(JSON_PREFIX)?;
    let (run, file) = rest.split_once('/')?;
    (!run.is_empty() && !file.is_empty()).then_some(run)
}

/// Escapes what could not stand in one key segment (`%` and `/`), so a namespace with a
/// slash never collides with a path.
fn segment(text: &str) -> String {
    text.replace('%', "%25").replace('/', "%2F")
}

/// `backups/markdown/<ns>/<path>`: one document's mirror. Document paths never hold `..` or
/// `//` and never start or end with `/`, so they stay inside their namespace's folder.
pub fn markdown_key(namespace: &str, path: &str) -> String {
    format!("{MARKDOWN_PREFIX}{}/{path}", segment(namespace))
}

/// One table of a manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestTable {
    /// Table name.
    pub table: String,
    /// Rows exported.
    pub rows: u64,
    /// Its blob key.
    pub key: String,
    /// The file's SHA-256 (hex); absent in dumps made before dumps were sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// A dump's manifest (`manifest.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// The run id.
    pub run: String,
    /// The snapshot's instant; every table file carries the same.
    pub exported_at: String,
    /// `sqlite` or `postgres`.
    pub engine: String,
    /// The newest migration of the exporting store, e.g. `0002_oauth`.
    pub schema_version: Option<String>,
    /// Every table, documents first.
    pub tables: Vec<ManifestTable>,
    /// The settings sidecar: allowlisted keys.
    pub settings: ManifestTable,
    /// The holdout-manifest sidecar's key (counts only).
    pub holdout_manifests: Option<String>,
    /// The holdout-manifest sidecar's SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout_manifests_sha256: Option<String>,
    /// The digests' seal: the HMAC over this manifest and the secret's fingerprint; absent
    /// in dumps made before dumps were sealed (or by a server with no signing secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<super::integrity::Integrity>,
}

/// Why a dump cannot be restored. Each names what was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DumpRefusal {
    /// No `manifest.json` where the dump should be.
    #[error(
        "no manifest at {key}: the run did not finish (the manifest is written last) or this is not a dump"
    )]
    MissingManifest {
        /// Where it was looked for.
        key: String,
    },
    /// The manifest does not parse or is of an unknown format.
    #[error("the manifest at {key} is unreadable: {why}")]
    BadManifest {
        /// Its key.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// The dump's schema is newer than the target's.
    #[error(
        "the dump is of schema {dump}, newer than this build's {target}: restore it with a build that knows that schema"
    )]
    NewerSchema {
        /// The dump's schema version.
        dump: String,
        /// The target's.
        target: String,
    },
    /// Tables not from one snapshot, or a table file that does not match its manifest line.
    #[error("torn dump: {0}")]
    Torn(String),
    /// The target store already holds data.
    #[error(
        "the target store is not empty ({found}): restore only into an empty store, so nothing there is overwritten"
    )]
    TargetNotEmpty {
        /// What was found, e.g. `documents: 12 rows`.
        found: String,
    },
    /// No dump at all where one was named.
    #[error("no dump found at {0}")]
    NoDump(String),
    /// A row that does not fit the schema.
    #[error("the dump does not fit this schema: {0}")]
    Unfit(String),
    /// The dump carries no integrity block.
    #[error(
        "the dump {run} carries no digests and no HMAC (a build from before dumps were sealed made it, or a server with no signing secret): nothing proves it is the dump that was taken; restore it only if you trust where it was kept, and say so explicitly"
    )]
    Unsealed {
        /// The run.
        run: String,
    },
    /// The dump carries no seal, but its schema is one every build that wrote it seals: the
    /// seal was removed (or a server without a signing secret made it).
    #[error(
        "the dump {run} carries no seal, but its schema {schema} is one every build that writes it seals (since {sealed_since}): its seal was removed, so its files may have been edited after the dump was made (or a server without a signing secret made it). It is not restored as an old unsealed dump; if every agent and runner setting it brings in is yours, --re-sign lists them and restores it with --confirm-unverified-origin"
    )]
    SealRemoved {
        /// The run.
        run: String,
        /// The schema the manifest names.
        schema: String,
        /// The first schema every dump of which is sealed.
        sealed_since: &'static str,
    },
    /// The dump was made under another signing secret.
    #[error(
        "the dump was made under another signing secret (its secret's fingerprint is {dump}, this store's is {here}): carry the old host's secret over, the file <data-dir>/signing.key or the variable CAPSID_SIGNING_SECRET, and restore again; if the old secret is lost, --re-sign restores it with its queued and blocked jobs re-signed under this store's secret and its policies disabled"
    )]
    ForeignSecret {
        /// The dump's secret fingerprint.
        dump: String,
        /// This store's.
        here: String,
    },
    /// No signing secret here to verify a sealed dump with.
    #[error(
        "the dump is sealed under a signing secret (fingerprint {dump}) and none is configured here: carry the old host's secret over, the file <data-dir>/signing.key or the variable CAPSID_SIGNING_SECRET, and restore again; if the old secret is lost, --re-sign restores it under a new secret"
    )]
    NoSecret {
        /// The dump's secret fingerprint.
        dump: String,
    },
    /// A file, or the manifest, changed after the dump was made.
    #[error("the dump was altered: {key}: {why}")]
    Altered {
        /// The file.
        key: String,
        /// What does not match.
        why: String,
    },
}

/// The leading migration number of a schema version (`0002_oauth` → 2).
pub(crate) fn schema_number(version: &str) -> Option<u32> {
    version.split('_').next()?.parse().ok()
}

/// Refuses a dump whose schema is newer than (or unknown to) the target's. An older dump is
/// accepted: its rows are checked column by column as they are imported.
pub fn check_schema(dump: Option<&str>, target: Option<&str>) -> Result<(), DumpRefusal> {
    let (Some(dump), Some(target)) = (dump, target) else {
        return Ok(());
    };
    let newer = match (schema_number(dump), schema_number(target)) {
        (Some(d), Some(t)) => d > t || (d == t && dump != target),
        _ => dump != target,
    };
    if newer {
        return Err(DumpRefusal::NewerSchema {
            dump: dump.to_owned(),
            target: target.to_owned(),
        });
    }
    Ok(())
}

/// Parses a manifest and checks its shape: the known format, the seventeen tables in the
/// order this build imports them, keys inside the run.
pub fn parse_manifest(key: &str, bytes: &[u8]) -> Result<Manifest, DumpRefusal> {
    let bad = |why: String| DumpRefusal::BadManifest {
        key: key.to_owned(),
        why,
    };
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not a manifest: {e}")))?;
    if manifest.format != FORMAT {
        return Err(bad(format!("format '{}' is not {FORMAT}", manifest.format)));
    }
    if Timestamp::parse(&manifest.exported_at).is_none() {
        return Err(bad(format!(
            "exported_at '{}' is not an instant",
            manifest.exported_at
        )));
    }
    for listed in &manifest.tables {
        if super::tables::exported(&listed.table).is_none() {
            return Err(bad(format!("it names unknown table '{}'", listed.table)));
        }
    }
    for table in &EXPORTED {
        if !manifest.tables.iter().any(|t| t.table == table.name)
            && !super::tables::predates(table.name, manifest.schema_version.as_deref())
        {
            return Err(DumpRefusal::Torn(format!(
                "the manifest lists no table '{}'",
                table.name
            )));
        }
    }
    for listed in manifest.tables.iter().chain([&manifest.settings]) {
        if run_of_key(&listed.key) != Some(manifest.run.as_str()) {
            return Err(bad(format!(
                "table '{}' is kept at {}, outside run {}",
                listed.table, listed.key, manifest.run
            )));
        }
    }
    Ok(manifest)
}

impl Manifest {
    /// The manifest line of `table`.
    pub fn table(&self, table: &TableSpec) -> Option<&ManifestTable> {
        if table.name == super::tables::SETTINGS.name {
            return Some(&self.settings);
        }
        self.tables.iter().find(|t| t.table == table.name)
    }
}

/// Checks a table file's opening against its manifest line: the same table and the same
/// snapshot instant.
pub fn check_file_header(
    manifest: &Manifest,
    listed: &ManifestTable,
    table: Option<&str>,
    exported_at: Option<&str>,
) -> Result<(), DumpRefusal> {
    if table != Some(listed.table.as_str()) {
        return Err(DumpRefusal::Torn(format!(
            "{} names table {:?}, the manifest says '{}'",
            listed.key, table, listed.table
        )));
    }
    if exported_at != Some(manifest.exported_at.as_str()) {
        return Err(DumpRefusal::Torn(format!(
            "{} was exported at {}, the manifest's snapshot at {}: the tables are not from one snapshot",
            listed.key,
            exported_at.unwrap_or("(no instant)"),
            manifest.exported_at
        )));
    }
    Ok(())
}

/// Checks the rows a table file held against its manifest line.
pub fn check_row_count(listed: &ManifestTable, found: u64) -> Result<(), DumpRefusal> {
    if found != listed.rows {
        return Err(DumpRefusal::Torn(format!(
            "{} holds {found} rows, the manifest says {}",
            listed.key, listed.rows
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn manifest() -> Manifest {
        let run = "2026-03-01T09-00-00-000Z".to_owned();
        Manifest {
            format: FORMAT.into(),
            run: run.clone(),
            exported_at: "2026-03-01T09:00:00.000Z".into(),
            engine: "sqlite".into(),
            schema_version: Some("0002_oauth".into()),
            tables: EXPORTED
                .iter()
                .map(|t| ManifestTable {
                    table: t.name.into(),
                    rows: 1,
                    key: table_key(&run, t.name),
                    sha256: None,
                })
                .collect(),
            settings: ManifestTable {
                table: "settings".into(),
                rows: 0,
                key: run_key(&run, SETTINGS_SIDECAR),
                sha256: None,
            },
            holdout_manifests: None,
            holdout_manifests_sha256: None,
            integrity: None,
        }
    }

    #[test]
    fn run_ids_sort_as_time_and_carry_their_date() {
        let a = Timestamp::parse("2026-03-01T09:00:00Z").expect("instant");
        let b = a.plus_millis(1);
        assert_eq!(run_id(a), "2026-03-01T09-00-00-000Z");
        assert!(run_id(a) < run_id(b));
        assert_eq!(
            run_date(&run_id(a)).map(Timestamp::date),
            Some("2026-03-01".into())
        );
        assert_eq!(run_date("garbage"), None);
        assert_eq!(run_of_key("backups/json/r1/documents.json"), Some("r1"));
        assert_eq!(run_of_key("backups/json/r1"), None);
        assert_eq!(run_of_key("backups/markdown/x/y"), None);
    }

    #[test]
    fn markdown_keys_keep_namespaces_apart_from_paths() {
        assert_eq!(markdown_key("ns", "a/b.md"), "backups/markdown/ns/a/b.md");
        assert_ne!(markdown_key("a/b", "c"), markdown_key("a", "b/c"));
    }

    #[test]
    fn manifests_round_trip_and_refuse_what_they_should() {
        let m = manifest();
        let bytes = serde_json::to_vec(&m).expect("render");
        assert_eq!(parse_manifest("k", &bytes).expect("parse"), m);
        let mut other = m.clone();
        other.format = "capsid-backup/9".into();
        let bytes = serde_json::to_vec(&other).expect("render");
        assert!(matches!(
            parse_manifest("k", &bytes),
            Err(DumpRefusal::BadManifest { .. })
        ));
        let mut missing = m.clone();
        missing.tables.retain(|t| t.table != "jobs");
        let bytes = serde_json::to_vec(&missing).expect("render");
        assert!(matches!(
            parse_manifest("k", &bytes),
            Err(DumpRefusal::Torn(_))
        ));
        assert!(parse_manifest("k", b"{not json").is_err());
    }

    #[test]
    fn a_dump_from_before_a_table_existed_may_leave_it_out_and_no_later_one_may() {
        let without = |schema: Option<&str>, table: &str| {
            let mut m = manifest();
            m.schema_version = schema.map(str::to_owned);
            m.tables.retain(|t| t.table != table);
            parse_manifest("k", &serde_json::to_vec(&m).expect("render"))
        };
        assert!(without(Some("0022_job_caps"), "job_calls").is_ok());
        assert!(without(Some("0023_job_calls"), "job_doors").is_ok());
        assert!(without(None, "job_doors").is_ok());
        for (schema, table) in [
            ("0023_job_calls", "job_calls"),
            ("0024_job_doors", "job_doors"),
            ("0002_oauth", "jobs"),
        ] {
            assert!(
                matches!(without(Some(schema), table), Err(DumpRefusal::Torn(ref why)) if why.contains(table)),
                "{schema} without {table}"
            );
        }
    }

    #[test]
    fn schema_versions_compare_by_number() {
        assert!(check_schema(Some("0002_oauth"), Some("0002_oauth")).is_ok());
        assert!(check_schema(Some("0001_init"), Some("0002_oauth")).is_ok());
        assert!(matches!(
            check_schema(Some("0003_more"), Some("0002_oauth")),
            Err(DumpRefusal::NewerSchema { .. })
        ));
        assert!(check_schema(Some("0002_other"), Some("0002_oauth")).is_err());
        assert!(check_schema(None, Some("0002_oauth")).is_ok());
    }

    #[test]
    fn file_headers_and_counts_detect_torn_dumps() {
        let m = manifest();
        let listed = &m.tables[0];
        assert!(check_file_header(&m, listed, Some("documents"), Some(&m.exported_at)).is_ok());
        let torn = check_file_header(
            &m,
            listed,
            Some("documents"),
            Some("2026-03-01T09:00:05.000Z"),
        );
        assert!(matches!(torn, Err(DumpRefusal::Torn(ref why)) if why.contains("one snapshot")));
        assert!(check_file_header(&m, listed, Some("jobs"), Some(&m.exported_at)).is_err());
        assert!(check_row_count(listed, 1).is_ok());
        assert!(check_row_count(listed, 0).is_err());
    }
}
