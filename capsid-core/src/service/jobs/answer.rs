//! What `jobs` answers: one shape per outcome, built as these types and serialized once, so
//! the tool's output schema is theirs. The wire text is the Worker's: `{ok: true, action,
//! job, ...}` when a job was posted, moved or read, `{ok: false, action, refusal}` when the
//! queue refused (with the job when it changed anyway).

use schemars::JsonSchema;
use serde::Serialize;

use super::JobsAction;
use crate::jobs::Job;
use crate::jobs::outcome::OutcomeRow;
use crate::ports::ReviewRow;
use crate::skills::attribution::{Credit, RunSignal};
use crate::time::Timestamp;

/// The `jobs` answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // built once per call, then serialized
pub enum JobsAnswer {
    /// A job posted, claimed, moved on or read.
    Done(JobDone),
    /// `list`.
    Listed(JobList),
    /// `approval`.
    Approval(ApprovalAnswer),
    /// `approve` / `reject`: the verdict recorded.
    Verdict(VerdictRecorded),
    /// `roles`.
    Roles(RoleList),
    /// The queue refused.
    Refused(JobRefused),
}

impl From<JobDone> for JobsAnswer {
    fn from(done: JobDone) -> Self {
        JobsAnswer::Done(done)
    }
}

impl From<JobRefused> for JobsAnswer {
    fn from(refused: JobRefused) -> Self {
        JobsAnswer::Refused(refused)
    }
}

/// A job posted, claimed, heartbeaten, completed, failed, blocked, resumed or read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobDone {
    /// Always true.
    pub ok: bool,
    /// The action answered.
    pub action: &'static str,
    /// The job as it stands now.
    pub job: Job,
    /// `get`: the job's outcome row, `null` until it ended; `complete`, `fail` and an
    /// owner's fail: the row recorded, with its notes. Absent for other actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<JobOutcome>,
    /// `claim`: the skills offered with the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills_offered: Option<Vec<OfferedSkill>>,
    /// `claim` and `resume` by a minted agent: the job's run credential, which the driver
    /// hands the agent process instead of its own key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_credential: Option<String>,
    /// `complete` and `fail`: how the job's skills were credited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<SkillsSettled>,
    /// `claim` and `resume`: what this run may spend on its model, in US dollars (the job's
    /// own cap, else its namespace's `job_max_cost_usd`, else the server's
    /// `CAPSID_JOB_MAX_COST_USD`); the driver's model door holds
    /// the run to it. Absent: no cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub max_cost_usd: Option<crate::drive::ledger::Usd>,
    /// `get` of a job whose role merges (a deploy) while it is held: the merges its run made or
    /// was refused, from the server's own records, oldest first (what the driver's verdict on
    /// the run is decided on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merges: Option<Vec<crate::jobs::pipeline::RunMerge>>,
    /// `claim`, `resume` and `get` of a job that names a role: the role as its namespace
    /// defines it now (built in, or its owner's signed document): what the run ships, may do,
    /// its instructions and model. Absent when the job names none, or names one nothing
    /// defines now (a driver then refuses to run it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role_definition: Option<crate::jobs::role::Role>,
    /// `raise` of a blocked job: whether the raise answered its driver's open question about
    /// the job and asked for the session to resume (`false`: no such question was open).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<bool>,
    /// `claim` and `resume`: what the job's ledger holds already (earlier sessions' calls),
    /// which counts against its cap. Absent for other actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub spent_usd: Option<crate::drive::ledger::Usd>,
    /// `get`: the job's ledger summed: its cost, per model and per session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spend: Option<crate::jobs::spend::JobSpend>,
    /// `meter` and `doors`: how many of the calls or records sent were new.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<u64>,
    /// `get`: what the box's doors saw for the job, oldest first (none for a job that ran
    /// unboxed or has not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doors: Option<Vec<crate::jobs::doors::DoorRecord>>,
}

impl JobDone {
    /// `action` answered with `job`.
    pub(crate) fn new(action: JobsAction, job: Job) -> Self {
        JobDone {
            ok: true,
            action: action.name(),
            job,
            outcome: None,
            skills_offered: None,
            run_credential: None,
            skills: None,
            max_cost_usd: None,
            merges: None,
            role_definition: None,
            resumed: None,
            spent_usd: None,
            spend: None,
            recorded: None,
            doors: None,
        }
    }
}

/// A job's outcome as an answer shows it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum JobOutcome {
    /// `get`: the stored row, `null` until the job ended.
    Stored(Option<OutcomeRow>),
    /// The row a call just recorded.
    Recorded(OutcomeShown),
}

/// An outcome row with the notes of what could not be verified.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OutcomeShown {
    /// The row.
    pub row: OutcomeRow,
    /// What could not be verified, and why (absent where the answer reads a stored row).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<String>>,
}

/// One skill offered with a claim, with its newest failure notes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OfferedSkill {
    /// The skill's id.
    pub id: String,
    /// Its title.
    pub name: String,
    /// Its current version.
    pub version: i64,
    /// Its status.
    pub status: String,
    /// When it applies.
    pub trigger: Option<String>,
    /// Its newest failure notes.
    pub failures: Vec<SkillFailureShown>,
}

