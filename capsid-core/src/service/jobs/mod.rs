//! The `jobs` tool (reference 6): post and list here; claim and heartbeat in `claim`; complete, fail and
//! block in `jobs_finish`; resume in `jobs_resume`. Domain refusals answer
//! `{ok:false, action, refusal}`; bad arguments are tool errors.

mod admin;
mod answer;
mod approval;
mod budget;
mod claim;
mod dispatch;
mod doors;
mod finish;
mod meter;
mod pipeline;
mod resume;
mod skills;

pub use answer::{
    ApprovalAnswer, JobDone, JobList, JobOutcome, JobRefused, JobsAnswer, OfferedSkill,
    OutcomeShown, RoleList, SkillCredited, SkillFailureShown, SkillsSettled,
};

pub(crate) use budget::budget_states;
pub use doors::WireDoor;
pub use meter::MeteredCall;
pub(crate) use resume::ResumeTo;

use crate::service::{Area, require_namespace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Confirmer;
use super::args::{Bounded, NamespaceArg};
use crate::caller::Caller;
use crate::docs::bounds;
use crate::error::{Error, Result};
use crate::ids::new_job_id;
use crate::jobs::dispatch::{Poster, plan_dispatch, too_many_children};
use crate::jobs::post::{check_post_text, refuse_swallowed_tag};
use crate::jobs::requirements::JobRequirements;
use crate::jobs::signature::{JobTerms, seal_job};
use crate::jobs::state::JobEvent;
use crate::jobs::{JOBS_ROWS_MAX, Job, JobStatus, job_doc_path};
use crate::ports::{
    AuditEntry, DISPATCH_LIMIT, DocumentWrite, JobFilter, MirrorFn, NewJob, StoreError,
};
use crate::time::Timestamp;

/// What the jobs area's handlers reach: the queue, namespaces, documents (policies), the loop's
/// run totals (agent records), the repo area (outcome verification, review, migration files),
/// the signing secret, ids and the notifier.
#[derive(Clone, Copy)]
pub struct JobsCx<'a> {
    /// The queue, its outcomes and records.
    pub jobs: &'a dyn crate::ports::JobStore,
    /// Registered namespaces.
    pub namespaces: &'a dyn crate::ports::NamespaceStore,
    /// Documents (the gate policy).
    pub docs: &'a dyn crate::ports::DocumentStore,
    /// The loop's run totals.
    pub improve: &'a dyn crate::ports::ImproveStore,
    /// Review verdicts recorded through `manage_pr` (the review gate).
    pub reviews: &'a dyn crate::ports::ReviewStore,
    /// The audit log (the `policy-signed` row a policy's signature must match).
    pub audit_log: &'a dyn crate::ports::AuditLog,
    /// Skills offered with claims and credited on completion.
    pub skills: &'a dyn crate::ports::SkillStore,
    /// The replay cache that makes each budget alert fire once.
    pub settings: &'a dyn crate::ports::SettingsStore,
    /// The GitHub App, when configured.
    pub repo_host: &'a Option<std::sync::Arc<dyn crate::ports::RepoHost>>,
    /// Who is told of blocked and failed jobs.
    pub notifier: &'a Option<std::sync::Arc<dyn crate::ports::Notifier>>,
    /// The signing secret.
    pub config: &'a super::ServiceConfig,
    /// Ids.
    pub entropy: &'a dyn crate::ids::Entropy,
    /// Now.
    pub clock: &'a dyn crate::time::Clock,
}

impl JobsCx<'_> {
    /// `roles`: the namespace's roles and its role documents that define nothing.
    async fn list_roles(&self, a: JobsArgs) -> Result<JobsAnswer> {
        let Some(ns) = &a.namespace else {
            return Err(Error::Invalid(
                "jobs: roles needs namespace (the namespace whose roles to list)".into(),
            ));
        };
        require_namespace(self.namespaces, ns.as_str()).await?;
        let book = self.roles().book(ns.as_str()).await?;
        Ok(JobsAnswer::Roles(RoleList {
            ok: true,
            action: "roles",
            namespace: ns.as_str().to_owned(),
            roles: book.all(),
            inert: book.inert.clone(),
        }))
    }

    /// Where the namespace's roles are read from.
    pub(crate) fn roles(&self) -> super::roles::RoleDocs<'_> {
        super::roles::RoleDocs {
            docs: self.docs,
            audit_log: self.audit_log,
            config: self.config,
        }
    }
}

