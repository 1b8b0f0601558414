//! The skills panel (reference 9) and merge proposals: per namespace the counts by status,
//! the newest evaluation and the offered-to-used rate, shown by `improve_status` and the
//! console; and the proposals to merge two live near-duplicate skills, which only a human
//! settles (`improve_run` actions `accept_merge`, which retires one of the two, and
//! `reject_merge`, which stops the pair being proposed again). Nothing here merges by itself.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::{ImproveCx, ImproveRunAnswer, MergeAccepted, MergeRejected, refuse};
use crate::caller::Caller;
use crate::error::Result;
use crate::ports::{Expect, SettingChange, SkillEvaluationRow, SkillRow};
use crate::service::Area;
use crate::skills::SkillStatus;
use crate::skills::merge::{MergeCandidate, MergeDecision, merge_decision};
use crate::skills::offer::namespaces_admit;
use crate::skills::panel::{
    MergeInput, MergeProposal, OfferRate, StatusCounts, merge_proposals, offer_rate, pair_name,
};

/// The newest outcomes the offered-to-used rate is measured over.
pub(crate) const RATE_OUTCOMES_MAX: usize = 1_000;
/// The live skills compared for merging (newest first): pairs grow as its square.
pub(crate) const MERGE_SKILLS_MAX: usize = 100;
/// At most this many merge proposals are listed.
pub(crate) const MERGE_PROPOSALS_MAX: usize = 50;

/// The setting that records a human's decision on a pair.
pub(crate) fn merge_decision_key(pair: &str) -> String {
    format!("skills:merge:{pair}")
}

/// Whether `skill` belongs on `ns`'s panel: abstracted there, or offered there.
fn on_panel(skill: &SkillRow, ns: &str) -> bool {
    skill.source_namespace == ns || namespaces_admit(skill.namespaces.as_deref(), ns)
}

/// A namespace's skills panel.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillsPanel {
    /// The skills on the panel, by status.
    pub counts: StatusCounts,
    /// The namespace's newest evaluation, if any.
    pub last_evaluation: Option<SkillEvaluationRow>,
    /// How job outcomes used the skills they were offered.
    pub offered_to_used: OfferRate,
}

