//! The job row: the one type the service, the stores and the wire share.
//!
//! It serializes with the Worker's column names. The Worker returns the D1 row as-is, so
//! `gate_required` and `review_required` go out as the integers 0/1 (an MCP client written
//! against the Worker reads numbers there); reading accepts 0/1 or booleans.

use crate::time::Timestamp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::state::JobStatus;

/// One row of `jobs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Job {
    /// `job_` + 12 hex.
    pub id: String,
    /// The namespace the job belongs to.
    pub namespace: String,
    /// The trimmed title; unique among open jobs of the namespace.
    pub title: String,
    /// The signed body: the envelope of `signature`, byte for byte.
    pub body: String,
    /// Higher first.
    pub priority: i64,
    /// Where the job stands.
    pub status: JobStatus,
    /// The actor that posted it.
    pub posted_by: String,
    /// The actor holding it (kept while blocked, cleared by the lease sweep).
    pub claimed_by: Option<String>,
    /// When the current working stretch began.
    pub claimed_at: Option<Timestamp>,
    /// When the lease runs out (RFC 3339), while claimed.
    pub lease_expires: Option<Timestamp>,
    /// A document path or an `https://` URL naming the result.
    pub result_ref: Option<String>,
    /// The holder's summary, a failure reason, or a block's reason and command.
    pub result_summary: Option<String>,
    /// Whether a human gate is expected on the way.
    #[serde(serialize_with = "as_int", deserialize_with = "from_int_or_bool")]
    #[schemars(schema_with = "crate::schema::zero_or_one")]
    pub gate_required: bool,
    /// Whether a reviewer must speak before the work completes.
    #[serde(serialize_with = "as_int", deserialize_with = "from_int_or_bool")]
    #[schemars(schema_with = "crate::schema::zero_or_one")]
    pub review_required: bool,
    /// Gates hit.
    pub blocked_count: i64,
    /// Times sent back in by `resume`.
    pub resumed_count: i64,
    /// Times sent back for correction (the retry cap's budget).
    pub corrections_count: i64,
    /// Stored `{"flags":[...]}`, NULL for none.
    pub required_scopes: Option<String>,
    /// Stored `{"prs_merged":n}`, NULL for none.
    pub min_record: Option<String>,
    /// When posted.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
    /// The job whose holder posted this one (agent-initiated dispatch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The actor that dispatched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// How many dispatches deep it is (0 for a job a person or a schedule posted).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: i64,
    /// What one run of the job may spend on its model (its own cap; a job without one runs
    /// under its namespace's default, else the server's, `CAPSID_JOB_MAX_COST_USD`). A claim reserves it against
    /// the namespace's month.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub max_cost_usd: Option<crate::drive::ledger::Usd>,
    /// The agent CLI the job asks to run it (`claude-code`, `codex`); none: the driver's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The job's role (`scout`, `planner`, `junior`, `senior`, `deploy`), signed with its
    /// body; none: a change is asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Where the job works: glob patterns relative to the repository root, signed with its
    /// body; a claim leases them (none: the whole repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// What its claim leased (set by the claim): its paths, or `["**"]`, the whole repository,
    /// for a driver's claim of a job without paths. Live while the job is claimed or blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leased: Option<Vec<String>>,
    /// Read, never stored: what a queued job waits on, a live lease its paths overlap
    /// ("waiting on job X ('title') for `src/api/**`"), as `jobs list` and `get` answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<String>,
}

impl Job {
    /// What the job's signature covers besides its body.
    pub fn terms(&self) -> crate::jobs::signature::JobTerms<'_> {
        crate::jobs::signature::JobTerms {
            role: self.role.as_deref(),
            paths: self.paths.as_deref(),
        }
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Where a job's mirror document lives within its namespace: `jobs/<id>.md`.
pub fn job_doc_path(id: &str) -> String {
    format!("jobs/{id}.md")
}

fn as_int<S: Serializer>(value: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_i64(i64::from(*value))
}

fn from_int_or_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum IntOrBool {
        Bool(bool),
        Int(i64),
    }
    match IntOrBool::deserialize(deserializer)? {
        IntOrBool::Bool(b) => Ok(b),
        IntOrBool::Int(n) => Ok(n != 0),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A claimed job as the service would hold it, for tests across the module.
    pub(crate) fn sample_job() -> Job {
        Job {
            id: "job_0123456789ab".into(),
            namespace: "capsid".into(),
            title: "Fix the flaky test".into(),
            body: "---\ncapsid-task-signature: abc\n---\nRun it.\n".into(),
            priority: 2,
            status: JobStatus::Claimed,
            posted_by: "github:DrDustinEdwards".into(),
            claimed_by: Some("agent:capsid-driver".into()),
            claimed_at: Some(Timestamp::parse("2026-09-12T00:00:00.000Z").expect("instant")),
            lease_expires: Some(Timestamp::parse("2026-09-12T04:00:00.000Z").expect("instant")),
            result_ref: None,
            result_summary: None,
            gate_required: true,
            review_required: false,
            blocked_count: 0,
            resumed_count: 0,
            corrections_count: 0,
            required_scopes: None,
            min_record: None,
            created_at: Timestamp::parse("2026-09-11T22:00:00.000Z").expect("instant"),
            updated_at: Timestamp::parse("2026-09-12T00:00:00.000Z").expect("instant"),
            parent_id: None,
            requested_by: None,
            depth: 0,
            max_cost_usd: None,
            runtime: None,
            role: None,
            paths: None,
            leased: None,
            waiting_on: None,
        }
    }

    #[test]
    fn a_jobs_terms_carry_its_role() {
        let mut job = sample_job();
        assert_eq!(job.terms(), crate::jobs::signature::JobTerms::default());
        job.role = Some("senior".into());
        assert_eq!(job.terms().role, Some("senior"));
        let sealed = crate::jobs::signature::seal_job("k", "Run it.\n", &job.terms());
        assert!(crate::jobs::signature::verify_job("k", &sealed, &job.terms()).is_ok());
        job.role = None;
        assert!(crate::jobs::signature::verify_job("k", &sealed, &job.terms()).is_err());
    }

    #[test]
    fn serializes_with_the_workers_columns() {
        let value = serde_json::to_value(sample_job()).unwrap();
        assert_eq!(value["status"], json!("claimed"));
        assert_eq!(value["gate_required"], json!(1));
        assert_eq!(value["review_required"], json!(0));
        assert_eq!(value["result_ref"], json!(null));
        assert_eq!(value.as_object().unwrap().len(), 21);
        // A job's cap goes out as dollars, and only when it has one.
        let capped = Job {
            max_cost_usd: Some(crate::drive::ledger::Usd::from_micros(50_000)),
            ..sample_job()
        };
        let value = serde_json::to_value(&capped).unwrap();
        assert_eq!(value["max_cost_usd"], json!(0.05));
        assert_eq!(serde_json::from_value::<Job>(value).unwrap(), capped);
    }

    #[test]
    fn reads_back_ints_or_booleans() {
        let job = sample_job();
        let mut value = serde_json::to_value(&job).unwrap();
        assert_eq!(serde_json::from_value::<Job>(value.clone()).unwrap(), job);
        value["gate_required"] = json!(false);
        value["review_required"] = json!(true);
        let read: Job = serde_json::from_value(value).unwrap();
        assert!(!read.gate_required && read.review_required);
    }

    #[test]
    fn mirror_path() {
        assert_eq!(job_doc_path("job_0123456789ab"), "jobs/job_0123456789ab.md");
    }
}
