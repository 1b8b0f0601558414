//! What every repo tool shares, at the one enforcement point: the namespace's repository
//! mapping is the authorization boundary, the flags a mutation needs come from the core's
//! `repo_write_flags` and are asked at the one check (`Service::call_tool` → `gate_call`), a ref or path is refused before anything is read, and each mutation
//! is audited after GitHub accepted it (an audit failure adds `audit_warning` rather than
//! failing a change that already happened). The tools themselves live in `read.rs`,
//! `search.rs`, `ci.rs`, `write.rs` and `pr.rs`; what they answer, typed, in `answer.rs`.

mod answer;
pub mod args;
mod cache;
mod ci;
mod pr;
mod read;
mod review;
mod search;
mod tools;
mod write;

pub use cache::RepoReadCache;
pub use tools::*;

use crate::service::Area;
use std::sync::Arc;

use serde_json::Value;

use self::answer::Audited;
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::paths::repo_path_problem;
use crate::ports::{RepoHost, RepoHostError, RepoRef};
use crate::repos::{resolve_entry, stored_repos};
use crate::scope::{Need, check_scope};

/// What the repo area's handlers reach: the namespace mapping (the authorization boundary),
/// the audit log (a GitHub mutation cannot join a transaction), the GitHub App and the read
/// cache.
#[derive(Clone, Copy)]
pub struct RepoCx<'a> {
    /// Registered namespaces and their repository mapping.
    pub namespaces: &'a dyn crate::ports::NamespaceStore,
    /// Audit rows of repo mutations.
    pub audit_log: &'a dyn crate::ports::AuditLog,
    /// Review verdicts posted through `manage_pr` (with their audit rows).
    pub reviews: &'a dyn crate::ports::ReviewStore,
    /// The queue: a driven job's pull request names its job, whose holder is its author.
    pub jobs: &'a dyn crate::ports::JobStore,
    /// The GitHub App, when configured.
    pub repo_host: &'a Option<Arc<dyn RepoHost>>,
    /// Recent reads, dropped by writes.
    pub repo_reads: &'a cache::RepoReadCache,
    /// Now.
    pub clock: &'a dyn crate::time::Clock,
}

impl super::Area for RepoCx<'_> {
    fn clock(&self) -> &dyn crate::time::Clock {
        self.clock
    }
}

/// `read_repo_file`'s batch maximum.
pub const REPO_BATCH_MAX_FILES: usize = 20;
/// Each file of a batch read is cut at this many bytes (`truncated: true`).
pub const REPO_FILE_BUDGET: usize = 200 * 1024;
/// A single-file read is cut at this many bytes (`truncated: true` and a note), the body
/// bound's size, so one answer (and one cache entry) stays bounded.
pub const REPO_READ_BUDGET: usize = 1_000_000;
/// `repo_history`'s default and largest commit counts.
pub const REPO_HISTORY_DEFAULT_LIMIT: u32 = 20;
/// See [`REPO_HISTORY_DEFAULT_LIMIT`].
pub const REPO_HISTORY_MAX_LIMIT: u32 = 100;
/// Patch bytes one `repo_history` answer may carry (`patch_truncated` past it).
pub const REPO_PATCH_BUDGET: usize = 200 * 1024;
/// Branch prefix the improve loop owns.
pub const IMPROVE_BRANCH_PREFIX: &str = "improve/";
/// How long a read tool's answer is served from the cache (writes invalidate it).
pub const READ_CACHE_TTL_MS: i64 = 60_000;

/// Why a git ref (branch, tag, sha) argument is refused, after `git check-ref-format`.
pub fn git_ref_problem(value: &str) -> Option<&'static str> {
    if value.trim().is_empty() {
        Some("is empty")
    } else if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        Some("must not contain whitespace or control characters")
    } else if value.contains("..") || value.contains("//") || value.contains("@{") {
        Some("must not contain '..', '//' or '@{'")
    } else if value.starts_with('/') || value.ends_with('/') || value.starts_with('-') {
        Some("must not start with '/' or '-', or end with '/'")
    } else if value.ends_with('.') || value.ends_with(".lock") {
        Some("must not end with '.' or '.lock'")
    } else if value
        .chars()
        .any(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        Some("must not contain any of ~ ^ : ? * [ \\")
    } else if value.split('/').any(|seg| seg.starts_with('.')) {
        Some("must not have a component starting with '.'")
    } else {
        None
    }
}

