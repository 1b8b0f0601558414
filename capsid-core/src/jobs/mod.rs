//! The work queue (reference 6): job states and transitions, leases, the signed task
//! envelope, post/block/resume rules, the review gate, requirements, evidence, outcomes,
//! agent records and the mirror document. Pure rules only; the service does the IO.

pub mod approval;
pub mod block;
pub mod budget;
pub mod claim_walk;
pub mod dispatch;
pub mod doors;
pub mod evidence;
pub mod lease;
pub mod mirror;
pub mod model;
pub mod outcome;
pub mod paths;
pub mod pipeline;
pub mod post;
pub mod pr_url;
pub mod record;
pub mod requirements;
pub mod review;
pub mod role;
pub mod run_credential;
pub mod schema;
pub mod scout;
pub mod signature;
pub mod spend;
pub mod state;

pub use model::{Job, job_doc_path};
pub use state::{IllegalTransition, JobEvent, JobStatus, transition};

/// One page of `jobs list` (`JOBS_ROWS_MAX`); the query asks for one more row to detect truncation.
pub const JOBS_ROWS_MAX: usize = 100;

/// At most this many pull-request URLs in one `evidence` object.
pub const EVIDENCE_PRS_MAX: usize = 10;

/// Audit action: a job was posted.
pub const AUDIT_JOB_POSTED: &str = "job-posted";
/// Audit action: a job was claimed.
pub const AUDIT_JOB_CLAIMED: &str = "job-claimed";
/// Audit action: the holder renewed its lease.
pub const AUDIT_JOB_HEARTBEAT: &str = "job-heartbeat";
/// Audit action: the holder completed the job.
pub const AUDIT_JOB_COMPLETE: &str = "job-complete";
/// Audit action: the holder failed the job.
pub const AUDIT_JOB_FAIL: &str = "job-fail";
/// Audit action: the holder blocked the job on a human gate.
pub const AUDIT_JOB_BLOCK: &str = "job-block";
/// Audit action: a blocked job was resumed.
pub const AUDIT_JOB_RESUMED: &str = "job-resumed";
/// Audit action: the sweep returned an expired lease to the queue.
pub const AUDIT_JOB_LEASE_EXPIRED: &str = "job-lease-expired";
/// Audit action: a job failed its signature check at claim or resume.
pub const AUDIT_JOB_SIGNATURE_REFUSED: &str = "job-signature-refused";
/// Audit action: a dispatch from a job was refused (past the namespace's bounds on depth or
/// count, a parent the poster does not hold, another namespace), on the parent's trail.
pub const AUDIT_JOB_DISPATCH_REFUSED: &str = "job-dispatch-refused";
/// Audit action: a review asked for changes and the job stayed with its holder.
pub const AUDIT_JOB_REVIEW_CHANGES: &str = "job-review-changes";
/// Audit action: the admin failed a job nobody had finished.
pub const AUDIT_JOB_ADMIN_FAIL: &str = "job-admin-fail";
/// Audit action: a job's stored requirement could not be read, so the claim failed it.
/// Not in the reference's list: it is the successor's name for the fail-closed rule SPEC 8 adopts.
pub const AUDIT_JOB_REQUIREMENT_CORRUPT: &str = "job-requirement-corrupt";
