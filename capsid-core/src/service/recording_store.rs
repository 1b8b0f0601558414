//! A store that refuses every call and records which port methods were asked: service tests of
//! the one check run against it, so a refusal that touched storage (read or write) is seen,
//! and a call that got through is counted. Successful paths are covered by the end-to-end
//! tests against the real stores.

use async_trait::async_trait;

use crate::docs::document::{Document, DocumentSummary};
use crate::jobs::Job;
use crate::jobs::outcome::OutcomeRow;
use crate::ports::*;
use crate::time::Timestamp;

/// Answers every call with a backend error, recording the method's name.
#[derive(Debug, Default)]
pub struct RecordingStore {
    touches: std::sync::Mutex<Vec<&'static str>>,
}

impl RecordingStore {
    fn touched(&self, method: &'static str) -> StoreError {
        self.touches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(method);
        StoreError::Backend(format!(
            "recording store: {method} is not wired in this test"
        ))
    }

    /// The methods asked so far, in order.
    pub fn touches(&self) -> Vec<&'static str> {
        self.touches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[async_trait]
impl DocumentStore for RecordingStore {
    async fn document(&self, _namespace: &str, _path: &str) -> StoreResult<Option<Document>> {
        Err(self.touched("document"))
    }
    async fn last_actor(&self, _namespace: &str, _path: &str) -> StoreResult<Option<String>> {
        Err(self.touched("last_actor"))
    }
    async fn document_with_actor(
        &self,
        _namespace: &str,
        _path: &str,
    ) -> StoreResult<Option<DocWithActor>> {
        Err(self.touched("document_with_actor"))
    }
    async fn list_documents(
        &self,
        _filter: &DocFilter,
        _limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        Err(self.touched("list_documents"))
    }
    async fn find_documents(
        &self,
        _namespace: Option<&str>,
        _glob: &str,
        _limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        Err(self.touched("find_documents"))
    }
    async fn search_documents(
        &self,
        _query: &str,
        _namespace: Option<&str>,
        _doc_type: Option<&str>,
        _limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        Err(self.touched("search_documents"))
    }
    async fn versions(
        &self,
        _namespace: &str,
        _path: &str,
        _limit: usize,
    ) -> StoreResult<Vec<VersionSummary>> {
        Err(self.touched("versions"))
    }
    async fn version(
        &self,
        _id: i64,
        _namespace: &str,
        _path: &str,
    ) -> StoreResult<Option<VersionRow>> {
        Err(self.touched("version"))
    }
    async fn backlinks(&self, _namespace: &str, _path: &str) -> StoreResult<Backlinks> {
        Err(self.touched("backlinks"))
    }
    async fn documents_exist(&self, _refs: &[(String, String)]) -> StoreResult<Vec<bool>> {
        Err(self.touched("documents_exist"))
    }
    async fn read_packet(&self, _packet: &Packet) -> StoreResult<PacketRows> {
        Err(self.touched("read_packet"))
    }
    async fn page_documents(
        &self,
        _namespaces: Option<&[String]>,
        _doc_type: Option<&str>,
        _after: Option<(&str, &str)>,
        _limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        Err(self.touched("page_documents"))
    }
    async fn write_document(
        &self,
        _write: DocumentWrite,
        _guard: WriteGuard,
        _audit: Vec<AuditEntry>,
    ) -> StoreResult<WriteReceipt> {
        Err(self.touched("write_document"))
    }
    async fn delete_document(
        &self,
        _namespace: &str,
        _path: &str,
        _expected_body: Option<&str>,
        _audit: AuditEntry,
    ) -> StoreResult<Vec<(String, String, String, String, String)>> {
        Err(self.touched("delete_document"))
    }
    async fn move_document(
        &self,
        _namespace: &str,
        _from: &str,
        _to: &str,
        _expected_body: Option<&str>,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<u64> {
        Err(self.touched("move_document"))
    }
    async fn archive_documents(
        &self,
        _namespace: &str,
        _moves: &[(String, String)],
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<u64> {
        Err(self.touched("archive_documents"))
    }
}

#[async_trait]
impl NamespaceStore for RecordingStore {
    async fn namespaces(&self) -> StoreResult<Vec<NamespaceRow>> {
        Err(self.touched("namespaces"))
    }
    async fn namespace(&self, _name: &str) -> StoreResult<Option<NamespaceRow>> {
        Err(self.touched("namespace"))
    }
    async fn register_namespace(
        &self,
        _name: &str,
        _repos_json: &str,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<()> {
        Err(self.touched("register_namespace"))
    }
    async fn update_namespace(
        &self,
        _name: &str,
        _repos_json: &str,
        _audit: AuditEntry,
    ) -> StoreResult<Option<String>> {
        Err(self.touched("update_namespace"))
    }
    async fn set_namespace_runner(
        &self,
        _name: &str,
        _runner_json: Option<String>,
        _audit: AuditEntry,
    ) -> StoreResult<Option<String>> {
        Err(self.touched("set_namespace_runner"))
    }
}

#[async_trait]
impl AuditLog for RecordingStore {
    async fn append_audit(&self, _entry: AuditEntry) -> StoreResult<()> {
        Err(self.touched("append_audit"))
    }
    async fn recent_audit(
        &self,
        _filter: &AuditFilter,
        _limit: usize,
    ) -> StoreResult<Vec<AuditRow>> {
        Err(self.touched("recent_audit"))
    }
    async fn newest_audit(
        &self,
        _action: &str,
        _namespace: &str,
        _path: &str,
    ) -> StoreResult<Option<AuditRow>> {
        Err(self.touched("newest_audit"))
    }
}

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
impl AgentStore for RecordingStore {
    async fn agent_by_key_hash(&self, _key_hash: &str) -> StoreResult<Option<AgentRow>> {
        Err(self.touched("agent_by_key_hash"))
    }
    async fn agent_by_name(&self, _name: &str) -> StoreResult<Option<AgentRow>> {
        Err(self.touched("agent_by_name"))
    }
    async fn agents(&self) -> StoreResult<Vec<AgentRow>> {
        Err(self.touched("agents"))
    }
    async fn touch_agent(&self, _id: &str, _at: Timestamp) -> StoreResult<()> {
        Err(self.touched("touch_agent"))
    }
    async fn mint_agent(&self, _agent: NewAgent, _audit: AuditEntry) -> StoreResult<AgentRow> {
        Err(self.touched("mint_agent"))
    }
    async fn revoke_agent(
        &self,
        _id: &str,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        Err(self.touched("revoke_agent"))
    }
    async fn rescope_agent(
        &self,
        _id: &str,
        _expected_scopes: &str,
        _scopes: &str,
        _audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        Err(self.touched("rescope_agent"))
    }
}

#[async_trait]
impl JobStore for RecordingStore {
    async fn post_job(
        &self,
        _job: NewJob,
        _audit: AuditEntry,
        _mirror: MirrorFn,
    ) -> StoreResult<Job> {
        Err(self.touched("post_job"))
    }
    async fn job(&self, _id: &str) -> StoreResult<Option<Job>> {
        Err(self.touched("job"))
    }
    async fn held_job(&self, _actor: &str) -> StoreResult<Option<Job>> {
        Err(self.touched("held_job"))
    }
    async fn jobs(&self, _filter: &JobFilter, _limit: usize) -> StoreResult<Vec<Job>> {
        Err(self.touched("jobs"))
    }
    async fn job_counts(&self, _namespace: &str, _day_start: Timestamp) -> StoreResult<JobCounts> {
        Err(self.touched("job_counts"))
    }
    async fn job_status_counts(&self) -> StoreResult<Vec<StatusCount>> {
        Err(self.touched("job_status_counts"))
    }
    async fn claim_job(&self, _request: ClaimRequest<'_>) -> StoreResult<ClaimOutcome> {
        Err(self.touched("claim_job"))
    }
    async fn transition_job(&self, _transition: JobTransition) -> StoreResult<Option<Job>> {
        Err(self.touched("transition_job"))
    }
    async fn sweep_expired_leases(
        &self,
        _now: Timestamp,
        _audit: &SweepAuditFn,
        _mirror: MirrorFn,
    ) -> StoreResult<Vec<Job>> {
        Err(self.touched("sweep_expired_leases"))
    }
    async fn outcomes(&self, _agent: Option<&str>) -> StoreResult<Vec<OutcomeRow>> {
        Err(self.touched("outcomes"))
    }
}

#[async_trait]
impl SettingsStore for RecordingStore {
    async fn setting(&self, _key: &str, _now: Timestamp) -> StoreResult<Option<String>> {
        Err(self.touched("setting"))
    }
    async fn put_setting(
        &self,
        _key: &str,
        _value: &str,
        _expires_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        Err(self.touched("put_setting"))
    }
    async fn delete_setting(&self, _key: &str) -> StoreResult<()> {
        Err(self.touched("delete_setting"))
    }
    async fn change_settings(
        &self,
        _changes: &[SettingChange],
        _audit: AuditEntry,
        _now: Timestamp,
    ) -> StoreResult<bool> {
        Err(self.touched("change_settings"))
    }
    async fn change_settings_audited(
        &self,
        _changes: &[SettingChange],
        _audits: &[AuditEntry],
        _now: Timestamp,
    ) -> StoreResult<bool> {
        Err(self.touched("change_settings_audited"))
    }
    async fn compare_and_set_setting(
        &self,
        _key: &str,
        _expected: Option<&str>,
        _new: Option<&str>,
        _expires_at: Option<Timestamp>,
        _now: Timestamp,
    ) -> StoreResult<bool> {
        Err(self.touched("compare_and_set_setting"))
    }
    async fn claim_nonce(&self, _scope: &str, _jti: &str, _at: Timestamp) -> StoreResult<bool> {
        Err(self.touched("claim_nonce"))
    }
}

#[async_trait]
impl LeaderLease for RecordingStore {
    async fn acquire_lease(
        &self,
        _name: &str,
        _holder: &str,
        _now: Timestamp,
        _until: Timestamp,
    ) -> StoreResult<bool> {
        Err(self.touched("acquire_lease"))
    }
    async fn release_lease(&self, _name: &str, _holder: &str) -> StoreResult<()> {
        Err(self.touched("release_lease"))
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
impl StoreHealth for RecordingStore {
    async fn ping(&self) -> StoreResult<()> {
        Err(self.touched("ping"))
    }
    async fn fts_probe(&self, _term: &str) -> StoreResult<u64> {
        Err(self.touched("fts_probe"))
    }
    async fn schema_version(&self) -> StoreResult<Option<String>> {
        Err(self.touched("schema_version"))
    }
    fn newest_migration(&self) -> Option<String> {
        None
    }
}

#[async_trait]
impl OAuthStore for RecordingStore {
    async fn insert_client(&self, _client: OAuthClientRow) -> StoreResult<()> {
        Err(self.touched("insert_client"))
    }
    async fn client(
        &self,
        _client_id: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<OAuthClientRow>> {
        Err(self.touched("client"))
    }
    async fn bump_counter(
        &self,
        _key: &str,
        _now: Timestamp,
        _expires_at: Timestamp,
    ) -> StoreResult<u64> {
        Err(self.touched("bump_counter"))
    }
    async fn put_login_state(&self, _state: LoginStateRow) -> StoreResult<()> {
        Err(self.touched("put_login_state"))
    }
    async fn login_state(
        &self,
        _state_hash: &str,
        _purpose: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>> {
        Err(self.touched("login_state"))
    }
    async fn take_login_state(
        &self,
        _state_hash: &str,
        _purpose: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>> {
        Err(self.touched("take_login_state"))
    }
    async fn approve_client(
        &self,
        _tag: &str,
        _client_id: &str,
        _at: Timestamp,
        _expires_at: Timestamp,
    ) -> StoreResult<()> {
        Err(self.touched("approve_client"))
    }
    async fn approval(&self, _tag: &str, _now: Timestamp) -> StoreResult<bool> {
        Err(self.touched("approval"))
    }
    async fn insert_code(&self, _code: CodeRow) -> StoreResult<()> {
        Err(self.touched("insert_code"))
    }
    async fn code(&self, _code_hash: &str) -> StoreResult<Option<CodeRow>> {
        Err(self.touched("code"))
    }
    async fn redeem_code(
        &self,
        _code_hash: &str,
        _now: Timestamp,
        _grant: NewGrant,
        _tokens: Vec<NewToken>,
        _client_expires_at: Timestamp,
    ) -> StoreResult<Redemption> {
        Err(self.touched("redeem_code"))
    }
    async fn token(&self, _token_hash: &str) -> StoreResult<Option<TokenRow>> {
        Err(self.touched("token"))
    }
    async fn rotate_refresh(
        &self,
        _token_hash: &str,
        _now: Timestamp,
        _tokens: Vec<NewToken>,
        _client_expires_at: Timestamp,
    ) -> StoreResult<Rotation> {
        Err(self.touched("rotate_refresh"))
    }
    async fn revoke_grant(&self, _grant_id: &str, _now: Timestamp) -> StoreResult<()> {
        Err(self.touched("revoke_grant"))
    }
    async fn revoke_all_grants(
        &self,
        _now: Timestamp,
        _audit: &(dyn Fn(u64) -> AuditEntry + Send + Sync),
    ) -> StoreResult<u64> {
        Err(self.touched("revoke_all_grants"))
    }
    async fn insert_console_session(&self, _session: ConsoleSessionRow) -> StoreResult<()> {
        Err(self.touched("insert_console_session"))
    }
    async fn console_session(
        &self,
        _session_hash: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<ConsoleSessionRow>> {
        Err(self.touched("console_session"))
    }
    async fn end_console_session(&self, _session_hash: &str, _now: Timestamp) -> StoreResult<bool> {
        Err(self.touched("end_console_session"))
    }
    async fn end_console_sessions(&self, _now: Timestamp) -> StoreResult<u64> {
        Err(self.touched("end_console_sessions"))
    }
    async fn purge_expired_oauth(&self, _now: Timestamp) -> StoreResult<u64> {
        Err(self.touched("purge_expired_oauth"))
    }
}

#[async_trait]
impl StoreGauges for RecordingStore {
    async fn job_gauges(&self, _now: Timestamp) -> StoreResult<Vec<JobGaugeRow>> {
        Err(self.touched("job_gauges"))
    }
    fn pool_usage(&self) -> Vec<PoolUsage> {
        self.touched("pool_usage");
        Vec::new()
    }
}

#[async_trait]
impl BackupStore for RecordingStore {
    fn engine(&self) -> &'static str {
        "recording"
    }
    async fn export_tables(
        &self,
        _tables: &[&'static crate::backup::tables::TableSpec],
        _page_rows: usize,
        _sink: &mut dyn DumpSink,
    ) -> Result<(), TransferError> {
        Err(self.touched("export_tables").into())
    }
    async fn count_rows(
        &self,
        _tables: &[&'static crate::backup::tables::TableSpec],
    ) -> StoreResult<Vec<u64>> {
        Err(self.touched("count_rows"))
    }
    async fn import_tables(&self, _source: &mut dyn RowSource) -> Result<u64, TransferError> {
        Err(self.touched("import_tables").into())
    }
    async fn prune_history(
        &self,
        _cutoffs: crate::backup::retention::PruneCutoffs,
    ) -> StoreResult<Pruned> {
        Err(self.touched("prune_history"))
    }
}

#[async_trait]
impl CheckmarkStore for RecordingStore {
    async fn checkpoint(
        &self,
        _checkpoint: NewCheckpoint,
        _audit: CheckpointAuditFn,
    ) -> StoreResult<CheckmarkView> {
        Err(self.touched("checkpoint"))
    }
    async fn checkmark(
        &self,
        _namespace: &str,
        _agent: &str,
    ) -> StoreResult<Option<CheckmarkView>> {
        Err(self.touched("checkmark"))
    }
    async fn checkmarks(&self, _namespace: &str, _limit: usize) -> StoreResult<Vec<CheckmarkView>> {
        Err(self.touched("checkmarks"))
    }
    async fn log_entries(
        &self,
        _namespace: &str,
        _agent: &str,
        _before: Option<i64>,
        _limit: usize,
    ) -> StoreResult<Vec<LogEntryRow>> {
        Err(self.touched("log_entries"))
    }
    async fn global_entries(
        &self,
        _namespace: Option<&str>,
        _before: Option<i64>,
        _limit: usize,
    ) -> StoreResult<Vec<LogEntryRow>> {
        Err(self.touched("global_entries"))
    }
    async fn transition_checkmark(
        &self,
        _transition: CheckmarkTransition,
    ) -> StoreResult<Option<CheckmarkView>> {
        Err(self.touched("transition_checkmark"))
    }
    async fn shared_entry(&self, _key: &str) -> StoreResult<Option<SharedEntry>> {
        Err(self.touched("shared_entry"))
    }
    async fn shared_entries(&self, _limit: usize) -> StoreResult<Vec<SharedEntry>> {
        Err(self.touched("shared_entries"))
    }
    async fn set_shared(
        &self,
        _entry: SharedEntry,
        _audit: AuditEntry,
    ) -> StoreResult<Option<SharedEntry>> {
        Err(self.touched("set_shared"))
    }
    async fn delete_shared(
        &self,
        _key: &str,
        _audit: AuditEntry,
    ) -> StoreResult<Option<SharedEntry>> {
        Err(self.touched("delete_shared"))
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
