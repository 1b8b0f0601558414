//! `search_code` (reference 2.3): a case-insensitive substring grep done here over a recursive
//! tree listing, because GitHub's code search serves nothing for private repositories under
//! an App token. Bounded in files fetched and matches returned, paged by `start`; a blob the
//! scan cannot read is reported, and quota or access exhaustion aborts the whole scan with an
//! error, never an empty result.

use super::RepoCx;
use super::answer::{CodeMatch, SearchAnswer};
use std::collections::BTreeSet;

use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::ports::GitTreeItem;
use crate::service::Confirmer;
use crate::service::repo::args::SearchCodeArgs;
use crate::service::repo::{check_path, check_positive, check_ref, host_error};

/// Default cap on returned matches.
pub const DEFAULT_SCAN_RESULTS: u32 = 20;
/// Default cap on files fetched.
pub const DEFAULT_SCAN_FILES: u32 = 200;
/// Largest value either cap may take (larger values are clamped).
pub const MAX_SCAN_CAP: u32 = 200;
/// Blobs larger than this are not scanned.
pub const SEARCH_BLOB_LIMIT: u64 = 200 * 1024;
/// A tree with more entries than this is refused whole (narrow with `path_prefix`).
pub const SEARCH_TREE_LIMIT: usize = 5000;
/// Longest matching line returned (characters).
const LINE_CHARS: usize = 200;

const EXCLUDED_DIRS: [&str; 3] = ["node_modules/", ".git/", "dist/"];
const EXCLUDED_FILES: [&str; 4] = [
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
];
const EXCLUDED_EXTENSIONS: [&str; 33] = [
    "png", "jpg", "jpeg", "gif", "webp", "ico", "pdf", "zip", "gz", "tgz", "tar", "bz2", "woff",
    "woff2", "ttf", "otf", "eot", "mp4", "mov", "webm", "mp3", "wav", "wasm", "bin", "exe", "dll",
    "so", "dylib", "class", "jar", "pyc", "lockb", "7z",
];

/// Whether a tree item is worth fetching: a blob under the prefix, not vendored, not a
/// lockfile, not binary by extension, not too large.
pub fn is_candidate(item: &GitTreeItem, prefix: &str) -> bool {
    if item.kind != "blob" || !item.path.starts_with(prefix) {
        return false;
    }
    if EXCLUDED_DIRS
        .iter()
        .any(|d| item.path.starts_with(d) || item.path.contains(&format!("/{d}")))
    {
        return false;
    }
    let base = item.path.rsplit('/').next().unwrap_or(&item.path);
    if EXCLUDED_FILES.contains(&base) {
        return false;
    }
    let ext = base
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    if EXCLUDED_EXTENSIONS.contains(&ext.as_str()) {
        return false;
    }
    item.size.is_none_or(|s| s <= SEARCH_BLOB_LIMIT)
}

