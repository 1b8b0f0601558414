//! The `RunStore` port: the self-improvement loop's runs and attempts (`improve_runs`,
//! `improve_attempts`, the metrics of `improve_scores`). Every change commits with its audit
//! rows in one transaction; every transition is a keyed conditional update
//! (`UPDATE … WHERE id = ? AND status = <expected>`) whose loss is [`Advanced::Lost`], with
//! the next status decided by the core's tables (`improve::machine::*::step`). Opening a run
//! while the namespace has a live one is refused by the partial unique index
//! `improve_runs_one_active` and answered as [`RunOpened::LiveRunExists`].

use async_trait::async_trait;

use super::{AuditEntry, Change, StoreResult};
use crate::improve::machine::{AttemptStatus, AttemptStep, RunStatus, RunStep, RunTally};
use crate::time::Timestamp;

/// An `improve_runs` row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunRow {
    /// `<ns>-<timestamp>`.
    pub id: String,
    /// Namespace.
    pub namespace: String,
    /// `subscription` or `api`.
    pub mode: String,
    /// When it opened.
    pub started: Timestamp,
    /// When it reached a terminal status.
    pub finished: Option<Timestamp>,
    /// Where it stands.
    #[serde(serialize_with = "run_status")]
    pub status: RunStatus,
    /// Attempts, kept, reverts and the current revert streak.
    #[serde(skip)]
    pub tally: RunTally,
    /// Estimated model spend.
    pub cost_usd: f64,
    /// CI minutes spent scoring.
    pub ci_minutes: f64,
    /// The attempt in flight, if any.
    pub current_attempt: Option<String>,
    /// The commit the run started from.
    pub base_sha: Option<String>,
    /// The run's pull request, if any.
    pub pr_url: Option<String>,
    /// Why it finished (never null once finished).
    pub note: Option<String>,
    /// `full`, `no-memory` or `no-transfer`.
    pub condition: String,
    /// When it last moved.
    pub advanced_at: Timestamp,
}

fn run_status<S: serde::Serializer>(status: &RunStatus, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(status.as_str())
}

fn attempt_status<S: serde::Serializer>(status: &AttemptStatus, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(status.as_str())
}

/// An `improve_attempts` row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AttemptRow {
    /// `<run>-aNN`.
    pub id: String,
    /// Namespace.
    pub namespace: String,
    /// The run.
    pub run_id: String,
    /// Where it stands.
    #[serde(serialize_with = "attempt_status")]
    pub status: AttemptStatus,
    /// What it changed, in a line.
    pub change_summary: Option<String>,
    /// The archive document.
    pub diff_ref: Option<String>,
    /// `improve/<attempt>`.
    pub branch: Option<String>,
    /// The commit scored.
    pub head_sha: Option<String>,
    /// The commit it started from.
    pub base_sha: Option<String>,
    /// The attempt it builds on.
    pub lineage_parent: Option<String>,
    /// The skill offered, if any.
    pub skill_id: Option<String>,
    /// The base's weighted score.
    pub score_before: Option<f64>,
    /// The attempt's weighted score.
    pub score_after: Option<f64>,
    /// Why it was kept or reverted.
    pub reason: Option<String>,
    /// The reported anchors, as JSON.
    pub anchors_json: Option<String>,
    /// The reported secondary metrics, as JSON.
    pub secondary_json: Option<String>,
    /// Why the monitor flagged it.
    pub flag_reason: Option<String>,
    /// When its score was dispatched (the 20-minute deadline counts from here).
    pub dispatched_at: Option<Timestamp>,
    /// When it was added.
    pub ts: Timestamp,
}

/// A run to open (status `opening`, every counter zero).
#[derive(Clone, Debug, PartialEq)]
pub struct NewRun {
    /// `improve::machine::run_id`.
    pub id: String,
    /// Namespace.
    pub namespace: String,
    /// `subscription` or `api`.
    pub mode: String,
    /// `full`, `no-memory` or `no-transfer`.
    pub condition: String,
    /// The commit it starts from.
    pub base_sha: Option<String>,
    /// When.
    pub started: Timestamp,
}

/// What opening a run did.
#[derive(Clone, Debug, PartialEq)]
pub enum RunOpened {
    /// The new row.
    Opened(Box<RunRow>),
    /// The namespace already has a run that is neither done nor paused; nothing was written.
    LiveRunExists,
}

/// An attempt to add (status `pending`).
#[derive(Clone, Debug, PartialEq)]
pub struct NewAttempt {
    /// `improve::machine::attempt_id`.
    pub id: String,
    /// Namespace.
    pub namespace: String,
    /// The run.
    pub run_id: String,
    /// What it changes.
    pub change_summary: Option<String>,
    /// The archive document.
    pub diff_ref: Option<String>,
    /// `improve/<attempt>`.
    pub branch: String,
    /// The commit it starts from.
    pub base_sha: Option<String>,
    /// The attempt it builds on.
    pub lineage_parent: Option<String>,
    /// The skill offered.
    pub skill_id: Option<String>,
    /// When.
    pub ts: Timestamp,
}

/// One keyed conditional update of a run: applies only while the run is in `from` (and,
/// when `tally_before` is set, still has exactly those counters), sets `to` and the rest.
#[derive(Clone, Debug, PartialEq)]
pub struct RunUpdate {
    /// The run.
    pub id: String,
    /// The status it must be in.
    pub from: RunStatus,
    /// The status it takes (equal to `from` for a change within a status).
    pub to: RunStatus,
    /// The counters it must still have (no double counting).
    pub tally_before: Option<RunTally>,
    /// The counters it takes.
    pub tally: Option<RunTally>,
    /// The attempt in flight.
    pub current_attempt: Change<String>,
    /// CI minutes to add.
    pub add_ci_minutes: f64,
    /// Model spend to add.
    pub add_cost_usd: f64,
    /// Why it finished, or a note.
    pub note: Change<String>,
    /// When it finished (set once it is terminal).
    pub finished: Option<Timestamp>,
    /// When (`advanced_at`).
    pub at: Timestamp,
}

