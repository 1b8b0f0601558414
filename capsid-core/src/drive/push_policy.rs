//! The push policy of the git gateway (issue 48): which ref updates a job's push may make, as
//! pure functions. The gateway reads every update a push makes (whatever the client spelled:
//! `--no-verify`, `-c core.hooksPath`, `send-pack`, a refspec) and asks [`decide_push`]; this
//! module never sees a process, a socket or a file.
//!
//! The rules, in the order they are applied to each update ([`decide`]):
//!
//! 1. the run is closed: refused, whatever the ref;
//! 2. a ref name git itself would refuse (`git check-ref-format`): refused;
//! 3. a tag: refused; any other ref not under `refs/heads/`: refused;
//! 4. a deletion (the new object id all zeros): refused, whichever branch;
//! 5. a protected branch (main, master, the remote's default, compared without ASCII case so
//!    `MAIN` cannot stand for `main`): accepted only with an [`Approval`] for exactly that ref
//!    and that new object id, otherwise held ([`Decision::Hold`]): the job blocks with that
//!    exact update as its question;
//! 6. one of the job's own branches (`capsid/<job>` and the ones the job names): accepted,
//!    force included;
//! 7. any other branch: refused.
//!
//! A push is atomic at the gateway ([`decide_push`]): it goes through only when every update
//! in it is accepted, because git's `pre-receive` hook answers for the whole push at once and
//! a push half applied upstream would leave the job's branches in a state nobody asked for.
//! Each refusal is a full sentence naming the ref, the rule, and what to do instead.

use std::fmt;

/// The prefix of every branch ref.
pub const BRANCH_PREFIX: &str = "refs/heads/";
/// The prefix of every tag ref.
pub const TAG_PREFIX: &str = "refs/tags/";
/// The prefix of a job's own branch: `capsid/<job>`.
pub const JOB_BRANCH_PREFIX: &str = "capsid/";

/// A git object id as the push protocol spells it: 40 (SHA-1) or 64 (SHA-256) lowercase hex
/// digits. All zeros stands for "no object" (the old side of a create, the new side of a
/// deletion).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(String);

impl ObjectId {
    /// Parses an object id; `field` names it in the error (`old`, `new`, `sha`).
    pub fn parse(field: &str, text: &str) -> Result<ObjectId, PushPolicyError> {
        let hex_ok = text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if (text.len() == 40 || text.len() == 64) && hex_ok {
            Ok(ObjectId(text.to_owned()))
        } else {
            Err(PushPolicyError::ObjectId {
                field: field.to_owned(),
                text: text.chars().take(80).collect(),
            })
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the all-zero id ("no object").
    pub fn is_zero(&self) -> bool {
        self.0.bytes().all(|b| b == b'0')
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What went wrong building the policy's inputs (never a decision: those are [`Decision`]s).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PushPolicyError {
    /// An object id that is not 40 or 64 lowercase hex digits.
    #[error("`{field}` must be a git object id (40 or 64 lowercase hex digits), not {text:?}")]
    ObjectId {
        /// The field (`old`, `new`, `sha`).
        field: String,
        /// What was given (at most 80 characters).
        text: String,
    },
    /// A branch name git would refuse.
    #[error("`{field}` must be a branch name git accepts: {name:?} {why}")]
    BranchName {
        /// The field (`job`, `branches`, `protected`, `refname`).
        field: String,
        /// The name given.
        name: String,
        /// The rule it breaks.
        why: &'static str,
    },
}

/// One ref update of a push: `<old> <new> <refname>` as git's receive-pack reads it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefUpdate {
    /// The full ref name (`refs/heads/main`).
    pub refname: String,
    /// The value the pusher believes the ref has (all zeros: the ref is created).
    pub old: ObjectId,
    /// The value the ref gets (all zeros: the ref is deleted).
    pub new: ObjectId,
}

impl RefUpdate {
    /// Parses the three fields of one update. The ref name is kept as given (its form is a
    /// rule of [`decide`], refused there with a reason the pusher sees).
    pub fn parse(old: &str, new: &str, refname: &str) -> Result<RefUpdate, PushPolicyError> {
        Ok(RefUpdate {
            refname: refname.to_owned(),
            old: ObjectId::parse("old", old)?,
            new: ObjectId::parse("new", new)?,
        })
    }

    /// Whether the update creates the ref.
    pub fn is_create(&self) -> bool {
        self.old.is_zero()
    }

    /// Whether the update deletes the ref.
    pub fn is_delete(&self) -> bool {
        self.new.is_zero()
    }
}

impl fmt::Display for RefUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.old, self.new, self.refname)
    }
}

