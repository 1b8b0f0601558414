//! Ports of the self-improvement loop and skills: run totals for agent records and budgets,
//! and skill evidence (evaluations, edits, failure notes).

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::time::Timestamp;

/// Sums over `improve_runs` of one namespace.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ImproveRunTotals {
    /// Namespace.
    pub namespace: String,
    /// Runs.
    pub runs: u64,
    /// Attempts.
    pub attempts: u64,
    /// Attempts kept.
    pub kept: u64,
    /// Attempts reverted.
    pub reverts: u64,
    /// Estimated model spend.
    pub cost_usd: f64,
    /// CI minutes.
    pub ci_minutes: f64,
}

/// The improve loop's tables.
#[async_trait]
pub trait ImproveStore: Send + Sync {
    /// Totals per namespace over runs started at or after `since` (all runs when `None`).
    async fn run_totals(&self, since: Option<Timestamp>) -> StoreResult<Vec<ImproveRunTotals>>;
}

/// An `improve_skills` row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SkillRow {
    /// Skill id.
    pub id: String,
    /// Namespace it was abstracted from.
    pub source_namespace: String,
    /// Title.
    pub title: String,
    /// `improve/skills/<id>.md`.
    pub body_ref: String,
    /// Current version.
    pub version: i64,
    /// `candidate`, `live` or `retired`.
    pub status: String,
    /// Wins credited.
    pub wins: i64,
    /// Losses credited.
    pub losses: i64,
}

/// A `skill_evaluations` row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SkillEvaluationRow {
    /// Skill id.
    pub skill: String,
    /// Version evaluated.
    pub version: i64,
    /// Namespace whose probe set ran.
    pub namespace: String,
    /// Probe set version.
    pub probe_set_version: String,
    /// With-minus-without score.
    pub delta: f64,
    /// Runs.
    pub runs: i64,
    /// `positive`, `negative` or `neutral`.
    pub verdict: String,
    /// When.
    pub evaluated_at: Timestamp,
}

/// Skills and their evidence.
#[async_trait]
pub trait SkillStore: Send + Sync {
    /// Inserts a candidate skill.
    async fn insert_skill(
        &self,
        skill: SkillRow,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<()>;
    /// Skills, optionally of one status.
    async fn skills(&self, status: Option<&str>) -> StoreResult<Vec<SkillRow>>;
    /// Records an evaluation.
    async fn record_evaluation(&self, evaluation: SkillEvaluationRow) -> StoreResult<()>;
    /// Evaluations of `skill`, newest first.
    async fn evaluations(&self, skill: &str) -> StoreResult<Vec<SkillEvaluationRow>>;
    /// Keyed status change: only if the skill is still in `from`.
    async fn set_skill_status(
        &self,
        skill: &str,
        from: &str,
        to: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<bool>;
}