impl RepoCx<'_> {
    pub(crate) async fn search_code(
        &self,
        caller: &Caller,
        a: SearchCodeArgs,
        client: &dyn Confirmer,
    ) -> Result<SearchAnswer> {
        const TOOL: &str = "search_code";
        let query = a.query.as_str();
        if query.is_empty() {
            return Err(Error::Invalid(format!("{TOOL}: query is empty")));
        }
        check_positive(TOOL, "max_results", a.max_results.map(u64::from))?;
        check_positive(TOOL, "max_files", a.max_files.map(u64::from))?;
        let prefix = a
            .path_prefix
            .as_ref()
            .map(|p| p.as_str().trim_start_matches('/'))
            .unwrap_or_default();
        check_path(
            TOOL,
            "path_prefix",
            Some(prefix.trim_end_matches('/')).filter(|p| !p.is_empty()),
        )?;
        let git_ref = a.git_ref.as_ref().map(|r| r.as_str());
        check_ref(TOOL, "ref", git_ref)?;
        let max_results = a
            .max_results
            .unwrap_or(DEFAULT_SCAN_RESULTS)
            .min(MAX_SCAN_CAP) as usize;
        let max_files = a.max_files.unwrap_or(DEFAULT_SCAN_FILES).min(MAX_SCAN_CAP) as usize;
        let start = a.start.unwrap_or(0) as usize;
        let sel = a.repo.as_ref().map(|r| r.as_str());
        let t = self
            .repo_target(caller, TOOL, a.namespace.as_str(), sel)
            .await?;
        let git_ref = match git_ref {
            Some(r) => r.to_owned(),
            None => self.default_branch(TOOL, &t).await?,
        };
        let full = t.full();
        let tree = t
            .host
            .tree(&t.repo, &git_ref)
            .await
            .map_err(|e| host_error(TOOL, e))?;
        if tree.truncated || tree.items.len() > SEARCH_TREE_LIMIT {
            return Err(Error::Conflict(format!(
                "{TOOL}: {full}@{git_ref} tree is too large to scan whole ({} entries, truncated={}). Narrow it with path_prefix.",
                tree.items.len(),
                tree.truncated
            )));
        }
        let candidates: Vec<&GitTreeItem> = tree
            .items
            .iter()
            .filter(|i| is_candidate(i, prefix))
            .collect();
        let needle = query.to_lowercase();
        let mut items: Vec<CodeMatch> = Vec::new();
        let mut unreadable: Vec<&str> = Vec::new();
        let (mut scanned, mut index, mut stopped_at_file_cap) = (0usize, start, false);
        // Progress counts files read, of at most this many; at most about 100 notifications.
        let to_scan = candidates.len().saturating_sub(start).min(max_files) as u64;
        let step = to_scan.div_ceil(100).max(1);
        while index < candidates.len() {
            if scanned >= max_files {
                // The cap came before candidates[index] was read: resume from here.
                stopped_at_file_cap = true;
                break;
            }
            if client.cancelled() {
                return Err(Error::Cancelled(format!(
                    "{TOOL}: cancelled by the client after {scanned} of {to_scan} files"
                )));
            }
            if (scanned as u64).is_multiple_of(step) {
                client
                    .progress(
                        scanned as u64,
                        Some(to_scan),
                        &format!("searched {scanned} of {to_scan} files of {full}"),
                    )
                    .await;
            }
            scanned += 1;
            let c = candidates[index];
            let bytes = match t.host.blob(&t.repo, &c.sha).await {
                Ok(b) => b,
                Err(e) if e.is_quota_or_access() => {
                    return Err(Error::Unavailable(format!(
                        "{TOOL} aborted at {scanned} of {} candidate files: reading {} failed ({e}). This is NOT an empty result: the scan could not read the repository, so whether {query:?} is present is unknown. Wait for the App's rate-limit window to reset, narrow with path_prefix, or check the App's access to {full}.",
                        candidates.len(),
                        c.path
                    )));
                }
                Err(_) => {
                    unreadable.push(&c.path);
                    index += 1;
                    continue;
                }
            };
            index += 1;
            // Binary that slipped past the extension filter: nothing to match.
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            for (n, line) in text.split('\n').enumerate() {
                if items.len() >= max_results {
                    break;
                }
                if line.to_lowercase().contains(&needle) {
                    let shown: String = line.trim().chars().take(LINE_CHARS).collect();
                    items.push(CodeMatch {
                        path: c.path.clone(),
                        line: n + 1,
                        text: shown,
                    });
                }
            }
            if items.len() >= max_results {
                break;
            }
        }
        client
            .progress(
                scanned as u64,
                Some(to_scan),
                &format!("searched {scanned} of {to_scan} files of {full}"),
            )
            .await;
        let remaining = candidates.len().saturating_sub(index);
        let mut out = SearchAnswer {
            repo: full,
            git_ref,
            query: query.to_owned(),
            candidates: candidates.len(),
            start,
            files_scanned: scanned,
            total_results: items.len(),
            truncated: false,
            items,
            unreadable_files: None,
            unreadable_sample: None,
            next_start: None,
            note: None,
        };
        if !unreadable.is_empty() {
            out.unreadable_files = Some(unreadable.len());
            out.unreadable_sample = Some(
                unreadable
                    .iter()
                    .take(10)
                    .map(|p| (*p).to_owned())
                    .collect(),
            );
        }
        if stopped_at_file_cap && remaining > 0 {
            out.truncated = true;
            out.next_start = Some(index);
            out.note = Some(format!(
                "Stopped at the max_files cap ({max_files}): {remaining} of {} candidate files were not searched, so matches past this point are NOT included. Narrow with path_prefix, or pass start={index} to continue this scan.",
                candidates.len()
            ));
        } else if out.total_results >= max_results && remaining > 0 {
            out.truncated = true;
            out.note = Some(format!(
                "Returned the first {max_results} matches (max_results cap) with files still unsearched; more matches may exist. Raise max_results, or narrow with path_prefix."
            ));
        }
        Ok(out)
    }
}

impl RepoCx<'_> {
    /// Every blob path on the namespace's primary repository's default branch, for the truth
    /// report's doc-vs-code drift check. `None` (the check does not run) when there is no
    /// GitHub App, no mapping, or the tree cannot be read whole; never an empty set.
    pub(crate) async fn primary_repo_paths(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Option<BTreeSet<String>> {
        const TOOL: &str = "lint";
        let t = self.repo_target(caller, TOOL, namespace, None).await.ok()?;
        let git_ref = self.default_branch(TOOL, &t).await.ok()?;
        let tree = t.host.tree(&t.repo, &git_ref).await.ok()?;
        if tree.truncated || tree.items.len() > SEARCH_TREE_LIMIT {
            return None;
        }
        Some(
            tree.items
                .into_iter()
                .filter(|i| i.kind == "blob")
                .map(|i| i.path)
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(path: &str, size: Option<u64>) -> GitTreeItem {
        GitTreeItem {
            path: path.into(),
            kind: "blob".into(),
            sha: "s".into(),
            size,
        }
    }

    #[test]
    fn candidates_skip_vendored_binary_lockfiles_and_large_blobs() {
        assert!(is_candidate(&item("src/a.rs", Some(10)), ""));
        assert!(is_candidate(&item("src/a.rs", None), "src/"));
        assert!(!is_candidate(&item("src/a.rs", Some(10)), "lib/"));
        assert!(!is_candidate(&item("node_modules/x.js", Some(1)), ""));
        assert!(!is_candidate(&item("web/node_modules/x.js", Some(1)), ""));
        assert!(!is_candidate(&item("yarn.lock", Some(1)), ""));
        assert!(!is_candidate(&item("img/logo.PNG", Some(1)), ""));
        assert!(!is_candidate(
            &item("big.txt", Some(SEARCH_BLOB_LIMIT + 1)),
            ""
        ));
        let mut tree = item("src", None);
        tree.kind = "tree".into();
        assert!(!is_candidate(&tree, ""));
    }
}
