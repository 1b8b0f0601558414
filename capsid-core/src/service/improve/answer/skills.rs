//! What `improve_run`'s skill actions answer: `skills`, `skill`, `retire_skill`,
//! `accept_merge`, `reject_merge`, `propose_skill`, `propose_edit`, `export_skills` and
//! `import_skills`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::ports::{SkillEditRow, SkillEvaluationRow, SkillFailureRow};
use crate::skills::abstraction::SourceKind;

/// `skills`: the skills listed, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillList {
    /// Always true.
    pub ok: bool,
    /// `skills`.
    pub action: &'static str,
    /// The skills.
    pub skills: Vec<SkillListed>,
    /// Present (true) when more skills matched than are listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

/// A skill as `skills` and `skill` show it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillListed {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// `candidate`, `live` or `retired`.
    pub status: String,
    /// Its current version.
    pub version: i64,
    /// Wins credited.
    pub wins: i64,
    /// Losses credited.
    pub losses: i64,
    /// The namespace it was abstracted from.
    pub source_namespace: String,
    /// When it applies.
    pub trigger: Option<String>,
    /// The namespaces it may be offered in, as stored (`null`: any).
    #[schemars(schema_with = "namespace_list")]
    pub namespaces: Option<Value>,
    /// Its body document (`improve/skills/<id>.md`).
    pub body_ref: String,
}

/// The stored list of a skill's namespaces: a JSON array of names, or `null`.
fn namespace_list(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "anyOf": [
            { "type": "array", "items": { "type": "string" } },
            { "type": "null" },
        ],
    })
}

/// `skill`: one skill with its evidence, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillEvidence {
    /// Always true.
    pub ok: bool,
    /// `skill`.
    pub action: &'static str,
    /// The skill.
    pub skill: SkillListed,
    /// Its evaluations.
    pub evaluations: Vec<SkillEvaluationRow>,
    /// Its edit proposals.
    pub edits: Vec<SkillEditRow>,
    /// Its failure notes.
    pub failures: Vec<SkillFailureRow>,
}

/// `retire_skill`: the skill retired (or, with `dry_run`, that would be).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillRetired {
    /// Always true.
    pub ok: bool,
    /// `retire_skill`.
    pub action: &'static str,
    /// With `dry_run`: true (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The skill.
    pub skill: String,
    /// The status it had.
    pub from: String,
    /// `retired` (absent with `dry_run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
}

/// `accept_merge`: `kept` stays, `retired` is retired (or, with `dry_run`, would be).
#[derive(Debug, Serialize, JsonSchema)]
pub struct MergeAccepted {
    /// Always true.
    pub ok: bool,
    /// `accept_merge`.
    pub action: &'static str,
    /// With `dry_run`: true (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The pair's name.
    pub pair: String,
    /// The skill kept.
    pub kept: String,
    /// The skill retired into it.
    pub retired: String,
    /// `retired`, the retired skill's status (absent with `dry_run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
}

/// `reject_merge`: the pair is not proposed again (or, with `dry_run`, would not be).
#[derive(Debug, Serialize, JsonSchema)]
pub struct MergeRejected {
    /// Always true.
    pub ok: bool,
    /// `reject_merge`.
    pub action: &'static str,
    /// With `dry_run`: true (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The pair's name.
    pub pair: String,
    /// `rejected` (absent with `dry_run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'static str>,
}

/// `propose_skill`: the candidate inserted from the source.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillProposed {
    /// Always true.
    pub ok: bool,
    /// `propose_skill`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// The source's kind.
    pub source_kind: SourceKind,
    /// The source's id.
    pub source_id: String,
    /// The new skill's id.
    pub skill: String,
    /// `candidate`.
    pub status: &'static str,
    /// Its body document.
    pub body_ref: String,
}

/// `propose_skill` declining the source: no skill is abstracted from it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SourceDeclined {
    /// Always true.
    pub ok: bool,
    /// `propose_skill`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// The source's kind.
    pub source_kind: SourceKind,
    /// The source's id.
    pub source_id: String,
    /// Always true.
    pub declined: bool,
}

/// `propose_edit`: the edit kept pending until its probe decides it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditPending {
    /// Always true.
    pub ok: bool,
    /// `propose_edit`.
    pub action: &'static str,
    /// The skill.
    pub skill: String,
    /// Always true.
    pub pending: bool,
    /// How many ops the edit has.
    pub ops: usize,
    /// The version it edits.
    pub from_version: i64,
}

/// `propose_edit` whose ops were rejected (and recorded in `skill_edits`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditRejected {
    /// Always false.
    pub ok: bool,
    /// `propose_edit`.
    pub action: &'static str,
    /// The skill.
    pub skill: String,
    /// Why.
    pub refusal: String,
}

/// `export_skills`: the namespace's live skills written to its repository.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillsExported {
    /// Always true.
    pub ok: bool,
    /// `export_skills`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// `owner/name`.
    pub repository: String,
    /// The branch the copies are committed to (`capsid-skills/<ns>`).
    pub branch: String,
    /// Every live skill's copy (`skills/<id>/SKILL.md`).
    pub files: Vec<String>,
    /// The copies committed by this call (with `dry_run`: that would be).
    pub committed: Vec<String>,
    /// The pull request carrying them, when there is one.
    pub pull_request: Option<u64>,
    /// What happened to the pull request.
    pub pull: ExportPull,
    /// Copies on the default branch that a person edited and nobody read back yet: left as
    /// they are (`import_skills` reads them back first).
    pub unread: Vec<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// What happened, in a sentence.
    pub note: String,
}

/// What an export did to its pull request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportPull {
    /// Opened one.
    Opened,
    /// Added commits to the one open.
    Updated,
    /// The one open already held every change.
    Unchanged,
    /// None: nothing to propose (or a dry run).
    #[serde(rename = "none")]
    NotNeeded,
}

impl ExportPull {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            ExportPull::Opened => "opened",
            ExportPull::Updated => "updated",
            ExportPull::Unchanged => "unchanged",
            ExportPull::NotNeeded => "none",
        }
    }
}

/// `import_skills`: the repository's copies read back.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillsReadBack {
    /// Always true.
    pub ok: bool,
    /// `import_skills`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// `owner/name`.
    pub repository: String,
    /// The copies that became candidates (with `dry_run`: that would).
    pub candidates: Vec<ReadBackCandidate>,
    /// The copies whose content was read back before, with the candidate it became.
    pub already: Vec<ReadBackSeen>,
    /// The copies that say what their stored skill says.
    pub unchanged: Vec<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// A copy read back as a candidate.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadBackCandidate {
    /// The copy's path.
    pub file: String,
    /// The candidate's id (none with `dry_run`).
    pub skill: Option<String>,
    /// The skill the copy mirrored, when it names one.
    pub from_skill: Option<String>,
}

/// A copy whose content is already a candidate.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadBackSeen {
    /// The copy's path.
    pub file: String,
    /// The candidate it became.
    pub skill: Option<String>,
}
