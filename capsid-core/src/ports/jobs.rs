//! The work-queue port. Every transition is one transaction: a keyed conditional update
//! (`WHERE id = ? AND status = ? [AND claimed_by = ?] RETURNING`), its audit row, the mirror
//! document rewrite, and (on `done`/`failed`) the write-once outcome row.

use async_trait::async_trait;

use super::{AuditEntry, DocumentWrite, StoreResult};
use crate::jobs::Job;
use crate::jobs::outcome::OutcomeRow;
use crate::jobs::state::{JobStatus, Step};
use crate::time::Timestamp;

/// Builds the audit row of one job the lease sweep returned to the queue. (A type alias keeps
/// the closure higher-ranked through `async_trait`.)
pub type SweepAuditFn = dyn Fn(&Job) -> AuditEntry + Send + Sync;

/// Renders the mirror document of a job row (see [`crate::jobs::mirror`]).
pub type MirrorFn = Box<dyn Fn(&Job) -> DocumentWrite + Send + Sync>;

/// A job to post (the body already sealed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewJob {
    /// `job_` + 12 hex.
    pub id: String,
    /// Namespace.
    pub namespace: String,
    /// Trimmed title (unique among the namespace's open jobs).
    pub title: String,
    /// The signed body.
    pub body: String,
    /// Higher first.
    pub priority: i64,
    /// Posting actor.
    pub posted_by: String,
    /// Whether a human gate is expected.
    pub gate_required: bool,
    /// Whether the review gate applies.
    pub review_required: bool,
    /// Stored `{"flags":[...]}` or `None`.
    pub required_scopes: Option<String>,
    /// Stored `{"prs_merged":n}` or `None`.
    pub min_record: Option<String>,
    /// When.
    pub at: Timestamp,
    /// Posted by the holder of another job (agent-initiated dispatch), with the bound the
    /// store checks against the parent's children inside the insert's transaction.
    pub dispatch: Option<Dispatch>,
    /// The job's own cap on what one run may spend.
    pub max_cost_usd: Option<crate::drive::ledger::Usd>,
    /// The agent CLI the job asks for (`claude-code`, `codex`).
    pub runtime: Option<String>,
    /// The job's role (signed with its body).
    pub role: Option<String>,
    /// Where the job works (signed with its body; `None`: the whole repository).
    pub paths: Option<Vec<String>>,
}

/// The parent link of a dispatched job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The parent job.
    pub parent_id: String,
    /// The actor that asked (the parent's holder).
    pub requested_by: String,
    /// The parent's depth plus one.
    pub depth: i64,
    /// The parent may have at most this many children, counted from the rows; a post past
    /// it is a `Conflict` whose message starts with [`DISPATCH_LIMIT`].
    pub max_children: i64,
}

/// How a store's `Conflict` for a parent's exhausted dispatch budget begins.
pub const DISPATCH_LIMIT: &str = "dispatch limit:";

/// Filter for `jobs list`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Only this namespace.
    pub namespace: Option<String>,
    /// Only this status.
    pub status: Option<JobStatus>,
}

/// Queue counts of one namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct JobCounts {
    /// Queued jobs.
    pub queued: u64,
    /// Claimed jobs.
    pub claimed: u64,
    /// Blocked jobs.
    pub blocked: u64,
    /// Jobs done since the given instant.
    pub done_today: u64,
}

/// Jobs per holder and status (agent records).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusCount {
    /// `claimed_by`.
    pub claimed_by: String,
    /// Status.
    pub status: JobStatus,
    /// How many.
    pub count: u64,
}

/// Which job a claim targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimTarget {
    /// This job, which must be queued.
    Id(String),
    /// The namespace's best queued job: highest priority, then oldest.
    Best {
        /// Namespace.
        namespace: String,
    },
}

