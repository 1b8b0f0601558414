//! The `AgentStore` port: lookups, and mint, revoke and re-scope as keyed changes audited
//! in the same transaction.

use async_trait::async_trait;
use capsid_core::ports::{AgentRow, AgentStore, AuditEntry, NewAgent, StoreError, StoreResult};
use capsid_core::time::Timestamp;
use sqlx::PgPool;

use crate::PgStore;
use crate::audit;
use crate::error::{TxError, always, finish, translate, unique_violation, with_retry};
use crate::rows::{self, agent_cols};

pub(crate) const BY_KEY_HASH: &str =
    concat!("SELECT ", agent_cols!(), " FROM agents WHERE key_hash = $1");
const BY_NAME: &str = concat!("SELECT ", agent_cols!(), " FROM agents WHERE name = $1");
const ALL: &str = concat!(
    "SELECT ",
    agent_cols!(),
    " FROM agents ORDER BY created_at DESC, name"
);
const TOUCH: &str = "UPDATE agents SET last_seen = $2 WHERE id = $1";
const MINT: &str = concat!(
    "INSERT INTO agents (id, name, kind, key_hash, scopes, created_by, created_at) ",
    "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ",
    agent_cols!()
);
const REVOKE: &str = concat!(
    "UPDATE agents SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING ",
    agent_cols!()
);
const RESCOPE: &str = concat!(
    "UPDATE agents SET scopes = $3 WHERE id = $1 AND revoked_at IS NULL AND scopes = $2 RETURNING ",
    agent_cols!()
);

async fn one(pool: &PgPool, sql: &'static str, key: &str) -> StoreResult<Option<AgentRow>> {
    let row = sqlx::query(sql)
        .bind(key)
        .fetch_optional(pool)
        .await
        .map_err(translate)?;
    row.as_ref().map(rows::agent).transpose().map_err(translate)
}

/// Names the column a mint collided on.
fn mint_conflict(error: sqlx::Error, agent: &NewAgent) -> TxError {
    let what = match unique_violation(&error) {
        Some("agents_name_key") => format!(
            "an agent named '{}' exists (names are never reused)",
            agent.name
        ),
        Some("agents_key_hash_key") => "an agent with this key hash exists".to_owned(),
        Some("agents_pkey") => format!("an agent with id '{}' exists", agent.id),
        _ => return TxError::Db(error),
    };
    TxError::Store(StoreError::Conflict(what))
}

#[async_trait]
impl AgentStore for PgStore {
    async fn agent_by_key_hash(&self, key_hash: &str) -> StoreResult<Option<AgentRow>> {
        one(&self.pool, BY_KEY_HASH, key_hash).await
    }

    async fn agent_by_name(&self, name: &str) -> StoreResult<Option<AgentRow>> {
        one(&self.pool, BY_NAME, name).await
    }

    async fn agents(&self) -> StoreResult<Vec<AgentRow>> {
        let rows = sqlx::query(ALL)
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(rows::agent)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn touch_agent(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        sqlx::query(TOUCH)
            .bind(id)
            .bind(at.to_string())
            .execute(&self.pool)
            .await
            .map_err(translate)?;
        Ok(())
    }

    async fn mint_agent(&self, agent: NewAgent, audit: AuditEntry) -> StoreResult<AgentRow> {
        let pool = &self.pool;
        let (agent, audit) = (&agent, &audit);
        let at = agent.at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let row = sqlx::query(MINT)
                        .bind(&agent.id)
                        .bind(&agent.name)
                        .bind(agent.kind.name())
                        .bind(&agent.key_hash)
                        .bind(&agent.scopes)
                        .bind(&agent.created_by)
                        .bind(at)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(|e| mint_conflict(e, agent))?;
                    let minted = rows::agent(&row)?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(minted)
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn revoke_agent(
        &self,
        id: &str,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        let pool = &self.pool;
        let audit = &audit;
        let at = at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let row = sqlx::query(REVOKE)
                        .bind(id)
                        .bind(at)
                        .fetch_optional(&mut *tx)
                        .await?;
                    let Some(row) = row else { return Ok(None) };
                    let revoked = rows::agent(&row)?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(Some(revoked))
                }
                .await;
                finish(tx, result, Option::is_some).await
            })
        })
        .await
    }

    async fn rescope_agent(
        &self,
        id: &str,
        expected_scopes: &str,
        scopes: &str,
        audit: AuditEntry,
    ) -> StoreResult<Option<AgentRow>> {
        let pool = &self.pool;
        let audit = &audit;
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    let row = sqlx::query(RESCOPE)
                        .bind(id)
                        .bind(expected_scopes)
                        .bind(scopes)
                        .fetch_optional(&mut *tx)
                        .await?;
                    let Some(row) = row else { return Ok(None) };
                    let rescoped = rows::agent(&row)?;
                    audit::insert(&mut tx, audit).await?;
                    Ok(Some(rescoped))
                }
                .await;
                finish(tx, result, Option::is_some).await
            })
        })
        .await
    }
}
