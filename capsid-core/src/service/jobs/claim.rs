//! `claim` and `heartbeat`: the claim decider the store runs inside its transaction (required
//! flags, the track-record bar, the signature), the claimer's record, and the lease renewal.

use super::{
    JobDone, JobRefused, JobsAction, JobsAnswer, JobsArgs, JobsCx, done, job_audit, mirror_fn,
    refuse,
};
use crate::service::Area;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::drive::ledger::Usd;
use crate::drive::runtime::RuntimeKind;
use crate::error::Result;
use crate::jobs::budget::{BudgetState, month_start};
use crate::jobs::lease::{actor_may_hold_jobs, lease_expiry};
use crate::jobs::record::{
    AgentRecord, ClaimedJobCount, NamespaceRuns, agent_record, attempt_sums, min_record_refusal,
};
use crate::jobs::requirements::{JobRequirements, missing_for_job};
use crate::jobs::signature::verify_job;
use crate::jobs::state::{JobEvent, step};
use crate::jobs::{Job, JobStatus};
use crate::ports::MonthSpend;
use crate::ports::{
    AuditEntry, Change, ClaimDecider, ClaimOutcome, ClaimRequest, ClaimTarget, ClaimVerdict,
    JobPatch, JobTransition, StoreError,
};
use crate::scope::Scopes;
use crate::time::Timestamp;

/// What each running job reserves: the rest of its cap (its own, else the server's default)
/// beyond what its ledger holds, which the month's spend already counts (a job with no cap
/// reserves nothing).
pub(super) fn reservations(
    holding: &[crate::ports::Holding],
    default_cap: Option<Usd>,
) -> Vec<(String, Usd)> {
    holding
        .iter()
        .filter_map(|h| {
            h.cap
                .or(default_cap)
                .map(|c| (h.id.clone(), c.minus(h.spent)))
        })
        .collect()
}

/// What `job` itself reserves to run: its cap (its own, else `default_cap`) less what its
/// ledger holds from earlier sessions.
pub(super) fn own_reservation(job: &Job, spent: Usd, default_cap: Option<Usd>) -> Option<Usd> {
    job.max_cost_usd.or(default_cap).map(|c| c.minus(spent))
}

/// Decides about a claim candidate inside the store's transaction: required flags, the
/// track-record bar, then the signature; the order of the reference.
struct Decider<'a> {
    actor: String,
    scopes: &'a Scopes,
    record: Option<&'a AgentRecord>,
    secret: Option<&'a str>,
    skills: &'a [crate::ports::SkillRow],
    now: Timestamp,
    lease: Timestamp,
    /// Set when a monthly budget applies to the namespace: the claim then reserves the job's
    /// cap against the month inside the store's transaction.
    budget: Option<MonthTerms>,
    /// The runtimes the claiming driver can run (`None`: it did not say, and takes any job).
    runtimes: Option<&'a [RuntimeKind]>,
}

/// Why a driver running `runtimes` cannot take `job`, when the job asks for another runtime.
fn runtime_refusal(actor: &str, job: &Job, runtimes: Option<&[RuntimeKind]>) -> Option<String> {
    let why = crate::drive::runtime::cannot_run(job.runtime.as_deref(), runtimes?)?;
    Some(format!(
        "{actor} cannot claim {} ('{}'): {why}. The job stays queued for a driver that can run it.",
        job.id, job.title
    ))
}

/// What the decider needs beside the store's [`MonthSpend`] to decide a reservation.
#[derive(Clone, Copy)]
struct MonthTerms {
    since: Timestamp,
    default_budget_usd: Option<f64>,
    default_cap: Option<Usd>,
}

impl Decider<'_> {
    fn audit(&self, job: &Job, action: &str, params: Value) -> AuditEntry {
        job_audit(&self.actor, action, job, params, self.now)
    }
}