/// The core's decision about a candidate, taken inside the claim's transaction.
// One verdict exists per claim call, so the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ClaimVerdict {
    /// Claim it, with this audit row.
    Claim(AuditEntry),
    /// Refuse; the job stays as it is.
    Refuse(String),
    /// The job asks a track record the decider was not given: nothing changes, and the caller
    /// asks again with the claimer's record.
    NeedsRecord,
    /// Mark it failed (a tampered or corrupt job): summary, audit row, outcome row.
    Fail {
        /// The failure reason stored as the result summary.
        summary: String,
        /// Audit row.
        audit: AuditEntry,
        /// Outcome row.
        outcome: Option<OutcomeRecord>,
    },
}

/// Decides about a claim candidate (flags, track record, signature), synchronously and
/// without IO, so the store can call it inside its transaction.
pub trait ClaimDecider: Send + Sync {
    /// The verdict for `job`.
    fn decide(&self, job: &Job) -> ClaimVerdict;

    /// When the claim must fit its namespace's monthly budget: the instant the month's spend
    /// is summed from. The store then reads [`MonthSpend`] inside the claim's transaction,
    /// after [`ClaimDecider::decide`] said claim, holding the namespace (Postgres locks its
    /// row; SQLite has one writer), and asks [`ClaimDecider::fits`]. `None`: no budget.
    fn budget_since(&self) -> Option<Timestamp> {
        None
    }

    /// Whether claiming `job` fits `month`; the refusal leaves the job queued.
    fn fits(&self, _job: &Job, _month: &MonthSpend) -> Result<(), String> {
        Ok(())
    }
}

/// What a claim's transaction reads of the candidate's namespace's month.
#[derive(Clone, Debug, PartialEq)]
pub struct MonthSpend {
    /// The namespace's own monthly budget (`None`: the server's default applies, if any).
    pub budget_usd: Option<f64>,
    /// Spent since the month began: the sum of the namespace's ledger (running jobs' calls
    /// included).
    pub spent_usd: f64,
    /// The namespace's other claimed jobs, each with its own cap and what its ledger holds
    /// (it reserves the rest of its cap).
    pub holding: Vec<Holding>,
    /// What the job being decided has spent already (earlier sessions): its cap less this is
    /// what it reserves.
    pub job_spent: crate::drive::ledger::Usd,
}

/// A running job as a reservation against its namespace's month.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holding {
    /// The job.
    pub id: String,
    /// Its own cap (`None`: the server's default applies, if any).
    pub cap: Option<crate::drive::ledger::Usd>,
    /// What its ledger holds (already in the month's spend).
    pub spent: crate::drive::ledger::Usd,
}

/// A claim.
pub struct ClaimRequest<'a> {
    /// Which job.
    pub target: ClaimTarget,
    /// The claimer's actor string.
    pub actor: String,
    /// Now.
    pub now: Timestamp,
    /// The new lease's expiry.
    pub lease_expires: Timestamp,
    /// Whether the claim is a driver's (it names the runtimes it runs): a driver's claim of a
    /// job without paths leases the whole repository; another caller's leases nothing.
    pub driven: bool,
    /// The roles that write nothing in the repository (they ship nothing, or merge): a
    /// driver's claim of a job of one of them without paths leases nothing.
    pub writes_nothing: &'a [String],
    /// The core's decision about the candidate.
    pub decider: &'a dyn ClaimDecider,
    /// Mirror renderer.
    pub mirror: MirrorFn,
}

impl ClaimRequest<'_> {
    /// Whether claiming `job` without paths leases the whole repository: a driver's claim of a
    /// job whose role writes in the tree.
    pub fn leases_whole(&self, job: &Job) -> bool {
        self.driven
            && !job
                .role
                .as_ref()
                .is_some_and(|r| self.writes_nothing.iter().any(|w| w == r))
    }
}

/// What a claim did.
#[derive(Clone, Debug, PartialEq)]
pub enum ClaimOutcome {
    /// Claimed: the updated row.
    Claimed(Job),
    /// The caller already holds this claimed job (one claim per caller, all namespaces).
    AlreadyHolding(Job),
    /// No such job.
    NotFound,
    /// The targeted job is not queued.
    NotQueued(Job),
    /// The namespace has no queued job.
    NothingQueued,
    /// The decider refused; nothing changed.
    Refused(Job, String),
    /// The decider needs the claimer's track record to decide about this job; nothing changed.
    NeedsRecord(Job),
    /// The decider failed the job: the updated row and the reason.
    Failed(Job, String),
    /// Another claimer took the candidate first.
    LostRace,
}