/// Refuses a bad ref argument, naming the tool and the field.
pub(crate) fn check_ref(tool: &str, field: &str, value: Option<&str>) -> Result<()> {
    match value.and_then(|v| git_ref_problem(v).map(|p| (v, p))) {
        Some((v, problem)) => Err(Error::Invalid(format!("{tool}: {field} {v:?} {problem}"))),
        None => Ok(()),
    }
}

/// Refuses a bad repository path argument, naming the tool and the field.
pub(crate) fn check_path(tool: &str, field: &str, value: Option<&str>) -> Result<()> {
    match value.and_then(|v| repo_path_problem(v).map(|p| (v, p))) {
        Some((v, problem)) => Err(Error::Invalid(format!("{tool}: {field} {v:?}: {problem}"))),
        None => Ok(()),
    }
}

/// Refuses a zero where the reference asks for a positive integer.
pub(crate) fn check_positive(tool: &str, field: &str, value: Option<u64>) -> Result<()> {
    if value == Some(0) {
        return Err(Error::Invalid(format!(
            "{tool}: {field} must be a positive integer"
        )));
    }
    Ok(())
}

/// A GitHub failure as the tool's error, prefixed with the tool's name.
pub(crate) fn host_error(tool: &str, e: RepoHostError) -> Error {
    match Error::from(e) {
        Error::NotFound(m) => Error::NotFound(format!("{tool}: {m}")),
        Error::Forbidden(m) => Error::Forbidden(format!("{tool}: {m}")),
        Error::Conflict(m) => Error::Conflict(format!("{tool}: {m}")),
        Error::Unavailable(m) => Error::Unavailable(format!("{tool}: {m}")),
        other => other,
    }
}

/// The repos axis for a repository resolved without a selector: allowed when the caller could
/// have named it, by its label or by its `owner/name`; refused naming the `owner/name`.
pub(crate) fn resolved_repo_allowed(
    caller: &Caller,
    tool: &str,
    label: &str,
    full: &str,
) -> Result<()> {
    let ask = |repo: &str| {
        check_scope(
            &caller.scopes,
            &Need {
                tool,
                repo: Some(repo),
                ..Need::default()
            },
        )
    };
    match ask(label) {
        Ok(()) => Ok(()),
        Err(_) => ask(full).map_err(Error::Denied),
    }
}

/// `e` with `note` added to its message (same kind of error).
pub(crate) fn amend(e: Error, note: &str) -> Error {
    match e {
        Error::NotFound(m) => Error::NotFound(format!("{m} {note}")),
        Error::Forbidden(m) => Error::Forbidden(format!("{m} {note}")),
        Error::Conflict(m) => Error::Conflict(format!("{m} {note}")),
        Error::Unavailable(m) => Error::Unavailable(format!("{m} {note}")),
        Error::Invalid(m) => Error::Invalid(format!("{m} {note}")),
        Error::Internal(m) => Error::Internal(format!("{m} {note}")),
        other => other,
    }
}

/// `answer` as the JSON an audit row keeps (a change already made is audited even if its
/// answer could not render, saying so).
pub(crate) fn rendered<T: serde::Serialize>(answer: &T) -> Value {
    serde_json::to_value(answer)
        .unwrap_or_else(|e| Value::String(format!("the result could not be rendered: {e}")))
}

/// The repository a call targets, and the host that reaches it.
pub(crate) struct Target {
    /// The mapped repository.
    pub repo: RepoRef,
    /// The GitHub App.
    pub host: Arc<dyn RepoHost>,
}

impl Target {
    /// `owner/name`.
    pub fn full(&self) -> String {
        self.repo.to_string()
    }
}