impl super::Area for JobsCx<'_> {
    fn clock(&self) -> &dyn crate::time::Clock {
        self.clock
    }
}

/// The nine actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobsAction {
    /// Queue a signed job.
    Post,
    /// Take the best queued job (or one by id) under a lease.
    Claim,
    /// Renew the lease.
    Heartbeat,
    /// Finish with a summary and evidence.
    Complete,
    /// Give up with a reason.
    Fail,
    /// Stop at a human gate with the exact command to run.
    Block,
    /// Send a blocked job back in after a human acted.
    Resume,
    /// List jobs.
    List,
    /// One job by id, with its outcome once it ended.
    Get,
    /// Whether another agent's review approval stands for a head commit (the push hook asks).
    Approval,
    /// Raise a job's cap on what its run may spend; a job blocked at its budget gate is
    /// resumed with the raise as its answer.
    Raise,
    /// The holder's model door writes the calls it forwarded into the job's ledger.
    Meter,
    /// The holder's doors write what the job's box reached and was refused.
    Doors,
    /// The roles a namespace's jobs may name: the built-in ones as its signed documents tune
    /// them, its owner's, and the role documents that define nothing (with why).
    Roles,
    /// Record an approval of a pull request's current head (a senior's verdict).
    Approve,
    /// Record a request for changes on a pull request's current head.
    Reject,
}

impl JobsAction {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            JobsAction::Post => "post",
            JobsAction::Claim => "claim",
            JobsAction::Heartbeat => "heartbeat",
            JobsAction::Complete => "complete",
            JobsAction::Fail => "fail",
            JobsAction::Block => "block",
            JobsAction::Resume => "resume",
            JobsAction::List => "list",
            JobsAction::Get => "get",
            JobsAction::Approval => "approval",
            JobsAction::Raise => "raise",
            JobsAction::Approve => "approve",
            JobsAction::Reject => "reject",
            JobsAction::Meter => "meter",
            JobsAction::Doors => "doors",
            JobsAction::Roles => "roles",
        }
    }
}

