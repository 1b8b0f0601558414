//! `improve_status`: the loop's line (mode, budget and spend), each namespace's queue, live
//! run and integrity beside its loop state (`pin.rs`), the protected-path patterns, the agent
//! inventory, the pull requests awaiting the seat, the autonomy block, and the verification of
//! a task document (`task.rs`); each namespace's skills panel and the open skill merge
//! proposals (`skill_panel.rs`).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::inventory::AgentSeen;
use super::pin::{Lifetime, RunSeen};
use super::skill_panel::SkillsPanel;
use super::task::TaskVerification;
use super::{ImproveCx, StatusArgs, month_start};
use crate::caller::Caller;
use crate::docs::truth_report::integrity_of;
use crate::error::Result;
use crate::guards::{PROTECTED_PATH_PATTERNS, PROTECTED_PATTERN_FLAGS};
use crate::improve::budget::{BudgetCaps, MonthSpend, over_cap};
use crate::improve::judging::BestRecord;
use crate::improve::keys::{
    AWAITING_SEAT_KEY, BUDGET_KEY, IMPROVE_MODE_KEY, anchor_key, paused_key,
};
use crate::improve::pin::PinState;
use crate::improve::roster::ImproveMode;
use crate::jobs::JobStatus;
use crate::jobs::block::command_from_summary;
use crate::jobs::budget::BudgetState;
use crate::ports::JobFilter;
use crate::service::{Area, Confirmer, to_json};
use crate::skills::panel::MergeProposal;
use crate::time::Timestamp;

/// What `improve_status` answers: the loop's line, its budget, the protected paths, the
/// agents, the pull requests awaiting the seat, the autonomy block, each namespace's status
/// and the open skill merge proposals.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusAnswer {
    /// The loop's mode: `off`, `subscription` or `api`.
    pub mode: &'static str,
    /// The loop's one-line state: off, stopped by the budget, or on in its mode.
    #[serde(rename = "loop")]
    pub loop_line: String,
    /// The loop's time zone.
    pub zone: String,
    /// The monthly caps and the month's spend.
    pub budget: LoopBudget,
    /// The protected-path patterns drivers must not touch.
    pub protected_paths: Vec<ProtectedPath>,
    /// Every agent seen from the caller's namespaces, with its record.
    pub agents: Vec<AgentSeen>,
    /// The pull requests awaiting the seat, as stored (those of the caller's namespaces).
    #[schemars(schema_with = "any_array")]
    pub awaiting_seat: Vec<Value>,
    /// The autonomy block (roster, policies, last tick, watcher, periodic tasks).
    #[schemars(schema_with = "any_object")]
    pub autonomy: Value,
    /// Each namespace the caller may read (only the one named, when one is).
    pub namespaces: Vec<NamespaceStatus>,
    /// The open proposals to merge two live skills.
    pub skill_merge_proposals: Vec<MergeProposal>,
    /// With `task_path`: whether that document is a task document the loop wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_verification: Option<TaskVerification>,
}

/// An array of stored entries, whatever they hold.
fn any_array(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "array" })
}

/// An object built elsewhere (`service::autonomy::status`).
fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "object" })
}

/// The loop's budget: the caps in force and the month's spend.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LoopBudget {
    /// The monthly caps in force.
    pub caps: BudgetCapsInForce,
    /// The spend since the month began.
    pub month_to_date: MonthToDate,
}

/// The monthly caps in force.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BudgetCapsInForce {
    /// Actions minutes a month.
    pub actions_minutes_month: f64,
    /// Model spend a month, in USD.
    pub model_usd_month: f64,
}

/// The spend since the month began.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MonthToDate {
    /// Actions minutes.
    pub ci_minutes: f64,
    /// Model spend in USD.
    pub cost_usd: f64,
}

/// One protected-path pattern.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProtectedPath {
    /// The regex source.
    pub source: &'static str,
    /// Its flags (`i`).
    pub flags: &'static str,
    /// Why the path is protected.
    pub reason: &'static str,
}