/// Why a branch name is not one git accepts (`git check-ref-format` for one name), if it is not.
pub fn ref_format_error(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name == "@" {
        return Some("is `@`");
    }
    if name.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Some("contains a control character");
    }
    if name
        .chars()
        .any(|c| matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        return Some("contains a space or one of ~ ^ : ? * [ \\");
    }
    if name.contains("..") {
        return Some("contains `..`");
    }
    if name.contains("@{") {
        return Some("contains `@{`");
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") {
        return Some("has an empty path component");
    }
    if name.ends_with('.') {
        return Some("ends with `.`");
    }
    for part in name.split('/') {
        if part.starts_with('.') {
            return Some("has a path component starting with `.`");
        }
        if part.ends_with(".lock") {
            return Some("has a path component ending with `.lock`");
        }
    }
    None
}

/// A branch name for the terms: `main` or `refs/heads/main` both name the branch `main`.
fn branch_name(field: &str, name: &str) -> Result<String, PushPolicyError> {
    let short = name.trim();
    let short = short.strip_prefix(BRANCH_PREFIX).unwrap_or(short);
    match ref_format_error(short) {
        Some(why) => Err(PushPolicyError::BranchName {
            field: field.to_owned(),
            name: name.to_owned(),
            why,
        }),
        None => Ok(short.to_owned()),
    }
}

/// What a job may push: its own branches, and the branches only a person may move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushTerms {
    job_branch: String,
    extra: Vec<String>,
    protected: Vec<String>,
    read_only: Option<String>,
}

