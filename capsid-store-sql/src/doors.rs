//! The box's doors on the job's record (issue 48): one row per connection through a door or
//! host asked of the egress door, written by the driver that holds the job.

use capsid_core::jobs::Job;
use capsid_core::jobs::doors::{DoorDecision, DoorRecord, JOB_DOORS_MAX, JOB_DOORS_SHOWN};
use capsid_core::ports::StoreResult;
use capsid_core::time::Timestamp;

use crate::engine::{Engine, read_all};
use crate::row::Row;
use crate::stmt::Stmt;

/// Adds one row; a record id the job already has is left as it is.
const INSERT_DOOR: &str = "INSERT INTO job_doors (job_id, record_id, namespace, agent, door, \
     host, port, decision, bytes_up, bytes_down, started_at, ended_at, detail, recorded_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
     ON CONFLICT (job_id, record_id) DO NOTHING";

/// How many records the job has.
const COUNT_DOORS: &str = "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM job_doors WHERE job_id = $1";

const DOOR_COLUMNS: &str = "job_id, record_id, door, host, port, decision, bytes_up, \
     bytes_down, started_at, ended_at, detail";

fn stored(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `JobStore::record_doors`: every record in one unit, the job's cap on records counted
/// inside it.
pub async fn record_doors(
    engine: &impl Engine,
    job: &Job,
    agent: &str,
    records: &[DoorRecord],
    at: Timestamp,
) -> StoreResult<u64> {
    crate::engine::in_unit!(engine, crate::engine::always, |tx| async {
        let have = tx
            .fetch_optional(Stmt::new(COUNT_DOORS).bind(&job.id))
            .await?
            .map(|row| row.count("n"))
            .transpose()?
            .unwrap_or(0);
        let room = (JOB_DOORS_MAX as u64).saturating_sub(have);
        let mut new = 0u64;
        for r in records {
            if new >= room {
                break;
            }
            let stmt = Stmt::new(INSERT_DOOR)
                .bind(&job.id)
                .bind(&r.record_id)
                .bind(&job.namespace)
                .bind(agent)
                .bind(&r.door)
                .bind(&r.host)
                .bind(i64::from(r.port))
                .bind(r.decision.as_str())
                .bind(stored(r.bytes_up))
                .bind(stored(r.bytes_down))
                .bind(r.started_at)
                .bind(r.ended_at)
                .bind(r.detail.as_deref())
                .bind(at);
            if tx.execute(stmt).await? > 0 {
                new += 1;
            }
        }
        Ok(new)
    }
    .await)
}

fn door_row(row: &Row) -> Result<DoorRecord, sqlx::Error> {
    let decision = row.text("decision")?;
    let port = row.int("port")?;
    Ok(DoorRecord {
        record_id: row.text("record_id")?,
        door: row.text("door")?,
        host: row.text("host")?,
        port: u16::try_from(port).map_err(|_| {
            sqlx::Error::Decode(format!("job_doors.port: {port} is not a port").into())
        })?,
        decision: DoorDecision::parse(&decision).ok_or_else(|| {
            sqlx::Error::Decode(format!("job_doors.decision: unknown value {decision:?}").into())
        })?,
        bytes_up: row.count("bytes_up")?,
        bytes_down: row.count("bytes_down")?,
        started_at: row.time("started_at")?,
        ended_at: row.time("ended_at")?,
        detail: row.opt_text("detail")?,
    })
}

/// `JobStore::job_doors`.
pub async fn job_doors(engine: &impl Engine, job_id: &str) -> StoreResult<Vec<DoorRecord>> {
    let sql = format!(
        "SELECT {DOOR_COLUMNS} FROM job_doors WHERE job_id = $1 \
         ORDER BY started_at, record_id LIMIT {JOB_DOORS_SHOWN}"
    );
    read_all(engine, Stmt::new(sql).bind(job_id), door_row).await
}

/// `JobStore::recent_doors`.
pub async fn recent_doors(
    engine: &impl Engine,
    limit: usize,
) -> StoreResult<Vec<(String, DoorRecord)>> {
    let sql = format!(
        "SELECT {DOOR_COLUMNS} FROM job_doors \
         ORDER BY recorded_at DESC, started_at DESC, job_id, record_id LIMIT {}",
        limit.min(JOB_DOORS_SHOWN)
    );
    read_all(engine, Stmt::new(sql), |row| {
        Ok((row.text("job_id")?, door_row(row)?))
    })
    .await
}