/// One namespace's status: its queue, live run and integrity, and its loop state.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NamespaceStatus {
    /// The namespace.
    pub namespace: String,
    /// The pause setting's value, if the namespace is paused.
    pub paused: Option<String>,
    /// Whether an Anchors checksum is pinned.
    pub anchor_pinned: bool,
    /// The live run, or `idle`.
    #[serde(rename = "loop")]
    pub live: LiveLoop,
    /// The queue.
    pub jobs: QueueStatus,
    /// The newest lint report's integrity percentage, if it has one.
    pub integrity: Option<f64>,
    /// The pin against the scores document.
    pub pinned: PinState,
    /// Whether the namespace is on the roster.
    pub on_roster: bool,
    /// The best record, if one is stored.
    pub best: Option<BestRecord>,
    /// The newest run, if any.
    pub last_run: Option<RunSeen>,
    /// Sums over all the namespace's runs.
    pub lifetime: Lifetime,
    /// The skills panel.
    pub skills: SkillsPanel,
    /// The namespace's jobs budget and spend this month.
    pub jobs_budget: BudgetState,
}

/// A namespace's live run, or the word `idle`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum LiveLoop {
    /// A run is live.
    Run(LiveRun),
    /// No run is live.
    Idle(Idle),
}

/// The word `idle`.
#[derive(Debug, Serialize, JsonSchema)]
pub enum Idle {
    /// No run is live.
    #[serde(rename = "idle")]
    Idle,
}

/// A live run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LiveRun {
    /// Its id.
    pub run: String,
    /// Its status.
    pub status: &'static str,
    /// Its mode.
    pub mode: String,
    /// Attempts so far.
    pub attempts: u32,
    /// Attempts kept.
    pub kept: u32,
    /// Attempts reverted.
    pub reverted: u32,
    /// The attempt in flight, if any.
    pub current_attempt: Option<String>,
}

/// A namespace's queue.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QueueStatus {
    /// Jobs queued.
    pub queued: u64,
    /// Jobs claimed.
    pub claimed: u64,
    /// Jobs blocked.
    pub blocked: u64,
    /// Jobs done since midnight UTC.
    pub done_today: u64,
    /// The newest blocked jobs (at most 20).
    pub blocked_jobs: Vec<BlockedJob>,
}

