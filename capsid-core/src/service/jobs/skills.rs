//! Skills on the work queue (reference 9): the skills a claim offers (recorded on the claim's
//! audit row, answered with their two newest failure notes), the driver's report of which it
//! used and the verifier's verdict on the completing call, both lists on the outcome row, the
//! credit `skills::attribute` gives, and a failure note per used skill of a failed job.

use serde_json::{Value, json};

use super::{
    JobsAction, JobsAnswer, JobsCx, OfferedSkill, SkillCredited, SkillFailureShown, SkillsSettled,
    refuse,
};
use crate::error::{Error, Result};
use crate::jobs::Job;
use crate::jobs::state::JobEvent;
use crate::ports::{AuditEntry, SkillFailureRow, SkillRow};
use crate::service::args::Bounded;
use crate::skills::offer::{OFFERED_FAILURES, OfferSkill, skills_to_offer};
use crate::skills::{Credit, RunSignal, SkillStatus, attribute};
use crate::time::Timestamp;

/// At most this many ids are read from `skills_used`.
pub(crate) const SKILLS_USED_MAX: usize = 16;

/// The skills a claim may offer: live ones and candidates under evaluation.
pub(crate) async fn offerable(cx: &JobsCx<'_>) -> Result<Vec<SkillRow>> {
    Ok(cx
        .skills
        .skills_in(&[SkillStatus::Live.name(), SkillStatus::Candidate.name()])
        .await?)
}

/// The ids offered a job whose task reads `task`.
pub(crate) fn offered_ids(skills: &[SkillRow], job: &Job, task: &str) -> Vec<String> {
    let view: Vec<OfferSkill<'_>> = skills
        .iter()
        .filter_map(|s| {
            Some(OfferSkill {
                id: &s.id,
                status: SkillStatus::parse(&s.status)?,
                trigger: s.trigger_condition.as_deref(),
                namespaces: s.namespaces.as_deref(),
            })
        })
        .collect();
    let text = format!("{}\n{task}", job.title);
    skills_to_offer(&view, &job.namespace, &text)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

impl JobsCx<'_> {
    /// The claim answer's `skills_offered`: each offered skill with its two newest notes.
    pub(crate) async fn offer_answer(
        &self,
        skills: &[SkillRow],
        ids: &[String],
    ) -> Result<Vec<OfferedSkill>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(s) = skills.iter().find(|s| &s.id == id) else {
                continue;
            };
            let failures = self
                .skills
                .skill_failures(id, OFFERED_FAILURES)
                .await?
                .into_iter()
                .map(|f| SkillFailureShown {
                    source_kind: f.source_kind,
                    source_id: f.source_id,
                    note: f.note,
                    at: f.created_at.to_string(),
                })
                .collect();
            out.push(OfferedSkill {
                id: s.id.clone(),
                name: s.title.clone(),
                version: s.version,
                status: s.status.clone(),
                trigger: s.trigger_condition.clone(),
                failures,
            });
        }
        Ok(out)
    }

    /// The ids the job's newest claim offered, from that claim's audit row; `None` when the
    /// row records no offer.
    pub(crate) async fn offered_at_claim(&self, job: &Job) -> Result<Option<Vec<String>>> {
        let row = self
            .audit_log
            .newest_audit(
                JobEvent::Claim.audit_action(),
                &job.namespace,
                &crate::jobs::job_doc_path(&job.id),
            )
            .await?;
        Ok(row
            .and_then(|r| r.params)
            .and_then(|p| serde_json::from_str::<Value>(&p).ok())
            .and_then(|p| serde_json::from_value::<Vec<String>>(p["skills_offered"].clone()).ok()))
    }
}

/// What the completing call reported about skills.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SkillReport {
    /// Offered with the claim (`None`: the claim recorded no offer).
    pub offered: Option<Vec<String>>,
    /// Reported used (`None`: not reported).
    pub used: Option<Vec<String>>,
    /// The verifier's verdict.
    pub signal: Option<RunSignal>,
}

impl SkillReport {
    /// The outcome row's two JSON columns.
    pub(crate) fn columns(&self) -> (Option<String>, Option<String>) {
        let text = |l: &Option<Vec<String>>| l.as_ref().map(|l| json!(l).to_string());
        (text(&self.offered), text(&self.used))
    }
}

