//! What `/metrics` reports from the store, and the bounded labels of tool calls: who may
//! scrape (the read grant, through the one scope check), the job, queue, run and lease gauges
//! and the agents' (by status, questions waiting for a person) of the namespaces the scraper
//! may read, the backup's age, and the pools' usage; and which namespace a tool call recorded
//! a checkpoint in (the process's checkpoint counter).
//!
//! Labels are closed sets: a tool label is a registered tool's name or `unknown`, an outcome is
//! one of [`OUTCOMES`], a namespace is a registered one the scraper may read. Agent names,
//! paths and ids never become labels.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Service;
use crate::caller::Caller;
use crate::checkmarks::AgentStatus;
use crate::checkmarks::rules::waits_for_answer;
use crate::error::{Error, Result};
use crate::improve::keys::BACKUP_LAST_OK_KEY;
use crate::jobs::JobStatus;
use crate::ports::{AgentGaugeRow, PoolUsage};
use crate::scope::{Grant, Need};
#[cfg(test)]
use crate::service::registry::REGISTRY;
use crate::service::registry::spec;
use crate::time::{SECOND_MS, Timestamp};

/// The name the scope check knows the scrape by (a caller whose tools axis is narrowed needs
/// it listed).
pub const METRICS_SURFACE: &str = "metrics";

/// At most this many namespaces get their own queue series; the rest are left out (and
/// counted in [`Gauges::namespaces_left_out`]), so a scrape stays bounded.
pub const MAX_NAMESPACE_SERIES: usize = 500;

/// Every outcome label a tool call can get.
pub const OUTCOMES: [&str; 10] = [
    "ok",
    "refused",
    "denied",
    "invalid",
    "not_found",
    "conflict",
    "unconfirmed",
    "unavailable",
    "cancelled",
    "error",
];

/// One namespace's queue.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueGauge {
    /// The namespace (registered, readable by the scraper).
    pub namespace: String,
    /// Queued jobs.
    pub depth: u64,
    /// Seconds since the oldest queued job was posted; `None` when nothing is queued.
    pub oldest_queued_seconds: Option<f64>,
    /// US dollars its finished jobs reported spending this month (UTC).
    pub spent_usd: f64,
    /// The monthly budget that applies (its own, else the server's default), if any.
    pub budget_usd: Option<f64>,
    /// Runs in progress: its claimed jobs.
    pub runs_in_progress: u64,
    /// US dollars the ledger holds for those runs so far (their metered model calls).
    pub run_spend_usd: f64,
}

/// One namespace's agents, as their checkmarks say.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentGauge {
    /// The namespace (registered, readable by the scraper).
    pub namespace: String,
    /// Agents by the status of their checkmark; every status is present.
    pub by_status: Vec<(AgentStatus, u64)>,
    /// Questions waiting for a person's answer.
    pub questions_waiting: u64,
    /// Seconds since the oldest waiting question was asked; `None` when none waits.
    pub oldest_question_seconds: Option<f64>,
}

/// The store's figures at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Gauges {
    /// Jobs by status over the namespaces the scraper may read; every status is present.
    pub jobs_by_status: Vec<(JobStatus, u64)>,
    /// Per namespace, sorted by name.
    pub queues: Vec<QueueGauge>,
    /// Per namespace, sorted by name (the namespaces of `queues`, and any other readable one
    /// an agent checkpointed in, within the same bound).
    pub agents: Vec<AgentGauge>,
    /// Namespaces beyond [`MAX_NAMESPACE_SERIES`].
    pub namespaces_left_out: usize,
    /// Claimed jobs whose lease is live.
    pub leases_live: u64,
    /// Claimed jobs whose lease ran out (waiting for the sweep).
    pub leases_lapsed: u64,
    /// Seconds since the last successful backup; infinite when none is recorded or the record
    /// does not parse, so an age alert fires rather than staying quiet.
    pub backup_age_seconds: f64,
    /// The last restore rehearsal: when it ran (seconds since the Unix epoch) and whether it
    /// verified; `None` until one is recorded.
    pub rehearsal: Option<(f64, bool)>,
    /// The store's connection pools.
    pub pools: Vec<PoolUsage>,
}

/// The tool whose successful calls the checkpoint counter counts.
pub const CHECKPOINT_TOOL: &str = "checkpoint";

