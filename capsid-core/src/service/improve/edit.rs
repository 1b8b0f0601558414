//! Bounded skill edits (reference 9). In `api` mode the evaluation cycle asks the model (the
//! `ModelClient` port, stage `meta`: the optimizer) for `add|delete|replace` ops on the
//! numbered body of each non-retired skill that has failure notes and no pending edit, giving
//! it the two newest notes and the skill's earlier rejected proposals. An out-of-bound answer
//! is recorded in `skill_edits` as rejected with the reason; an in-bound one is kept pending
//! (setting `skills:edit:<skill>`, the edited body as `improve/skills/<id>.edit.md`) and
//! probed with `edit: true`. In `subscription` mode the driver holding a lease proposes the
//! ops itself (`improve_run` action `propose_edit`), checked the same way. The edit's report
//! accepts it only on a strictly better delta than the current version's newest on the same
//! probe set: the version bump, the `skill_edits` row, the body and the audit row are one
//! transaction; a tie or a loss is kept in `skill_edits` as rejected.

use serde_json::{Value, json};

use super::ImproveCx;
use super::evaluate::ProbeAnswer;
use super::night::loop_audit;
use super::score::ScoreError;
use crate::caller::Caller;
use crate::error::Result;
use crate::improve::judging::LOOP_ACTOR;
use crate::improve::models::{Stage, estimate_usd};
use crate::improve::roster::ImproveMode;
use crate::ports::{
    DocumentWrite, ModelMessage, ModelRequest, ModelRole, SettingChange, SkillEditRow, SkillRow,
    WriteGuard,
};
use crate::service::Area as _;
use crate::skills::edit_prompt::{
    EDIT_MAX_TOKENS, EditBrief, REJECTED_SHOWN, Rejected, edit_prompt, parse_edit_answer,
};
use crate::skills::probe::{PendingEdit, ProbeRefusal, ProbeReport, edit_body_path, edit_key};
use crate::skills::{EditOp, SkillStatus, accept_edit, apply_edit};
use crate::time::Timestamp;

/// The failure notes a proposal is given.
const FAILURES_GIVEN: usize = 2;
/// The most edit proposals (model calls) one cycle asks for; the rest wait for the next.
pub(crate) const MAX_PROPOSALS_PER_CYCLE: usize = 10;

/// An edit report checked against the pending edit, before its `jti` is claimed.
pub(crate) struct JudgedEdit {
    pending: PendingEdit,
    baseline: f64,
    edited_body: String,
}

fn unavailable(e: impl std::fmt::Display) -> ScoreError {
    ScoreError::Unavailable(e.to_string())
}

fn ops_json(ops: &[EditOp]) -> String {
    serde_json::to_string(ops).unwrap_or_else(|_| "[]".to_owned())
}