/// A failure noted on a skill.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillFailureShown {
    /// What noted it (`job`, ...).
    pub source_kind: String,
    /// Which one.
    pub source_id: String,
    /// The note.
    pub note: String,
    /// When (RFC 3339).
    pub at: String,
}

/// How an ended job's skills were settled.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillsSettled {
    /// The skills offered with the claim (`null`: the claim recorded no offer).
    pub offered: Option<Vec<String>>,
    /// The skills the driver reported using (`null`: not reported).
    pub used: Option<Vec<String>>,
    /// The verifier's verdict.
    pub verdict: Option<RunSignal>,
    /// The skills credited.
    pub credited: Vec<SkillCredited>,
    /// What could not be settled.
    pub notes: Vec<String>,
}

/// One skill credited.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillCredited {
    /// The skill's id.
    pub id: String,
    /// The credit.
    pub credit: Credit,
}

/// `list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobList {
    /// Always true.
    pub ok: bool,
    /// `list`.
    pub action: &'static str,
    /// The jobs, newest first.
    pub jobs: Vec<Job>,
    /// Present (true) when more jobs matched than are shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// How to see the rest, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `approval`: whether another agent's review approval stands.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovalAnswer {
    /// Always true: the question was answered.
    pub ok: bool,
    /// `approval`.
    pub action: &'static str,
    /// The namespace whose verdicts count.
    pub namespace: String,
    /// The head commit asked about (for a pull request, its current head once read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    /// Whose approval does not count (the asker, or the driver of a run credential).
    pub caller: String,
    /// The asker's kind when it is a minted agent (`session`, `driver`, `seat`, `cron`): a
    /// driver checks with it that it was given a driver's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller_kind: Option<&'static str>,
    /// The pull request asked about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<u64>,
    /// The pull request's repository, once resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Whether an approval stands.
    pub approved: bool,
    /// The approval that stands.
    pub approval: Option<ApprovalShown>,
    /// Why, in a sentence.
    pub reason: String,
}

impl ApprovalAnswer {
    /// No approval yet for `caller`'s question in `namespace`.
    pub(crate) fn new(action: JobsAction, namespace: &str, caller: String) -> Self {
        ApprovalAnswer {
            ok: true,
            action: action.name(),
            namespace: namespace.to_owned(),
            head_sha: None,
            caller,
            caller_kind: None,
            pull_request: None,
            repo: None,
            approved: false,
            approval: None,
            reason: String::new(),
        }
    }

    /// `review` stands.
    pub(crate) fn approve(&mut self, review: &ReviewRow) {
        self.approved = true;
        self.approval = Some(ApprovalShown {
            reviewer: review.reviewer.clone(),
            repo: review.repo.clone(),
            number: review.number,
            head_sha: review.head_sha.clone(),
            comment_url: review.comment_url.clone(),
            at: review.created_at,
        });
    }
}

/// A review approval that stands.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovalShown {
    /// The reviewing agent.
    pub reviewer: String,
    /// The repository.
    pub repo: String,
    /// The pull request.
    pub number: u64,
    /// The commit approved.
    pub head_sha: String,
    /// The verdict's comment.
    pub comment_url: String,
    /// When recorded.
    pub at: Timestamp,
}

/// `approve` / `reject`: a review verdict recorded on a pull request's current head.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VerdictRecorded {
    /// Always true.
    pub ok: bool,
    /// `approve` or `reject`.
    pub action: &'static str,
    /// The namespace whose verdicts it counts among.
    pub namespace: String,
    /// `APPROVE` or `CHANGES`.
    pub verdict: &'static str,
    /// The reviewer (a run credential's driver).
    pub reviewer: String,
    /// The repository.
    pub repo: String,
    /// The pull request.
    pub number: u64,
    /// The head commit the verdict is bound to.
    pub head_sha: String,
    /// What it counts for, in a sentence.
    pub note: String,
}

/// A refusal: `{ok: false, action, refusal}`, with the job when the call changed it anyway.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobRefused {
    /// Always false.
    pub ok: bool,
    /// The action refused.
    pub action: &'static str,
    /// Why.
    pub refusal: String,
    /// The job as it stands after the call (a claim that failed its checks, a completion
    /// sent back for changes, a resume that returned it to the queue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<Job>,
}

impl JobRefused {
    /// `action` refused for `refusal`.
    pub(crate) fn new(action: JobsAction, refusal: impl Into<String>) -> Self {
        JobRefused {
            ok: false,
            action: action.name(),
            refusal: refusal.into(),
            job: None,
        }
    }

    /// The refusal, with the job as the call left it.
    pub(crate) fn with_job(mut self, job: Job) -> Self {
        self.job = Some(job);
        self
    }
}

/// `roles`: what a namespace's jobs may name.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RoleList {
    /// Always true.
    pub ok: bool,
    /// Always `roles`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// Its roles: the built-in ones (as its signed documents tune them), then its owner's.
    pub roles: Vec<crate::jobs::role::Role>,
    /// Its role documents that define nothing (`<path>: why`).
    pub inert: Vec<String>,
}
