//! The auto-merge tick (reference 7.3): for each namespace the signed, enabled policy names,
//! the primary repository's open pull requests are read through `RepoHost`, the facts
//! gathered, the seven checks evaluated in order, a passing PR merged with `merge` and a
//! failing one left open. One audit row per decision, not per tick: a PR whose head and
//! verdict are what `improve:awaiting-seat` already records is not audited again, and a merge
//! GitHub refused at a head is not retried there. The audit rows, the awaiting-seat list
//! (rewritten whole) and the tick's summary commit in one transaction.

use serde::Serialize;
use serde_json::{Value, json};

use super::{AutonomyCx, LOOP_ACTOR, PolicyState};
use crate::autonomy::auto_merge::audit::{
    AwaitingSeat, MERGE_REFUSED, PrRef, awaiting_from_setting, declined_params, merged_params,
};
use crate::autonomy::auto_merge::{
    CheckRun, DriverAgent, MERGE_METHOD, MergeVerdict, PrFacts, agent_name_of, evaluate_pr,
    job_id_from_body,
};
use crate::autonomy::policy::AutoMergePolicy;
use crate::error::Result;
use crate::improve::keys::AWAITING_SEAT_KEY;
use crate::ports::{AuditEntry, Expect, RepoHost, RepoRef, SettingChange};
use crate::repos::{resolve_repo, stored_repos};
use crate::service::Area;
use crate::time::Timestamp;

/// The settings key holding the last auto-merge tick's summary (what `improve_status` shows).
pub const LAST_TICK_KEY: &str = "autonomy:last-tick";

/// The most notes one tick keeps (each bounded too).
const MAX_NOTES: usize = 20;
const NOTE_CHARS: usize = 300;

/// What one auto-merge tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AutoMergeReport {
    /// When it ran.
    pub at: String,
    /// The policy as loaded.
    pub policy: PolicyState,
    /// Open pull requests evaluated.
    pub evaluated: usize,
    /// Merged this tick.
    pub merged: usize,
    /// Declined this tick (a new decision).
    pub declined: usize,
    /// Already decided at their head with the same verdict: not audited again.
    pub unchanged: usize,
    /// What could not be read, and why the policy did nothing when it did not.
    pub notes: Vec<String>,
}

impl AutoMergeReport {
    fn note(&mut self, text: impl Into<String>) {
        if self.notes.len() < MAX_NOTES {
            self.notes
                .push(text.into().chars().take(NOTE_CHARS).collect());
        }
    }
}

/// One tick's decisions, gathered before they are written.
struct Decisions {
    audits: Vec<AuditEntry>,
    awaiting: Vec<AwaitingSeat>,
}