/// The namespace a tool call recorded a checkpoint in: a successful `checkpoint` answer's (a
/// registered namespace the core accepted). Any other call records none.
pub fn checkpoint_namespace<'a>(tool: &str, answer: &'a Result<Value>) -> Option<&'a str> {
    if tool != CHECKPOINT_TOOL {
        return None;
    }
    answer.as_ref().ok()?["log_entry"]["namespace"].as_str()
}

/// The label of a tool name: the name itself when it is in the registry, else `unknown` (a
/// client can send any string; the label set stays closed).
pub fn tool_label(name: &str) -> &'static str {
    spec(name).map_or("unknown", |t| t.name)
}

/// The outcome label of a finished call. A successful answer with `ok: false` is a domain
/// refusal (`jobs`, `agents`).
pub fn outcome_label(result: &Result<Value>) -> &'static str {
    match result {
        Ok(v) if v.get("ok") == Some(&Value::Bool(false)) => "refused",
        Err(Error::Refused { .. }) => "refused",
        Ok(_) => "ok",
        Err(Error::Denied(_) | Error::Forbidden(_)) => "denied",
        Err(Error::Invalid(_)) => "invalid",
        Err(Error::NotFound(_)) => "not_found",
        Err(Error::Conflict(_)) => "conflict",
        Err(Error::ConfirmationRequired(_) | Error::Declined(_)) => "unconfirmed",
        Err(Error::Unavailable(_) | Error::StoreUnavailable(_)) => "unavailable",
        Err(Error::Cancelled(_)) => "cancelled",
        Err(Error::Internal(_)) => "error",
    }
}

impl Service {
    /// Refuses a scraper without the read grant (or whose tools axis leaves out `metrics`).
    pub fn check_metrics_scrape(&self, caller: &Caller) -> Result<()> {
        crate::scope::check_scope(
            &caller.scopes,
            &Need {
                tool: METRICS_SURFACE,
                action: None,
                namespace: None,
                repo: None,
                grant: Some(Grant::Read),
                flags: Vec::new(),
            },
        )
        .map_err(Error::from)
    }

    /// The store's figures for `caller`, who passed [`Service::check_metrics_scrape`]: jobs,
    /// queues and leases of the namespaces it may read, the backup's age, the pools.
    pub async fn gauges(&self, caller: &Caller) -> Result<Gauges> {
        self.check_metrics_scrape(caller)?;
        let now = self.now();
        let allowed = |ns: &str| caller.scopes.namespaces.allows(ns);
        let mut by_status: Vec<(JobStatus, u64)> =
            JobStatus::ALL.into_iter().map(|s| (s, 0)).collect();
        let mut queues: BTreeMap<String, QueueGauge> = BTreeMap::new();
        let spent = self
            .store
            .spend_since(crate::jobs::budget::month_start(now))
            .await?;
        for row in self.store.namespaces().await? {
            if allowed(&row.namespace) {
                let mut queue = empty_queue(row.namespace.clone());
                queue.spent_usd = spent
                    .iter()
                    .find(|s| s.namespace == row.namespace)
                    .map_or(0.0, |s| s.spent_usd);
                queue.budget_usd = row
                    .monthly_budget_usd
                    .or(self.config.default_monthly_budget_usd);
                queues.insert(row.namespace, queue);
            }
        }
        let (mut live, mut lapsed) = (0, 0);
        for row in self.store.job_gauges(now).await? {
            if !allowed(&row.namespace) {
                continue;
            }
            if let Some((_, n)) = by_status.iter_mut().find(|(s, _)| *s == row.status) {
                *n += row.count;
            }
            if row.status == JobStatus::Claimed {
                lapsed += row.lapsed_leases;
                live += row.count.saturating_sub(row.lapsed_leases);
                queue_of(&mut queues, &row.namespace).runs_in_progress += row.count;
            }
            if row.status == JobStatus::Queued {
                let queue = queue_of(&mut queues, &row.namespace);
                queue.depth += row.count;
                queue.oldest_queued_seconds = row.oldest_created.map(|t| seconds_since(now, t));
            }
        }
        for row in self
            .store
            .ledger_spend_by_status(JobStatus::Claimed)
            .await?
        {
            if allowed(&row.namespace) {
                queue_of(&mut queues, &row.namespace).run_spend_usd = row.spent.dollars();
            }
        }
        let rows = self.store.agent_gauges().await?;
        let agents = agent_gauges(queues.keys(), rows, &allowed, now);
        let namespaces_left_out = queues.len().saturating_sub(MAX_NAMESPACE_SERIES);
        let backup = self.store.setting(BACKUP_LAST_OK_KEY, now).await?;
        Ok(Gauges {
            jobs_by_status: by_status,
            queues: queues.into_values().take(MAX_NAMESPACE_SERIES).collect(),
            agents,
            namespaces_left_out,
            leases_live: live,
            leases_lapsed: lapsed,
            backup_age_seconds: backup_age_seconds(backup.as_deref(), now),
            rehearsal: self
                .last_rehearsal()
                .await?
                .and_then(|r| r.at_seconds().map(|at| (at, r.ok))),
            pools: self.store.pool_usage(),
        })
    }
}