impl RepoCx<'_> {
    /// Resolves the namespace's mapped repository (the authorization boundary) and the
    /// GitHub App; without one, says what to configure. A selector was checked against the
    /// caller's repos axis at the one check; without one, the repository it resolves to is
    /// asked of the same check here, under its label or its `owner/name` (either of which the
    /// caller could have passed), so omitting `repo` never widens a narrowed caller.
    pub(crate) async fn repo_target(
        &self,
        caller: &Caller,
        tool: &str,
        namespace: &str,
        selector: Option<&str>,
    ) -> Result<Target> {
        let row =
            self.namespaces.namespace(namespace).await?.ok_or_else(|| {
                Error::NotFound(crate::docs::mutations::unknown_namespace(namespace))
            })?;
        let list = stored_repos(namespace, row.repos.as_deref()).map_err(Error::Internal)?;
        let entry = resolve_entry(namespace, &list, selector).map_err(Error::Forbidden)?;
        if selector.is_none_or(|s| s.trim().is_empty()) {
            resolved_repo_allowed(caller, tool, &entry.label, &entry.repo)?;
        }
        let repo = RepoRef::parse(&entry.repo).ok_or_else(|| {
            Error::Internal(format!("mapped repo {:?} is not owner/name", entry.repo))
        })?;
        match &self.repo_host {
            Some(host) => Ok(Target {
                repo,
                host: host.clone(),
            }),
            None => Err(Error::Unavailable(format!(
                "GitHub App not configured: {tool} on {repo} needs CAPSID_GITHUB_APP_CLIENT_ID and CAPSID_GITHUB_APP_PRIVATE_KEY"
            ))),
        }
    }

    /// The default branch of `t`.
    pub(crate) async fn default_branch(&self, tool: &str, t: &Target) -> Result<String> {
        let facts = t
            .host
            .repository(&t.repo)
            .await
            .map_err(|e| host_error(tool, e))?;
        Ok(facts.default_branch)
    }

    /// A read answer from the cache, when fresh.
    pub(crate) fn cached_read<T: Clone + 'static>(&self, repo: &RepoRef, key: &str) -> Option<T> {
        self.repo_reads.get(repo, key, self.now())
    }

    /// Keeps a read answer for [`READ_CACHE_TTL_MS`].
    pub(crate) fn keep_read<T: serde::Serialize + Clone + Send + Sync + 'static>(
        &self,
        repo: &RepoRef,
        key: &str,
        value: &T,
    ) {
        self.repo_reads.put(
            repo,
            key,
            value.clone(),
            self.now().plus_millis(READ_CACHE_TTL_MS),
        );
    }

    /// Records a repo mutation that GitHub already accepted: every cached read of the
    /// repository is dropped, then the audit row (params = the whole result) is appended on
    /// its own. When that append fails, the result says so and tells the caller not to
    /// retry, since the change is made.
    pub(crate) async fn record_repo_mutation<T: Audited>(
        &self,
        caller: &Caller,
        tool: &str,
        namespace: &str,
        path: Option<&str>,
        repo: &RepoRef,
        mut result: T,
    ) -> Result<T> {
        self.repo_reads.invalidate(repo);
        let entry = self.audit(caller, tool, Some(namespace), path, rendered(&result));
        if let Err(e) = self.audit_log.append_audit(entry).await {
            result.warn(format!(
                "THE {tool} SUCCEEDED and is described by this result, but the audit_log row could not be written: {e}. Do not retry this call; the change is already made."
            ));
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_follow_check_ref_format() {
        for ok in ["main", "feature/x-1", "v1.2.3", "a1b2c3d", "capsid/write-x"] {
            assert_eq!(git_ref_problem(ok), None, "{ok}");
        }
        for bad in [
            "", " ", "a b", "a..b", "/a", "a/", "-x", "a.lock", "a~1", "a^", "a:b", "a?", "a*",
            "a[", "a\\b", "a//b", "x@{1}", ".hidden", "a/.b", "a.", "tab\t",
        ] {
            assert!(git_ref_problem(bad).is_some(), "{bad:?}");
        }
        let err = check_ref("create_branch", "branch", Some("a..b")).unwrap_err();
        assert!(err.to_string().contains("create_branch: branch"), "{err}");
    }
}