impl PushTerms {
    /// The terms of job `job`: its branch `capsid/<job>`, the `extra` branches the job names,
    /// and the `protected` branches (see [`crate::drive::hooks::protected_branches`]: main,
    /// master and the remote's default). Names may be given short (`main`) or full
    /// (`refs/heads/main`). A branch both named by the job and protected stays protected.
    pub fn new<S: AsRef<str>, T: AsRef<str>>(
        job: &str,
        extra: &[S],
        protected: &[T],
    ) -> Result<PushTerms, PushPolicyError> {
        if job.trim().is_empty() {
            return Err(PushPolicyError::BranchName {
                field: "job".to_owned(),
                name: job.to_owned(),
                why: "is empty",
            });
        }
        let job_branch = branch_name("job", &format!("{JOB_BRANCH_PREFIX}{}", job.trim()))?;
        let extra = extra
            .iter()
            .map(|b| branch_name("branches", b.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let protected = protected
            .iter()
            .map(|b| branch_name("protected", b.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PushTerms {
            job_branch,
            extra,
            protected,
            read_only: None,
        })
    }

    /// The same terms for a job whose role ships no code (`role`: a scout, a senior): every
    /// update is refused, naming the role.
    pub fn shipping_nothing(mut self, role: &str) -> PushTerms {
        self.read_only = Some(role.to_owned());
        self
    }

    /// The job's own branch, `capsid/<job>` (short form).
    pub fn job_branch(&self) -> &str {
        &self.job_branch
    }

    /// The other branches the job named (short forms).
    pub fn extra_branches(&self) -> &[String] {
        &self.extra
    }

    /// The protected branches (short forms).
    pub fn protected_branches(&self) -> &[String] {
        &self.protected
    }

    /// Whether `branch` (short form) is protected; ASCII case is ignored so that a branch
    /// whose name differs from a protected one only by case is treated as that branch (a
    /// case-insensitive file system or host would make them one).
    pub fn is_protected(&self, branch: &str) -> bool {
        self.protected
            .iter()
            .any(|p| p.eq_ignore_ascii_case(branch))
    }

    /// Whether `branch` (short form) is one of the job's own branches.
    pub fn is_own(&self, branch: &str) -> bool {
        self.job_branch == branch || self.extra.iter().any(|b| b == branch)
    }
}

/// A person's approval of one protected update: the ref and the exact object id it may get.
/// Whoever supplies approvals binds them to the job (the server's approval, asked for this
/// job); the policy binds them to the ref and the sha.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Approval {
    /// The full ref name (`refs/heads/main`).
    pub refname: String,
    /// The object id the ref may be moved to.
    pub sha: ObjectId,
}

impl Approval {
    /// An approval of moving `branch` (`main` or `refs/heads/main`) to `sha`.
    pub fn for_branch(branch: &str, sha: &str) -> Result<Approval, PushPolicyError> {
        Ok(Approval {
            refname: format!("{BRANCH_PREFIX}{}", branch_name("refname", branch)?),
            sha: ObjectId::parse("sha", sha)?,
        })
    }

    /// Whether this approval allows exactly `update`.
    pub fn allows(&self, update: &RefUpdate) -> bool {
        self.refname == update.refname && self.sha == update.new
    }
}

/// Why an update was refused. `Display` is the full sentence the pusher sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The job's run has ended: the gateway takes no more pushes.
    RunClosed {
        /// The ref.
        refname: String,
    },
    /// A ref name git would refuse.
    BadRefName {
        /// The ref.
        refname: String,
        /// The rule it breaks.
        why: &'static str,
    },
    /// A tag.
    Tag {
        /// The ref.
        refname: String,
        /// The job's branch, to push to instead.
        job_branch: String,
    },
    /// A ref outside `refs/heads/` and `refs/tags/`.
    NotABranch {
        /// The ref.
        refname: String,
        /// The job's branch, to push to instead.
        job_branch: String,
    },
    /// A deletion.
    Deletion {
        /// The ref.
        refname: String,
    },
    /// A branch that is neither the job's nor protected.
    OtherBranch {
        /// The ref.
        refname: String,
        /// The job's branch, to push to instead.
        job_branch: String,
    },
    /// Any update of a job whose role ships no code.
    ShipsNothing {
        /// The ref.
        refname: String,
        /// The job's role.
        role: String,
    },
}

impl Refusal {
    /// The ref the refusal is about.
    pub fn refname(&self) -> &str {
        match self {
            Refusal::RunClosed { refname }
            | Refusal::BadRefName { refname, .. }
            | Refusal::Tag { refname, .. }
            | Refusal::NotABranch { refname, .. }
            | Refusal::Deletion { refname }
            | Refusal::OtherBranch { refname, .. }
            | Refusal::ShipsNothing { refname, .. } => refname,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::RunClosed { refname } => write!(
                f,
                "{refname}: refused, the job's run has ended and the gateway takes no more pushes \
                 for it."
            ),
            Refusal::BadRefName { refname, why } => write!(
                f,
                "{refname:?}: refused, the ref name {why}, which git does not allow."
            ),
            Refusal::Tag {
                refname,
                job_branch,
            } => write!(
                f,
                "{refname}: refused, a job may not push tags; push your commits to \
                 {BRANCH_PREFIX}{job_branch} instead."
            ),
            Refusal::NotABranch {
                refname,
                job_branch,
            } => write!(
                f,
                "{refname}: refused, a job may push only branches (refs/heads/...); push to \
                 {BRANCH_PREFIX}{job_branch} instead."
            ),
            Refusal::Deletion { refname } => write!(
                f,
                "{refname}: refused, a job may not delete a ref; leave it, a person deletes \
                 branches."
            ),
            Refusal::OtherBranch {
                refname,
                job_branch,
            } => write!(
                f,
                "{refname}: refused, this branch is not the job's; push to \
                 {BRANCH_PREFIX}{job_branch} instead."
            ),
            Refusal::ShipsNothing { refname, role } => write!(
                f,
                "{refname}: refused, this job's role is {role}, which ships no code; report \
                 what you found as the job's result, or post the change as a junior's job."
            ),
        }
    }
}

/// What the gateway does with one update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The update may go upstream, as [`Accepted`] says.
    Accept(Accepted),
    /// The update is refused, for the reason given.
    Refuse(Refusal),
    /// A protected update a person may approve: the job blocks with exactly this update as its
    /// question, and the same push goes through once an approval for its ref and new object
    /// id exists.
    Hold(RefUpdate),
}

