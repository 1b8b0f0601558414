//! The skills evaluation cycle (reference 9) and `POST /improve/probe`. The cycle rides the
//! `improve` periodic task: gated first on `skills:evaluate:cadence-days` against the stamp
//! `skills:evaluate:last` (claimed by an audited compare-and-set, so two replicas do not both
//! run it), it dispatches `improve-probe.yml` in every registered namespace that has a probe
//! set (`improve/probes.md`) and maps a repository, once per non-retired skill that applies
//! there, and once more for a skill's pending edit (`edit.rs` proposes them). The probe
//! workflow reports back signed exactly as a score report is; the report is checked whole
//! (envelope, body, skill, version, probe set) before its `jti` is claimed, so a refused
//! report writes nothing; then the evaluation is recorded with its audit row and the
//! lifecycle applied as a keyed status change.

use serde::Serialize;
use serde_json::{Value, json};

use super::ImproveCx;
use super::night::loop_audit;
use super::score::ScoreError;
use crate::error::Result;
use crate::improve::judging::LOOP_ACTOR;
use crate::improve::report::{ReportRefusal, verify_envelope};
use crate::improve::workflows::ProbeDispatch;
use crate::ports::{Expect, SettingChange, SkillEvaluationRow, SkillRow};
use crate::service::Area as _;
use crate::skills::offer::namespaces_admit;
use crate::skills::probe::{
    CADENCE_KEY, LAST_CYCLE_KEY, MAX_PROBES_PER_CYCLE, PROBE_WORKFLOW, PROBES_PATH, PendingEdit,
    ProbeRefusal, ProbeReport, edit_body_path, edit_key, parse_probe_report, probe_set_version,
};
use crate::skills::{Evaluation, SkillStatus, Verdict, cadence_days, evaluation_due, transition};
use crate::time::{DAY_MS, Timestamp};

/// What an accepted probe report did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeAnswer {
    /// Always true.
    pub ok: bool,
    /// The namespace.
    pub namespace: String,
    /// The skill.
    pub skill: String,
    /// With minus without.
    pub delta: f64,
    /// `evaluated` (the current version) or `edit-accepted` / `edit-rejected`.
    pub outcome: String,
    /// The verdict recorded (evaluations only).
    pub verdict: Option<String>,
    /// What the lifecycle said, or why the edit went as it did.
    pub reason: String,
    /// The skill's status now.
    pub status: String,
    /// The skill's version now.
    pub version: i64,
}

fn unavailable(e: impl std::fmt::Display) -> ScoreError {
    ScoreError::Unavailable(e.to_string())
}

/// The evaluations of a skill as the lifecycle reads them, oldest first.
pub(crate) fn lifecycle_rows(rows: &[SkillEvaluationRow]) -> Vec<Evaluation> {
    let mut out: Vec<Evaluation> = rows
        .iter()
        .filter_map(|r| {
            Some(Evaluation {
                version: r.version,
                probe_set_version: r.probe_set_version.clone(),
                delta: r.delta,
                verdict: Verdict::parse(&r.verdict)?,
                evaluated_at: r.evaluated_at,
            })
        })
        .collect();
    // The store answers newest first; the lifecycle keeps the given order for equal stamps.
    out.reverse();
    out
}

