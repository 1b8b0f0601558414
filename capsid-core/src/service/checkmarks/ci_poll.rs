//! The CI poller: run on the scheduler's leader, it asks the repository host about each
//! pushed entry whose verdict is pending (when its backoff says so) and backfills
//! `ci_status` and `ci_checked_at` on that entry. A namespace with no GitHub mapping, no
//! GitHub App, or a commit GitHub cannot read stays `pending` (its check time recorded).

use serde_json::json;

use crate::checkmarks::CiStatus;
use crate::checkmarks::ci::{AUDIT_CI_RECORDED, CI_POLL_BATCH, ci_check_due, ci_verdict};
use crate::error::Result;
use crate::ports::{AuditEntry, RepoRef};
use crate::repos::{resolve_repo, stored_repos};
use crate::service::Service;

/// What one poll did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CiPollReport {
    /// Entries asked about.
    pub asked: usize,
    /// Entries whose verdict resolved (pass or fail).
    pub resolved: usize,
}

impl Service {
    /// Asks CI about the pending entries that are due and records what it said.
    pub async fn poll_ci(&self) -> Result<CiPollReport> {
        let now = self.now();
        let mut report = CiPollReport::default();
        for entry in self.store.pending_ci(CI_POLL_BATCH).await? {
            let created = entry.created_at;
            let checked = entry.ci_checked_at;
            if !ci_check_due(created, checked, now) {
                continue;
            }
            report.asked += 1;
            let verdict = match self.ci_repo(&entry.namespace).await {
                Some(repo) => match &self.repo_host {
                    Some(host) => match host.check_runs(&repo, &entry.push_sha).await {
                        Ok(runs) => ci_verdict(&runs),
                        // Unreadable: it stays pending and is asked again after its backoff.
                        Err(_) => None,
                    },
                    None => None,
                },
                None => None,
            };
            let status = verdict.unwrap_or(CiStatus::Pending);
            let audit = verdict.map(|v| AuditEntry {
                actor: "improve-loop".into(),
                action: AUDIT_CI_RECORDED.into(),
                namespace: Some(entry.namespace.clone()),
                path: None,
                params: json!({"log_entry_id": entry.id, "push_sha": entry.push_sha, "ci_status": v.as_str()}),
                at: now,
            });
            if self.store.record_ci(entry.id, status, now, audit).await? && verdict.is_some() {
                report.resolved += 1;
            }
        }
        Ok(report)
    }

    /// The namespace's primary GitHub repository, if it maps one.
    async fn ci_repo(&self, namespace: &str) -> Option<RepoRef> {
        let row = self.store.namespace(namespace).await.ok()??;
        let list = stored_repos(namespace, row.repos.as_deref()).ok()?;
        resolve_repo(namespace, &list, None).ok()
    }
}