/// The write-once outcome row of a finished job, with the PR URLs it names.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeRecord {
    /// The row.
    pub row: OutcomeRow,
    /// One `job_outcome_prs` row each.
    pub pr_urls: Vec<String>,
    /// A job no model door metered that reported a cost: its one ledger row, written with
    /// the outcome (only when the outcome row is new).
    pub reported_call: Option<crate::jobs::spend::LedgerCall>,
}

/// One column of a transition: left as it is, cleared, or set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Change<T> {
    /// Leave the stored value.
    #[default]
    Keep,
    /// Store NULL.
    Clear,
    /// Store this value.
    Set(T),
}

impl<T: ToString> Change<T> {
    /// Whether the column changes.
    pub fn changes(&self) -> bool {
        !matches!(self, Change::Keep)
    }

    /// The stored text of the new value (`None` for [`Change::Clear`] and [`Change::Keep`]).
    pub fn stored(&self) -> Option<String> {
        match self {
            Change::Set(v) => Some(v.to_string()),
            Change::Keep | Change::Clear => None,
        }
    }
}

impl<T: Clone> Change<T> {
    /// The column after this change, from its value before.
    pub fn applied_to(&self, before: Option<&T>) -> Option<T> {
        match self {
            Change::Keep => before.cloned(),
            Change::Clear => None,
            Change::Set(v) => Some(v.clone()),
        }
    }
}

impl<T> Change<T> {
    /// [`Change::Set`] of `value`, or [`Change::Keep`] when `None`.
    pub fn set_if(value: Option<T>) -> Change<T> {
        value.map_or(Change::Keep, Change::Set)
    }
}

/// Field changes of a transition besides its status (which comes from its [`Step`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobPatch {
    /// The holder.
    pub claimed_by: Change<String>,
    /// When it was claimed.
    pub claimed_at: Change<Timestamp>,
    /// The lease's expiry.
    pub lease_expires: Change<Timestamp>,
    /// The result reference.
    pub result_ref: Change<String>,
    /// The result summary.
    pub result_summary: Change<String>,
    /// `blocked_count += 1`.
    pub add_blocked: bool,
    /// `resumed_count += 1`.
    pub add_resumed: bool,
    /// `corrections_count += 1`.
    pub add_correction: bool,
}

/// A keyed conditional transition.
pub struct JobTransition {
    /// The job.
    pub id: String,
    /// The job as the caller last read it, when it has it. A store may then apply the step,
    /// its audit row, mirror and outcome in one statement that holds only while the row is
    /// still exactly this (the mirror rendered from [`JobTransition::applied_to`]), and takes
    /// its transaction as without it when the row changed meanwhile. Never a condition of
    /// the transition itself: `step`, `holder` and `corrections` are.
    pub expected: Option<Job>,
    /// The step, from the core's table: the status the job must be in and the one it takes.
    pub step: Step,
    /// And, when set, held by this actor.
    pub holder: Option<String>,
    /// And, when set, have spent exactly this many corrections (no double spending).
    pub corrections: Option<i64>,
    /// The other changes.
    pub patch: JobPatch,
    /// When (`updated_at`).
    pub at: Timestamp,
    /// Audit row.
    pub audit: AuditEntry,
    /// Outcome row to record (write-once: a second record for the job is ignored).
    pub outcome: Option<OutcomeRecord>,
    /// Mirror renderer.
    pub mirror: MirrorFn,
}

