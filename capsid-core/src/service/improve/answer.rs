//! What `improve_run` answers: one shape per action and outcome, built as these types and
//! serialized once, so the tool's output schema is theirs. Every answer is `{ok, action,
//! ...}`: `ok: true` with what the action did, or `ok: false` with the `refusal` (and, for
//! `run`, `pin` and `propose_edit`, what was refused beside it). Field order is the wire's.

use schemars::JsonSchema;
use serde::Serialize;

use super::status::BudgetCapsInForce;
use crate::service::registry::RefusedAnswer;
use crate::service::schedule::TickReport;

mod skills;
pub use skills::*;
#[cfg(test)]
mod tests;

/// The `improve_run` answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ImproveRunAnswer {
    /// `run`: the runs opened (or, with `dry_run`, that would open) and those refused.
    Run(RunOpened),
    /// `run` for a named namespace that could not open.
    RunRefused(RunRefused),
    /// `attempt`: the attempt added and dispatched.
    Attempt(AttemptReported),
    /// `mode`.
    Mode(ModeSet),
    /// `pause` and `unpause`.
    Paused(PauseSet),
    /// `budget`.
    Budget(BudgetSet),
    /// `mint_operator_key`.
    OperatorKey(OperatorKeyMinted),
    /// `claim`: the lease taken.
    Claimed(LeaseClaimed),
    /// `claim` with `release`: the lease given back.
    Released(LeaseReleased),
    /// `sign_policy`.
    PolicySigned(PolicySigned),
    /// `roster` op `list`.
    RosterListed(RosterListed),
    /// `roster` ops `add` and `remove`.
    RosterChanged(RosterChanged),
    /// `tick`.
    Tick(TickAnswer),
    /// `cadence`.
    Cadence(CadenceAnswer),
    /// `pin`.
    Pinned(Pinned),
    /// `pin` refused for the scores document's problems.
    PinRefused(PinRefused),
    /// `skills`.
    Skills(SkillList),
    /// `skill`.
    Skill(SkillEvidence),
    /// `retire_skill`.
    SkillRetired(SkillRetired),
    /// `accept_merge`.
    MergeAccepted(MergeAccepted),
    /// `reject_merge`.
    MergeRejected(MergeRejected),
    /// `propose_skill`: a candidate inserted.
    SkillProposed(SkillProposed),
    /// `propose_skill` with `{"skill": null}`: the source declined.
    SourceDeclined(SourceDeclined),
    /// `propose_edit`: the edit kept pending for its probe.
    EditPending(EditPending),
    /// `propose_edit` whose ops were rejected (and recorded in `skill_edits`).
    EditRejected(EditRejected),
    /// `export_skills`.
    SkillsExported(SkillsExported),
    /// `import_skills`.
    SkillsReadBack(SkillsReadBack),
    /// Any action refused: `{ok: false, action, refusal}`.
    Refused(RefusedAnswer),
}

/// `From` each answer into [`ImproveRunAnswer`].
macro_rules! answers {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(impl From<$ty> for ImproveRunAnswer {
            fn from(answer: $ty) -> Self {
                ImproveRunAnswer::$variant(answer)
            }
        })*
    };
}

answers!(
    Run(RunOpened),
    RunRefused(RunRefused),
    Attempt(AttemptReported),
    Mode(ModeSet),
    Paused(PauseSet),
    Budget(BudgetSet),
    OperatorKey(OperatorKeyMinted),
    Claimed(LeaseClaimed),
    Released(LeaseReleased),
    PolicySigned(PolicySigned),
    RosterListed(RosterListed),
    RosterChanged(RosterChanged),
    Tick(TickAnswer),
    Cadence(CadenceAnswer),
    Pinned(Pinned),
    PinRefused(PinRefused),
    Skills(SkillList),
    Skill(SkillEvidence),
    SkillRetired(SkillRetired),
    MergeAccepted(MergeAccepted),
    MergeRejected(MergeRejected),
    SkillProposed(SkillProposed),
    SourceDeclined(SourceDeclined),
    EditPending(EditPending),
    EditRejected(EditRejected),
    SkillsExported(SkillsExported),
    SkillsReadBack(SkillsReadBack),
    Refused(RefusedAnswer),
);

/// `action` refused for `why`: `{ok: false, action, refusal}`.
pub(crate) fn refuse(action: &str, why: impl Into<String>) -> ImproveRunAnswer {
    ImproveRunAnswer::Refused(RefusedAnswer {
        ok: false,
        action: action.to_owned(),
        refusal: why.into(),
    })
}

/// `run`: what opened, what was refused.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunOpened {
    /// Always true.
    pub ok: bool,
    /// `run`.
    pub action: &'static str,
    /// The loop's mode: `subscription` or `api`.
    pub mode: &'static str,
    /// The runs opened (with `dry_run`: the namespaces that would open one).
    pub opened: Vec<RunOpening>,
    /// The namespaces that could not open one, and why.
    pub refused: Vec<NamespaceRefused>,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Who asked.
    pub requested_by: String,
}

/// One namespace's run, opened or (with `dry_run`) able to open.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RunOpening {
    /// A run opened.
    Opened(RunOpenedIn),
    /// With `dry_run`: a run would open.
    WouldOpen(RunWouldOpen),
}

/// A run opened in a namespace.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunOpenedIn {
    /// The namespace.
    pub namespace: String,
    /// The run's id.
    pub run: String,
    /// Its status.
    pub status: &'static str,
    /// The condition it runs under (`full`, `no-memory` or `no-transfer`).
    pub condition: String,
    /// The commit it starts from, once known.
    pub base_sha: Option<String>,
}

/// With `dry_run`: a namespace whose run would open.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunWouldOpen {
    /// The namespace.
    pub namespace: String,
    /// Always true.
    pub would_open: bool,
}

