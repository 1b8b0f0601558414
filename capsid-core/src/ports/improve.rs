//! Ports of the self-improvement loop and skills: run totals for agent records and budgets,
//! and skill evidence (evaluations, edits, failure notes).

use async_trait::async_trait;

use super::{AuditEntry, DocumentWrite, StoreResult};
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
#[cfg_attr(test, capsid_refusing::refused)]
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
    /// The declared trigger condition (what work the skill is offered for), if any.
    pub trigger_condition: Option<String>,
    /// JSON array of the namespaces it applies to; `None` means any.
    pub namespaces: Option<String>,
}

/// The declared fields of a skill kept on its row beside a [`SkillRow`]'s: what its
/// repository copy carries besides the title, trigger and namespaces.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SkillDeclared {
    /// How a run following it knows it is done.
    pub termination_test: Option<String>,
    /// What it takes and gives beside other skills.
    pub composition_interface: Option<String>,
}

/// A `skill_edits` row: one bounded edit proposal, accepted or not.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct SkillEditRow {
    /// Skill id.
    pub skill: String,
    /// The version the edit was proposed against.
    pub from_version: i64,
    /// The version it would make (`from_version + 1`).
    pub to_version: i64,
    /// JSON text of the `add|delete|replace` ops.
    pub ops: String,
    /// Whether it was accepted.
    pub accepted: bool,
    /// Why it was accepted or rejected.
    pub reason: String,
    /// When it was judged.
    pub evaluated_at: Timestamp,
}

/// A `skill_failures` row: a note on a reverted attempt or a failed job that used the skill.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct SkillFailureRow {
    /// Skill id.
    pub skill: String,
    /// Namespace of the attempt or job.
    pub namespace: String,
    /// `attempt` or `job`.
    pub source_kind: String,
    /// The attempt or job id.
    pub source_id: String,
    /// What went wrong.
    pub note: String,
    /// When.
    pub created_at: Timestamp,
}

/// A `skill_evaluations` row.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
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

/// The skill lists of one job outcome that was offered skills (JSON arrays of ids, as the
/// jobs tool wrote them).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SkillOfferRow {
    /// `job_outcomes.skill_ids_offered`.
    pub offered: String,
    /// `job_outcomes.skill_ids_used`, if the driver reported.
    pub used: Option<String>,
}

/// Skills and their evidence.
#[cfg_attr(test, capsid_refusing::refused)]
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
    /// Skills of any of `statuses`, in one read: grouped in the order the statuses are given,
    /// newest first within each.
    async fn skills_in(&self, statuses: &[&str]) -> StoreResult<Vec<SkillRow>>;
    /// Records an evaluation with its audit row, in one transaction.
    async fn record_evaluation(
        &self,
        evaluation: SkillEvaluationRow,
        audit: AuditEntry,
    ) -> StoreResult<()>;
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
    /// One skill.
    async fn skill(&self, id: &str) -> StoreResult<Option<SkillRow>>;
    /// One skill's termination test and composition interface; `None` when there is no such
    /// skill.
    async fn skill_declared(&self, id: &str) -> StoreResult<Option<SkillDeclared>>;
    /// Records an edit proposal (accepted or not) with its audit row.
    async fn record_skill_edit(&self, edit: SkillEditRow, audit: AuditEntry) -> StoreResult<()>;
    /// Accepts a measured edit in one transaction: bumps the skill's version from
    /// `edit.from_version` to `edit.to_version` (keyed: only if the version is still
    /// `from_version`), records `edit` in `skill_edits`, writes the edited body document and
    /// the audit row. `false` when the skill is gone or its version moved (nothing written).
    async fn accept_skill_edit(
        &self,
        edit: SkillEditRow,
        body: DocumentWrite,
        audit: AuditEntry,
    ) -> StoreResult<bool>;
    /// Edit proposals of `skill`, newest first, at most `limit`.
    async fn skill_edits(&self, skill: &str, limit: usize) -> StoreResult<Vec<SkillEditRow>>;
    /// Records a failure note with its audit row.
    async fn record_skill_failure(
        &self,
        failure: SkillFailureRow,
        audit: AuditEntry,
    ) -> StoreResult<()>;
    /// The newest `limit` failure notes of `skill`, newest first.
    async fn skill_failures(&self, skill: &str, limit: usize) -> StoreResult<Vec<SkillFailureRow>>;
    /// Adds one win (`win`) or one loss to `skill`, with its audit row; `false` when there is
    /// no such skill (nothing written).
    async fn credit_skill(&self, skill: &str, win: bool, audit: AuditEntry) -> StoreResult<bool>;
    /// The newest evaluation measured against `namespace`'s probe set, if any.
    async fn last_evaluation(&self, namespace: &str) -> StoreResult<Option<SkillEvaluationRow>>;
    /// The skill lists of `namespace`'s newest `limit` job outcomes that were offered skills,
    /// newest first.
    async fn skill_offers(&self, namespace: &str, limit: usize) -> StoreResult<Vec<SkillOfferRow>>;
}