/// `jobs`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct JobsArgs {
    /// post, claim, heartbeat, complete, fail, block, resume, list, get, approval, raise,
    /// meter, doors, approve, reject or roles.
    pub action: JobsAction,
    /// Namespace (post; claim without id; list filter).
    pub namespace: Option<NamespaceArg>,
    /// post: the title (unique among the namespace's open jobs).
    pub title: Option<Bounded<{ bounds::TITLE }>>,
    /// post: the prompt the driver executes (signed by the server).
    pub body: Option<Bounded<{ bounds::BODY }>>,
    /// post: higher first (default 0).
    pub priority: Option<i64>,
    /// post: the claimed job this one is dispatched from (its holder only; the namespace is
    /// the parent's).
    pub parent: Option<Bounded<64>>,
    /// post: a human gate is expected on the way.
    pub gate_required: Option<bool>,
    /// post: a reviewer must approve on the PR before it completes.
    pub review_required: Option<bool>,
    /// post: flags the claimer must hold.
    #[serde(default)]
    #[schemars(schema_with = "crate::jobs::schema::required_flags")]
    pub required_flags: Option<Value>,
    /// post: `{prs_merged: n}`, the claimer's verified track record bar.
    #[serde(default)]
    #[schemars(schema_with = "crate::jobs::schema::min_record")]
    pub min_record: Option<Value>,
    /// post: what one run of the job may spend on its model, in US dollars (above zero;
    /// default the namespace's `job_max_cost_usd`, else the server's `CAPSID_JOB_MAX_COST_USD`). A claim reserves it against the
    /// namespace's monthly budget. raise: the job's new cap, above its current one.
    pub max_cost_usd: Option<f64>,
    /// post: the agent CLI to run the job, `claude-code` or `codex` (default: the driver's,
    /// else its namespace's runner setting). A driver that cannot run it leaves it queued.
    /// claim: the runtimes this driver can run (a job naming another stays queued). A claim
    /// naming them is a driver's: a job without paths leases the whole repository.
    pub runtime: Option<Bounded<32>>,
    /// claim: every runtime the driver can run, its own first.
    pub runtimes: Option<Vec<Bounded<32>>>,
    /// post: the job's role (`scout`, `planner`, `junior`, `senior`, `deploy`), signed with
    /// its body. It decides what the run may ship (a scout or senior ships no code, and a run
    /// of it that ships nothing is done; any other job that ships nothing fails), the
    /// instructions the agent gets, and the cap when `max_cost_usd` is not given. A dispatched
    /// job keeps its parent's role unless it names one.
    pub role: Option<Bounded<32>>,
    /// post: where the job works, glob patterns relative to the repository root (for example
    /// `["src/api/**", "docs/api.md"]`), signed with its body. A claim leases them for the job's
    /// life, and a job whose paths overlap a live lease waits; a job without paths leases the
    /// whole repository, so it runs alone.
    #[serde(default)]
    #[schemars(schema_with = "crate::jobs::schema::paths")]
    pub paths: Option<Value>,
    /// list: only jobs whose lease covers this path (a job without paths covers every path).
    pub path: Option<Bounded<{ bounds::PATH }>>,
    /// list: only this status.
    pub status: Option<JobStatus>,
    /// The job (claim by id, heartbeat, complete, fail, block, resume, get).
    pub id: Option<Bounded<64>>,
    /// complete: what was done.
    pub result_summary: Option<Bounded<1024>>,
    /// complete: a document path or an https URL (a PR) naming the result.
    pub result_ref: Option<Bounded<{ bounds::PATH }>>,
    /// fail, block, resume: why (for resume: what the human approved).
    pub reason: Option<Bounded<1024>>,
    /// block: the exact command a human must run.
    pub command: Option<Bounded<1024>>,
    /// resume: the gate policy version that pre-approves the recorded command.
    pub approved_by_policy: Option<Bounded<32>>,
    /// complete/fail: `{prs: [url], commits, files_changed, tests_added}` or the same as JSON text.
    #[serde(default)]
    #[schemars(schema_with = "crate::jobs::schema::evidence")]
    pub evidence: Option<Value>,
    /// complete/fail: ids of the skills offered with the claim that the run followed.
    pub skills_used: Option<Vec<Bounded<64>>>,
    /// complete/fail: the verifier's verdict on the run (complete: verified-success or
    /// improvised; fail: verified-failure or environment-failure).
    pub skill_verdict: Option<crate::skills::RunSignal>,
    /// approval: the full head commit sha (`git rev-parse HEAD`) to look for an approval of.
    pub head_sha: Option<Bounded<64>>,
    /// approval of a merge: the pull request's number. The server reads the pull request's
    /// current head from GitHub and looks for another agent's approval of that head on that
    /// pull request of that repository.
    pub pull_request: Option<u64>,
    /// approval of a merge: the repository (`owner/name`, one the namespace maps; default its
    /// primary).
    pub repo: Option<Bounded<140>>,
    /// meter: the model calls the holder's door forwarded for the job (1 to 100), each with
    /// its usage and the door's price.
    pub calls: Option<Vec<MeteredCall>>,
    /// doors: what the holder's box doors saw for the job (1 to 200 records), each a
    /// connection or an egress host refused or reached.
    pub doors: Option<Vec<WireDoor>>,
}
impl crate::service::args::ScopeArgs for JobsArgs {
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_ref().map(|n| n.as_str())
    }
    fn repo(&self) -> Option<&str> {
        self.repo.as_ref().map(|r| r.as_str())
    }
    fn action(&self) -> Option<&str> {
        Some(self.action.name())
    }
}

/// The most rows `jobs list` reads to filter by a path.
const JOBS_PATH_SCAN_MAX: usize = 5_000;

