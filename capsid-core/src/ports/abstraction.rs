//! The port of skill abstraction (issue 17): the sources not yet spent (kept attempts, jobs
//! done with the verifier's `verified-success`), each query bounded, and the one unit of work
//! that stores a proposed candidate with its body document, only while its source is unspent
//! (a repository copy read back, issue 56, is a proposal whose source is its content).

use async_trait::async_trait;

use super::{AuditEntry, DocumentWrite, SkillRow, StoreResult};
use crate::skills::abstraction::SourceKind;
use crate::time::Timestamp;

/// A source a skill may be abstracted from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SkillSource {
    /// Attempt or job.
    pub kind: SourceKind,
    /// The attempt's or the job's id.
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// The job's title (none for an attempt).
    pub title: Option<String>,
    /// The attempt's change summary or the job's result summary.
    pub summary: Option<String>,
    /// The job's body (none for an attempt).
    pub body: Option<String>,
    /// The attempt's archive document path (`diff_ref`; none for a job).
    pub document: Option<String>,
    /// When it landed (the attempt's row, the job's outcome).
    pub at: Timestamp,
}

/// A candidate skill proposed from a source, with its body document.
#[derive(Clone, Debug, PartialEq)]
pub struct ProposedSkill {
    /// The row (status `candidate`, version 1, no credit).
    pub row: SkillRow,
    /// The source attempt, for an attempt.
    pub source_attempt: Option<String>,
    /// The source job, for a job.
    pub source_job: Option<String>,
    /// The declared termination test.
    pub termination_test: Option<String>,
    /// The declared composition interface.
    pub composition_interface: Option<String>,
    /// The body document (created; a document already at its path refuses the unit).
    pub body: DocumentWrite,
    /// The settings key that marks the source declined.
    pub spent_key: String,
    /// When set, the unit also sets `spent_key` to this value (the new skill's id): a
    /// repository copy read back spends its content by being inserted, so the same edit is a
    /// candidate once. `None` leaves the key to a decline.
    pub spent_value: Option<String>,
    /// Audit rows written in the same transaction.
    pub audits: Vec<AuditEntry>,
}

/// How an insert of a proposal ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proposed {
    /// The row, the document and the audit rows committed.
    Inserted,
    /// The source was spent (a skill names it, or its marker is set): nothing written.
    Spent,
}

/// Sources of skills and the insert of a proposal.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait SkillSourceStore: Send + Sync {
    /// Attempts in status `kept_status` that no skill names as `source_attempt` and whose
    /// `<spent_prefix><id>` setting is unset, oldest first, at most `limit`; with `only`, just
    /// that attempt (if it qualifies).
    async fn kept_attempt_sources(
        &self,
        kept_status: &str,
        spent_prefix: &str,
        only: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<SkillSource>>;
    /// Jobs in status `done_status` whose outcome row has `skill_verdict = verdict`, that no
    /// skill names as `source_job` and whose `<spent_prefix><id>` setting is unset, oldest
    /// outcome first, at most `limit`; with `only`, just that job (if it qualifies).
    async fn verified_job_sources(
        &self,
        done_status: &str,
        verdict: &str,
        spent_prefix: &str,
        only: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<SkillSource>>;
    /// In one transaction: unless the source is spent (a skill names it, or `spent_key` is
    /// set), inserts the row, creates the body document, sets `spent_key` to `spent_value`
    /// when given (a race on it is a conflict) and writes the audit rows. `Spent`
    /// writes nothing; a failure (a document already at the path: a conflict) writes nothing.
    async fn insert_proposed_skill(&self, proposal: ProposedSkill) -> StoreResult<Proposed>;
}
