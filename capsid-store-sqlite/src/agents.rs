//! The agent credential port: lookups by key hash and name, mint (row and audit together),
//! keyed revoke and re-scope, and the best-effort `last_seen` stamp.

use async_trait::async_trait;
use capsid_core::ports::{AgentRow, AgentStore, AuditEntry, NewAgent, StoreResult};
use capsid_core::time::Timestamp;

use crate::error::{DbResult, conflict_or_backend};
use crate::rows::{self, agent_columns, insert_audit};
use crate::store::{SqliteStore, commit};

/// Names the uniqueness rule a mint broke, from the driver's message.
fn mint_collision(agent: &NewAgent, message: &str) -> String {
    if message.contains("agents.name") {
        format!(
            "an agent named '{}' exists or existed (names are never reused)",
            agent.name
        )
    } else if message.contains("agents.key_hash") {
        "an agent with this key already exists".to_owned()
    } else if message.contains("agents.id") {
        format!("agent id {} already exists", agent.id)
    } else {
        format!("agent collides with an existing one ({message})")
    }
}

/// An agent row's size as the cache counts it.
fn agent_size(row: &AgentRow) -> usize {
    row.id.len()
        + row.name.len()
        + row.key_hash.len()
        + row.scopes.len()
        + row.created_by.len()
        + 128
}

async fn agent_where(
    store: &SqliteStore,
    sql: &'static str,
    key: &str,
) -> StoreResult<Option<AgentRow>> {
    let row = sqlx::query(sql)
        .bind(key)
        .fetch_optional(store.reader())
        .await
        .db()?;
    row.as_ref().map(rows::agent).transpose().db()
}

/// Runs a keyed `UPDATE ... RETURNING` on an agent and, when it matched, appends `audit` in
/// the same transaction. `None` (nothing written) when the row was not in the expected state.
async fn keyed_agent_update(
    store: &SqliteStore,
    query: sqlx::query::Query<'_, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    audit: &AuditEntry,
) -> StoreResult<Option<AgentRow>> {
    let mut tx = store.begin_write().await?;
    let Some(row) = query.fetch_optional(&mut *tx).await.db()? else {
        return Ok(None);
    };
    let agent = rows::agent(&row).db()?;
    insert_audit(&mut tx, audit).await.db()?;
    commit(tx).await?;
    Ok(Some(agent))
}

#[async_trait]
impl AgentStore for SqliteStore {
    async fn agent_by_key_hash(&self, key_hash: &str) -> StoreResult<Option<AgentRow>> {
        // Every bearer request asks this: answered from memory while the database has not
        // changed since (a revocation, in this process or any other, changes it).
        crate::cache::read_through(
            self.data_version(),
            self.agent_cache(),
            key_hash.to_owned(),
            |key, row| key.len() + row.as_ref().map_or(0, agent_size),
            agent_where(
                self,
                concat!(
                    "SELECT ",
                    agent_columns!(),
                    " FROM agents WHERE key_hash = ?"
                ),
                key_hash,
            ),
        )
        .await
    }

    async fn agent_by_name(&self, name: &str) -> StoreResult<Option<AgentRow>> {
        agent_where(
            self,
            concat!("SELECT ", agent_columns!(), " FROM agents WHERE name = ?"),
            name,
        )
        .await
    }

    async fn agents(&self) -> StoreResult<Vec<AgentRow>> {
        let found = sqlx::query(concat!(
            "SELECT ",
            agent_columns!(),
            " FROM agents ORDER BY created_at DESC, name"
        ))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, rows::agent).db()
    }

    async fn touch_agent(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        // Never moves the stamp backwards; an unknown id is not an error (best effort).
        sqlx::query("UPDATE agents SET last_seen = ?1 WHERE id = ?2 AND (last_seen IS NULL OR last_seen < ?1)")
            .bind(at.to_string())
            .bind(id)
            .execute(self.writer())
            .await
            .db()?;
        Ok(())
    }

    async fn mint_agent(&self, agent: NewAgent, audit: AuditEntry) -> StoreResult<AgentRow> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(concat!(
            "INSERT INTO agents (id, name, kind, key_hash, scopes, created_by, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ",
            agent_columns!()
        ))
        .bind(&agent.id)
        .bind(&agent.name)
        .bind(agent.kind.name())
        .bind(&agent.key_hash)
        .bind(&agent.scopes)
        .bind(&agent.created_by)
        .bind(agent.at.to_string())
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict_or_backend(e, |m| mint_collision(&agent, m)))?;
        let minted = rows::agent(&row).db()?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await?;
        Ok(minted)
    }

    async fn revoke_agent(
        &self,
        id: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        let query = sqlx::query(concat!(
            "UPDATE agents SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING ",
            agent_columns!()
        ))
        .bind(at.to_string())
        .bind(id.to_owned());
        keyed_agent_update(self, query, &audit).await
    }

    async fn rescope_agent(
        &self,
        id: &str,
        expected_scopes: &str,
        scopes: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        let query = sqlx::query(concat!(
            "UPDATE agents SET scopes = ? WHERE id = ? AND revoked_at IS NULL AND scopes = ? RETURNING ",
            agent_columns!()
        ))
        .bind(scopes.to_owned())
        .bind(id.to_owned())
        .bind(expected_scopes.to_owned());
        keyed_agent_update(self, query, &audit).await
    }
}
