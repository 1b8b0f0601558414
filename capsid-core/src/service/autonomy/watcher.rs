//! The watcher's pass (reference 10.3): reads the health facts (store probes, backup age,
//! schema, the loop's pauses, the budget, blocked jobs, CI on each roster namespace's default
//! branch), turns them into findings (`autonomy::watcher`), posts each new one as a job in
//! `capsid` through the one enforcement point as the watcher identity (scoped to `jobs.post`,
//! no flags), and fails with `cleared` the job of a finding that cleared while it is still
//! queued. `watcher:open` maps each open finding's fingerprint to its job.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::autonomy::watcher::{
    BlockedJob, BranchRun, CiRed, Finding, WATCHER_NAMESPACE, WatchFacts, findings, red_since,
};
use crate::caller::Caller;
use crate::error::Result;
use crate::improve::budget::{BudgetCaps, MonthSpend, caps_near_limit};
use crate::improve::keys::{BACKUP_LAST_OK_KEY, BUDGET_KEY, paused_key};
use crate::jobs::JobStatus;
use crate::jobs::state::{JobEvent, step};
use crate::ports::{Change, JobFilter, JobPatch, JobTransition, RunQuery};
use crate::repos::{resolve_repo, stored_repos};
use crate::service::jobs::{job_audit, mirror_fn};
use crate::service::{NoConfirmer, Service};
use crate::time::Timestamp;

/// Open findings: fingerprint → the job posted for it.
pub const WATCHER_OPEN_KEY: &str = "watcher:open";
/// The last pass's report (what `improve_status` shows).
pub const WATCHER_LAST_KEY: &str = "watcher:last";

const MAX_NOTES: usize = 20;
const BLOCKED_SCAN: usize = 100;

/// A job the watcher posted or cleared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindingJob {
    /// The finding.
    pub fingerprint: String,
    /// Its job.
    pub job: String,
}

/// What one watcher pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WatcherReport {
    /// When.
    pub at: String,
    /// Every finding of this pass.
    pub findings: Vec<Finding>,
    /// New findings posted as jobs.
    pub posted: Vec<FindingJob>,
    /// Findings that already had their job.
    pub repeated: usize,
    /// Findings that cleared; their job failed with `cleared` when it was still queued.
    pub cleared: Vec<FindingJob>,
    /// What could not be read or posted.
    pub notes: Vec<String>,
}

impl WatcherReport {
    fn note(&mut self, text: impl Into<String>) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text.into().chars().take(300).collect());
        }
    }
}

impl Service {
    /// One watcher pass.
    pub(crate) async fn watcher_tick(&self) -> Result<WatcherReport> {
        let now = self.now();
        let mut report = WatcherReport {
            at: now.to_string(),
            ..WatcherReport::default()
        };
        let facts = self.watch_facts(now, &mut report).await?;
        let found = findings(&facts, now);
        let mut open: BTreeMap<String, String> = self
            .store
            .setting(WATCHER_OPEN_KEY, now)
            .await?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        for finding in &found {
            if open.contains_key(&finding.fingerprint) {
                report.repeated += 1;
                continue;
            }
            let args = json!({"action": "post", "namespace": WATCHER_NAMESPACE,
                              "title": finding.job_title(), "body": finding.job_body()});
            match self
                .call_tool(&Caller::watcher(), "jobs", args, &NoConfirmer)
                .await
            {
                Ok(answer) if answer["ok"] == json!(true) => {
                    let job = answer["job"]["id"].as_str().unwrap_or_default().to_owned();
                    open.insert(finding.fingerprint.clone(), job.clone());
                    report.posted.push(FindingJob {
                        fingerprint: finding.fingerprint.clone(),
                        job,
                    });
                }
                Ok(answer) => report.note(format!(
                    "{}: not posted: {}",
                    finding.fingerprint,
                    answer["refusal"].as_str().unwrap_or("refused")
                )),
                Err(e) => report.note(format!("{}: not posted: {e}", finding.fingerprint)),
            }
        }
        let cleared: Vec<(String, String)> = open
            .iter()
            .filter(|(fp, _)| !found.iter().any(|f| &f.fingerprint == *fp))
            .map(|(fp, job)| (fp.clone(), job.clone()))
            .collect();
        for (fingerprint, job) in cleared {
            self.clear_finding_job(&fingerprint, &job, now).await?;
            open.remove(&fingerprint);
            report.cleared.push(FindingJob { fingerprint, job });
        }
        report.findings = found;
        let open_text = serde_json::to_string(&open).unwrap_or_else(|_| "{}".into());
        self.store
            .put_setting(WATCHER_OPEN_KEY, &open_text, None)
            .await?;
        let last = serde_json::to_string(&report).unwrap_or_else(|_| "{}".into());
        self.store
            .put_setting(WATCHER_LAST_KEY, &last, None)
            .await?;
        Ok(report)
    }

