//! The CI tools' answers: `ci_status` and `ci_dispatch`.

use schemars::JsonSchema;
use serde::Serialize;

use super::Audited;

// ---- ci_status ------------------------------------------------------------------------

/// `ci_status`: recent runs, and the latest failure's failing jobs and steps.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CiStatusAnswer {
    /// The repository, `owner/name`.
    pub repo: String,
    /// The runs, newest first.
    pub runs: Vec<RunRow>,
    /// What the runs were filtered by, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<RunFilter>,
    /// The newest failed run among them, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_run: Option<FailedRun>,
}

/// A workflow run.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunRow {
    /// The workflow's name.
    pub name: String,
    /// The commit it ran on (short).
    pub head_sha: String,
    /// `queued`, `in_progress`, `completed`...
    pub status: String,
    /// How it ended (`null` while running).
    pub conclusion: Option<String>,
    /// What started it.
    pub event: String,
    /// When it was created.
    pub created_at: String,
    /// Its page on GitHub.
    pub url: String,
}

/// What `ci_status` filtered the runs by.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RunFilter {
    /// One run.
    Run {
        /// Its id.
        run_id: u64,
    },
    /// A branch or commit.
    Ref {
        /// The ref asked for.
        #[serde(rename = "ref")]
        git_ref: String,
    },
}

/// The newest failed run: its failing jobs and steps, and for a write-grant caller the
/// failing step's log. Every degraded path is named by the key it sets.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailedRun {
    /// The workflow's name.
    pub name: String,
    /// The commit it ran on (short).
    pub head_sha: String,
    /// Its page on GitHub.
    pub url: String,
    /// Why its jobs could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs_unavailable: Option<String>,
    /// Its failing jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Vec<FailedJob>>,
    /// Why no log is returned although the caller may read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail_unavailable: Option<String>,
    /// Why no log is returned to this caller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail_withheld: Option<String>,
    /// The first failing job, whose log is returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_job: Option<String>,
    /// Its failing step, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_step: Option<Option<String>>,
    /// Which part of the job's log `log` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_region: Option<String>,
    /// The log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// A failing job.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailedJob {
    /// Its name.
    pub name: String,
    /// Its failing steps' names.
    pub failed_steps: Vec<String>,
}

// ---- ci_dispatch ----------------------------------------------------------------------

/// `ci_dispatch`: a rerun requested, or a workflow dispatched.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CiDispatchAnswer {
    /// `run_id`: its failed jobs rerun.
    Rerun(CiRerun),
    /// `workflow` and `ref`: dispatched.
    Dispatch(CiDispatched),
}

impl Audited for CiDispatchAnswer {
    fn warn(&mut self, warning: String) {
        match self {
            CiDispatchAnswer::Rerun(a) => a.warn(warning),
            CiDispatchAnswer::Dispatch(a) => a.warn(warning),
        }
    }
}

/// A rerun of a run's failed jobs, requested.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CiRerun {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `rerun`.
    pub mode: &'static str,
    /// The run.
    pub run_id: u64,
    /// Always true.
    pub rerun_requested: bool,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}

/// A workflow dispatched, with the run it started when one appeared.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CiDispatched {
    /// The repository, `owner/name`.
    pub repo: String,
    /// `dispatch`.
    pub mode: &'static str,
    /// The workflow file.
    pub workflow: String,
    /// The ref it runs on.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// Always true: GitHub accepted the dispatch.
    pub dispatched: bool,
    /// The run it started (`null`: none appeared in time).
    pub run_id: Option<u64>,
    /// The run's status, when one appeared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The run's page, when one appeared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How many times the runs were listed to find it.
    pub polls: u64,
    /// What to do when no run appeared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Present when the change was made but its audit row could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_warning: Option<String>,
}