impl RunUpdate {
    /// The update that walks `steps` (each from the core's table, each starting where the
    /// previous ended) as one keyed change; `None` for no step or steps that do not chain.
    pub fn walk(id: &str, steps: &[RunStep], at: Timestamp) -> Option<RunUpdate> {
        let first = steps.first()?;
        let mut to = first.from;
        for step in steps {
            if step.from != to {
                return None;
            }
            to = step.to;
        }
        Some(RunUpdate {
            id: id.to_owned(),
            from: first.from,
            to,
            tally_before: None,
            tally: None,
            current_attempt: Change::Keep,
            add_ci_minutes: 0.0,
            add_cost_usd: 0.0,
            note: Change::Keep,
            finished: to.is_terminal().then_some(at),
            at,
        })
    }

    /// A change within `status` (counters, the attempt in flight), keyed on it.
    pub fn within(id: &str, status: RunStatus, at: Timestamp) -> RunUpdate {
        RunUpdate {
            id: id.to_owned(),
            from: status,
            to: status,
            tally_before: None,
            tally: None,
            current_attempt: Change::Keep,
            add_ci_minutes: 0.0,
            add_cost_usd: 0.0,
            note: Change::Keep,
            finished: None,
            at,
        }
    }
}

/// One keyed conditional update of an attempt: applies only while it is in `step.from`.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptUpdate {
    /// The attempt.
    pub id: String,
    /// The step, from the core's table.
    pub step: AttemptStep,
    /// The commit scored.
    pub head_sha: Change<String>,
    /// When its score was dispatched.
    pub dispatched_at: Option<Timestamp>,
    /// The base's weighted score.
    pub score_before: Option<f64>,
    /// The attempt's weighted score.
    pub score_after: Option<f64>,
    /// Why it was kept or reverted.
    pub reason: Change<String>,
    /// The reported anchors, as JSON.
    pub anchors_json: Option<String>,
    /// The reported secondary metrics, as JSON.
    pub secondary_json: Option<String>,
    /// Why the monitor flagged it.
    pub flag_reason: Option<String>,
}

impl AttemptUpdate {
    /// The bare step for `id`; the other fields left as stored.
    pub fn step(id: &str, step: AttemptStep) -> AttemptUpdate {
        AttemptUpdate {
            id: id.to_owned(),
            step,
            head_sha: Change::Keep,
            dispatched_at: None,
            score_before: None,
            score_after: None,
            reason: Change::Keep,
            anchors_json: None,
            secondary_json: None,
            flag_reason: None,
        }
    }
}

/// One `improve_scores` row: a metric of a run (`attempt_id` `None`: the run's baseline).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ScoreRow {
    /// Namespace.
    pub namespace: String,
    /// The run.
    pub run_id: String,
    /// The attempt, or `None` for the baseline.
    pub attempt_id: Option<String>,
    /// The metric.
    pub metric: String,
    /// Its value (`None`: reported null).
    pub value: Option<f64>,
    /// When.
    pub ts: Timestamp,
}

/// One unit of work of the loop: at most one attempt update and one run update (both keyed),
/// the metrics to record, a setting to put (the best record), and the audit rows; all or
/// nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Advance {
    /// The attempt's step.
    pub attempt: Option<AttemptUpdate>,
    /// The run's step.
    pub run: Option<RunUpdate>,
    /// Metrics to insert.
    pub scores: Vec<ScoreRow>,
    /// A setting to put with no expiry, `(key, value)`.
    pub setting: Option<(String, String)>,
    /// The audit rows.
    pub audits: Vec<AuditEntry>,
}

/// What an advance did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advanced {
    /// Every keyed update matched; everything committed.
    Applied,
    /// A keyed update matched no row (another writer moved it first, or it vanished);
    /// nothing was written.
    Lost,
}

/// Runs and attempts.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Opens a run with its audit row, or answers that the namespace has a live one.
    async fn open_run(&self, run: NewRun, audit: AuditEntry) -> StoreResult<RunOpened>;
    /// Inserts an attempt together with `run` (keyed on the run's status and counters) and
    /// the audit row; `Lost` when the run moved, `Conflict` when the attempt id exists.
    async fn add_attempt(
        &self,
        attempt: NewAttempt,
        run: RunUpdate,
        audit: AuditEntry,
    ) -> StoreResult<Advanced>;
    /// One unit of work of the loop.
    async fn advance(&self, advance: Advance) -> StoreResult<Advanced>;
    /// A run by id.
    async fn run(&self, id: &str) -> StoreResult<Option<RunRow>>;
    /// The namespace's run that is neither done nor paused, if any.
    async fn live_run(&self, namespace: &str) -> StoreResult<Option<RunRow>>;
    /// Runs, newest first, optionally of one namespace, at most `limit`.
    async fn runs(&self, namespace: Option<&str>, limit: usize) -> StoreResult<Vec<RunRow>>;
    /// An attempt by id.
    async fn attempt(&self, id: &str) -> StoreResult<Option<AttemptRow>>;
    /// The attempts of a run, oldest first.
    async fn attempts(&self, run_id: &str) -> StoreResult<Vec<AttemptRow>>;
    /// The metrics of a run's attempt (`None`: its baseline), by metric name.
    async fn scores(&self, run_id: &str, attempt_id: Option<&str>) -> StoreResult<Vec<ScoreRow>>;
}