/// `action` refused for `refusal`: `{ok: false, action, refusal}`.
pub(crate) fn refuse(action: JobsAction, refusal: impl Into<String>) -> JobsAnswer {
    JobRefused::new(action, refusal).into()
}

/// `action` answered with `job`: `{ok: true, action, job}`.
pub(crate) fn done(action: JobsAction, job: Job) -> JobsAnswer {
    JobDone::new(action, job).into()
}

/// The mirror document of a job, as a document write at `at`.
pub(crate) fn mirror_fn(at: Timestamp) -> MirrorFn {
    Box::new(move |job: &Job| {
        let m = crate::jobs::mirror::mirror_doc(job);
        DocumentWrite {
            namespace: m.namespace,
            path: m.path,
            title: Some(m.title),
            body: Some(m.body),
            doc_type: Some(m.doc_type.to_owned()),
            status: Some(m.status.to_owned()),
            tags: Some(m.tags.to_owned()),
            links: None,
            at,
        }
    })
}

/// A job audit row: namespace = the job's, path = its mirror, params carrying `job_id`.
pub(crate) fn job_audit(
    actor: &str,
    action: &str,
    job: &Job,
    params: Value,
    at: Timestamp,
) -> AuditEntry {
    let mut params = if params.is_object() {
        params
    } else {
        json!({})
    };
    params["job_id"] = json!(job.id);
    AuditEntry {
        actor: actor.to_owned(),
        action: action.to_owned(),
        namespace: Some(job.namespace.clone()),
        path: Some(job_doc_path(&job.id)),
        params,
        at,
    }
}

