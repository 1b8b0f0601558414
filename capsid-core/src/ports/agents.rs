//! The agent credential port: lookup by key hash, mint, revoke and re-scope, each change
//! audited in the same transaction.

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::caller::AgentKind;
use crate::time::Timestamp;

/// An `agents` row. `key_hash` is the SHA-256 of the key; the key itself is never stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRow {
    /// `agent_` + 12 hex.
    pub id: String,
    /// Unique across all rows, revoked included.
    pub name: String,
    /// `session`, `driver`, `seat` or `cron`.
    pub kind: AgentKind,
    /// SHA-256 hex of the key.
    pub key_hash: String,
    /// Stored scopes JSON (parsed fail-closed by [`crate::scope::Scopes::parse`]).
    pub scopes: String,
    /// Actor who minted it.
    pub created_by: String,
    /// When minted.
    pub created_at: Timestamp,
    /// When revoked, if revoked.
    pub revoked_at: Option<Timestamp>,
    /// Last authenticated call.
    pub last_seen: Option<Timestamp>,
}

/// A new agent to insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewAgent {
    /// `agent_` + 12 hex.
    pub id: String,
    /// Unique name.
    pub name: String,
    /// Kind.
    pub kind: AgentKind,
    /// SHA-256 hex of the key.
    pub key_hash: String,
    /// Scopes JSON.
    pub scopes: String,
    /// Minting actor.
    pub created_by: String,
    /// When.
    pub at: Timestamp,
}

/// Agent credentials.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait AgentStore: Send + Sync {
    /// The row whose key hash is `key_hash`, revoked or not (a revoked key must be
    /// recognised so that it never falls through to operator keys).
    async fn agent_by_key_hash(&self, key_hash: &str) -> StoreResult<Option<AgentRow>>;
    /// The row named `name`, revoked or not.
    async fn agent_by_name(&self, name: &str) -> StoreResult<Option<AgentRow>>;
    /// Every row, revoked included, newest first then by name.
    async fn agents(&self) -> StoreResult<Vec<AgentRow>>;
    /// Best-effort `last_seen` stamp.
    async fn touch_agent(&self, id: &str, at: Timestamp) -> StoreResult<()>;
    /// Inserts the agent and its audit row; `Conflict` if the name (ever used) or the key hash
    /// exists.
    async fn mint_agent(&self, agent: NewAgent, audit: AuditEntry) -> StoreResult<AgentRow>;
    /// `UPDATE ... SET revoked_at WHERE id = ? AND revoked_at IS NULL RETURNING`; `None` when
    /// somebody else revoked it first. Audited in the same transaction.
    async fn revoke_agent(
        &self,
        id: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>>;
    /// Keyed update of a live agent's scopes, only if they still equal `expected_scopes`;
    /// `None` when the row changed or was revoked meanwhile. Audited in the same transaction.
    async fn rescope_agent(
        &self,
        id: &str,
        expected_scopes: &str,
        scopes: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>>;
}