/// Why an update was accepted, which decides how it is forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// One of the job's own branches: forwarded with force (the job may rewrite its branch).
    OwnBranch,
    /// A protected branch with a matching approval: forwarded without force, so the upstream
    /// refuses it unless it fast-forwards.
    Approved,
}

impl Decision {
    /// Whether the update is accepted.
    pub fn is_accept(&self) -> bool {
        matches!(self, Decision::Accept(_))
    }

    /// The refspec that forwards an accepted `update` upstream (`+<new>:<ref>` for the job's
    /// own branch, `<new>:<ref>` for an approved protected one); `None` unless accepted.
    pub fn forward_refspec(&self, update: &RefUpdate) -> Option<String> {
        match self {
            Decision::Accept(Accepted::OwnBranch) => {
                Some(format!("+{}:{}", update.new, update.refname))
            }
            Decision::Accept(Accepted::Approved) => {
                Some(format!("{}:{}", update.new, update.refname))
            }
            Decision::Refuse(_) | Decision::Hold(_) => None,
        }
    }

    /// The line the pusher sees about this update.
    pub fn explain(&self, update: &RefUpdate) -> String {
        match self {
            Decision::Accept(Accepted::OwnBranch) => {
                format!("{}: accepted, the job's own branch.", update.refname)
            }
            Decision::Accept(Accepted::Approved) => format!(
                "{}: accepted, a person approved moving it to {}.",
                update.refname, update.new
            ),
            Decision::Refuse(why) => why.to_string(),
            Decision::Hold(held) => format!(
                "{}: held, a protected branch moves only with a person's approval of this exact \
                 update ({} -> {}); the job blocks with it as its question, and the same push \
                 goes through once it is approved.",
                held.refname, held.old, held.new
            ),
        }
    }
}

/// Decides one update of a push (the rules are listed in the module's documentation).
/// `approvals` are the approvals bound to this job; `run_open` is false once the run ended.
pub fn decide(
    terms: &PushTerms,
    update: &RefUpdate,
    approvals: &[Approval],
    run_open: bool,
) -> Decision {
    let refname = &update.refname;
    if !run_open {
        return Decision::Refuse(Refusal::RunClosed {
            refname: refname.clone(),
        });
    }
    if let Some(role) = &terms.read_only {
        return Decision::Refuse(Refusal::ShipsNothing {
            refname: refname.clone(),
            role: role.clone(),
        });
    }
    if let Some(why) = ref_format_error(refname) {
        return Decision::Refuse(Refusal::BadRefName {
            refname: refname.clone(),
            why,
        });
    }
    if refname.starts_with(TAG_PREFIX) {
        return Decision::Refuse(Refusal::Tag {
            refname: refname.clone(),
            job_branch: terms.job_branch.clone(),
        });
    }
    let Some(branch) = refname.strip_prefix(BRANCH_PREFIX) else {
        return not_a_branch(terms, refname);
    };
    if update.is_delete() {
        return Decision::Refuse(Refusal::Deletion {
            refname: refname.clone(),
        });
    }
    if terms.is_protected(branch) {
        return if approvals.iter().any(|a| a.allows(update)) {
            Decision::Accept(Accepted::Approved)
        } else {
            Decision::Hold(update.clone())
        };
    }
    if terms.is_own(branch) {
        return Decision::Accept(Accepted::OwnBranch);
    }
    Decision::Refuse(Refusal::OtherBranch {
        refname: refname.clone(),
        job_branch: terms.job_branch.clone(),
    })
}

fn not_a_branch(terms: &PushTerms, refname: &str) -> Decision {
    Decision::Refuse(Refusal::NotABranch {
        refname: refname.to_owned(),
        job_branch: terms.job_branch.clone(),
    })
}