impl JobsCx<'_> {
    pub(crate) async fn jobs(
        &self,
        caller: &Caller,
        a: JobsArgs,
        _: &dyn Confirmer,
    ) -> Result<JobsAnswer> {
        let action = a.action;
        match action {
            JobsAction::Post => self.post_job(caller, a).await,
            JobsAction::List => self.list_jobs(a).await,
            JobsAction::Get => self.get_job(a).await,
            JobsAction::Claim => self.claim(caller, a).await,
            JobsAction::Heartbeat => self.heartbeat(caller, a).await,
            JobsAction::Complete | JobsAction::Fail | JobsAction::Block => {
                self.finish(caller, a).await
            }
            JobsAction::Resume => self.resume(caller, a).await,
            JobsAction::Approval => self.approval(caller, a).await,
            JobsAction::Raise => self.raise(caller, a).await,
            JobsAction::Meter => self.meter(caller, a).await,
            JobsAction::Doors => self.doors(caller, a).await,
            JobsAction::Roles => self.list_roles(a).await,
            JobsAction::Approve => {
                self.verdict(caller, a, crate::jobs::review::Verdict::Approve)
                    .await
            }
            JobsAction::Reject => {
                self.verdict(caller, a, crate::jobs::review::Verdict::Changes)
                    .await
            }
        }
    }

    async fn post_job(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        self.post_job_as(caller, a, new_job_id(self.entropy)).await
    }

    /// `post` under the job id `id`: a fresh one for the tool; the one the intake recorded for
    /// an issue before posting (so two ticks posting for one issue make one job: the second
    /// insert conflicts on the id).
    pub(crate) async fn post_job_as(
        &self,
        caller: &Caller,
        a: JobsArgs,
        id: String,
    ) -> Result<JobsAnswer> {
        self.post_job_by(caller, a, id, None).await
    }

    /// `post` under `id`, by the pipeline (`pipeline`: a hand-off from a parent it need not
    /// hold, which the actors it names may not claim) or by `caller` (a dispatch only from a
    /// parent the caller holds).
    pub(crate) async fn post_job_by(
        &self,
        caller: &Caller,
        a: JobsArgs,
        id: String,
        pipeline: Option<&[String]>,
    ) -> Result<JobsAnswer> {
        let act = JobsAction::Post;
        let (Some(ns), Some(title), Some(body)) = (&a.namespace, &a.title, &a.body) else {
            return Ok(refuse(act, "post needs namespace, title and body"));
        };
        let Some(secret) = self.config.signing_secret() else {
            return Ok(refuse(
                act,
                "job signing is not configured on this server (CAPSID_SIGNING_SECRET is unset), so this job could not be signed and no driver would execute it. Refusing rather than queueing work nothing can verify.",
            ));
        };
        refuse_swallowed_tag("body", body.as_str()).map_err(|e| Error::Invalid(e.to_string()))?;
        let title = match check_post_text(title.as_str(), body.as_str()) {
            Ok(t) => t.to_owned(),
            Err(e) => return Ok(refuse(act, e.to_string())),
        };
        let requirements = pipeline.into_iter().flatten().fold(
            JobRequirements::from_input(a.required_flags.as_ref(), a.min_record.as_ref())
                .map_err(|e| Error::Invalid(format!("jobs: {e}")))?,
            |r, actor| r.not_by(actor),
        );
        let asked_cap = a
            .max_cost_usd
            .map(crate::jobs::budget::parse_job_cap)
            .transpose()
            .map_err(|e| Error::Invalid(format!("jobs: {e}")))?;
        let asked_role = match &a.role {
            None => None,
            Some(r) => match self.roles().role(ns.as_str(), r.as_str()).await? {
                Ok(role) => Some(role),
                Err(why) => {
                    let book = self.roles().book(ns.as_str()).await?;
                    let refusal = book.refusal("role", r.as_str().trim(), &format!(" ({why})"));
                    return Err(Error::Invalid(format!("jobs: {refusal}")));
                }
            },
        };
        let paths = crate::jobs::paths::parse_paths(a.paths.as_ref())
            .map_err(|e| Error::Invalid(format!("jobs: {e}")))?;
        let runtime = match &a.runtime {
            None => None,
            Some(r) => Some(
                crate::drive::runtime::RuntimeKind::parse("runtime", r.as_str())
                    .map_err(|e| Error::Invalid(format!("jobs: {e}")))?
                    .name()
                    .to_owned(),
            ),
        };
        require_namespace(self.namespaces, ns.as_str()).await?;
        // A run credential posts only follow-ups of its own job.
        if let Some(run_job) = caller.run_job()
            && a.parent.as_ref().map(|p| p.as_str()) != Some(run_job)
        {
            return Ok(refuse(
                act,
                format!(
                    "a run credential posts only follow-ups of its own job: give parent {run_job}."
                ),
            ));
        }
        let mut parent_role = None;
        let dispatch = match &a.parent {
            None => None,
            Some(parent) => {
                let Some(parent_job) = self.jobs.job(parent.as_str()).await? else {
                    return Ok(refuse(
                        act,
                        format!("no job {} to dispatch from.", parent.as_str()),
                    ));
                };
                parent_role = self
                    .roles()
                    .of_job(&parent_job.namespace, parent_job.role.as_deref())
                    .await?;
                let limits = self.dispatch_limits(ns.as_str()).await?;
                let holder = caller.holder_actor();
                let poster = match pipeline {
                    Some(_) => Poster::Pipeline,
                    None => Poster::Holder(&holder),
                };
                match plan_dispatch(
                    &parent_job,
                    parent_role.as_ref(),
                    poster,
                    Some(ns.as_str()),
                    &limits,
                ) {
                    Ok(d) => Some(d),
                    Err(refusal) => {
                        return self
                            .refuse_dispatch(caller, &parent_job, &title, refusal)
                            .await;
                    }
                }
            }
        };
        // A dispatched job keeps its parent's role unless it names one; a job of a role gets
        // the role's cap when it names none.
        let role = asked_role.or(parent_role);
        let max_cost_usd = asked_cap.or(role.as_ref().map(crate::jobs::role::Role::default_cap));
        let role = role.map(|r| r.name.into_owned());
        let now = self.now();
        let job = NewJob {
            id,
            namespace: ns.as_str().to_owned(),
            title: title.clone(),
            body: seal_job(
                secret,
                body.as_str(),
                &JobTerms {
                    role: role.as_deref(),
                    paths: paths.as_deref(),
                },
            ),
            priority: a.priority.unwrap_or(0),
            posted_by: caller.actor(),
            gate_required: a.gate_required.unwrap_or(false),
            review_required: a.review_required.unwrap_or(false),
            required_scopes: requirements.stored_required_scopes(),
            min_record: requirements.stored_min_record(),
            at: now,
            dispatch: dispatch.clone(),
            max_cost_usd,
            runtime,
            role,
            paths,
        };
        let mut params = json!({ "title": title, "priority": job.priority, "gate_required": u8::from(job.gate_required) });
        if let Some(r) = &job.required_scopes {
            params["required_scopes"] = json!(r);
        }
        if let Some(m) = &job.min_record {
            params["min_record"] = json!(m);
        }
        if job.review_required {
            params["review_required"] = json!(1);
        }
        if let Some(cap) = job.max_cost_usd {
            params["max_cost_usd"] = json!(cap);
        }
        if let Some(r) = &job.runtime {
            params["runtime"] = json!(r);
        }
        if let Some(r) = &job.role {
            params["role"] = json!(r);
        }
        if let Some(p) = &job.paths {
            params["paths"] = json!(p);
        }
        if let Some(d) = &dispatch {
            params["parent_id"] = json!(d.parent_id);
            params["depth"] = json!(d.depth);
        }
        let audit = AuditEntry {
            actor: caller.actor(),
            action: JobEvent::Post.audit_action().into(),
            namespace: Some(job.namespace.clone()),
            path: Some(job_doc_path(&job.id)),
            params: {
                params["job_id"] = json!(job.id);
                params
            },
            at: now,
        };
        let job_namespace = job.namespace.clone();
        match self.jobs.post_job(job, audit, mirror_fn(now)).await {
            Ok(job) => Ok(done(act, job)),
            Err(StoreError::Conflict(m)) if m.starts_with(DISPATCH_LIMIT) => {
                let Some(d) = dispatch.as_ref() else {
                    return Err(StoreError::Conflict(m).into());
                };
                let why = too_many_children(&d.parent_id, d.max_children);
                self.audit_dispatch_refusal(caller, &job_namespace, &d.parent_id, &title, &why)
                    .await?;
                Ok(refuse(act, why))
            }
            Err(StoreError::Conflict(_)) => Ok(refuse(
                act,
                format!(
                    "{} already has an open job titled '{title}'. Finish or fail that one first, or post this under a different title. Open means queued or claimed.",
                    ns.as_str()
                ),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets `waiting_on` of each queued job in `rows` from its namespace's live leases, as a
    /// driver's claim would see them.
    pub(crate) async fn say_what_waits(&self, rows: &mut [Job]) -> Result<()> {
        let now = self.now();
        let mut leases: std::collections::BTreeMap<String, Vec<crate::jobs::paths::LiveLease>> =
            std::collections::BTreeMap::new();
        for job in rows.iter_mut().filter(|j| j.status == JobStatus::Queued) {
            if !leases.contains_key(&job.namespace) {
                let live = self.jobs.live_leases(&job.namespace, now).await?;
                leases.insert(job.namespace.clone(), live);
            }
            job.waiting_on = leases
                .get(&job.namespace)
                .and_then(|live| crate::jobs::paths::waiting_on(job, true, live));
        }
        Ok(())
    }

    async fn list_jobs(&self, a: JobsArgs) -> Result<JobsAnswer> {
        let filter = JobFilter {
            namespace: a.namespace.map(|n| n.as_str().to_owned()),
            status: a.status,
        };
        // A path filter is decided on the patterns, after the read: it reads more rows.
        let read = match &a.path {
            Some(_) => JOBS_PATH_SCAN_MAX,
            None => JOBS_ROWS_MAX + 1,
        };
        let mut rows = self.jobs.jobs(&filter, read).await?;
        let scanned_all = rows.len() < read;
        if let Some(path) = &a.path {
            let path = path.as_str().trim_start_matches("./");
            rows.retain(|job| crate::jobs::paths::lease_of(job).covers(path));
        }
        let truncated = rows.len() > JOBS_ROWS_MAX || !scanned_all && a.path.is_some();
        rows.truncate(JOBS_ROWS_MAX);
        self.say_what_waits(&mut rows).await?;
        Ok(JobsAnswer::Listed(JobList {
            ok: true,
            action: JobsAction::List.name(),
            jobs: rows,
            truncated: truncated.then_some(true),
            note: truncated.then(|| {
                format!("more than {JOBS_ROWS_MAX} jobs match; narrow by namespace or status.")
            }),
        }))
    }

    /// One job by id with its outcome (`null` until it ended). With a namespace, a job of
    /// another namespace is "no job" (a narrowed caller names its namespace, and learns
    /// nothing of others').
    async fn get_job(&self, a: JobsArgs) -> Result<JobsAnswer> {
        let mut job = match self.job_for(JobsAction::Get, a.id.as_ref()).await? {
            Ok(job) => job,
            Err(refusal) => return Ok(refusal),
        };
        if let Some(ns) = a.namespace.as_ref().map(|n| n.as_str())
            && job.namespace != ns
        {
            return Ok(refuse(
                JobsAction::Get,
                format!("no job {} in namespace {ns}.", job.id),
            ));
        }
        let outcome = match job.claimed_by.as_deref() {
            Some(agent) => self
                .jobs
                .outcomes(Some(agent))
                .await?
                .into_iter()
                .find(|o| o.job_id == job.id),
            None => None,
        };
        self.say_what_waits(std::slice::from_mut(&mut job)).await?;
        let spend = self.job_spend(&job.id).await?;
        let doors = self.jobs.job_doors(&job.id).await?;
        let merges = self.run_merges(&job).await?;
        let role = self
            .roles()
            .of_job(&job.namespace, job.role.as_deref())
            .await?;
        let mut answer = JobDone::new(JobsAction::Get, job);
        answer.merges = merges;
        answer.role_definition = role;
        answer.outcome = Some(JobOutcome::Stored(outcome));
        answer.spend = Some(spend);
        answer.doors = Some(doors);
        Ok(answer.into())
    }

    /// The job a holder's record of its run is written to (`meter`'s ledger rows, `doors`'
    /// records): `a.id` in `a.namespace` (when given), held by `caller` (or `caller` is an
    /// admin), and past its queue (written while a claim runs and after it ends). Each
    /// refusal names `what` is written.
    pub(super) async fn holders_job(
        &self,
        act: JobsAction,
        caller: &Caller,
        a: &JobsArgs,
        what: &str,
    ) -> Result<std::result::Result<Job, JobsAnswer>> {
        let job = match self.job_for(act, a.id.as_ref()).await? {
            Ok(job) => job,
            Err(refused) => return Ok(Err(refused)),
        };
        if let Some(ns) = a.namespace.as_ref().map(|n| n.as_str())
            && job.namespace != ns
        {
            return Ok(Err(refuse(
                act,
                format!("no job {} in namespace {ns}.", job.id),
            )));
        }
        let actor = caller.actor();
        let holder = job.claimed_by.as_deref();
        if !caller.is_admin() && holder != Some(actor.as_str()) {
            return Ok(Err(refuse(
                act,
                format!(
                    "only the job's holder writes {what}: {} is held by {}, not by {actor}.",
                    job.id,
                    holder.unwrap_or("nobody")
                ),
            )));
        }
        if job.status == JobStatus::Queued {
            return Ok(Err(refuse(
                act,
                format!(
                    "{} is queued: {what} is written while a claim runs and after it ends.",
                    job.id
                ),
            )));
        }
        Ok(Ok(job))
    }

    /// The job `id` names, refusing when it is missing.
    pub(crate) async fn job_for(
        &self,
        action: JobsAction,
        id: Option<&Bounded<64>>,
    ) -> Result<std::result::Result<Job, JobsAnswer>> {
        let Some(id) = id else {
            return Ok(Err(refuse(
                action,
                format!("{} needs an id", action.name()),
            )));
        };
        Ok(match self.jobs.job(id.as_str()).await? {
            Some(job) => Ok(job),
            None => Err(refuse(action, format!("no job {}.", id.as_str()))),
        })
    }

    /// Why the holder-keyed transition on `job` was refused.
    pub(crate) async fn holder_refusal(
        &self,
        action: JobsAction,
        id: &str,
        actor: &str,
    ) -> Result<JobsAnswer> {
        let Some(current) = self.jobs.job(id).await? else {
            return Ok(refuse(action, format!("no job {id}.")));
        };
        if current.status != JobStatus::Claimed {
            let why = if current.status == JobStatus::Queued {
                "Its lease expired and the tick returned it to the queue; claim it again."
            } else {
                "It has already been finished."
            };
            return Ok(refuse(
                action,
                format!("{id} is {}, not claimed. {why}", current.status),
            ));
        }
        Ok(refuse(
            action,
            format!(
                "{id} is held by {}, not by {actor}.",
                current.claimed_by.as_deref().unwrap_or("nobody")
            ),
        ))
    }
}

mod registered {
    //! `jobs` as the registry serves it.
    use super::*;
    use crate::jobs::budget::usd;
    use crate::service::Areas;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Requirement, Rule, ToolGroup, ToolSpec, action};

    /// `jobs`.
    #[derive(Debug)]
    pub struct Jobs;
    impl Tool for Jobs {
        type Args = JobsArgs;
        type Answer = JobsAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "jobs",
            ToolGroup::Jobs,
            Requirement::PerAction {
                default: "list",
                actions: &[
                    action("post", Rule::write()),
                    action("claim", Rule::write()),
                    action("heartbeat", Rule::write()),
                    action("complete", Rule::write()),
                    action("fail", Rule::write()),
                    action("block", Rule::write()),
                    action("resume", Rule::write()),
                    action("list", Rule::read()),
                    action("get", Rule::read()),
                    action("approval", Rule::read()),
                    action("roles", Rule::read()),
                    action(
                        "raise",
                        Rule::write().with_flags(&[crate::scope::Flag::CanRaiseBudget]),
                    ),
                    action("meter", Rule::write()),
                    action("doors", Rule::write()),
                    action(
                        "approve",
                        Rule::write().with_flags(&[crate::scope::Flag::CanCommentPr]),
                    ),
                    action(
                        "reject",
                        Rule::write().with_flags(&[crate::scope::Flag::CanCommentPr]),
                    ),
                ],
            },
            "The signed work queue: post, claim, heartbeat, complete, fail, block, resume, list, get (one job with its outcome); approval: whether another agent's review approval stands for a head commit; raise: a job's cap on what its run may spend (can_raise_budget), resuming a job blocked at its budget gate; meter: the holder's model door writes the calls it forwarded into the job's ledger (what its cost, the budgets and /metrics read); doors: the holder's box doors write every connection and every egress host refused or reached (get answers them); roles: the roles the namespace's jobs may name (built in, tuned or defined by its owner's signed documents), and the role documents that define nothing, with why; approve / reject: record a review verdict on a pull request's current head (pull_request, head_sha as shown; can_comment_pr), which counts for a merge only when its reviewer is neither the author nor the merger.",
        )
    .open_world()
        .ok_false_refusals()
        .titled("Work queue");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: JobsArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move {
                let raise = a.action == JobsAction::Raise;
                let mut answer = s.jobs().jobs(c, a, k).await?;
                // A job blocked at its budget gate goes on: the raise answers its driver's
                // open question about this job and asks for the same session to resume.
                if raise
                    && let JobsAnswer::Done(done) = &mut answer
                    && done.job.status == JobStatus::Blocked
                    && let Some(agent) = done
                        .job
                        .claimed_by
                        .as_deref()
                        .and_then(|h| h.strip_prefix("agent:"))
                {
                    let text = format!(
                        "The job's cap was raised to {} by {}. Go on from where you stopped.",
                        done.max_cost_usd
                            .map_or_else(|| "(none)".to_owned(), |c| usd(c.dollars())),
                        c.actor()
                    );
                    let resumed = s
                        .checkmarks()
                        .answer_for_job(c, &done.job.namespace, agent, &done.job.id, text)
                        .await?;
                    done.resumed = Some(resumed);
                }
                Ok(answer)
            })
        }
    }
}
pub use registered::Jobs;