impl ImproveCx<'_> {
    /// The evaluation step of the `improve` task: nothing unless a cycle is due.
    pub(crate) async fn skills_evaluate_tick(&self, now: Timestamp) -> Result<Value> {
        let days = cadence_days(self.settings.setting(CADENCE_KEY, now).await?.as_deref());
        let last = self.settings.setting(LAST_CYCLE_KEY, now).await?;
        if !evaluation_due(last.as_deref(), days, now) {
            let next = last
                .as_deref()
                .and_then(Timestamp::parse)
                .map(|t| t.plus_millis(i64::from(days) * DAY_MS).to_string());
            return Ok(json!({"cycle": "not due", "cadence_days": days, "next_at": next}));
        }
        let Some(host) = self.repo_host.clone() else {
            return Ok(
                json!({"cycle": "due, but no GitHub App is configured to dispatch probes",
                             "cadence_days": days}),
            );
        };
        let stamp = now.to_string();
        let claim = SettingChange {
            key: LAST_CYCLE_KEY.to_owned(),
            expected: Expect::Value(last.clone()),
            value: Some(stamp.clone()),
            expires_at: None,
        };
        let audit = crate::ports::AuditEntry {
            actor: LOOP_ACTOR.to_owned(),
            action: "skills-evaluate-cycle".to_owned(),
            namespace: None,
            path: None,
            params: json!({"cadence_days": days, "previous": last}),
            at: now,
        };
        if !self.settings.change_settings(&[claim], audit, now).await? {
            return Ok(json!({"cycle": "claimed by another replica"}));
        }
        let edits = self.propose_edits(now).await?;
        let skills: Vec<SkillRow> = self
            .skills
            .skills(None)
            .await?
            .into_iter()
            .filter(|s| s.status != SkillStatus::Retired.name())
            .collect();
        let mut dispatched = Vec::new();
        let mut not_evaluated = Vec::new();
        let mut errors = Vec::new();
        let mut skipped = 0usize;
        for row in self.namespaces.namespaces().await? {
            let ns = row.namespace.as_str();
            let Some(probes) = self
                .docs
                .document(ns, PROBES_PATH)
                .await?
                .and_then(|d| d.body)
            else {
                not_evaluated.push(
                    json!({"namespace": ns, "reason": format!("no probe set ({PROBES_PATH})")}),
                );
                continue;
            };
            let Some(repo) = self.loop_repo(ns).await? else {
                not_evaluated.push(json!({"namespace": ns, "reason": "maps no repository"}));
                continue;
            };
            let psv = probe_set_version(&probes);
            let applying: Vec<&SkillRow> = skills
                .iter()
                .filter(|s| namespaces_admit(s.namespaces.as_deref(), ns))
                .collect();
            if applying.is_empty() {
                continue;
            }
            let branch = match self.default_head(host.as_ref(), &repo).await {
                Ok((branch, _)) => branch,
                Err(e) => {
                    errors.push(json!({"namespace": ns, "error": format!("reading {repo}: {e}")}));
                    continue;
                }
            };
            for skill in applying {
                let pending = PendingEdit::from_setting(
                    self.settings
                        .setting(&edit_key(&skill.id), now)
                        .await?
                        .as_deref(),
                )
                .filter(|p| p.from_version == skill.version);
                let mut probes = vec![false];
                if pending.is_some() {
                    probes.push(true);
                }
                for edit in probes {
                    if dispatched.len() >= MAX_PROBES_PER_CYCLE {
                        skipped += 1;
                        continue;
                    }
                    let body_ref = if edit {
                        format!("{}/{}", skill.source_namespace, edit_body_path(&skill.id))
                    } else {
                        format!("{}/{}", skill.source_namespace, skill.body_ref)
                    };
                    let inputs = ProbeDispatch {
                        namespace: ns,
                        skill: &skill.id,
                        version: skill.version,
                        probe_set_version: &psv,
                        edit,
                        body_ref: &body_ref,
                    }
                    .inputs();
                    if let Err(e) = host
                        .dispatch_workflow(&repo, PROBE_WORKFLOW, &branch, &inputs)
                        .await
                    {
                        errors.push(json!({"namespace": ns, "skill": skill.id,
                                           "error": format!("dispatching {PROBE_WORKFLOW}: {e}")}));
                        continue;
                    }
                    self.audit_log
                        .append_audit(loop_audit(
                            "skill-probe-dispatched",
                            ns,
                            Some(PROBES_PATH),
                            json!({"skill": skill.id, "version": skill.version,
                                   "probe_set_version": psv, "edit": edit, "body_ref": body_ref}),
                            now,
                        ))
                        .await?;
                    dispatched.push(json!({"namespace": ns, "skill": skill.id,
                                           "version": skill.version, "edit": edit}));
                }
            }
        }
        let mut out = json!({"cycle": "ran", "cadence_days": days, "dispatched": dispatched,
                             "not_evaluated": not_evaluated, "edits": edits, "errors": errors});
        if skipped > 0 {
            out["skipped"] = json!(format!(
                "{skipped} probe(s) over the cycle's bound of {MAX_PROBES_PER_CYCLE} wait for the next cycle"
            ));
        }
        Ok(out)
    }

    /// Takes a signed probe report: the current version's evaluation (and the lifecycle), or
    /// the pending edit's measurement (`edit.rs`).
    pub(crate) async fn improve_probe(
        &self,
        namespace: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<ProbeAnswer, ScoreError> {
        let now = self.now();
        let root = self.config.signing_secret.as_deref();
        let ns = verify_envelope(root, namespace, timestamp, signature, body, now)?;
        let report = parse_probe_report(ns, body)?;
        let skill = self
            .skills
            .skill(&report.skill)
            .await
            .map_err(unavailable)?
            .ok_or_else(|| ProbeRefusal::UnknownSkill(report.skill.clone()))?;
        if skill.status == SkillStatus::Retired.name() {
            return Err(ProbeRefusal::Retired(skill.id).into());
        }
        if !namespaces_admit(skill.namespaces.as_deref(), ns) {
            return Err(ProbeRefusal::NotApplying {
                skill: skill.id,
                namespace: ns.to_owned(),
            }
            .into());
        }
        if report.version != skill.version {
            return Err(ProbeRefusal::StaleVersion {
                skill: skill.id,
                reported: report.version,
                current: skill.version,
            }
            .into());
        }
        let probes = self
            .docs
            .document(ns, PROBES_PATH)
            .await
            .map_err(unavailable)?
            .and_then(|d| d.body)
            .ok_or_else(|| ProbeRefusal::NoProbeSet(ns.to_owned()))?;
        let current = probe_set_version(&probes);
        if report.probe_set_version != current {
            return Err(ProbeRefusal::StaleProbeSet {
                namespace: ns.to_owned(),
                reported: report.probe_set_version.clone(),
                current,
            }
            .into());
        }
        if report.edit {
            let judged = self.check_edit_report(&skill, &report, now).await?;
            self.claim_probe_jti(ns, &report.jti).await?;
            return self.settle_edit(skill, &report, judged, now).await;
        }
        self.claim_probe_jti(ns, &report.jti).await?;
        self.record_probe(skill, &report, now).await
    }

    /// Claims the report's `jti` in the namespace's replay scope (shared with score reports).
    async fn claim_probe_jti(&self, ns: &str, jti: &str) -> std::result::Result<(), ScoreError> {
        match self.settings.claim_nonce(ns, jti, self.now()).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(ReportRefusal::Replayed(jti.to_owned()).into()),
            Err(e) => Err(ReportRefusal::ReplayUnknown(e.to_string()).into()),
        }
    }

    /// Records the current version's evaluation and applies the lifecycle.
    async fn record_probe(
        &self,
        skill: SkillRow,
        report: &ProbeReport,
        now: Timestamp,
    ) -> std::result::Result<ProbeAnswer, ScoreError> {
        let delta = report.delta();
        let verdict = Verdict::from_delta(delta);
        let path = skill.body_ref.clone();
        let audit = loop_audit(
            "skill-evaluated",
            &report.namespace,
            Some(&path),
            json!({"skill": skill.id, "version": skill.version,
                   "probe_set_version": report.probe_set_version, "with": report.with,
                   "without": report.without, "delta": delta, "runs": report.runs,
                   "verdict": verdict.name()}),
            now,
        );
        self.skills
            .record_evaluation(
                SkillEvaluationRow {
                    skill: skill.id.clone(),
                    version: skill.version,
                    namespace: report.namespace.clone(),
                    probe_set_version: report.probe_set_version.clone(),
                    delta,
                    runs: report.runs,
                    verdict: verdict.name().to_owned(),
                    evaluated_at: now,
                },
                audit,
            )
            .await
            .map_err(unavailable)?;
        let rows = self
            .skills
            .evaluations(&skill.id)
            .await
            .map_err(unavailable)?;
        let from = SkillStatus::parse(&skill.status).unwrap_or(SkillStatus::Candidate);
        let said = transition(from, skill.version, &lifecycle_rows(&rows));
        let to = said.next(from);
        let mut status = skill.status.clone();
        let mut reason = said.to_string();
        if to != from {
            let audit = loop_audit(
                if to == SkillStatus::Live {
                    "skill-live"
                } else {
                    "skill-retired"
                },
                &skill.source_namespace,
                Some(&path),
                json!({"skill": skill.id, "from": from.name(), "to": to.name(),
                       "version": skill.version, "reason": reason}),
                now,
            );
            let moved = self
                .skills
                .set_skill_status(&skill.id, from.name(), to.name(), now, audit)
                .await
                .map_err(unavailable)?;
            if moved {
                status = to.name().to_owned();
            } else {
                reason = format!("{reason}; another writer changed the status first");
            }
        }
        Ok(ProbeAnswer {
            ok: true,
            namespace: report.namespace.clone(),
            skill: skill.id,
            delta,
            outcome: "evaluated".into(),
            verdict: Some(verdict.name().to_owned()),
            reason,
            status,
            version: skill.version,
        })
    }
}