impl ClaimDecider for Decider<'_> {
    fn budget_since(&self) -> Option<Timestamp> {
        self.budget.map(|b| b.since)
    }

    fn fits(&self, job: &Job, month: &MonthSpend) -> std::result::Result<(), String> {
        let Some(terms) = self.budget else {
            return Ok(());
        };
        let state = BudgetState::new(
            &job.namespace,
            self.now,
            month.budget_usd,
            terms.default_budget_usd,
            month.spent_usd,
        );
        let holding = reservations(&month.holding, terms.default_cap);
        state.claim_fits(
            &job.id,
            own_reservation(job, month.job_spent, terms.default_cap),
            &holding,
        )
    }

    fn decide(&self, job: &Job) -> ClaimVerdict {
        if let Some(why) = runtime_refusal(&self.actor, job, self.runtimes) {
            return ClaimVerdict::Refuse(why);
        }
        let requirements = match JobRequirements::from_stored(
            job.required_scopes.as_deref(),
            job.min_record.as_deref(),
        ) {
            Ok(r) => r,
            Err(corrupt) => {
                let summary = format!(
                    "this job's stored requirement could not be read, so it was failed rather than handed out: {corrupt}"
                );
                return ClaimVerdict::Fail {
                    audit: self.audit(
                        job,
                        JobEvent::ClaimRequirementCorrupt.audit_action(),
                        json!({"reason": summary}),
                    ),
                    summary,
                    outcome: None,
                };
            }
        };
        if let Some(why) = requirements.excluded(&self.actor) {
            return ClaimVerdict::Refuse(format!(
                "{} cannot claim {} ('{}'): {why}. The job stays queued.",
                self.actor, job.id, job.title
            ));
        }
        if let Err(missing) = missing_for_job(self.scopes, &job.namespace, &requirements) {
            return ClaimVerdict::Refuse(format!(
                "{} cannot claim {} ('{}'): {missing} The job stays queued for a driver that can do it.",
                self.actor, job.id, job.title
            ));
        }
        if let Some(bar) = requirements.min_prs_merged.filter(|b| *b > 0) {
            let Some(record) = self.record else {
                return ClaimVerdict::NeedsRecord;
            };
            if let Some(short) = min_record_refusal(bar, record) {
                return ClaimVerdict::Refuse(format!(
                    "{} cannot claim {} ('{}'): {short} The job stays queued for a driver that can do it.",
                    self.actor, job.id, job.title
                ));
            }
        }
        match verify_job(self.secret.unwrap_or(""), &job.body, &job.terms()) {
            Ok(task) => {
                let offered = super::skills::offered_ids(self.skills, job, task);
                ClaimVerdict::Claim(self.audit(job, JobEvent::Claim.audit_action(), json!({"lease_expires": self.lease.to_string(), "skills_offered": offered})))
            }
            Err(crate::jobs::signature::SignatureError::NotConfigured) => ClaimVerdict::Refuse(
                "job signing is not configured on this server (CAPSID_SIGNING_SECRET), so no job body can be verified; nothing was claimed".into(),
            ),
            Err(e) => ClaimVerdict::Fail {
                audit: self.audit(job, JobEvent::ClaimSignatureRefused.audit_action(), json!({"reason": e.to_string()})),
                summary: e.to_string(),
                outcome: None,
            },
        }
    }
}

