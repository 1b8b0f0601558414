//! The recording store's refusing stubs of the owner's ports: OAuth, backups and
//! checkmarks.

use async_trait::async_trait;

use super::RecordingStore;
use crate::ports::*;
use crate::time::Timestamp;

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
