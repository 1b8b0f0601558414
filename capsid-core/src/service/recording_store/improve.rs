//! The recording store's refusing stubs of the improve loop's ports: runs and attempts,
//! reviews, run totals, skills and their sources, and CI records.

use async_trait::async_trait;

use super::RecordingStore;
use crate::ports::*;
use crate::time::Timestamp;

#[async_trait]
impl RunStore for RecordingStore {
    async fn open_run(&self, _run: NewRun, _audit: AuditEntry) -> StoreResult<RunOpened> {
        Err(self.touched("open_run"))
    }
    async fn add_attempt(
        &self,
        _attempt: NewAttempt,
        _run: RunUpdate,
        _audit: AuditEntry,
    ) -> StoreResult<Advanced> {
        Err(self.touched("add_attempt"))
    }
    async fn advance(&self, _advance: Advance) -> StoreResult<Advanced> {
        Err(self.touched("advance"))
    }
    async fn run(&self, _id: &str) -> StoreResult<Option<RunRow>> {
        Err(self.touched("run"))
    }
    async fn live_run(&self, _namespace: &str) -> StoreResult<Option<RunRow>> {
        Err(self.touched("live_run"))
    }
    async fn runs(&self, _namespace: Option<&str>, _limit: usize) -> StoreResult<Vec<RunRow>> {
        Err(self.touched("runs"))
    }
    async fn attempt(&self, _id: &str) -> StoreResult<Option<AttemptRow>> {
        Err(self.touched("attempt"))
    }
    async fn attempts(&self, _run_id: &str) -> StoreResult<Vec<AttemptRow>> {
        Err(self.touched("attempts"))
    }
    async fn scores(&self, _run_id: &str, _attempt_id: Option<&str>) -> StoreResult<Vec<ScoreRow>> {
        Err(self.touched("scores"))
    }
}

#[async_trait]
impl ReviewStore for RecordingStore {
    async fn record_review(&self, _review: NewReview, _audit: AuditEntry) -> StoreResult<()> {
        Err(self.touched("record_review"))
    }
    async fn reviews(
        &self,
        _repo: &str,
        _number: u64,
        _limit: usize,
    ) -> StoreResult<Vec<ReviewRow>> {
        Err(self.touched("reviews"))
    }
    async fn head_reviews(
        &self,
        _namespace: &str,
        _head_sha: &str,
        _limit: usize,
    ) -> StoreResult<Vec<ReviewRow>> {
        Err(self.touched("head_reviews"))
    }
}

#[async_trait]
impl ImproveStore for RecordingStore {
    async fn run_totals(&self, _since: Option<Timestamp>) -> StoreResult<Vec<ImproveRunTotals>> {
        Err(self.touched("run_totals"))
    }
}

#[async_trait]
impl SkillStore for RecordingStore {
    async fn insert_skill(
        &self,
        _skill: SkillRow,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<()> {
        Err(self.touched("insert_skill"))
    }
    async fn skills(&self, _status: Option<&str>) -> StoreResult<Vec<SkillRow>> {
        Err(self.touched("skills"))
    }
    async fn record_evaluation(
        &self,
        _evaluation: SkillEvaluationRow,
        _audit: AuditEntry,
    ) -> StoreResult<()> {
        Err(self.touched("record_evaluation"))
    }
    async fn accept_skill_edit(
        &self,
        _edit: SkillEditRow,
        _body: DocumentWrite,
        _audit: AuditEntry,
    ) -> StoreResult<bool> {
        Err(self.touched("accept_skill_edit"))
    }
    async fn evaluations(&self, _skill: &str) -> StoreResult<Vec<SkillEvaluationRow>> {
        Err(self.touched("evaluations"))
    }
    async fn set_skill_status(
        &self,
        _skill: &str,
        _from: &str,
        _to: &str,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<bool> {
        Err(self.touched("set_skill_status"))
    }
    async fn skill(&self, _id: &str) -> StoreResult<Option<SkillRow>> {
        Err(self.touched("skill"))
    }
    async fn record_skill_edit(&self, _edit: SkillEditRow, _audit: AuditEntry) -> StoreResult<()> {
        Err(self.touched("record_skill_edit"))
    }
    async fn skill_edits(&self, _skill: &str, _limit: usize) -> StoreResult<Vec<SkillEditRow>> {
        Err(self.touched("skill_edits"))
    }
    async fn record_skill_failure(
        &self,
        _failure: SkillFailureRow,
        _audit: AuditEntry,
    ) -> StoreResult<()> {
        Err(self.touched("record_skill_failure"))
    }
    async fn skill_failures(
        &self,
        _skill: &str,
        _limit: usize,
    ) -> StoreResult<Vec<SkillFailureRow>> {
        Err(self.touched("skill_failures"))
    }
    async fn credit_skill(
        &self,
        _skill: &str,
        _win: bool,
        _audit: AuditEntry,
    ) -> StoreResult<bool> {
        Err(self.touched("credit_skill"))
    }
    async fn last_evaluation(&self, _namespace: &str) -> StoreResult<Option<SkillEvaluationRow>> {
        Err(self.touched("last_evaluation"))
    }
    async fn skill_offers(
        &self,
        _namespace: &str,
        _limit: usize,
    ) -> StoreResult<Vec<SkillOfferRow>> {
        Err(self.touched("skill_offers"))
    }
}

#[async_trait]
impl crate::ports::CiStore for RecordingStore {
    async fn pending_ci(&self, _limit: usize) -> StoreResult<Vec<crate::ports::PendingCi>> {
        Err(self.touched("pending_ci"))
    }
    async fn record_ci(
        &self,
        _id: i64,
        _status: crate::checkmarks::CiStatus,
        _at: Timestamp,
        _audit: Option<AuditEntry>,
    ) -> StoreResult<bool> {
        Err(self.touched("record_ci"))
    }
}

#[async_trait]
impl SkillSourceStore for RecordingStore {
    async fn kept_attempt_sources(
        &self,
        _kept_status: &str,
        _spent_prefix: &str,
        _only: Option<&str>,
        _limit: usize,
    ) -> StoreResult<Vec<SkillSource>> {
        Err(self.touched("kept_attempt_sources"))
    }
    async fn verified_job_sources(
        &self,
        _done_status: &str,
        _verdict: &str,
        _spent_prefix: &str,
        _only: Option<&str>,
        _limit: usize,
    ) -> StoreResult<Vec<SkillSource>> {
        Err(self.touched("verified_job_sources"))
    }
    async fn insert_proposed_skill(&self, _proposal: ProposedSkill) -> StoreResult<Proposed> {
        Err(self.touched("insert_proposed_skill"))
    }
}
