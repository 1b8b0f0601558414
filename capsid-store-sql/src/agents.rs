//! The agent credential port: lookups by key hash and name, mint (row and audit together),
//! keyed revoke and re-scope audited in the same unit, and the best-effort `last_seen` stamp.
//! The lookup by key hash, which every bearer request asks, goes through the engine's read
//! cache when it has one ([`Engine::agent_by_key_hash_cached`]).

use capsid_core::caller::AgentKind;
use capsid_core::ports::{AgentRow, AuditEntry, NewAgent, StoreError, StoreResult};
use capsid_core::time::Timestamp;

use crate::engine::in_unit;
use crate::engine::{Engine, TxError, always, read_all};
use crate::row::Row;
use crate::stmt::Stmt;

/// The columns an [`AgentRow`] is read from.
macro_rules! columns {
    () => {
        "id, name, kind, key_hash, scopes, created_by, created_at, revoked_at, last_seen"
    };
}

/// The lookup by key hash (the stores' plan checks explain it).
pub const BY_KEY_HASH: &str = concat!("SELECT ", columns!(), " FROM agents WHERE key_hash = $1");
const BY_NAME: &str = concat!("SELECT ", columns!(), " FROM agents WHERE name = $1");
const ALL: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM agents ORDER BY created_at DESC, name"
);
/// Never moves the stamp backwards; an unknown id is not an error (best effort).
const TOUCH: &str =
    "UPDATE agents SET last_seen = $2 WHERE id = $1 AND (last_seen IS NULL OR last_seen < $2)";
const MINT: &str = concat!(
    "INSERT INTO agents (id, name, kind, key_hash, scopes, created_by, created_at) ",
    "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ",
    columns!()
);
const REVOKE: &str = concat!(
    "UPDATE agents SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING ",
    columns!()
);
const RESCOPE: &str = concat!(
    "UPDATE agents SET scopes = $3 WHERE id = $1 AND revoked_at IS NULL AND scopes = $2 RETURNING ",
    columns!()
);

fn agent_row(row: &Row) -> Result<AgentRow, sqlx::Error> {
    Ok(AgentRow {
        id: row.text("id")?,
        name: row.text("name")?,
        kind: row.word("kind", AgentKind::parse)?,
        key_hash: row.text("key_hash")?,
        scopes: row.text("scopes")?,
        created_by: row.text("created_by")?,
        created_at: row.time("created_at")?,
        revoked_at: row.opt_time("revoked_at")?,
        last_seen: row.opt_time("last_seen")?,
    })
}

/// The uniqueness rule a mint broke, in words (the constraint's name on Postgres, the
/// column in the message on SQLite); `None` for any other error.
fn mint_collision(error: &sqlx::Error, agent: &NewAgent) -> Option<String> {
    let db = error
        .as_database_error()
        .filter(|d| d.is_unique_violation())?;
    let said = db
        .constraint()
        .map_or_else(|| db.message().to_owned(), str::to_owned);
    Some(if said.contains("key_hash") {
        "an agent with this key already exists".to_owned()
    } else if said.contains("name") {
        format!(
            "an agent named '{}' exists or existed (names are never reused)",
            agent.name
        )
    } else {
        format!("an agent with id '{}' already exists", agent.id)
    })
}

/// `AgentStore::agent_by_key_hash`, uncached (what an engine's cache loads).
pub async fn agent_by_key_hash(
    engine: &impl Engine,
    key_hash: &str,
) -> StoreResult<Option<AgentRow>> {
    Ok(
        read_all(engine, Stmt::new(BY_KEY_HASH).bind(key_hash), agent_row)
            .await?
            .pop(),
    )
}

/// `AgentStore::agent_by_name`.
pub async fn agent_by_name(engine: &impl Engine, name: &str) -> StoreResult<Option<AgentRow>> {
    Ok(read_all(engine, Stmt::new(BY_NAME).bind(name), agent_row)
        .await?
        .pop())
}

/// `AgentStore::agents`: newest first.
pub async fn agents(engine: &impl Engine) -> StoreResult<Vec<AgentRow>> {
    read_all(engine, Stmt::new(ALL), agent_row).await
}

/// `AgentStore::touch_agent`.
pub async fn touch_agent(engine: &impl Engine, id: &str, at: Timestamp) -> StoreResult<()> {
    in_unit!(engine, always, |tx| async {
        tx.execute(Stmt::new(TOUCH).bind(id).bind(at)).await?;
        Ok(())
    }
    .await)
}

/// `AgentStore::mint_agent`: `Conflict` naming the rule a collision broke.
pub async fn mint_agent(
    engine: &impl Engine,
    agent: NewAgent,
    audit: AuditEntry,
) -> StoreResult<AgentRow> {
    let (agent, audit) = (&agent, &audit);
    in_unit!(engine, always, |tx| async {
        let stmt = Stmt::new(MINT)
            .bind(&agent.id)
            .bind(&agent.name)
            .bind(agent.kind.name())
            .bind(&agent.key_hash)
            .bind(&agent.scopes)
            .bind(&agent.created_by)
            .bind(agent.at);
        let row = match tx.fetch_optional(stmt).await {
            Ok(row) => row,
            Err(e) => {
                return Err(match mint_collision(&e, agent) {
                    Some(what) => TxError::Store(StoreError::Conflict(what)),
                    None => e.into(),
                });
            }
        };
        let minted = row
            .as_ref()
            .map(agent_row)
            .transpose()?
            .ok_or_else(|| StoreError::Backend("the mint returned no row".into()))?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(minted)
    }
    .await)
}

/// A keyed `UPDATE ... RETURNING` of one agent and, when it matched, its audit row in the
/// same unit; `None` (nothing written) when the row was not in the expected state.
async fn keyed_update(
    engine: &impl Engine,
    stmt: Stmt,
    audit: &AuditEntry,
) -> StoreResult<Option<AgentRow>> {
    let stmt = &stmt;
    in_unit!(
        engine,
        |changed: &Option<AgentRow>| changed.is_some(),
        |tx| async {
            let Some(row) = tx.fetch_optional(stmt.clone()).await? else {
                return Ok(None);
            };
            let agent = agent_row(&row)?;
            crate::audit::insert(&mut *tx, audit).await?;
            Ok(Some(agent))
        }
        .await
    )
}

/// `AgentStore::revoke_agent`.
pub async fn revoke_agent(
    engine: &impl Engine,
    id: &str,
    at: Timestamp,
    audit: AuditEntry,
) -> StoreResult<Option<AgentRow>> {
    keyed_update(engine, Stmt::new(REVOKE).bind(id).bind(at), &audit).await
}

/// `AgentStore::rescope_agent`: only from `expected_scopes`.
pub async fn rescope_agent(
    engine: &impl Engine,
    id: &str,
    expected_scopes: &str,
    scopes: &str,
    audit: AuditEntry,
) -> StoreResult<Option<AgentRow>> {
    let stmt = Stmt::new(RESCOPE)
        .bind(id)
        .bind(expected_scopes)
        .bind(scopes);
    keyed_update(engine, stmt, &audit).await
}
