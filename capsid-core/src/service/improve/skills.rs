//! `improve_run` actions (write, as the tool is) `skills` (list, optionally of one status and
//! the skills a namespace may be offered), `skill` (one skill with its evaluations, edit
//! proposals and failure notes) and `retire_skill` (admin only: a keyed status change to
//! `retired`, audited in its transaction; the row and its record stay).

use serde_json::{Value, json};

use super::{
    ImproveCx, ImproveRunAnswer, SkillEvidence, SkillList, SkillListed, SkillRetired, refuse,
};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::ports::SkillRow;
use crate::service::Area;
use crate::skills::SkillStatus;
use crate::skills::offer::namespaces_admit;

/// At most this many skills are listed.
pub(crate) const SKILLS_LISTED_MAX: usize = 200;
/// At most this many of each kind of evidence are shown with one skill.
pub(crate) const EVIDENCE_SHOWN_MAX: usize = 50;

fn listed(s: &SkillRow) -> SkillListed {
    SkillListed {
        id: s.id.clone(),
        title: s.title.clone(),
        status: s.status.clone(),
        version: s.version,
        wins: s.wins,
        losses: s.losses,
        source_namespace: s.source_namespace.clone(),
        trigger: s.trigger_condition.clone(),
        namespaces: s
            .namespaces
            .as_deref()
            .and_then(|n| serde_json::from_str::<Value>(n).ok()),
        body_ref: s.body_ref.clone(),
    }
}

/// Whether `caller` may see `skill`: it may read the skill's source namespace, or the call
/// names a namespace (which the one check let it name) that the skill may be offered in, as a
/// claim there would offer it.
fn visible(caller: &Caller, skill: &SkillRow, namespace: Option<&str>) -> bool {
    caller.scopes.namespaces.allows(&skill.source_namespace)
        || namespace.is_some_and(|ns| namespaces_admit(skill.namespaces.as_deref(), ns))
}

fn parse_status(value: Option<&str>) -> Result<Option<SkillStatus>> {
    match value {
        None => Ok(None),
        Some(v) => SkillStatus::parse(v).map(Some).ok_or_else(|| {
            Error::Invalid(format!(
                "improve_run: status must be candidate, live or retired (got {v:?})"
            ))
        }),
    }
}

impl ImproveCx<'_> {
    /// `skills`: newest first, at most [`SKILLS_LISTED_MAX`].
    pub(crate) async fn skills_action(
        &self,
        caller: &Caller,
        namespace: Option<&str>,
        status: Option<&str>,
    ) -> Result<ImproveRunAnswer> {
        let status = parse_status(status)?;
        let rows = self.skills.skills(status.map(SkillStatus::name)).await?;
        let mut matched: Vec<SkillListed> = rows
            .iter()
            .filter(|s| visible(caller, s, namespace))
            .filter(|s| {
                namespace.is_none_or(|ns| {
                    s.source_namespace == ns || namespaces_admit(s.namespaces.as_deref(), ns)
                })
            })
            .map(listed)
            .collect();
        let truncated = matched.len() > SKILLS_LISTED_MAX;
        matched.truncate(SKILLS_LISTED_MAX);
        Ok(SkillList {
            ok: true,
            action: "skills",
            skills: matched,
            truncated: truncated.then_some(true),
        }
        .into())
    }

    /// `skill`: one skill and its evidence, newest first.
    pub(crate) async fn skill_action(
        &self,
        caller: &Caller,
        namespace: Option<&str>,
        id: Option<&str>,
    ) -> Result<ImproveRunAnswer> {
        let Some(id) = id else {
            return Ok(refuse("skill", "skill needs the skill's id (skill)"));
        };
        // A skill of a namespace the caller may not read is answered as absent.
        let Some(row) = self
            .skills
            .skill(id)
            .await?
            .filter(|r| visible(caller, r, namespace))
        else {
            return Ok(refuse("skill", format!("no skill {id}.")));
        };
        let mut evaluations = self.skills.evaluations(id).await?;
        evaluations.truncate(EVIDENCE_SHOWN_MAX);
        let edits = self.skills.skill_edits(id, EVIDENCE_SHOWN_MAX).await?;
        let failures = self.skills.skill_failures(id, EVIDENCE_SHOWN_MAX).await?;
        Ok(SkillEvidence {
            ok: true,
            action: "skill",
            skill: listed(&row),
            evaluations,
            edits,
            failures,
        }
        .into())
    }

    /// `retire_skill` (admin only): keyed on the status read, so a concurrent change wins.
    pub(crate) async fn retire_skill_action(
        &self,
        caller: &Caller,
        id: Option<&str>,
        reason: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "retire_skill";
        let Some(id) = id else {
            return Ok(refuse(name, "retire_skill needs the skill's id (skill)"));
        };
        let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) else {
            return Ok(refuse(
                name,
                "retire_skill needs a reason: retiring is permanent and the record says why",
            ));
        };
        let Some(row) = self.skills.skill(id).await? else {
            return Ok(refuse(name, format!("no skill {id}.")));
        };
        if row.status == SkillStatus::Retired.name() {
            return Ok(refuse(name, format!("{id} is already retired.")));
        }
        if dry {
            return Ok(SkillRetired {
                ok: true,
                action: name,
                dry_run: Some(true),
                skill: id.to_owned(),
                from: row.status,
                status: None,
            }
            .into());
        }
        let path = format!("improve/skills/{id}.md");
        let audit = self.audit(
            caller,
            "skill-retired",
            Some(&row.source_namespace),
            Some(&path),
            json!({"skill": id, "from": row.status, "reason": reason, "by_hand": true}),
        );
        let now = self.now();
        let changed = self
            .skills
            .set_skill_status(id, &row.status, SkillStatus::Retired.name(), now, audit)
            .await?;
        if !changed {
            return Ok(refuse(
                name,
                format!("{id} changed status while this ran; read it again."),
            ));
        }
        Ok(SkillRetired {
            ok: true,
            action: name,
            dry_run: None,
            skill: id.to_owned(),
            from: row.status,
            status: Some("retired"),
        }
        .into())
    }
}
