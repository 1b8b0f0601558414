//! Finishing a run (reference 8.2): every kept attempt's pull request is left open for the
//! seat (opened again if it went missing), every reverted, flagged or timed-out attempt's
//! branch is deleted; a run stopped by consecutive reverts records that the best commit is
//! restored (attempts live on branches, so the default branch never moved); the run is done
//! with a summary note; then the drift gate may pause the namespace.

use super::ImproveCx;
use crate::error::Result;
use crate::improve::judging::BestRecord;
use crate::improve::keys::best_key;
use crate::improve::machine::{AttemptStatus, RunEvent, RunTally, drift_gate};
use crate::improve::scores::parse_scores;
use crate::improve::verdict::MetricMap;
use crate::ports::{RepoHostError, RunRow};
use crate::service::improve::score::SCORES_PATH;
use crate::time::Timestamp;

impl ImproveCx<'_> {
    /// The finalizing step: branches and pull requests put right, the run done, the gate.
    pub(crate) async fn finish_run(&self, run: &RunRow, now: Timestamp) -> Result<String> {
        let ns = run.namespace.as_str();
        let attempts = self.runs.attempts(&run.id).await?;
        let mut problems = Vec::new();
        let mut open_prs = Vec::new();
        let repo = self.loop_repo(ns).await?;
        for a in &attempts {
            let Some(branch) = a.branch.as_deref() else {
                continue;
            };
            if a.status == AttemptStatus::Kept {
                let (Some(host), Some(repo)) = (&self.repo_host, &repo) else {
                    continue;
                };
                match host.open_pull_requests(repo, Some(branch)).await {
                    Ok(pulls) => match pulls.into_iter().find(|p| p.head_ref == branch) {
                        Some(p) => open_prs.push(p.url),
                        None => match self.default_head(host.as_ref(), repo).await {
                            Ok((base, _)) => {
                                let title = format!(
                                    "improve: {}",
                                    a.change_summary.as_deref().unwrap_or(&a.id)
                                );
                                let body = format!("The kept attempt {} of run {}.", a.id, run.id);
                                match host.create_pull(repo, &title, branch, &base, &body).await {
                                    Ok(p) => open_prs.push(p.url),
                                    Err(RepoHostError::Rejected(_)) => {}
                                    Err(e) => problems.push(format!("{}: {e}", a.id)),
                                }
                            }
                            Err(e) => problems.push(format!("{}: {e}", a.id)),
                        },
                    },
                    Err(e) => problems.push(format!("{}: {e}", a.id)),
                }
            } else {
                problems.extend(self.discard_branch(ns, branch).await);
            }
        }
        let best =
            BestRecord::from_setting(self.settings.setting(&best_key(ns), now).await?.as_deref());
        let t = run.tally;
        let mut note = format!(
            "{} attempts, {} kept, {} reverted",
            t.attempts, t.kept, t.reverts
        );
        if let Some(why) = &run.note {
            note = format!("{why}; {note}");
        }
        if t.stop_reason().is_some_and(|s| s.restores_best()) {
            let sha = best
                .as_ref()
                .map(|b| b.sha.clone())
                .or_else(|| run.base_sha.clone())
                .unwrap_or_else(|| "the base".into());
            note.push_str(&format!("; restored the best commit {sha}"));
        }
        if !problems.is_empty() {
            note.push_str(&format!("; left for a human: {}", problems.join("; ")));
        }
        let note: String = note.chars().take(1_000).collect();
        let did = self
            .walk_run(run, &[RunEvent::Finish], Some(note), now)
            .await?;
        if did.starts_with("another") {
            return Ok(did);
        }
        let gate = self.drift_check(ns, &attempts, best.as_ref(), now).await?;
        Ok(match gate {
            Some(reason) => format!("{did}; {ns} paused: {reason}"),
            None => format!("{did}; pull requests open: {}", open_prs.len()),
        })
    }

    /// The drift gate over the namespace's last runs and its newest reported anchors.
    async fn drift_check(
        &self,
        ns: &str,
        attempts: &[crate::ports::AttemptRow],
        best: Option<&BestRecord>,
        now: Timestamp,
    ) -> Result<Option<String>> {
        let recent: Vec<RunTally> = self
            .runs
            .runs(Some(ns), crate::improve::machine::DRIFT_WINDOW_RUNS)
            .await?
            .into_iter()
            .map(|r| r.tally)
            .collect();
        let scores = self
            .docs
            .document(ns, SCORES_PATH)
            .await?
            .and_then(|d| d.body)
            .unwrap_or_default();
        let doc = parse_scores(&scores);
        let latest: MetricMap = attempts
            .iter()
            .rev()
            .find_map(|a| a.anchors_json.as_deref())
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        let best_anchors = best.map(|b| b.anchors.clone()).unwrap_or_default();
        let reason = if best.is_none() && latest.is_empty() {
            crate::improve::machine::revert_drift(&recent)
        } else {
            drift_gate(&recent, &doc.anchors, &best_anchors, &latest)
        };
        let Some(reason) = reason else {
            return Ok(None);
        };
        let why = reason.to_string();
        self.pause_namespace(ns, &why, now).await?;
        Ok(Some(why))
    }
}
