//! `improve_status`: the loop's line (mode, budget and spend), each namespace's queue, live
//! run and integrity beside its loop state (`pin.rs`), the protected-path patterns, the agent
//! inventory, the pull requests awaiting the seat, the autonomy block, and the verification of
//! a task document (`task.rs`); each namespace's skills panel and the open skill merge
//! proposals (`skill_panel.rs`).

use serde_json::{Value, json};

use super::{ImproveCx, StatusArgs, month_start};
use crate::caller::Caller;
use crate::docs::truth_report::integrity_of;
use crate::error::Result;
use crate::guards::{PROTECTED_PATH_PATTERNS, PROTECTED_PATTERN_FLAGS};
use crate::improve::budget::{BudgetCaps, MonthSpend, over_cap};
use crate::improve::keys::{
    AWAITING_SEAT_KEY, BUDGET_KEY, IMPROVE_MODE_KEY, anchor_key, paused_key,
};
use crate::improve::roster::ImproveMode;
use crate::jobs::JobStatus;
use crate::jobs::block::command_from_summary;
use crate::ports::JobFilter;
use crate::service::{Area, Confirmer, to_json};
use crate::time::Timestamp;

/// The loop's one-line state: off, stopped by the budget, or on in its mode.
fn loop_line(mode: ImproveMode, over: Option<&str>) -> String {
    match (mode, over) {
        (ImproveMode::Off, _) => {
            "off: improve_run action mode (subscription or api) turns it on".into()
        }
        (_, Some(over)) => format!("stopped: {over}; raise the cap with improve_run budget"),
        (m, None) => format!(
            "on: {} mode, nightly at 03:00 in the loop's time zone",
            m.name()
        ),
    }
}

fn day_start(now: Timestamp) -> Timestamp {
    Timestamp::parse(&format!("{}T00:00:00Z", now.date())).unwrap_or(now)
}

impl ImproveCx<'_> {
    pub(crate) async fn improve_status(
        &self,
        caller: &Caller,
        a: StatusArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        let now = self.now();
        let mode = ImproveMode::from_setting(
            self.settings
                .setting(IMPROVE_MODE_KEY, now)
                .await?
                .as_deref(),
        );
        let caps =
            BudgetCaps::from_setting(self.settings.setting(BUDGET_KEY, now).await?.as_deref());
        let totals = self.improve.run_totals(Some(month_start(now))).await?;
        let spend = MonthSpend {
            ci_minutes: totals.iter().map(|t| t.ci_minutes).sum(),
            cost_usd: totals.iter().map(|t| t.cost_usd).sum(),
        };
        let lifetime = self.improve.run_totals(None).await?;
        let skills = self.skills.skills(None).await?;
        let mut namespaces = Vec::new();
        let spent = self
            .namespaces
            .spend_since(crate::jobs::budget::month_start(now))
            .await?;
        for row in self.namespaces.namespaces().await? {
            let jobs_budget = crate::jobs::budget::BudgetState::new(
                &row.namespace,
                now,
                row.monthly_budget_usd,
                self.config.default_monthly_budget_usd,
                spent
                    .iter()
                    .find(|s| s.namespace == row.namespace)
                    .map_or(0.0, |s| s.spent_usd),
            );
            let ns = row.namespace;
            if a.namespace.as_ref().is_some_and(|n| n.as_str() != ns)
                || !caller.scopes.namespaces.allows(&ns)
            {
                continue;
            }
            let mut status = self.namespace_status(&ns, now).await?;
            for (key, value) in self.loop_state(&ns, now, &lifetime).await? {
                status[key] = value;
            }
            status["skills"] = self.skills_panel(&ns, &skills).await?;
            status["jobs_budget"] = to_json(&jobs_budget)?;
            namespaces.push(status);
        }
        let awaiting: Value = self
            .settings
            .setting(AWAITING_SEAT_KEY, now)
            .await?
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| {
                caller.scopes.namespaces.is_all()
                    || entry["namespace"]
                        .as_str()
                        .is_some_and(|ns| caller.scopes.namespaces.allows(ns))
            })
            .collect();
        let protected: Vec<Value> = PROTECTED_PATH_PATTERNS
            .iter()
            .map(|p| json!({"source": p.source, "flags": PROTECTED_PATTERN_FLAGS, "reason": p.reason}))
            .collect();
        let mut out = json!({
            "mode": mode.name(),
            "loop": loop_line(mode, over_cap(&caps, &spend).as_deref()),
            "zone": self.zone.name(),
            "budget": { "caps": { "actions_minutes_month": caps.actions_minutes_cap(), "model_usd_month": caps.model_usd_cap() },
                        "month_to_date": { "ci_minutes": spend.ci_minutes, "cost_usd": spend.cost_usd } },
            "protected_paths": protected,
            "agents": self.agent_inventory(&caller.scopes.namespaces).await?,
            "awaiting_seat": awaiting,
            "autonomy": self.autonomy_status(&caller.scopes.namespaces).await?,
            "namespaces": namespaces,
            "skill_merge_proposals": to_json(&self.open_merge_proposals(caller, a.namespace.as_ref().map(|n| n.as_str()), &skills).await?)?,
        });
        if let Some(path) = &a.task_path {
            out["task_verification"] = self
                .task_verification(
                    caller,
                    a.namespace.as_ref().map(|n| n.as_str()),
                    path.as_str(),
                )
                .await?;
        }
        Ok(out)
    }

    async fn namespace_status(&self, ns: &str, now: Timestamp) -> Result<Value> {
        let counts = self.jobs.job_counts(ns, day_start(now)).await?;
        let blocked = self
            .jobs
            .jobs(
                &JobFilter {
                    namespace: Some(ns.to_owned()),
                    status: Some(JobStatus::Blocked),
                },
                20,
            )
            .await?;
        let blocked_jobs: Vec<Value> = blocked
            .iter()
            .map(|j| {
                json!({
                    "id": j.id, "title": j.title,
                    "waiting_on": j.result_summary.as_deref().and_then(command_from_summary),
                    "blocked_times": j.blocked_count, "resumed": j.resumed_count,
                })
            })
            .collect();
        let latest_report = self
            .docs
            .find_documents(Some(ns), "reports/lint-*.md", 500)
            .await?
            .into_iter()
            .max_by(|a, b| a.path.cmp(&b.path));
        let integrity = match latest_report {
            Some(r) => integrity_of(
                self.docs
                    .document(ns, &r.path)
                    .await?
                    .and_then(|d| d.body)
                    .as_deref(),
            ),
            None => None,
        };
        Ok(json!({
            "namespace": ns,
            "paused": self.settings.setting(&paused_key(ns), now).await?,
            "anchor_pinned": self.settings.setting(&anchor_key(ns), now).await?.is_some(),
            "loop": match self.runs.live_run(ns).await? {
                Some(run) => json!({"run": run.id, "status": run.status.as_str(), "mode": run.mode,
                                    "attempts": run.tally.attempts, "kept": run.tally.kept,
                                    "reverted": run.tally.reverts, "current_attempt": run.current_attempt}),
                None => json!("idle"),
            },
            "jobs": { "queued": counts.queued, "claimed": counts.claimed, "blocked": counts.blocked,
                      "done_today": counts.done_today, "blocked_jobs": blocked_jobs },
            "integrity": integrity,
        }))
    }
}