    /// Fails the job of a cleared finding with `cleared`, only while it is still queued (a
    /// job someone claimed is theirs to finish).
    async fn clear_finding_job(&self, fingerprint: &str, id: &str, now: Timestamp) -> Result<()> {
        let Some(job) = self.store.job(id).await? else {
            return Ok(());
        };
        if job.status != JobStatus::Queued {
            return Ok(());
        }
        let step = step(JobStatus::Queued, JobEvent::AdminFail)?;
        let actor = Caller::watcher().actor();
        let t = JobTransition {
            id: job.id.clone(),
            expected: Some(job.clone()),
            step,
            holder: None,
            corrections: None,
            patch: JobPatch {
                result_summary: Change::Set(format!(
                    "cleared: the watcher's finding {fingerprint} no longer holds"
                )),
                ..JobPatch::default()
            },
            at: now,
            audit: job_audit(
                &actor,
                step.audit_action(),
                &job,
                json!({"reason": "cleared", "fingerprint": fingerprint, "from": "queued"}),
                now,
            ),
            outcome: None,
            mirror: mirror_fn(now),
        };
        // A job claimed meanwhile keeps its claim: the keyed update simply does not apply.
        self.store.transition_job(t).await?;
        Ok(())
    }

    async fn watch_facts(&self, now: Timestamp, report: &mut WatcherReport) -> Result<WatchFacts> {
        let store = &self.store;
        let store_problem = match store.ping().await {
            Err(e) => Some(format!("the database does not answer: {e}")),
            Ok(()) => store
                .fts_probe("conventions")
                .await
                .err()
                .map(|e| format!("the full-text probe failed: {e}")),
        };
        let roster = self.roster().await?;
        let mut pauses = Vec::new();
        for ns in roster.namespaces() {
            if let Some(reason) = store.setting(&paused_key(ns), now).await? {
                pauses.push((ns.clone(), reason));
            }
        }
        let caps = BudgetCaps::from_setting(store.setting(BUDGET_KEY, now).await?.as_deref());
        let totals = store
            .run_totals(Some(crate::service::improve::month_start(now)))
            .await?;
        let spend = MonthSpend {
            ci_minutes: totals.iter().map(|t| t.ci_minutes).sum(),
            cost_usd: totals.iter().map(|t| t.cost_usd).sum(),
        };
        let caps_near = caps_near_limit(&caps, &spend)
            .into_iter()
            .map(|field| match field {
                "model_usd_month" => (field, spend.cost_usd, caps.model_usd_cap()),
                _ => (field, spend.ci_minutes, caps.actions_minutes_cap()),
            })
            .collect();
        let blocked = store
            .jobs(
                &JobFilter {
                    namespace: None,
                    status: Some(JobStatus::Blocked),
                },
                BLOCKED_SCAN,
            )
            .await?
            .into_iter()
            .map(|j| BlockedJob {
                since: Some(j.updated_at),
                id: j.id,
                namespace: j.namespace,
            })
            .collect();
        let mut ci_red = Vec::new();
        if let Some(host) = self.repo_host.as_deref() {
            for ns in roster.namespaces() {
                let Some(row) = store.namespace(ns).await? else {
                    continue;
                };
                let Ok(repo) = stored_repos(ns, row.repos.as_deref())
                    .and_then(|list| resolve_repo(ns, &list, None))
                else {
                    continue;
                };
                let branch = match host.repository(&repo).await {
                    Ok(facts) => facts.default_branch,
                    Err(e) => {
                        report.note(format!("{ns}: {repo}: {e}"));
                        continue;
                    }
                };
                let query = RunQuery {
                    branch: Some(branch.clone()),
                    head_sha: None,
                    per_page: 20,
                };
                let runs = match host.recent_workflow_runs(&repo, &query).await {
                    Ok(runs) => runs,
                    Err(e) => {
                        report.note(format!("{ns}: {repo}: workflow runs: {e}"));
                        continue;
                    }
                };
                let runs: Vec<BranchRun<'_>> = runs
                    .iter()
                    .map(|r| BranchRun {
                        status: &r.status,
                        conclusion: r.conclusion.as_deref(),
                        created_at: Timestamp::parse(&r.created_at),
                    })
                    .collect();
                if let Some(since) = red_since(&runs) {
                    ci_red.push(CiRed {
                        namespace: ns.clone(),
                        repo: repo.to_string(),
                        branch,
                        since,
                    });
                }
            }
        }
        Ok(WatchFacts {
            store_problem,
            backup_last_ok: store
                .setting(BACKUP_LAST_OK_KEY, now)
                .await?
                .as_deref()
                .and_then(Timestamp::parse),
            schema: store.schema_version().await?,
            newest_schema: store.newest_migration(),
            pauses,
            caps_near,
            blocked,
            ci_red,
        })
    }
}

/// The last watcher pass as stored (`None` before the first).
pub(crate) fn last_pass(raw: Option<&str>) -> Option<Value> {
    raw.and_then(|s| serde_json::from_str(s).ok())
}