impl ImproveCx<'_> {
    /// The skill's current body, if its document exists.
    pub(super) async fn skill_body(&self, skill: &SkillRow) -> Result<Option<String>> {
        Ok(self
            .docs
            .document(&skill.source_namespace, &skill.body_ref)
            .await?
            .and_then(|d| d.body))
    }

    /// Records a refused proposal in `skill_edits` with its reason.
    async fn reject_proposal(
        &self,
        skill: &SkillRow,
        ops: &str,
        reason: &str,
        actor: &str,
        now: Timestamp,
    ) -> Result<()> {
        let mut audit = loop_audit(
            "skill-edit-rejected",
            &skill.source_namespace,
            Some(&skill.body_ref),
            json!({"skill": skill.id, "from_version": skill.version, "reason": reason}),
            now,
        );
        audit.actor = actor.to_owned();
        self.skills
            .record_skill_edit(
                SkillEditRow {
                    skill: skill.id.clone(),
                    from_version: skill.version,
                    to_version: skill.version + 1,
                    ops: ops.to_owned(),
                    accepted: false,
                    reason: reason.to_owned(),
                    evaluated_at: now,
                },
                audit,
            )
            .await?;
        Ok(())
    }

    /// Checks `ops` against the skill's body: out of bound → rejected in `skill_edits`;
    /// in bound → kept pending with the edited body written for the probe. The outcome.
    async fn take_proposal(
        &self,
        skill: &SkillRow,
        body: &str,
        ops: Vec<EditOp>,
        actor: &str,
        now: Timestamp,
    ) -> Result<std::result::Result<usize, String>> {
        let edited = match apply_edit(body, &ops) {
            Ok(e) => e,
            Err(why) => {
                let why = why.to_string();
                self.reject_proposal(skill, &ops_json(&ops), &why, actor, now)
                    .await?;
                return Ok(Err(why));
            }
        };
        let path = edit_body_path(&skill.id);
        let write = DocumentWrite {
            namespace: skill.source_namespace.clone(),
            path: path.clone(),
            title: Some(format!("Pending edit of {}", skill.id)),
            body: Some(edited),
            doc_type: None,
            status: None,
            tags: None,
            links: None,
            at: now,
        };
        let mut doc_audit = loop_audit(
            "skill-edit-body",
            &skill.source_namespace,
            Some(&path),
            json!({"skill": skill.id, "from_version": skill.version}),
            now,
        );
        doc_audit.actor = actor.to_owned();
        self.docs
            .write_document(write, WriteGuard::Upsert, vec![doc_audit])
            .await?;
        let pending = PendingEdit {
            from_version: skill.version,
            ops: ops.clone(),
            proposed_at: now.to_string(),
            proposed_by: actor.to_owned(),
        };
        let value = serde_json::to_string(&pending)
            .map_err(|e| crate::error::Error::Invalid(e.to_string()))?;
        let mut audit = loop_audit(
            "skill-edit-proposed",
            &skill.source_namespace,
            Some(&path),
            json!({"skill": skill.id, "from_version": skill.version, "ops": ops_json(&ops)}),
            now,
        );
        audit.actor = actor.to_owned();
        self.settings
            .change_settings(
                &[SettingChange::put(edit_key(&skill.id), value)],
                audit,
                now,
            )
            .await?;
        Ok(Ok(ops.len()))
    }

    /// `api` mode: one proposal per skill with failure notes and no pending edit.
    pub(crate) async fn propose_edits(&self, now: Timestamp) -> Result<Value> {
        let Some(model) = self.model.clone() else {
            return Ok(json!([]));
        };
        if self.loop_mode(now).await? != ImproveMode::Api {
            return Ok(json!([]));
        }
        let mut out = Vec::new();
        for skill in self.skills.skills(None).await? {
            if skill.status == SkillStatus::Retired.name() {
                continue;
            }
            if out.len() >= MAX_PROPOSALS_PER_CYCLE {
                break;
            }
            let failures: Vec<String> = self
                .skills
                .skill_failures(&skill.id, FAILURES_GIVEN)
                .await?
                .into_iter()
                .map(|f| f.note)
                .collect();
            if failures.is_empty() {
                continue;
            }
            let pending = self.settings.setting(&edit_key(&skill.id), now).await?;
            if PendingEdit::from_setting(pending.as_deref())
                .is_some_and(|p| p.from_version == skill.version)
            {
                continue;
            }
            let Some(body) = self.skill_body(&skill).await? else {
                continue;
            };
            let rejected: Vec<Rejected> = self
                .skills
                .skill_edits(&skill.id, REJECTED_SHOWN * 2)
                .await?
                .into_iter()
                .filter(|e| !e.accepted)
                .take(REJECTED_SHOWN)
                .map(|e| Rejected {
                    from_version: e.from_version,
                    ops: e.ops,
                    reason: e.reason,
                })
                .collect();
            let (system, user) = edit_prompt(&EditBrief {
                skill: &skill.id,
                version: skill.version,
                body: &body,
                failures: &failures,
                rejected: &rejected,
            });
            let model_name = self.stage_model(Stage::Meta, now).await?;
            let request = ModelRequest {
                model: model_name.clone(),
                system: Some(system),
                messages: vec![ModelMessage {
                    role: ModelRole::User,
                    content: user,
                }],
                max_tokens: EDIT_MAX_TOKENS,
            };
            let reply = match model.complete(request).await {
                Ok(r) => r,
                Err(e) => {
                    out.push(
                        json!({"skill": skill.id, "error": format!("the model call failed: {e}")}),
                    );
                    continue;
                }
            };
            let cost = estimate_usd(&model_name, reply.usage);
            self.audit_log
                .append_audit(loop_audit(
                    "improve-model-call",
                    &skill.source_namespace,
                    None,
                    json!({"stage": "meta", "purpose": "skill-edit", "skill": skill.id,
                           "model": model_name, "input_tokens": reply.usage.input_tokens,
                           "output_tokens": reply.usage.output_tokens, "cost_usd": cost}),
                    now,
                ))
                .await?;
            let outcome = match parse_edit_answer(&reply.text) {
                Ok(ops) => {
                    self.take_proposal(&skill, &body, ops, LOOP_ACTOR, now)
                        .await?
                }
                Err(why) => {
                    let why = format!("not a proposal: {why}");
                    self.reject_proposal(&skill, "[]", &why, LOOP_ACTOR, now)
                        .await?;
                    Err(why)
                }
            };
            out.push(match outcome {
                Ok(n) => json!({"skill": skill.id, "pending": true, "ops": n}),
                Err(why) => json!({"skill": skill.id, "rejected": why}),
            });
        }
        Ok(json!(out))
    }

    /// Checks an edit report: a pending edit from the current version, and a delta of the
    /// current version on the same probe set to beat. Reads only.
    pub(crate) async fn check_edit_report(
        &self,
        skill: &SkillRow,
        report: &ProbeReport,
        now: Timestamp,
    ) -> std::result::Result<JudgedEdit, ScoreError> {
        let raw = self
            .settings
            .setting(&edit_key(&skill.id), now)
            .await
            .map_err(unavailable)?;
        let pending = PendingEdit::from_setting(raw.as_deref())
            .filter(|p| p.from_version == skill.version)
            .ok_or_else(|| ProbeRefusal::NoPendingEdit(skill.id.clone()))?;
        let baseline = self
            .skills
            .evaluations(&skill.id)
            .await
            .map_err(unavailable)?
            .into_iter()
            .find(|e| e.version == skill.version && e.probe_set_version == report.probe_set_version)
            .map(|e| e.delta)
            .ok_or_else(|| ProbeRefusal::NoBaseline {
                skill: skill.id.clone(),
                version: skill.version,
                probe_set: report.probe_set_version.clone(),
            })?;
        let body = self
            .skill_body(skill)
            .await
            .map_err(unavailable)?
            .unwrap_or_default();
        let edited_body = apply_edit(&body, &pending.ops)
            .map_err(|_| ProbeRefusal::NoPendingEdit(skill.id.clone()))?;
        Ok(JudgedEdit {
            pending,
            baseline,
            edited_body,
        })
    }

    /// Accepts (strictly better) or rejects (tie or loss) the measured pending edit.
    pub(crate) async fn settle_edit(
        &self,
        skill: SkillRow,
        report: &ProbeReport,
        judged: JudgedEdit,
        now: Timestamp,
    ) -> std::result::Result<ProbeAnswer, ScoreError> {
        let delta = report.delta();
        let accepted = accept_edit(judged.baseline, delta);
        let reason = if accepted {
            format!(
                "the edit's delta {delta} is strictly greater than version {}'s {} on probe set {}",
                skill.version, judged.baseline, report.probe_set_version
            )
        } else if delta == judged.baseline {
            format!(
                "tie: the edit's delta {delta} equals version {}'s {}; a tie is a rejection",
                skill.version, judged.baseline
            )
        } else {
            format!(
                "the edit's delta {delta} is below version {}'s {}",
                skill.version, judged.baseline
            )
        };
        let row = SkillEditRow {
            skill: skill.id.clone(),
            from_version: judged.pending.from_version,
            to_version: judged.pending.from_version + 1,
            ops: ops_json(&judged.pending.ops),
            accepted,
            reason: reason.clone(),
            evaluated_at: now,
        };
        let audit = loop_audit(
            if accepted {
                "skill-edit-accepted"
            } else {
                "skill-edit-rejected"
            },
            &skill.source_namespace,
            Some(&skill.body_ref),
            json!({"skill": skill.id, "from_version": row.from_version, "delta": delta,
                   "baseline": judged.baseline, "probe_set_version": report.probe_set_version,
                   "namespace": report.namespace, "reason": reason}),
            now,
        );
        let mut version = skill.version;
        let mut note = reason;
        if accepted {
            let body = DocumentWrite {
                namespace: skill.source_namespace.clone(),
                path: skill.body_ref.clone(),
                title: None,
                body: Some(judged.edited_body),
                doc_type: None,
                status: None,
                tags: None,
                links: None,
                at: now,
            };
            if self
                .skills
                .accept_skill_edit(row, body, audit)
                .await
                .map_err(unavailable)?
            {
                version = skill.version + 1;
            } else {
                note = format!(
                    "{note}; but the skill moved past version {} first",
                    skill.version
                );
            }
        } else {
            self.skills
                .record_skill_edit(row, audit)
                .await
                .map_err(unavailable)?;
        }
        let cleared = loop_audit(
            "skill-edit-settled",
            &skill.source_namespace,
            Some(&edit_body_path(&skill.id)),
            json!({"skill": skill.id, "accepted": accepted}),
            now,
        );
        self.settings
            .change_settings(&[SettingChange::delete(edit_key(&skill.id))], cleared, now)
            .await
            .map_err(unavailable)?;
        Ok(ProbeAnswer {
            ok: true,
            namespace: report.namespace.clone(),
            skill: skill.id,
            delta,
            outcome: if accepted {
                "edit-accepted".into()
            } else {
                "edit-rejected".into()
            },
            verdict: None,
            reason: note,
            status: skill.status,
            version,
        })
    }

    /// `improve_run` action `propose_edit` (subscription mode): the holder of a driver lease
    /// proposes ops for a skill with failure notes; checked and kept pending (or rejected in
    /// `skill_edits`) exactly as an api-mode proposal is.
    pub(crate) async fn propose_edit_action(
        &self,
        caller: &Caller,
        a: &super::RunArgs,
    ) -> Result<super::ImproveRunAnswer> {
        let ns = a.namespace.as_ref().map(|n| n.as_str());
        let skill_id = a.skill.as_ref().map(|s| s.as_str());
        let ops: Option<Vec<EditOp>> = a.ops.clone();
        let name = "propose_edit";
        let refuse = |why: String| Ok(super::refuse(name, why));
        let now = self.now();
        let (Some(ns), Some(skill_id)) = (ns, skill_id) else {
            return refuse(
                "propose_edit needs a namespace (whose driver lease you hold) and skill".into(),
            );
        };
        if let Some(why) = self.not_the_driver(caller, ns, "propose_edit", now).await? {
            return refuse(why);
        }
        let Some(ops) = ops else {
            return refuse("propose_edit needs ops: [{op: add|delete|replace, line, text}]".into());
        };
        let Some(skill) = self.skills.skill(skill_id).await? else {
            return refuse(format!("no skill {skill_id}."));
        };
        if skill.status == SkillStatus::Retired.name() {
            return refuse(format!("{skill_id} is retired: it is not edited"));
        }
        if self.skills.skill_failures(&skill.id, 1).await?.is_empty() {
            return refuse(format!(
                "{skill_id} has no failure notes: an edit answers a failure"
            ));
        }
        let pending = self.settings.setting(&edit_key(&skill.id), now).await?;
        if PendingEdit::from_setting(pending.as_deref())
            .is_some_and(|p| p.from_version == skill.version)
        {
            return refuse(format!(
                "{skill_id} already has a pending edit; its probe decides it first"
            ));
        }
        let Some(body) = self.skill_body(&skill).await? else {
            return refuse(format!(
                "{skill_id}'s body document {} is missing",
                skill.body_ref
            ));
        };
        let actor = caller.actor();
        Ok(
            match self.take_proposal(&skill, &body, ops, &actor, now).await? {
                Ok(n) => super::EditPending {
                    ok: true,
                    action: name,
                    skill: skill.id,
                    pending: true,
                    ops: n,
                    from_version: skill.version,
                }
                .into(),
                Err(why) => super::EditRejected {
                    ok: false,
                    action: name,
                    skill: skill.id,
                    refusal: format!("rejected and recorded in skill_edits: {why}"),
                }
                .into(),
            },
        )
    }
}