/// A blocked job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BlockedJob {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// The command it waits on, from its summary.
    pub waiting_on: Option<String>,
    /// How often it was blocked.
    pub blocked_times: i64,
    /// How often it was resumed.
    pub resumed: i64,
}

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
    /// `improve_status` as JSON (what the console renders).
    pub(crate) async fn improve_status(
        &self,
        caller: &Caller,
        a: StatusArgs,
        confirmer: &dyn Confirmer,
    ) -> Result<Value> {
        to_json(self.status_answer(caller, a, confirmer).await?)
    }

    /// `improve_status`.
    pub(crate) async fn status_answer(
        &self,
        caller: &Caller,
        a: StatusArgs,
        _: &dyn Confirmer,
    ) -> Result<StatusAnswer> {
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
            ci_minutes: sum(totals.iter().map(|t| t.ci_minutes)),
            cost_usd: sum(totals.iter().map(|t| t.cost_usd)),
        };
        let lifetime = self.improve.run_totals(None).await?;
        let skills = self.skills.skills(None).await?;
        let mut namespaces = Vec::new();
        let budgets = crate::service::budget_states(
            self.namespaces,
            self.config.default_monthly_budget_usd,
            now,
        )
        .await?;
        for jobs_budget in budgets {
            let ns = jobs_budget.namespace.clone();
            if a.namespace.as_ref().is_some_and(|n| n.as_str() != ns)
                || !caller.scopes.namespaces.allows(&ns)
            {
                continue;
            }
            namespaces.push(
                self.namespace_status(&ns, now, &lifetime, &skills, jobs_budget)
                    .await?,
            );
        }
        let awaiting: Vec<Value> = self
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
        let protected_paths = PROTECTED_PATH_PATTERNS
            .iter()
            .map(|p| ProtectedPath {
                source: p.source,
                flags: PROTECTED_PATTERN_FLAGS,
                reason: p.reason,
            })
            .collect();
        let namespace = a.namespace.as_ref().map(|n| n.as_str());
        let task_verification = match &a.task_path {
            Some(path) => Some(
                self.task_verification(caller, namespace, path.as_str())
                    .await?,
            ),
            None => None,
        };
        Ok(StatusAnswer {
            mode: mode.name(),
            loop_line: loop_line(mode, over_cap(&caps, &spend).as_deref()),
            zone: self.zone.name().to_owned(),
            budget: LoopBudget {
                caps: BudgetCapsInForce {
                    actions_minutes_month: caps.actions_minutes_cap(),
                    model_usd_month: caps.model_usd_cap(),
                },
                month_to_date: MonthToDate {
                    ci_minutes: spend.ci_minutes,
                    cost_usd: spend.cost_usd,
                },
            },
            protected_paths,
            agents: self.agents_seen(&caller.scopes.namespaces).await?,
            awaiting_seat: awaiting,
            autonomy: self.autonomy_status(&caller.scopes.namespaces).await?,
            namespaces,
            skill_merge_proposals: self
                .open_merge_proposals(caller, namespace, &skills)
                .await?,
            task_verification,
        })
    }

    async fn namespace_status(
        &self,
        ns: &str,
        now: Timestamp,
        lifetime: &[crate::ports::ImproveRunTotals],
        skills: &[crate::ports::SkillRow],
        jobs_budget: BudgetState,
    ) -> Result<NamespaceStatus> {
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
        let blocked_jobs = blocked
            .iter()
            .map(|j| BlockedJob {
                id: j.id.clone(),
                title: j.title.clone(),
                waiting_on: j
                    .result_summary
                    .as_deref()
                    .and_then(command_from_summary)
                    .map(str::to_owned),
                blocked_times: j.blocked_count,
                resumed: j.resumed_count,
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
        let paused = self.settings.setting(&paused_key(ns), now).await?;
        let anchor_pinned = self.settings.setting(&anchor_key(ns), now).await?.is_some();
        let live = match self.runs.live_run(ns).await? {
            Some(run) => LiveLoop::Run(LiveRun {
                run: run.id,
                status: run.status.as_str(),
                mode: run.mode,
                attempts: run.tally.attempts,
                kept: run.tally.kept,
                reverted: run.tally.reverts,
                current_attempt: run.current_attempt,
            }),
            None => LiveLoop::Idle(Idle::Idle),
        };
        let state = self.loop_state(ns, now, lifetime).await?;
        Ok(NamespaceStatus {
            namespace: ns.to_owned(),
            paused,
            anchor_pinned,
            live,
            jobs: QueueStatus {
                queued: counts.queued,
                claimed: counts.claimed,
                blocked: counts.blocked,
                done_today: counts.done_today,
                blocked_jobs,
            },
            integrity,
            pinned: state.pinned,
            on_roster: state.on_roster,
            best: state.best,
            last_run: state.last_run,
            lifetime: state.lifetime,
            skills: self.skills_panel(ns, skills).await?,
            jobs_budget,
        })
    }
}

/// The sum of `values`, `0.0` when there are none (an empty `f64` sum is `-0.0`, which JSON
/// shows as `-0.0`).
pub(crate) fn sum(values: impl Iterator<Item = f64>) -> f64 {
    values.sum::<f64>() + 0.0
}

#[cfg(test)]
mod sum_tests {
    #[test]
    fn an_empty_month_sums_to_zero_not_minus_zero() {
        let none = super::sum(std::iter::empty());
        assert!(none == 0.0 && none.is_sign_positive(), "{none}");
        assert_eq!(serde_json::json!(none).to_string(), "0.0");
        assert_eq!(super::sum([1.5, 2.0].into_iter()), 3.5);
    }
}
