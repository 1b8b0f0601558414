//! The off-site puller's rules (`capsid backup pull`): which keys of a backup credential's
//! answer it may write (only a dump's files, never a path that climbs out of the destination),
//! and the digest each file must have (the manifest's; the manifest itself last, compared
//! whole). The CLI carries the bytes.

use std::collections::BTreeMap;

use super::manifest::{JSON_PREFIX, MANIFEST, Manifest, run_key, run_of_key};

/// Why a credential's object list cannot be pulled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PullRefusal {
    /// A key outside `backups/json/<run>/`, or one that climbs (`..`), is absolute or empty.
    #[error(
        "the server listed {0:?}, which is not a file of a dump under {JSON_PREFIX}: nothing pulled"
    )]
    UnsafeKey(String),
    /// The list has files of another run than the newest one it names.
    #[error("the server listed {key:?}, which is not of run {run}: nothing pulled")]
    OtherRun {
        /// The key.
        key: String,
        /// The run the credential named.
        run: String,
    },
    /// The list has no manifest.
    #[error("the server listed no {MANIFEST} for run {0}: nothing pulled")]
    NoManifest(String),
}

/// Whether `key` is a file of one dump: `backups/json/<run>/<file>`, every segment a plain
/// name (no `.`, `..` or empty segment, no backslash), so it cannot name a place outside the
/// destination it is joined to.
pub fn is_dump_file_key(key: &str) -> bool {
    let Some(rest) = key.strip_prefix(JSON_PREFIX) else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    segments.len() == 2
        && segments.iter().all(|s| {
            !s.is_empty() && *s != "." && *s != ".." && !s.contains('\\') && !s.contains('\0')
        })
}

/// The files of `run` in pull order (the manifest last, so a destination holding a manifest
/// holds the whole run), each checked by [`is_dump_file_key`].
pub fn pull_order(run: &str, keys: &[String]) -> Result<Vec<String>, PullRefusal> {
    let manifest = run_key(run, MANIFEST);
    let mut files = Vec::with_capacity(keys.len());
    for key in keys {
        if !is_dump_file_key(key) {
            return Err(PullRefusal::UnsafeKey(key.clone()));
        }
        if run_of_key(key) != Some(run) {
            return Err(PullRefusal::OtherRun {
                key: key.clone(),
                run: run.to_owned(),
            });
        }
        if *key != manifest {
            files.push(key.clone());
        }
    }
    if !keys.contains(&manifest) {
        return Err(PullRefusal::NoManifest(run.to_owned()));
    }
    files.sort();
    files.dedup();
    files.push(manifest);
    Ok(files)
}

/// The SHA-256 the manifest lists for each of its files (tables, the settings sidecar, the
/// holdout sidecar), by key; `None` for a file of an unsealed dump.
pub fn listed_digests(manifest: &Manifest) -> BTreeMap<String, Option<String>> {
    let mut digests: BTreeMap<String, Option<String>> = manifest
        .tables
        .iter()
        .chain([&manifest.settings])
        .map(|t| (t.key.clone(), t.sha256.clone()))
        .collect();
    if let Some(key) = &manifest.holdout_manifests {
        digests.insert(key.clone(), manifest.holdout_manifests_sha256.clone());
    }
    digests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_dump_file_key_may_be_written() {
        assert!(is_dump_file_key("backups/json/r1/documents.json"));
        assert!(is_dump_file_key("backups/json/r1/manifest.json"));
        for bad in [
            "backups/json/r1/../../etc/passwd",
            "backups/json/../x/y",
            "backups/json/r1/",
            "backups/json//x",
            "backups/json/r1/sub/x.json",
            "backups/markdown/ns/a.md",
            "/backups/json/r1/x",
            "backups/json/r1/a\\b",
            "backups/json/./x",
        ] {
            assert!(!is_dump_file_key(bad), "{bad}");
        }
    }

    #[test]
    fn the_manifest_comes_last_and_a_stray_key_refuses_the_whole_pull() {
        let keys = |ks: &[&str]| ks.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>();
        let order = pull_order(
            "r1",
            &keys(&[
                "backups/json/r1/manifest.json",
                "backups/json/r1/documents.json",
                "backups/json/r1/_kv.json",
            ]),
        )
        .expect("an order");
        assert_eq!(
            order,
            keys(&[
                "backups/json/r1/_kv.json",
                "backups/json/r1/documents.json",
                "backups/json/r1/manifest.json"
            ])
        );
        assert!(matches!(
            pull_order(
                "r1",
                &keys(&["backups/json/r1/../../x", "backups/json/r1/manifest.json"])
            ),
            Err(PullRefusal::UnsafeKey(_))
        ));
        assert!(matches!(
            pull_order(
                "r1",
                &keys(&["backups/json/r0/a.json", "backups/json/r1/manifest.json"])
            ),
            Err(PullRefusal::OtherRun { .. })
        ));
        assert_eq!(
            pull_order("r1", &keys(&["backups/json/r1/a.json"])),
            Err(PullRefusal::NoManifest("r1".into()))
        );
    }
}