/// Checks the completing call's `skills_used` and `skill_verdict`: only on complete and fail,
/// at most [`SKILLS_USED_MAX`] ids, each one the claim offered, and a verdict that agrees
/// with the action (complete: verified-success or improvised; fail: verified-failure or
/// environment-failure). A disagreement is a tool error naming the field; a refusal answer
/// when nothing was offered to use.
pub(crate) fn check_report(
    act: JobsAction,
    used: Option<&[Bounded<64>]>,
    signal: Option<RunSignal>,
    offered: Option<Vec<String>>,
) -> Result<std::result::Result<SkillReport, JobsAnswer>> {
    let finishing = matches!(act, JobsAction::Complete | JobsAction::Fail);
    if !finishing && (used.is_some() || signal.is_some()) {
        return Err(Error::Invalid(
            "jobs: skills_used and skill_verdict belong to complete and fail only".into(),
        ));
    }
    if let Some(signal) = signal {
        let fits = match act {
            JobsAction::Complete => {
                matches!(signal, RunSignal::VerifiedSuccess | RunSignal::Improvised)
            }
            _ => matches!(
                signal,
                RunSignal::VerifiedFailure | RunSignal::EnvironmentFailure
            ),
        };
        if !fits {
            return Err(Error::Invalid(format!(
                "jobs: skill_verdict: '{signal}' does not describe a job that is being {}; complete takes verified-success or improvised, fail takes verified-failure or environment-failure",
                if act == JobsAction::Complete {
                    "completed"
                } else {
                    "failed"
                }
            )));
        }
    }
    let used = match used {
        None => None,
        Some(list) if list.len() > SKILLS_USED_MAX => {
            return Err(Error::Invalid(format!(
                "jobs: skills_used: at most {SKILLS_USED_MAX} ids"
            )));
        }
        Some(list) => {
            let mut ids: Vec<String> = Vec::with_capacity(list.len());
            for id in list {
                let id = id.as_str().trim();
                let was_offered = offered.as_ref().is_some_and(|o| o.iter().any(|x| x == id));
                if !was_offered {
                    return Ok(Err(refuse(
                        act,
                        format!(
                            "skills_used names '{id}', which this job's claim did not offer. Report only skills from the claim's skills_offered; nothing was changed."
                        ),
                    )));
                }
                if !ids.iter().any(|x| x == id) {
                    ids.push(id.to_owned());
                }
            }
            Some(ids)
        }
    };
    Ok(Ok(SkillReport {
        offered,
        used,
        signal,
    }))
}

impl JobsCx<'_> {
    /// After the job ended: credit each used skill per the attribution rule, and on a failed
    /// job note the failure on each. Each write carries its audit row; a store error is
    /// answered as a note, the job's transition already stands.
    pub(crate) async fn settle_skills(
        &self,
        actor: &str,
        job: &Job,
        report: &SkillReport,
        failed_reason: Option<&str>,
        now: Timestamp,
    ) -> SkillsSettled {
        let mut credited = Vec::new();
        let mut notes = Vec::new();
        for id in report.used.iter().flatten() {
            let credit = report.signal.map_or(Credit::None, |s| attribute(true, s));
            let audit = |action: &str, params: Value| AuditEntry {
                actor: actor.to_owned(),
                action: action.to_owned(),
                namespace: Some(job.namespace.clone()),
                path: Some(format!("improve/skills/{id}.md")),
                params,
                at: now,
            };
            if credit != Credit::None {
                let win = credit == Credit::Win;
                let a = audit(
                    "skill-credited",
                    json!({"skill": id, "job_id": job.id, "credit": credit}),
                );
                match self.skills.credit_skill(id, win, a).await {
                    Ok(true) => credited.push(SkillCredited {
                        id: id.clone(),
                        credit,
                    }),
                    Ok(false) => notes.push(format!("skill {id} no longer exists; no credit")),
                    Err(e) => notes.push(format!("skill {id} could not be credited: {e}")),
                }
            }
            if let Some(reason) = failed_reason {
                let signal = report.signal.map_or("unreported", RunSignal::name);
                let note: String = format!("{signal}: {reason}").chars().take(1024).collect();
                let row = SkillFailureRow {
                    skill: id.clone(),
                    namespace: job.namespace.clone(),
                    source_kind: "job".into(),
                    source_id: job.id.clone(),
                    note,
                    created_at: now,
                };
                let a = audit(
                    "skill-failure-noted",
                    json!({"skill": id, "job_id": job.id}),
                );
                if let Err(e) = self.skills.record_skill_failure(row, a).await {
                    notes.push(format!("skill {id}: failure note not written: {e}"));
                }
            }
        }
        SkillsSettled {
            offered: report.offered.clone(),
            used: report.used.clone(),
            verdict: report.signal,
            credited,
            notes,
        }
    }
}
