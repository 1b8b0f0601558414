//! A store that fails the test on any call: service tests of refusals run against it, so a
//! refusal that touched storage (read or write) fails loudly. Successful paths are covered by
//! the end-to-end tests against the real stores.

use async_trait::async_trait;

use crate::docs::document::{Document, DocumentSummary};
use crate::jobs::Job;
use crate::jobs::outcome::OutcomeRow;
use crate::ports::*;
use crate::time::Timestamp;

/// Panics on any call.
#[derive(Debug, Default)]
pub struct UntouchableStore;

fn touched(method: &str) -> ! {
    panic!("the store was touched ({method}) by a call that must be refused before any store call")
}

#[async_trait]
impl DocumentStore for UntouchableStore {
    async fn document(&self, _namespace: &str, _path: &str) -> StoreResult<Option<Document>> {
        touched("document")
    }
    async fn last_actor(&self, _namespace: &str, _path: &str) -> StoreResult<Option<String>> {
        touched("last_actor")
    }
    async fn list_documents(
        &self,
        _filter: &DocFilter,
        _limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        touched("list_documents")
    }
    async fn find_documents(
        &self,
        _namespace: Option<&str>,
        _glob: &str,
        _limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        touched("find_documents")
    }
    async fn search_documents(
        &self,
        _query: &str,
        _namespace: Option<&str>,
        _doc_type: Option<&str>,
        _limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        touched("search_documents")
    }
    async fn versions(
        &self,
        _namespace: &str,
        _path: &str,
        _limit: usize,
    ) -> StoreResult<Vec<VersionSummary>> {
        touched("versions")
    }
    async fn version(
        &self,
        _id: i64,
        _namespace: &str,
        _path: &str,
    ) -> StoreResult<Option<VersionRow>> {
        touched("version")
    }
    async fn backlinks(&self, _namespace: &str, _path: &str) -> StoreResult<Backlinks> {
        touched("backlinks")
    }
    async fn documents_exist(&self, _refs: &[(String, String)]) -> StoreResult<Vec<bool>> {
        touched("documents_exist")
    }
    async fn brief_rows(&self, _namespace: &str) -> StoreResult<BriefRows> {
        touched("brief_rows")
    }
    async fn lint_rows(&self, _namespace: &str) -> StoreResult<LintRows> {
        touched("lint_rows")
    }
    async fn page_documents(
        &self,
        _namespaces: Option<&[String]>,
        _doc_type: Option<&str>,
        _after: Option<(&str, &str)>,
        _limit: usize,
    ) -> StoreResult<Vec<DocumentSummary>> {
        touched("page_documents")
    }
    async fn write_document(
        &self,
        _write: DocumentWrite,
        _guard: WriteGuard,
        _audit: Vec<AuditEntry>,
    ) -> StoreResult<WriteReceipt> {
        touched("write_document")
    }
    async fn delete_document(
        &self,
        _namespace: &str,
        _path: &str,
        _expected_body: Option<&str>,
        _audit: AuditEntry,
    ) -> StoreResult<Vec<(String, String, String, String, String)>> {
        touched("delete_document")
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
        touched("move_document")
    }
    async fn archive_documents(
        &self,
        _namespace: &str,
        _moves: &[(String, String)],
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<u64> {
        touched("archive_documents")
    }
}

#[async_trait]
impl NamespaceStore for UntouchableStore {
    async fn namespaces(&self) -> StoreResult<Vec<NamespaceRow>> {
        touched("namespaces")
    }
    async fn namespace(&self, _name: &str) -> StoreResult<Option<NamespaceRow>> {
        touched("namespace")
    }
    async fn register_namespace(
        &self,
        _name: &str,
        _repos_json: &str,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<()> {
        touched("register_namespace")
    }
    async fn update_namespace(
        &self,
        _name: &str,
        _repos_json: &str,
        _audit: AuditEntry,
    ) -> StoreResult<Option<String>> {
        touched("update_namespace")
    }
}

#[async_trait]
impl AuditLog for UntouchableStore {
    async fn append_audit(&self, _entry: AuditEntry) -> StoreResult<()> {
        touched("append_audit")
    }
    async fn recent_audit(
        &self,
        _filter: &AuditFilter,
        _limit: usize,
    ) -> StoreResult<Vec<AuditRow>> {
        touched("recent_audit")
    }
}

#[async_trait]
impl AgentStore for UntouchableStore {
    async fn agent_by_key_hash(&self, _key_hash: &str) -> StoreResult<Option<AgentRow>> {
        touched("agent_by_key_hash")
    }
    async fn agent_by_name(&self, _name: &str) -> StoreResult<Option<AgentRow>> {
        touched("agent_by_name")
    }
    async fn agents(&self) -> StoreResult<Vec<AgentRow>> {
        touched("agents")
    }
    async fn touch_agent(&self, _id: &str, _at: Timestamp) -> StoreResult<()> {
        touched("touch_agent")
    }
    async fn mint_agent(&self, _agent: NewAgent, _audit: AuditEntry) -> StoreResult<AgentRow> {
        touched("mint_agent")
    }
    async fn revoke_agent(
        &self,
        _id: &str,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        touched("revoke_agent")
    }
    async fn rescope_agent(
        &self,
        _id: &str,
        _expected_scopes: &str,
        _scopes: &str,
        _audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        touched("rescope_agent")
    }
}

#[async_trait]
impl JobStore for UntouchableStore {
    async fn post_job(
        &self,
        _job: NewJob,
        _audit: AuditEntry,
        _mirror: MirrorFn,
    ) -> StoreResult<Job> {
        touched("post_job")
    }
    async fn job(&self, _id: &str) -> StoreResult<Option<Job>> {
        touched("job")
    }
    async fn held_job(&self, _actor: &str) -> StoreResult<Option<Job>> {
        touched("held_job")
    }
    async fn jobs(&self, _filter: &JobFilter, _limit: usize) -> StoreResult<Vec<Job>> {
        touched("jobs")
    }
    async fn job_counts(&self, _namespace: &str, _day_start: Timestamp) -> StoreResult<JobCounts> {
        touched("job_counts")
    }
    async fn job_status_counts(&self) -> StoreResult<Vec<StatusCount>> {
        touched("job_status_counts")
    }
    async fn claim_job(&self, _request: ClaimRequest<'_>) -> StoreResult<ClaimOutcome> {
        touched("claim_job")
    }
    async fn transition_job(&self, _transition: JobTransition) -> StoreResult<Option<Job>> {
        touched("transition_job")
    }
    async fn sweep_expired_leases(
        &self,
        _now: Timestamp,
        _audit: &SweepAuditFn,
        _mirror: MirrorFn,
    ) -> StoreResult<Vec<Job>> {
        touched("sweep_expired_leases")
    }
    async fn outcomes(&self, _agent: Option<&str>) -> StoreResult<Vec<OutcomeRow>> {
        touched("outcomes")
    }
}

#[async_trait]
impl SettingsStore for UntouchableStore {
    async fn setting(&self, _key: &str, _now: Timestamp) -> StoreResult<Option<String>> {
        touched("setting")
    }
    async fn put_setting(
        &self,
        _key: &str,
        _value: &str,
        _expires_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        touched("put_setting")
    }
    async fn delete_setting(&self, _key: &str) -> StoreResult<()> {
        touched("delete_setting")
    }
    async fn compare_and_set_setting(
        &self,
        _key: &str,
        _expected: Option<&str>,
        _new: Option<&str>,
        _expires_at: Option<Timestamp>,
        _now: Timestamp,
    ) -> StoreResult<bool> {
        touched("compare_and_set_setting")
    }
    async fn claim_nonce(&self, _scope: &str, _jti: &str, _at: Timestamp) -> StoreResult<bool> {
        touched("claim_nonce")
    }
}

#[async_trait]
impl LeaderLease for UntouchableStore {
    async fn acquire_lease(
        &self,
        _name: &str,
        _holder: &str,
        _now: Timestamp,
        _until: Timestamp,
    ) -> StoreResult<bool> {
        touched("acquire_lease")
    }
    async fn release_lease(&self, _name: &str, _holder: &str) -> StoreResult<()> {
        touched("release_lease")
    }
}

#[async_trait]
impl ImproveStore for UntouchableStore {
    async fn run_totals(&self, _since: Option<Timestamp>) -> StoreResult<Vec<ImproveRunTotals>> {
        touched("run_totals")
    }
}

#[async_trait]
impl SkillStore for UntouchableStore {
    async fn insert_skill(
        &self,
        _skill: SkillRow,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<()> {
        touched("insert_skill")
    }
    async fn skills(&self, _status: Option<&str>) -> StoreResult<Vec<SkillRow>> {
        touched("skills")
    }
    async fn record_evaluation(&self, _evaluation: SkillEvaluationRow) -> StoreResult<()> {
        touched("record_evaluation")
    }
    async fn evaluations(&self, _skill: &str) -> StoreResult<Vec<SkillEvaluationRow>> {
        touched("evaluations")
    }
    async fn set_skill_status(
        &self,
        _skill: &str,
        _from: &str,
        _to: &str,
        _at: Timestamp,
        _audit: AuditEntry,
    ) -> StoreResult<bool> {
        touched("set_skill_status")
    }
}

#[async_trait]
impl StoreHealth for UntouchableStore {
    async fn ping(&self) -> StoreResult<()> {
        touched("ping")
    }
    async fn fts_probe(&self, _term: &str) -> StoreResult<u64> {
        touched("fts_probe")
    }
    async fn schema_version(&self) -> StoreResult<Option<String>> {
        touched("schema_version")
    }
}

#[async_trait]
impl OAuthStore for UntouchableStore {
    async fn insert_client(&self, _client: OAuthClientRow) -> StoreResult<()> {
        touched("insert_client")
    }
    async fn client(
        &self,
        _client_id: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<OAuthClientRow>> {
        touched("client")
    }
    async fn bump_counter(
        &self,
        _key: &str,
        _now: Timestamp,
        _expires_at: Timestamp,
    ) -> StoreResult<u64> {
        touched("bump_counter")
    }
    async fn put_login_state(&self, _state: LoginStateRow) -> StoreResult<()> {
        touched("put_login_state")
    }
    async fn login_state(
        &self,
        _state_hash: &str,
        _purpose: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>> {
        touched("login_state")
    }
    async fn take_login_state(
        &self,
        _state_hash: &str,
        _purpose: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<LoginStateRow>> {
        touched("take_login_state")
    }
    async fn approve_client(
        &self,
        _tag: &str,
        _client_id: &str,
        _at: Timestamp,
        _expires_at: Timestamp,
    ) -> StoreResult<()> {
        touched("approve_client")
    }
    async fn approval(&self, _tag: &str, _now: Timestamp) -> StoreResult<bool> {
        touched("approval")
    }
    async fn insert_code(&self, _code: CodeRow) -> StoreResult<()> {
        touched("insert_code")
    }
    async fn code(&self, _code_hash: &str) -> StoreResult<Option<CodeRow>> {
        touched("code")
    }
    async fn redeem_code(
        &self,
        _code_hash: &str,
        _now: Timestamp,
        _grant: NewGrant,
        _tokens: Vec<NewToken>,
        _client_expires_at: Timestamp,
    ) -> StoreResult<Redemption> {
        touched("redeem_code")
    }
    async fn token(&self, _token_hash: &str) -> StoreResult<Option<TokenRow>> {
        touched("token")
    }
    async fn rotate_refresh(
        &self,
        _token_hash: &str,
        _now: Timestamp,
        _tokens: Vec<NewToken>,
        _client_expires_at: Timestamp,
    ) -> StoreResult<Rotation> {
        touched("rotate_refresh")
    }
    async fn revoke_grant(&self, _grant_id: &str, _now: Timestamp) -> StoreResult<()> {
        touched("revoke_grant")
    }
    async fn revoke_all_grants(&self, _now: Timestamp) -> StoreResult<u64> {
        touched("revoke_all_grants")
    }
    async fn insert_console_session(&self, _session: ConsoleSessionRow) -> StoreResult<()> {
        touched("insert_console_session")
    }
    async fn console_session(
        &self,
        _session_hash: &str,
        _now: Timestamp,
    ) -> StoreResult<Option<ConsoleSessionRow>> {
        touched("console_session")
    }
    async fn end_console_session(&self, _session_hash: &str, _now: Timestamp) -> StoreResult<bool> {
        touched("end_console_session")
    }
    async fn end_console_sessions(&self, _now: Timestamp) -> StoreResult<u64> {
        touched("end_console_sessions")
    }
    async fn purge_expired_oauth(&self, _now: Timestamp) -> StoreResult<u64> {
        touched("purge_expired_oauth")
    }
}

#[async_trait]
impl BackupStore for UntouchableStore {
    fn engine(&self) -> &'static str {
        "untouchable"
    }
    async fn export_tables(
        &self,
        _tables: &[&'static crate::backup::tables::TableSpec],
        _page_rows: usize,
        _sink: &mut dyn DumpSink,
    ) -> Result<(), TransferError> {
        touched("export_tables")
    }
    async fn count_rows(
        &self,
        _tables: &[&'static crate::backup::tables::TableSpec],
    ) -> StoreResult<Vec<u64>> {
        touched("count_rows")
    }
    async fn import_tables(&self, _source: &mut dyn RowSource) -> Result<u64, TransferError> {
        touched("import_tables")
    }
    async fn prune_history(
        &self,
        _cutoffs: crate::backup::retention::PruneCutoffs,
    ) -> StoreResult<Pruned> {
        touched("prune_history")
    }
}
