//! `doors`: the driver writes what its box's doors saw for a job (issue 48): every connection
//! through the model, git, MCP and egress doors, and every host the egress door refused or
//! reached. Only the job's holder (its driver's own key, never the run credential the agent
//! holds) or an admin writes a job's door records; a record sent twice is kept once. `get`
//! answers them.

use super::{JobDone, JobsAction, JobsAnswer, JobsArgs, JobsCx};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::jobs::doors::{DOORS_PER_CALL_MAX, DoorDecision, DoorRecord, check_door};
use crate::service::Area;
use crate::time::Timestamp;
use schemars::JsonSchema;
use serde::Deserialize;

/// One record as the driver sends it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WireDoor {
    /// The driver's id for the record (1 to 64 letters, digits, `_` or `-`).
    pub record_id: String,
    /// The door: `model`, `git`, `mcp` or `egress`.
    pub door: String,
    /// The host reached or asked for (`capsid` for a service in the driver's process).
    pub host: String,
    /// Its port (0 for a service in the driver's process).
    pub port: u16,
    /// `reached`, `refused` or `failed`.
    pub decision: DoorDecision,
    /// Bytes from the box.
    #[serde(default)]
    pub bytes_up: u64,
    /// Bytes to the box.
    #[serde(default)]
    pub bytes_down: u64,
    /// When the box connected or asked (ISO 8601).
    pub started_at: String,
    /// When the connection ended or was refused (ISO 8601).
    pub ended_at: String,
    /// Why it was refused or failed (at most 300 characters).
    pub detail: Option<String>,
}

impl WireDoor {
    /// The record, or why it is not one (naming the record and the field).
    fn to_record(&self) -> std::result::Result<DoorRecord, String> {
        let id = &self.record_id;
        let time = |field: &str, text: &str| {
            Timestamp::parse(text)
                .ok_or_else(|| format!("record {id}: {field} {text:?} is not an ISO 8601 time"))
        };
        let r = DoorRecord {
            record_id: id.clone(),
            door: self.door.clone(),
            host: self.host.clone(),
            port: self.port,
            decision: self.decision,
            bytes_up: self.bytes_up,
            bytes_down: self.bytes_down,
            started_at: time("started_at", &self.started_at)?,
            ended_at: time("ended_at", &self.ended_at)?,
            detail: self.detail.clone(),
        };
        check_door(&r)?;
        Ok(r)
    }
}

impl JobsCx<'_> {
    /// `doors`.
    pub(super) async fn doors(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        let act = JobsAction::Doors;
        let Some(doors) = a.doors.as_ref() else {
            return Err(Error::Invalid(
                "jobs doors: doors (what the box's doors saw) is required".into(),
            ));
        };
        if doors.is_empty() || doors.len() > DOORS_PER_CALL_MAX {
            return Err(Error::Invalid(format!(
                "jobs doors: doors holds 1 to {DOORS_PER_CALL_MAX} records, not {}",
                doors.len()
            )));
        }
        let rows = doors
            .iter()
            .map(WireDoor::to_record)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Invalid(format!("jobs doors: {e}")))?;
        let mut ids = std::collections::BTreeSet::new();
        if let Some(dup) = rows.iter().find(|r| !ids.insert(r.record_id.as_str())) {
            return Err(Error::Invalid(format!(
                "jobs doors: record_id {} is given twice",
                dup.record_id
            )));
        }
        let job = match self
            .holders_job(act, caller, &a, "its door records")
            .await?
        {
            Ok(job) => job,
            Err(refused) => return Ok(refused),
        };
        let new = self
            .jobs
            .record_doors(&job, &caller.actor(), &rows, self.now())
            .await?;
        let mut out = JobDone::new(act, job);
        out.recorded = Some(new);
        Ok(out.into())
    }
}