impl ImproveCx<'_> {
    /// `ns`'s panel: counts by status, the newest evaluation and the offered-to-used rate.
    pub(crate) async fn skills_panel(&self, ns: &str, skills: &[SkillRow]) -> Result<SkillsPanel> {
        let counts = StatusCounts::of(
            skills
                .iter()
                .filter(|s| on_panel(s, ns))
                .map(|s| s.status.as_str()),
        );
        let last = self.skills.last_evaluation(ns).await?;
        let offers = self.skills.skill_offers(ns, RATE_OUTCOMES_MAX).await?;
        let rate = offer_rate(
            offers
                .iter()
                .map(|o| (o.offered.as_str(), o.used.as_deref())),
        );
        Ok(SkillsPanel {
            counts,
            last_evaluation: last,
            offered_to_used: rate,
        })
    }

    /// The open merge proposals among the live skills `caller` may read (of `namespace`'s
    /// panel, when one is named), without the pairs a human rejected.
    pub(crate) async fn open_merge_proposals(
        &self,
        caller: &Caller,
        namespace: Option<&str>,
        skills: &[SkillRow],
    ) -> Result<Vec<MergeProposal>> {
        let live: Vec<&SkillRow> = skills
            .iter()
            .filter(|s| s.status == SkillStatus::Live.name())
            .filter(|s| caller.scopes.namespaces.allows(&s.source_namespace))
            .filter(|s| namespace.is_none_or(|ns| on_panel(s, ns)))
            .take(MERGE_SKILLS_MAX)
            .collect();
        let mut bodies = Vec::with_capacity(live.len());
        for s in &live {
            bodies.push(self.skill_body(s).await?.unwrap_or_default());
        }
        let inputs: Vec<MergeInput<'_>> = live
            .iter()
            .zip(&bodies)
            .map(|(s, body)| MergeInput {
                id: &s.id,
                status: SkillStatus::Live,
                trigger: s.trigger_condition.as_deref().unwrap_or(""),
                body,
            })
            .collect();
        let now = self.now();
        let mut open = Vec::new();
        for p in merge_proposals(&inputs, &BTreeSet::new()) {
            if open.len() == MERGE_PROPOSALS_MAX {
                break;
            }
            if self
                .settings
                .setting(&merge_decision_key(&p.pair), now)
                .await?
                .is_none()
            {
                open.push(p);
            }
        }
        Ok(open)
    }

    /// Both skills of a pair, each one `caller` may read, or the refusal.
    async fn pair_of(
        &self,
        caller: &Caller,
        name: &str,
        a: Option<&str>,
        b: Option<&str>,
    ) -> Result<std::result::Result<(SkillRow, SkillRow), ImproveRunAnswer>> {
        let (Some(a), Some(b)) = (a, b) else {
            return Ok(Err(refuse(
                name,
                format!("{name} needs both skills' ids (skill and other)"),
            )));
        };
        if a == b {
            return Ok(Err(refuse(name, "skill and other name the same skill")));
        }
        let mut rows = Vec::with_capacity(2);
        for id in [a, b] {
            match self
                .skills
                .skill(id)
                .await?
                .filter(|r| caller.scopes.namespaces.allows(&r.source_namespace))
            {
                Some(r) => rows.push(r),
                None => return Ok(Err(refuse(name, format!("no skill {id}.")))),
            }
        }
        let second = rows.pop();
        let first = rows.pop();
        match (first, second) {
            (Some(x), Some(y)) => Ok(Ok((x, y))),
            _ => Ok(Err(refuse(name, "the pair could not be read"))),
        }
    }

    /// `accept_merge` (admin only): keeps `skill`, retires `other`, if the two are still a
    /// proposal (both live, overlapping triggers, bodies under 10% apart) when it runs.
    pub(crate) async fn accept_merge_action(
        &self,
        caller: &Caller,
        keep: Option<&str>,
        other: Option<&str>,
        reason: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "accept_merge";
        let (kept, retired) = match self.pair_of(caller, name, keep, other).await? {
            Ok(pair) => pair,
            Err(refusal) => return Ok(refusal),
        };
        let pair = pair_name(&kept.id, &retired.id);
        let (kb, rb) = (
            self.skill_body(&kept).await?.unwrap_or_default(),
            self.skill_body(&retired).await?.unwrap_or_default(),
        );
        let (Some(ks), Some(rs)) = (
            SkillStatus::parse(&kept.status),
            SkillStatus::parse(&retired.status),
        ) else {
            return Ok(refuse(
                name,
                format!("{pair} has a skill with an unreadable status."),
            ));
        };
        let decision = merge_decision(
            MergeCandidate {
                status: ks,
                trigger: kept.trigger_condition.as_deref().unwrap_or(""),
                body: &kb,
            },
            MergeCandidate {
                status: rs,
                trigger: retired.trigger_condition.as_deref().unwrap_or(""),
                body: &rb,
            },
        );
        let MergeDecision::Propose { difference } = decision else {
            return Ok(refuse(
                name,
                format!("{pair} is not a merge proposal now ({decision:?}); nothing changed."),
            ));
        };
        if dry {
            return Ok(MergeAccepted {
                ok: true,
                action: name,
                dry_run: Some(true),
                pair,
                kept: kept.id,
                retired: retired.id,
                status: None,
            }
            .into());
        }
        let path = format!("improve/skills/{}.md", retired.id);
        let audit = self.audit(
            caller,
            "skill-merged",
            Some(&retired.source_namespace),
            Some(&path),
            json!({"pair": pair, "kept": kept.id, "retired": retired.id,
                   "difference": difference, "reason": reason}),
        );
        let changed = self
            .skills
            .set_skill_status(
                &retired.id,
                SkillStatus::Live.name(),
                SkillStatus::Retired.name(),
                self.now(),
                audit,
            )
            .await?;
        if !changed {
            return Ok(refuse(
                name,
                format!(
                    "{} changed status while this ran; read it again.",
                    retired.id
                ),
            ));
        }
        Ok(MergeAccepted {
            ok: true,
            action: name,
            dry_run: None,
            pair,
            kept: kept.id,
            retired: retired.id,
            status: Some("retired"),
        }
        .into())
    }

    /// `reject_merge` (admin only): records the decision so the pair is not proposed again.
    pub(crate) async fn reject_merge_action(
        &self,
        caller: &Caller,
        a: Option<&str>,
        b: Option<&str>,
        reason: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "reject_merge";
        let (x, y) = match self.pair_of(caller, name, a, b).await? {
            Ok(pair) => pair,
            Err(refusal) => return Ok(refusal),
        };
        let pair = pair_name(&x.id, &y.id);
        let key = merge_decision_key(&pair);
        let now = self.now();
        if self.settings.setting(&key, now).await?.is_some() {
            return Ok(refuse(name, format!("{pair} was already decided.")));
        }
        if dry {
            return Ok(MergeRejected {
                ok: true,
                action: name,
                dry_run: Some(true),
                pair,
                decision: None,
            }
            .into());
        }
        let value = json!({"decision": "rejected", "by": caller.actor(), "at": now.to_string(),
                           "reason": reason})
        .to_string();
        let audit = self.audit(
            caller,
            "skill-merge-rejected",
            Some(&x.source_namespace),
            None,
            json!({"pair": pair, "reason": reason}),
        );
        let change = SettingChange {
            expected: Expect::Value(None),
            ..SettingChange::put(key, value)
        };
        if !self.settings.change_settings(&[change], audit, now).await? {
            return Ok(refuse(name, format!("{pair} was decided while this ran.")));
        }
        Ok(MergeRejected {
            ok: true,
            action: name,
            dry_run: None,
            pair,
            decision: Some("rejected"),
        }
        .into())
    }
}