/// A namespace that could not open a run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NamespaceRefused {
    /// The namespace.
    pub namespace: String,
    /// Why not.
    pub reason: String,
}

/// `run` for a named namespace that could not open one.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunRefused {
    /// Always false.
    pub ok: bool,
    /// `run`.
    pub action: &'static str,
    /// Why (the first reason refused).
    pub refusal: String,
    /// Each namespace refused, and why.
    pub refused: Vec<NamespaceRefused>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// `attempt`: the driver's attempt added to the run and dispatched (or flagged).
#[derive(Debug, Serialize, JsonSchema)]
pub struct AttemptReported {
    /// Always true.
    pub ok: bool,
    /// `attempt`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// The run.
    pub run: String,
    /// The attempt's id.
    pub attempt: String,
    /// Its branch (`improve/<attempt>`).
    pub branch: String,
    /// Its status as stored (`null`: not found after it was added).
    pub status: Option<&'static str>,
    /// What was done with it, in a line.
    pub did: String,
}

/// `mode`: the loop's mode as stored after the call.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ModeSet {
    /// Always true.
    pub ok: bool,
    /// `mode`.
    pub action: &'static str,
    /// `off`, `subscription` or `api`.
    pub mode: &'static str,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// `pause` and `unpause`: the namespaces paused or unpaused.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PauseSet {
    /// Always true.
    pub ok: bool,
    /// `pause` or `unpause`.
    pub action: &'static str,
    /// The namespaces.
    pub namespaces: Vec<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// `budget`: the monthly caps in force after the call.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BudgetSet {
    /// Always true.
    pub ok: bool,
    /// `budget`.
    pub action: &'static str,
    /// The caps.
    pub caps: BudgetCapsInForce,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// `mint_operator_key`: a read-only operator key, shown once.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OperatorKeyMinted {
    /// Always true.
    pub ok: bool,
    /// `mint_operator_key`.
    pub action: &'static str,
    /// The key (`capsid_ro_...`).
    pub key: String,
    /// Its sha256 hex, what the configuration holds.
    pub hash: String,
    /// How to install it.
    pub command: String,
    /// That it is shown once and read-only.
    pub note: &'static str,
}

/// `claim`: the driver lease taken (or renewed).
#[derive(Debug, Serialize, JsonSchema)]
pub struct LeaseClaimed {
    /// Always true.
    pub ok: bool,
    /// `claim`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// Who holds the lease.
    pub holder: String,
    /// When it runs out (RFC 3339).
    pub expires: String,
}

/// `claim` with `release`: the driver lease given back.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LeaseReleased {
    /// Always true.
    pub ok: bool,
    /// `claim`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// Always true.
    pub released: bool,
}

/// `sign_policy`: the policy document signed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PolicySigned {
    /// Always true.
    pub ok: bool,
    /// `sign_policy`.
    pub action: &'static str,
    /// `capsid`.
    pub namespace: &'static str,
    /// The policy's path.
    pub path: String,
    /// The signature.
    pub signature: String,
    /// The sha256 hex of the sealed document.
    pub sha256: String,
    /// Its length in bytes.
    pub bytes: usize,
    /// Whether it replaced an earlier signature.
    pub resigned: bool,
}

/// `roster` op `list`: the roster as stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RosterListed {
    /// Always true.
    pub ok: bool,
    /// `roster`.
    pub action: &'static str,
    /// `list`.
    pub op: &'static str,
    /// The namespaces on the roster.
    pub roster: Vec<String>,
    /// Why the stored roster could not be read (`null`: it could).
    pub note: Option<String>,
}

/// `roster` ops `add` and `remove`: the roster after the change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RosterChanged {
    /// Always true.
    pub ok: bool,
    /// `roster`.
    pub action: &'static str,
    /// `add` or `remove`.
    pub op: &'static str,
    /// The namespace added or removed.
    pub namespace: String,
    /// The roster after the change.
    pub roster: Vec<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// `tick`: the periodic tasks run now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TickAnswer {
    /// Always true.
    pub ok: bool,
    /// `tick`.
    pub action: &'static str,
    /// The one task asked for (`null`: every due task).
    pub task: Option<&'static str>,
    /// What the tick did.
    pub report: TickReport,
}

/// `cadence`: a periodic task's cadence.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CadenceAnswer {
    /// Always true.
    pub ok: bool,
    /// `cadence`.
    pub action: &'static str,
    /// The task.
    pub task: &'static str,
    /// Its cadence in minutes (as set, or as stored).
    pub cadence_minutes: i64,
    /// Its default cadence.
    pub default_minutes: i64,
    /// The shortest cadence it may have.
    pub floor_minutes: i64,
    /// Whether nothing was written (false when the cadence is only read).
    pub dry_run: bool,
}

/// `pin`: the Anchors checksum pinned.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Pinned {
    /// Always true.
    pub ok: bool,
    /// `pin`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// The sha256 hex of the Anchors block.
    pub checksum: String,
    /// The pin it replaced (`null`: none).
    pub previous: Option<String>,
    /// Whether the stored pin already equalled the checksum.
    pub unchanged: bool,
    /// How many anchors the block declares.
    pub anchors: usize,
    /// Whether the namespace is on the roster.
    pub on_roster: bool,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// When the namespace is not on the roster, what that means (`null` otherwise).
    pub note: Option<String>,
}

/// `pin` refused: the scores document is missing or has problems.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PinRefused {
    /// Always false.
    pub ok: bool,
    /// `pin`.
    pub action: &'static str,
    /// The namespace.
    pub namespace: String,
    /// Why.
    pub refusal: String,
    /// Each problem of the scores document.
    pub problems: Vec<String>,
}