fn empty_queue(namespace: String) -> QueueGauge {
    QueueGauge {
        namespace,
        depth: 0,
        oldest_queued_seconds: None,
        spent_usd: 0.0,
        budget_usd: None,
        runs_in_progress: 0,
        run_spend_usd: 0.0,
    }
}

fn queue_of<'a>(queues: &'a mut BTreeMap<String, QueueGauge>, ns: &str) -> &'a mut QueueGauge {
    queues
        .entry(ns.to_owned())
        .or_insert_with(|| empty_queue(ns.to_owned()))
}

fn empty_agents(namespace: String) -> AgentGauge {
    AgentGauge {
        namespace,
        by_status: AgentStatus::ALL.iter().map(|s| (*s, 0)).collect(),
        questions_waiting: 0,
        oldest_question_seconds: None,
    }
}

/// The agents' gauges of `namespaces` and of every other namespace of `rows` that `allowed`
/// lets the scraper read, sorted by name and bounded like the queues: agents by status, and the
/// groups whose question waits for a person counted with the age of their oldest.
fn agent_gauges<'a>(
    namespaces: impl Iterator<Item = &'a String>,
    rows: Vec<AgentGaugeRow>,
    allowed: &impl Fn(&str) -> bool,
    now: Timestamp,
) -> Vec<AgentGauge> {
    let mut agents: BTreeMap<String, AgentGauge> = namespaces
        .map(|ns| (ns.clone(), empty_agents(ns.clone())))
        .collect();
    for row in rows.into_iter().filter(|r| allowed(&r.namespace)) {
        let gauge = agents
            .entry(row.namespace.clone())
            .or_insert_with(|| empty_agents(row.namespace.clone()));
        if let Some((_, n)) = gauge.by_status.iter_mut().find(|(s, _)| *s == row.status) {
            *n += row.count;
        }
        if waits_for_answer(row.status, row.asked, row.answered) {
            gauge.questions_waiting += row.count;
            let age = row.oldest_checkpoint.map(|t| seconds_since(now, t));
            gauge.oldest_question_seconds = match (gauge.oldest_question_seconds, age) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }
    agents.into_values().take(MAX_NAMESPACE_SERIES).collect()
}

/// Seconds from `then` to `now`, never negative (a clock step back reads as zero).
fn seconds_since(now: Timestamp, then: Timestamp) -> f64 {
    now.millis_since(then).max(0) as f64 / SECOND_MS as f64
}

/// The backup's age from its stored record: infinite when absent or unreadable (fail closed:
/// a corrupt record must not read as a fresh backup).
pub fn backup_age_seconds(record: Option<&str>, now: Timestamp) -> f64 {
    record
        .and_then(Timestamp::parse)
        .map_or(f64::INFINITY, |t| seconds_since(now, t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::ScopeRefusal;

    #[test]
    fn tool_labels_are_a_closed_set() {
        assert_eq!(tool_label("read"), "read");
        assert_eq!(tool_label("jobs"), "jobs");
        assert_eq!(tool_label("agent-7f3a/../x"), "unknown");
        assert_eq!(tool_label(""), "unknown");
        for e in &REGISTRY {
            assert_eq!(tool_label(e.spec.name), e.spec.name);
        }
    }

    #[test]
    fn outcomes_name_the_variant_and_domain_refusals() {
        let cases: Vec<(Result<Value>, &str)> = vec![
            (Ok(serde_json::json!({"ok": true})), "ok"),
            (Ok(serde_json::json!({"documents": []})), "ok"),
            (
                Ok(serde_json::json!({"ok": false, "refusal": "x"})),
                "refused",
            ),
            (Err(Error::Invalid("x".into())), "invalid"),
            (
                Err(Error::Denied(ScopeRefusal::Namespace {
                    namespace: "a".into(),
                    held: "b".into(),
                })),
                "denied",
            ),
            (Err(Error::Forbidden("x".into())), "denied"),
            (Err(Error::NotFound("x".into())), "not_found"),
            (Err(Error::Conflict("x".into())), "conflict"),
            (Err(Error::ConfirmationRequired("x".into())), "unconfirmed"),
            (Err(Error::Declined("x".into())), "unconfirmed"),
            (Err(Error::Cancelled("x".into())), "cancelled"),
            (Err(Error::Unavailable("x".into())), "unavailable"),
            (Err(Error::StoreUnavailable("x".into())), "unavailable"),
            (Err(Error::Internal("x".into())), "error"),
        ];
        for (result, label) in cases {
            assert_eq!(outcome_label(&result), label, "{result:?}");
            assert!(OUTCOMES.contains(&label));
        }
    }

    #[test]
    fn only_a_successful_checkpoint_names_its_namespace() {
        assert_eq!(tool_label(CHECKPOINT_TOOL), CHECKPOINT_TOOL);
        let answer: Result<Value> = Ok(serde_json::json!({
            "checkmark_id": 1, "log_entry_id": 2,
            "checkmark": {"namespace": "alpha"}, "log_entry": {"namespace": "alpha"},
        }));
        assert_eq!(
            checkpoint_namespace(CHECKPOINT_TOOL, &answer),
            Some("alpha")
        );
        assert_eq!(checkpoint_namespace("checkmarks", &answer), None);
        let refused: Result<Value> = Err(Error::Invalid("checkpoint: question".into()));
        assert_eq!(checkpoint_namespace(CHECKPOINT_TOOL, &refused), None);
    }

    #[test]
    fn agents_count_by_status_and_only_unanswered_questions_wait() {
        let now = Timestamp::parse("2026-05-02T00:10:00Z").unwrap();
        let at = |t: &str| Timestamp::parse(t);
        let row = |ns: &str, status, asked, answered, count, oldest: &str| AgentGaugeRow {
            namespace: ns.to_owned(),
            status,
            asked,
            answered,
            count,
            oldest_checkpoint: at(oldest),
        };
        let rows = vec![
            row(
                "alpha",
                AgentStatus::Working,
                false,
                false,
                2,
                "2026-05-02T00:00:00Z",
            ),
            row(
                "alpha",
                AgentStatus::PausedForInput,
                true,
                false,
                1,
                "2026-05-02T00:09:00Z",
            ),
            row(
                "alpha",
                AgentStatus::Blocked,
                true,
                false,
                1,
                "2026-05-02T00:05:00Z",
            ),
            row(
                "alpha",
                AgentStatus::PausedForInput,
                true,
                true,
                1,
                "2026-05-01T00:00:00Z",
            ),
            row(
                "hidden",
                AgentStatus::Blocked,
                true,
                false,
                4,
                "2026-05-01T00:00:00Z",
            ),
        ];
        let registered = ["alpha".to_owned(), "beta".to_owned()];
        let gauges = agent_gauges(registered.iter(), rows, &|ns| ns != "hidden", now);
        assert_eq!(gauges.len(), 2, "{gauges:?}");
        let alpha = &gauges[0];
        assert_eq!(
            alpha.by_status,
            [
                (AgentStatus::Working, 2),
                (AgentStatus::PausedForInput, 2),
                (AgentStatus::Blocked, 1),
                (AgentStatus::Done, 0),
            ]
        );
        assert_eq!(alpha.questions_waiting, 2);
        assert_eq!(alpha.oldest_question_seconds, Some(300.0));
        assert_eq!(gauges[1], empty_agents("beta".to_owned()));
    }

    #[test]
    fn a_missing_or_corrupt_backup_record_is_infinitely_old() {
        let now = Timestamp::parse("2026-05-02T00:00:00Z").unwrap();
        assert_eq!(backup_age_seconds(None, now), f64::INFINITY);
        assert_eq!(
            backup_age_seconds(Some("yesterday-ish"), now),
            f64::INFINITY
        );
        assert_eq!(backup_age_seconds(Some(""), now), f64::INFINITY);
        assert_eq!(
            backup_age_seconds(Some("2026-05-01T23:00:00Z"), now),
            3600.0
        );
        // A record from the future (a clock stepped back) is age zero, never negative.
        assert_eq!(backup_age_seconds(Some("2026-05-03T00:00:00Z"), now), 0.0);
    }
}