impl JobsCx<'_> {
    /// Adds the run's terms to a claim or resume answer: what the run may spend (the job's
    /// cap, else the namespace's default, else the server's), and for a minted agent the claim's run credential (a
    /// driver hands it to the agent process instead of its own key).
    pub(super) async fn attach_run_terms(&self, caller: &Caller, out: &mut JobDone) -> Result<()> {
        out.max_cost_usd = match out.job.max_cost_usd {
            Some(own) => Some(own),
            None => self.default_cap(&out.job.namespace).await?,
        };
        // The cap is the job's, across its sessions: what earlier ones spent counts.
        out.spent_usd = Some(self.job_spend(&out.job.id).await?.total);
        out.role_definition = self
            .roles()
            .of_job(&out.job.namespace, out.job.role.as_deref())
            .await?;
        if !matches!(caller.principal, crate::caller::Principal::Agent { .. }) {
            return Ok(());
        }
        out.run_credential =
            crate::jobs::run_credential::issue(self.config.signing_secret(), &out.job);
        Ok(())
    }

    /// The claimer's track record, as improve_status and the console show it.
    pub(crate) async fn record_of(&self, caller: &Caller) -> Result<AgentRecord> {
        let actor = caller.actor();
        let outcomes = self.jobs.outcomes(Some(&actor)).await?;
        let counts: Vec<ClaimedJobCount> = self
            .jobs
            .job_status_counts()
            .await?
            .into_iter()
            .filter(|c| c.claimed_by == actor)
            .map(|c| ClaimedJobCount {
                claimed_by: c.claimed_by,
                status: c.status,
                n: i64::try_from(c.count).unwrap_or(i64::MAX),
            })
            .collect();
        let attempts = if caller.agent_kind() == Some(crate::caller::AgentKind::Driver) {
            let runs: Vec<NamespaceRuns> = self
                .improve
                .run_totals(None)
                .await?
                .into_iter()
                .map(|t| NamespaceRuns {
                    namespace: t.namespace,
                    kept: i64::try_from(t.kept).unwrap_or(i64::MAX),
                    reverts: i64::try_from(t.reverts).unwrap_or(i64::MAX),
                })
                .collect();
            Some(attempt_sums(&runs, &caller.scopes.namespaces))
        } else {
            None
        };
        Ok(agent_record(&actor, &outcomes, &counts, attempts))
    }

    pub(super) async fn claim(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        let act = JobsAction::Claim;
        let actor = caller.actor();
        if !actor_may_hold_jobs(&actor) {
            return Ok(refuse(
                act,
                format!(
                    "'{actor}' is not a caller identity this queue can hold a lease for. A claim is recorded against a github: login, an opkey: fingerprint, or an agent: name."
                ),
            ));
        }
        let target = match (&a.id, &a.namespace) {
            (Some(id), _) => ClaimTarget::Id(id.0.clone()),
            (None, Some(ns)) => ClaimTarget::Best {
                namespace: ns.as_str().to_owned(),
            },
            (None, None) => {
                return Ok(refuse(
                    act,
                    "claim needs a namespace to pick from, or an id to claim.",
                ));
            }
        };
        // The namespace's budget: a spent month claims nothing there, and the job stays queued.
        let budget_ns = match &target {
            ClaimTarget::Best { namespace } => Some(namespace.clone()),
            // A job outside the caller's namespaces is refused by the decider, naming
            // nothing of that namespace's spend.
            ClaimTarget::Id(id) => self
                .jobs
                .job(id)
                .await?
                .map(|job| job.namespace)
                .filter(|ns| caller.scopes.namespaces.allows(ns)),
        };
        // A spent month is refused here, before the store is asked; whether the job's cap
        // still fits is decided again inside the claim's transaction, against the spend and
        // the caps of the jobs running there as they stand then.
        // A driver's claim of a job without paths leases the whole repository, unless the job's
        // role writes nothing there (it ships nothing, or merges another job's pull request).
        let mut writes_nothing = Vec::new();
        if let (Some(_), Some(ns)) = (&a.runtimes, &budget_ns) {
            writes_nothing = self
                .roles()
                .book(ns)
                .await?
                .all()
                .into_iter()
                .filter(|r| !r.ships.writes())
                .map(|r| r.name.into_owned())
                .collect();
        }
        let mut budget = None;
        if let Some(ns) = budget_ns
            && let Some(state) = self.budget_state(&ns).await?
        {
            if let Some(why) = state.claim_refusal() {
                return Ok(refuse(act, why));
            }
            if state.budget_usd.is_some() {
                budget = Some(MonthTerms {
                    since: month_start(self.now()),
                    default_budget_usd: self.config.default_monthly_budget_usd,
                    default_cap: self.default_cap(&ns).await?,
                });
            }
        }
        let runtimes = match &a.runtimes {
            None => None,
            Some(list) => Some(
                list.iter()
                    .map(|r| RuntimeKind::parse("runtimes", r.as_str()))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| crate::error::Error::Invalid(format!("jobs claim: {e}")))?,
            ),
        };
        let mut record = None;
        let skills = super::skills::offerable(self).await?;
        // A lost race on the best candidate is retried with the next one a few times.
        for _ in 0..8 {
            let now = self.now();
            let lease = lease_expiry(now);
            let decider = Decider {
                actor: actor.clone(),
                scopes: &caller.scopes,
                record: record.as_ref(),
                secret: self.config.signing_secret(),
                skills: &skills,
                now,
                lease,
                budget,
                runtimes: runtimes.as_deref(),
            };
            let request = ClaimRequest {
                target: target.clone(),
                actor: actor.clone(),
                now,
                lease_expires: lease,
                // A claim naming the runtimes it runs is a driver's: it works in a checkout,
                // so a job without paths leases the whole repository.
                driven: runtimes.is_some(),
                writes_nothing: &writes_nothing,
                decider: &decider,
                mirror: mirror_fn(now),
            };
            let outcome = self.jobs.claim_job(request).await;
            let outcome = match outcome {
                Err(StoreError::Conflict(_)) => match self.jobs.held_job(&actor).await? {
                    Some(held) => ClaimOutcome::AlreadyHolding(held),
                    None => ClaimOutcome::LostRace,
                },
                other => other?,
            };
            return Ok(match outcome {
                ClaimOutcome::Claimed(job) => {
                    let task = verify_job(
                        self.config.signing_secret().unwrap_or(""),
                        &job.body,
                        &job.terms(),
                    )
                    .unwrap_or("");
                    let ids = super::skills::offered_ids(&skills, &job, task);
                    let offered = self.offer_answer(&skills, &ids).await?;
                    let mut out = JobDone::new(act, job);
                    out.skills_offered = Some(offered);
                    self.attach_run_terms(caller, &mut out).await?;
                    out.into()
                }
                ClaimOutcome::AlreadyHolding(held) => refuse(
                    act,
                    format!(
                        "{actor} already holds {} ('{}' in {}), leased until {}. Complete it, fail it, or block it before claiming another.",
                        held.id,
                        held.title,
                        held.namespace,
                        held.lease_expires
                            .map_or_else(|| "(no lease)".to_owned(), |t| t.to_string())
                    ),
                ),
                ClaimOutcome::NotFound => refuse(
                    act,
                    format!("no job {}.", a.id.as_ref().map_or("", |i| i.as_str())),
                ),
                ClaimOutcome::NotQueued(job) => refuse(
                    act,
                    format!(
                        "{} is {}, not queued{}.",
                        job.id,
                        job.status,
                        job.claimed_by
                            .as_ref()
                            .map_or(String::new(), |h| format!(" (held by {h})"))
                    ),
                ),
                ClaimOutcome::NothingQueued => refuse(
                    act,
                    format!(
                        "no queued jobs in {}.",
                        a.namespace.as_ref().map_or("", |n| n.as_str())
                    ),
                ),
                // Asked again with the record: a claim by id takes the same job; a claim of the
                // best job walks the queue again, and may pass this one if the record falls
                // short of its bar.
                ClaimOutcome::NeedsRecord(_) => {
                    record = Some(self.record_of(caller).await?);
                    continue;
                }
                ClaimOutcome::Refused(_, why) => refuse(act, why),
                ClaimOutcome::Failed(job, why) => JobRefused::new(
                    act,
                    format!(
                        "{} failed its checks and has been marked failed: {why}",
                        job.id
                    ),
                )
                .with_job(job)
                .into(),
                ClaimOutcome::LostRace => {
                    if matches!(target, ClaimTarget::Best { .. }) {
                        continue;
                    }
                    refuse(
                        act,
                        "the job was claimed by someone else between reading it and taking it. Ask again.",
                    )
                }
            });
        }
        Ok(refuse(
            act,
            "every candidate was claimed by someone else while this claim ran. Ask again.",
        ))
    }

    pub(super) async fn heartbeat(&self, caller: &Caller, a: JobsArgs) -> Result<JobsAnswer> {
        let act = JobsAction::Heartbeat;
        let job = match self.job_for(act, a.id.as_ref()).await? {
            Ok(job) => job,
            Err(refused) => return Ok(refused),
        };
        let actor = caller.actor();
        let now = self.now();
        // A lease that ran out is not renewed: its paths may be another job's by now, and the
        // lease sweep returns the job to the queue (issue 51: a stale claim uses no lease).
        if let Some(ran_out) = job
            .lease_expires
            .filter(|t| *t < now && job.status == JobStatus::Claimed)
        {
            return Ok(refuse(
                act,
                format!(
                    "the lease of {} ran out at {ran_out}, so it is no longer held (nor the paths it leased); the lease sweep returns it to the queue. Claim it again to go on.",
                    job.id
                ),
            ));
        }
        let lease = lease_expiry(now);
        let step = step(JobStatus::Claimed, JobEvent::Heartbeat)?;
        let t = JobTransition {
            id: job.id.clone(),
            expected: Some(job.clone()),
            step,
            holder: Some(actor.clone()),
            corrections: None,
            patch: JobPatch {
                lease_expires: Change::Set(lease),
                ..JobPatch::default()
            },
            at: now,
            audit: job_audit(
                &actor,
                step.audit_action(),
                &job,
                json!({"lease_expires": lease.to_string()}),
                now,
            ),
            outcome: None,
            mirror: mirror_fn(now),
        };
        match self.jobs.transition_job(t).await? {
            Some(job) => Ok(done(act, job)),
            None => self.holder_refusal(act, &job.id, &actor).await,
        }
    }
}