impl JobTransition {
    /// The row this transition leaves when it applies to `before`: the step's status, the
    /// patch's columns, the counters it adds and `updated_at`; every other column as it was.
    pub fn applied_to(&self, before: &Job) -> Job {
        let p = &self.patch;
        Job {
            status: self.step.to,
            claimed_by: p.claimed_by.applied_to(before.claimed_by.as_ref()),
            claimed_at: p.claimed_at.applied_to(before.claimed_at.as_ref()),
            lease_expires: p.lease_expires.applied_to(before.lease_expires.as_ref()),
            result_ref: p.result_ref.applied_to(before.result_ref.as_ref()),
            result_summary: p.result_summary.applied_to(before.result_summary.as_ref()),
            blocked_count: before.blocked_count + i64::from(p.add_blocked),
            resumed_count: before.resumed_count + i64::from(p.add_resumed),
            corrections_count: before.corrections_count + i64::from(p.add_correction),
            updated_at: self.at,
            ..before.clone()
        }
    }
}

/// The work queue.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Inserts a queued job with its audit row and mirror; `Conflict` when the namespace
    /// already has an open (queued or claimed) job with this title.
    async fn post_job(&self, job: NewJob, audit: AuditEntry, mirror: MirrorFn) -> StoreResult<Job>;
    /// One job.
    async fn job(&self, id: &str) -> StoreResult<Option<Job>>;
    /// The job `actor` holds, if any.
    async fn held_job(&self, actor: &str) -> StoreResult<Option<Job>>;
    /// Sets the cap of job `id` while it is queued, claimed or blocked, with its audit row;
    /// the updated job, or `None` when it had ended (nothing written).
    async fn set_job_cap(
        &self,
        id: &str,
        cap: crate::drive::ledger::Usd,
        at: Timestamp,
        audit: AuditEntry,
    ) -> StoreResult<Option<Job>>;
    /// What `job`'s namespace has spent since `since` and what its other claimed jobs
    /// reserve, read outside any claim (a resume decides from it).
    async fn month_spend(&self, job: &Job, since: Timestamp) -> StoreResult<MonthSpend>;
    /// The live leases of `namespace` at `now` (its blocked jobs, and its claimed ones whose
    /// lease has not run out), read outside any claim: what a queued job waits on.
    async fn live_leases(
        &self,
        namespace: &str,
        now: Timestamp,
    ) -> StoreResult<Vec<crate::jobs::paths::LiveLease>>;
    /// Adds `calls` to `job`'s ledger as recorded by `agent` at `at`; a call whose id is
    /// already there is left as it is. How many rows were new.
    async fn record_calls(
        &self,
        job: &Job,
        agent: &str,
        calls: &[crate::jobs::spend::LedgerCall],
        at: Timestamp,
    ) -> StoreResult<u64>;
    /// `job_id`'s ledger, oldest call first, at most [`crate::jobs::spend::JOB_CALLS_MAX`] rows.
    async fn job_calls(&self, job_id: &str) -> StoreResult<Vec<crate::jobs::spend::LedgerCall>>;
    /// Adds `records` to `job`'s door records as recorded by `agent` at `at`; a record whose id
    /// the job already has is left as it is, and a job keeps at most
    /// [`crate::jobs::doors::JOB_DOORS_MAX`] records. How many rows were new.
    async fn record_doors(
        &self,
        job: &Job,
        agent: &str,
        records: &[crate::jobs::doors::DoorRecord],
        at: Timestamp,
    ) -> StoreResult<u64>;
    /// `job_id`'s door records, oldest first, at most [`crate::jobs::doors::JOB_DOORS_SHOWN`].
    async fn job_doors(&self, job_id: &str) -> StoreResult<Vec<crate::jobs::doors::DoorRecord>>;
    /// The newest `limit` door records of any job, newest first, each with its job's id.
    async fn recent_doors(
        &self,
        limit: usize,
    ) -> StoreResult<Vec<(String, crate::jobs::doors::DoorRecord)>>;
    /// What each queued, claimed or blocked job's ledger sums to (jobs without a row are left
    /// out).
    async fn open_job_spend(&self) -> StoreResult<Vec<(String, crate::drive::ledger::Usd)>>;
    /// Jobs matching `filter`, newest first, at most `limit`.
    async fn jobs(&self, filter: &JobFilter, limit: usize) -> StoreResult<Vec<Job>>;
    /// Queue counts for `namespace`, with jobs done since `day_start`.
    async fn job_counts(&self, namespace: &str, day_start: Timestamp) -> StoreResult<JobCounts>;
    /// Jobs per holder and status.
    async fn job_status_counts(&self) -> StoreResult<Vec<StatusCount>>;
    /// One transaction: the held-claim check, candidate selection (by id, or best queued
    /// with `FOR UPDATE SKIP LOCKED` where the engine has it), the decider's verdict, and its
    /// application with audit and mirror. No claimer ever holds two jobs.
    async fn claim_job(&self, request: ClaimRequest<'_>) -> StoreResult<ClaimOutcome>;
    /// A keyed conditional transition; `None` when the job is not in the expected state
    /// (lost race, not the holder). A `Conflict` means the change would give its holder a
    /// second claimed job.
    async fn transition_job(&self, transition: JobTransition) -> StoreResult<Option<Job>>;
    /// Returns every claimed job whose lease expired before `now` to `queued` (clearing its
    /// holder, claim time and lease), each with the audit row `audit` builds and its mirror,
    /// in one transaction. Returns the swept rows.
    async fn sweep_expired_leases(
        &self,
        now: Timestamp,
        audit: &SweepAuditFn,
        mirror: MirrorFn,
    ) -> StoreResult<Vec<Job>>;
    /// Every outcome row of `agent` (or of every agent when `None`).
    async fn outcomes(&self, agent: Option<&str>) -> StoreResult<Vec<OutcomeRow>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::tests::sample_job;
    use crate::jobs::state::JobEvent;

    fn transition(step: Step, patch: JobPatch, at: Timestamp) -> JobTransition {
        JobTransition {
            id: "job_0123456789ab".into(),
            expected: None,
            step,
            holder: None,
            corrections: None,
            patch,
            at,
            audit: AuditEntry {
                actor: "agent:capsid-driver".into(),
                action: "job-complete".into(),
                namespace: None,
                path: None,
                params: serde_json::Value::Null,
                at,
            },
            outcome: None,
            mirror: Box::new(|_: &Job| -> DocumentWrite { panic!("not rendered here") }),
        }
    }

    #[test]
    fn a_transition_applies_its_step_patch_counters_and_time() {
        let before = sample_job();
        let at = Timestamp::parse("2026-09-12T01:00:00.000Z").expect("instant");
        let t = transition(
            Step {
                from: JobStatus::Claimed,
                to: JobStatus::Blocked,
                event: JobEvent::Block,
            },
            JobPatch {
                claimed_at: Change::Keep,
                lease_expires: Change::Clear,
                result_ref: Change::Set("notes/r.md".into()),
                result_summary: Change::Set("waiting".into()),
                add_blocked: true,
                add_correction: true,
                ..JobPatch::default()
            },
            at,
        );
        let after = t.applied_to(&before);
        assert_eq!(
            after,
            Job {
                status: JobStatus::Blocked,
                lease_expires: None,
                result_ref: Some("notes/r.md".into()),
                result_summary: Some("waiting".into()),
                blocked_count: 1,
                corrections_count: 1,
                updated_at: at,
                ..before.clone()
            }
        );
        // Kept columns keep what they held, counters not named stay.
        assert_eq!(after.claimed_by, before.claimed_by);
        assert_eq!(after.claimed_at, before.claimed_at);
        assert_eq!(after.resumed_count, 0);

        let resumed = transition(
            Step {
                from: JobStatus::Blocked,
                to: JobStatus::Queued,
                event: JobEvent::ResumeToQueue,
            },
            JobPatch {
                claimed_by: Change::Clear,
                claimed_at: Change::Set(at),
                add_resumed: true,
                ..JobPatch::default()
            },
            at,
        )
        .applied_to(&after);
        assert_eq!(
            (
                resumed.status,
                resumed.claimed_by,
                resumed.claimed_at,
                resumed.resumed_count,
                resumed.blocked_count
            ),
            (JobStatus::Queued, None, Some(at), 1, 1)
        );
    }
}
