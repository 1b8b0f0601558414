//! The job ledger (issue 49): the model calls a driver's door metered, one row each, and what
//! they sum to. A namespace's month of spend is read from the index `job_calls_spend`
//! ([`crate::namespaces::BUDGET`], [`crate::namespaces::spend_since`]).

use capsid_core::drive::ledger::{Usage, Usd};
use capsid_core::jobs::Job;
use capsid_core::jobs::spend::{CallEnded, JOB_CALLS_MAX, LedgerCall, Priced};
use capsid_core::ports::StoreResult;
use capsid_core::time::Timestamp;

use crate::engine::{Engine, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::Stmt;

/// Adds one row; a call id already there is left as it is.
const INSERT_CALL: &str = "INSERT INTO job_calls (call_id, job_id, namespace, agent, session, \
     model, input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, cost_micros, \
     priced, ended, started_at, ended_at, recorded_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
     ON CONFLICT (call_id) DO NOTHING";

const CALL_COLUMNS: &str = "call_id, session, model, input_tokens, output_tokens, \
     cache_write_tokens, cache_read_tokens, cost_micros, priced, ended, started_at, ended_at";

/// What the open jobs' ledgers sum to (the console's running spend).
const OPEN_SPEND: &str = "SELECT c.job_id, CAST(SUM(c.cost_micros) AS BIGINT) AS micros \
     FROM job_calls c JOIN jobs j ON j.id = c.job_id \
     WHERE j.status IN ('queued', 'claimed', 'blocked') GROUP BY c.job_id ORDER BY c.job_id";

fn stored(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Which job a row belongs to and who recorded it.
#[derive(Clone, Copy, Debug)]
pub struct RowOf<'a> {
    /// The job.
    pub job_id: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// Who recorded the row (the driver that holds the job).
    pub agent: &'a str,
}

/// The statement adding `call` to `of`'s ledger at `at`.
fn insert(of: RowOf<'_>, call: &LedgerCall, at: Timestamp) -> Stmt {
    Stmt::new(INSERT_CALL)
        .bind(&call.call_id)
        .bind(of.job_id)
        .bind(of.namespace)
        .bind(of.agent)
        .bind(call.session.as_deref())
        .bind(&call.model)
        .bind(stored(call.usage.input_tokens))
        .bind(stored(call.usage.output_tokens))
        .bind(stored(call.usage.cache_write_tokens))
        .bind(stored(call.usage.cache_read_tokens))
        .bind(stored(call.cost.micros()))
        .bind(call.priced.as_str())
        .bind(call.ended.as_str())
        .bind(call.started_at)
        .bind(call.ended_at)
        .bind(at)
}

/// Adds `call` on `x` (inside a unit); whether the row was new.
pub async fn insert_call(
    x: &mut (impl Exec + ?Sized),
    of: RowOf<'_>,
    call: &LedgerCall,
    at: Timestamp,
) -> Result<bool, sqlx::Error> {
    Ok(x.execute(insert(of, call, at)).await? > 0)
}

/// `JobStore::record_calls`: every call in one unit.
pub async fn record_calls(
    engine: &impl Engine,
    job: &Job,
    agent: &str,
    calls: &[LedgerCall],
    at: Timestamp,
) -> StoreResult<u64> {
    let of = RowOf {
        job_id: &job.id,
        namespace: &job.namespace,
        agent,
    };
    crate::engine::in_unit!(engine, crate::engine::always, |tx| async {
        let mut new = 0u64;
        for call in calls {
            if insert_call(&mut *tx, of, call, at).await? {
                new += 1;
            }
        }
        Ok(new)
    }
    .await)
}

fn call_row(row: &Row) -> Result<LedgerCall, sqlx::Error> {
    let word = |column: &str, text: String| {
        sqlx::Error::Decode(format!("job_calls.{column}: unknown value {text:?}").into())
    };
    let priced = row.text("priced")?;
    let ended = row.text("ended")?;
    Ok(LedgerCall {
        call_id: row.text("call_id")?,
        session: row.opt_text("session")?,
        model: row.text("model")?,
        usage: Usage {
            input_tokens: row.count("input_tokens")?,
            output_tokens: row.count("output_tokens")?,
            cache_write_tokens: row.count("cache_write_tokens")?,
            cache_read_tokens: row.count("cache_read_tokens")?,
        },
        cost: crate::jobs::micros(row.int("cost_micros")?),
        priced: Priced::parse(&priced).ok_or_else(|| word("priced", priced.clone()))?,
        ended: CallEnded::parse(&ended).ok_or_else(|| word("ended", ended.clone()))?,
        started_at: row.time("started_at")?,
        ended_at: row.time("ended_at")?,
    })
}

/// `JobStore::job_calls`.
pub async fn job_calls(engine: &impl Engine, job_id: &str) -> StoreResult<Vec<LedgerCall>> {
    let sql = format!(
        "SELECT {CALL_COLUMNS} FROM job_calls WHERE job_id = $1 \
         ORDER BY started_at, call_id LIMIT {JOB_CALLS_MAX}"
    );
    read_all(engine, Stmt::new(sql).bind(job_id), call_row).await
}

/// `JobStore::open_job_spend`.
pub async fn open_job_spend(engine: &impl Engine) -> StoreResult<Vec<(String, Usd)>> {
    read_all(engine, Stmt::new(OPEN_SPEND), |row| {
        Ok((row.text("job_id")?, crate::jobs::micros(row.int("micros")?)))
    })
    .await
}
