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

mod improve;
mod owner;

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
    async fn namespace_exists(&self, _name: &str) -> StoreResult<bool> {
        Err(self.touched("namespace_exists"))
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
impl StoreGauges for RecordingStore {
    async fn job_gauges(&self, _now: Timestamp) -> StoreResult<Vec<JobGaugeRow>> {
        Err(self.touched("job_gauges"))
    }
    fn pool_usage(&self) -> Vec<PoolUsage> {
        self.touched("pool_usage");
        Vec::new()
    }
}