/// The decision on a whole push: each update's decision, in the push's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushDecision {
    /// Each update with its decision.
    pub updates: Vec<(RefUpdate, Decision)>,
}

impl PushDecision {
    /// Whether the push goes through: it has updates, and every one is accepted (a push is
    /// atomic at the gateway).
    pub fn accepted(&self) -> bool {
        !self.updates.is_empty() && self.updates.iter().all(|(_, d)| d.is_accept())
    }

    /// The held updates: each one a question a person may answer with an approval.
    pub fn held(&self) -> Vec<&RefUpdate> {
        self.updates
            .iter()
            .filter_map(|(_, d)| match d {
                Decision::Hold(u) => Some(u),
                _ => None,
            })
            .collect()
    }

    /// The refspecs that forward the push upstream, in order; empty unless it is accepted.
    pub fn forward_refspecs(&self) -> Vec<String> {
        if !self.accepted() {
            return Vec::new();
        }
        self.updates
            .iter()
            .filter_map(|(u, d)| d.forward_refspec(u))
            .collect()
    }

    /// What the pusher is told, one line per update (git shows them as `remote:` lines). A
    /// refused push says that nothing was applied, and why an accepted update in it was not.
    pub fn report(&self) -> String {
        let mut lines = Vec::with_capacity(self.updates.len() + 1);
        if self.accepted() {
            lines.push("capsid gateway: push accepted.".to_owned());
        } else if self.updates.is_empty() {
            lines.push("capsid gateway: push refused, it names no ref to update.".to_owned());
        } else {
            lines.push(
                "capsid gateway: push refused, nothing was updated (a push goes through only \
                 when every ref in it is allowed)."
                    .to_owned(),
            );
        }
        for (u, d) in &self.updates {
            lines.push(format!("capsid gateway: {}", d.explain(u)));
        }
        lines.join("\n")
    }
}

/// How the command of a job blocked on a held push begins: the gateway's held updates follow,
/// `<old> <new> <ref>` each, separated by `; `. The driver blocks the job with it; a person who
/// resumes the job approves exactly these updates, and the gateway of the resumed run lets the
/// same push through ([`approvals_in_command`]).
pub const HELD_PUSH_COMMAND: &str = "approve the push the git gateway held (old new ref):";

/// The command a job blocks on when the gateway held `held` (see [`HELD_PUSH_COMMAND`]).
pub fn held_push_command<'a>(held: impl IntoIterator<Item = &'a RefUpdate>) -> String {
    let updates: Vec<String> = held.into_iter().map(ToString::to_string).collect();
    format!("{HELD_PUSH_COMMAND} {}", updates.join("; "))
}

/// The approvals a person gave by resuming a job blocked on `command`: one per update of a
/// [`held_push_command`], for its ref and new object id. Anything else (another command, a
/// malformed or cut-off list, a deletion, a ref that is not a branch) approves nothing at all.
pub fn approvals_in_command(command: &str) -> Vec<Approval> {
    let Some(rest) = command.trim().strip_prefix(HELD_PUSH_COMMAND) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for piece in rest.split(';') {
        let fields: Vec<&str> = piece.split_whitespace().collect();
        let [old, new, refname] = fields[..] else {
            return Vec::new();
        };
        let Ok(update) = RefUpdate::parse(old, new, refname) else {
            return Vec::new();
        };
        if update.is_delete()
            || !update.refname.starts_with(BRANCH_PREFIX)
            || ref_format_error(&update.refname).is_some()
        {
            return Vec::new();
        }
        out.push(Approval {
            refname: update.refname,
            sha: update.new,
        });
    }
    out
}

/// Decides a whole push: every update with [`decide`], then the push as one (see
/// [`PushDecision::accepted`]).
pub fn decide_push(
    terms: &PushTerms,
    updates: &[RefUpdate],
    approvals: &[Approval],
    run_open: bool,
) -> PushDecision {
    PushDecision {
        updates: updates
            .iter()
            .map(|u| (u.clone(), decide(terms, u, approvals, run_open)))
            .collect(),
    }
}

#[cfg(test)]
mod tests;