impl AutonomyCx<'_> {
    /// Runs one auto-merge pass.
    pub(crate) async fn auto_merge_tick(&self) -> Result<AutoMergeReport> {
        let now = self.now();
        let (policy_state, policy) = self.auto_merge_policy().await?;
        let mut report = AutoMergeReport {
            at: now.to_string(),
            policy: policy_state,
            ..AutoMergeReport::default()
        };
        let previous_raw = self.settings.setting(AWAITING_SEAT_KEY, now).await?;
        let previous = awaiting_from_setting(previous_raw.as_deref());
        let mut decisions = Decisions {
            audits: Vec::new(),
            awaiting: Vec::new(),
        };
        match (&policy, self.repo_host.as_deref()) {
            (None, _) => {
                if let Some(note) = report.policy.note.clone() {
                    report.note(note);
                }
            }
            (Some(_), None) => report.note("GitHub App not configured: no pull request was read"),
            (Some(policy), Some(host)) => {
                for ns in &policy.namespaces {
                    self.namespace_pass(
                        host,
                        policy,
                        ns,
                        &previous,
                        now,
                        &mut report,
                        &mut decisions,
                    )
                    .await?;
                }
            }
        }
        let awaiting = serde_json::to_string(&decisions.awaiting).unwrap_or_else(|_| "[]".into());
        let summary = serde_json::to_string(&report).unwrap_or_else(|_| "{}".into());
        let changes = [
            SettingChange {
                key: AWAITING_SEAT_KEY.to_owned(),
                expected: Expect::Value(previous_raw),
                value: Some(awaiting),
                expires_at: None,
            },
            SettingChange::put(LAST_TICK_KEY, summary),
        ];
        if !self
            .settings
            .change_settings_audited(&changes, &decisions.audits, now)
            .await?
        {
            // Another pass rewrote the list meanwhile: its list stands, but what this pass did
            // on GitHub is still recorded.
            report.note(
                "improve:awaiting-seat changed during this pass; the other pass's list stands",
            );
            self.settings
                .change_settings_audited(&[], &decisions.audits, now)
                .await?;
        }
        Ok(report)
    }

    #[allow(clippy::too_many_arguments)]
    async fn namespace_pass(
        &self,
        host: &dyn RepoHost,
        policy: &AutoMergePolicy,
        ns: &str,
        previous: &[AwaitingSeat],
        now: Timestamp,
        report: &mut AutoMergeReport,
        decisions: &mut Decisions,
    ) -> Result<()> {
        let Some(row) = self.namespaces.namespace(ns).await? else {
            report.note(format!("{ns}: not a registered namespace"));
            return Ok(());
        };
        let repo = match stored_repos(ns, row.repos.as_deref())
            .and_then(|list| resolve_repo(ns, &list, None))
        {
            Ok(repo) => repo,
            Err(e) => {
                report.note(format!("{ns}: {e}"));
                return Ok(());
            }
        };
        let default_branch = match host.repository(&repo).await {
            Ok(facts) => facts.default_branch,
            Err(e) => {
                report.note(format!("{ns}: {repo}: {e}"));
                // Keep the seat's entries of a repository that could not be read.
                decisions.awaiting.extend(
                    previous
                        .iter()
                        .filter(|p| p.namespace == ns && p.repo == repo.to_string())
                        .cloned(),
                );
                return Ok(());
            }
        };
        let pulls = match host.open_pull_requests(&repo, None).await {
            Ok(pulls) => pulls,
            Err(e) => {
                report.note(format!("{ns}: {repo}: open pull requests: {e}"));
                decisions.awaiting.extend(
                    previous
                        .iter()
                        .filter(|p| p.namespace == ns && p.repo == repo.to_string())
                        .cloned(),
                );
                return Ok(());
            }
        };
        for pull in pulls {
            let facts = match self
                .gather(host, &repo, ns, pull.number, &default_branch)
                .await?
            {
                Ok(facts) => facts,
                Err(e) => {
                    report.note(format!("{ns}: {repo}#{}: {e}", pull.number));
                    continue;
                }
            };
            report.evaluated += 1;
            let repo_name = repo.to_string();
            let pr = PrRef {
                namespace: ns,
                repo: &repo_name,
                number: pull.number,
            };
            let verdict = evaluate_pr(&facts);
            let declined = match &verdict {
                MergeVerdict::Declined { failed, why, .. } => Some((failed.name(), why.as_str())),
                MergeVerdict::Merge { .. } => None,
            };
            if let Some(prior) = previous
                .iter()
                .find(|p| p.repo == repo_name && p.number == pull.number)
                .filter(|p| p.decided(&facts.head_sha, declined))
            {
                report.unchanged += 1;
                decisions.awaiting.push(prior.clone());
                continue;
            }
            let (failed, why, passed) = match verdict {
                MergeVerdict::Declined {
                    failed,
                    why,
                    passed,
                } => (failed.name().to_owned(), why, passed),
                MergeVerdict::Merge { passed } => {
                    match host
                        .merge_pull(&repo, pull.number, MERGE_METHOD, Some(&facts.head_sha))
                        .await
                    {
                        Ok(out) if out.merged => {
                            report.merged += 1;
                            let params = merged_params(
                                &policy.version,
                                pr,
                                &facts,
                                &passed,
                                Some(&out.sha),
                                now,
                            );
                            decisions
                                .audits
                                .push(self.row("auto-merged", ns, pull.number, params));
                            continue;
                        }
                        Ok(out) => (
                            MERGE_REFUSED.to_owned(),
                            format!("GitHub did not merge it: {}", out.message),
                            passed,
                        ),
                        Err(e) => (
                            MERGE_REFUSED.to_owned(),
                            format!("GitHub refused the merge: {e}"),
                            passed,
                        ),
                    }
                }
            };
            let why: String = why.chars().take(NOTE_CHARS * 2).collect();
            report.declined += 1;
            let params = declined_params(&policy.version, pr, &facts, &failed, &why, &passed, now);
            decisions
                .audits
                .push(self.row("auto-merge-declined", ns, pull.number, params));
            decisions
                .awaiting
                .push(AwaitingSeat::new(pr, &facts.head_sha, &failed, &why, now));
        }
        Ok(())
    }

    fn row(&self, action: &str, ns: &str, number: u64, params: Value) -> AuditEntry {
        AuditEntry {
            actor: LOOP_ACTOR.to_owned(),
            action: action.to_owned(),
            namespace: Some(ns.to_owned()),
            path: Some(format!("pulls/{number}")),
            params,
            at: self.now(),
        }
    }

    /// The facts of one open pull request: its body, base and head; the job its body names
    /// and that job's holder in this namespace; the holder's agent row; its changed files
    /// and the check runs on its head (each `None` when unreadable, which never passes).
    async fn gather(
        &self,
        host: &dyn RepoHost,
        repo: &RepoRef,
        ns: &str,
        number: u64,
        default_branch: &str,
    ) -> Result<std::result::Result<PrFacts, String>> {
        let pull = match host.pull_request(repo, number).await {
            Ok(p) => p,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let job_claimed_by = match job_id_from_body(&pull.body) {
            Some(id) => self
                .jobs
                .job(id)
                .await?
                .filter(|j| j.namespace == ns)
                .and_then(|j| j.claimed_by),
            None => None,
        };
        let driver_agent = match job_claimed_by.as_deref().and_then(agent_name_of) {
            Some(name) => self.agents.agent_by_name(name).await?.map(|a| DriverAgent {
                name: a.name,
                kind: a.kind,
                revoked: a.revoked_at.is_some(),
            }),
            None => None,
        };
        let changed_paths = host.pull_request_files(repo, number).await.ok();
        let check_runs = host
            .check_runs(repo, &pull.head_sha)
            .await
            .ok()
            .map(|runs| {
                runs.into_iter()
                    .enumerate()
                    .map(|(i, r)| CheckRun {
                        name: format!("check {}", i + 1),
                        status: r.status,
                        conclusion: r.conclusion,
                    })
                    .collect()
            });
        Ok(Ok(PrFacts {
            body: pull.body,
            base_ref: pull.base_ref,
            default_branch: default_branch.to_owned(),
            head_sha: pull.head_sha,
            job_claimed_by,
            driver_agent,
            check_runs,
            changed_paths,
        }))
    }
}

/// The last tick's summary as stored (`None` before the first tick).
pub(crate) fn last_tick(raw: Option<&str>) -> Option<Value> {
    raw.and_then(|s| serde_json::from_str::<Value>(s).ok())
        .map(|v| json!(v))
}
