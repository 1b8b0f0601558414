//! Auto-merge (reference 7.3): the seven checks, evaluated in order over facts the service
//! gathered about one open pull request, stopping at the first failure.
//!
//! Each check refuses on its own; the order decides only which failure is reported. A fact
//! that could not be read is never a pass.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use crate::caller::AgentKind;
use crate::guards::{is_migration_workflow_or_lockfile, is_money_path, protected_match};

/// The merge method used on a pass: a merge commit, so the audited head sha survives.
pub const MERGE_METHOD: &str = "merge";

/// One of the seven checks, in evaluation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckId {
    /// The PR body names a job id.
    BodyNamesJob,
    /// That job was held by a live driver agent.
    AuthorIsDriver,
    /// The PR targets the repo's default branch.
    BaseIsDefaultBranch,
    /// Every check run on the head sha completed green.
    CiGreen,
    /// No changed path is protected.
    PathsUnprotected,
    /// No changed path is a money path.
    PathsNotMoney,
    /// No changed path is a migration, a workflow or a lockfile.
    NoMigrationWorkflowLockfile,
}

impl CheckId {
    /// All seven, in evaluation order.
    pub const ALL: [CheckId; 7] = [
        CheckId::BodyNamesJob,
        CheckId::AuthorIsDriver,
        CheckId::BaseIsDefaultBranch,
        CheckId::CiGreen,
        CheckId::PathsUnprotected,
        CheckId::PathsNotMoney,
        CheckId::NoMigrationWorkflowLockfile,
    ];

    /// The id as the policy document and the audit rows spell it.
    pub fn name(self) -> &'static str {
        match self {
            CheckId::BodyNamesJob => "body_names_job",
            CheckId::AuthorIsDriver => "author_is_driver",
            CheckId::BaseIsDefaultBranch => "base_is_default_branch",
            CheckId::CiGreen => "ci_green",
            CheckId::PathsUnprotected => "paths_unprotected",
            CheckId::PathsNotMoney => "paths_not_money",
            CheckId::NoMigrationWorkflowLockfile => "no_migration_workflow_lockfile",
        }
    }

    /// The check named exactly `name`.
    pub fn parse(name: &str) -> Option<CheckId> {
        CheckId::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One check run on the head sha, as GitHub reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckRun {
    /// The run's name.
    pub name: String,
    /// `queued`, `in_progress`, `completed`, ...
    pub status: String,
    /// `success`, `failure`, ... once completed.
    pub conclusion: Option<String>,
}

/// The agent row named by the job's `claimed_by`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverAgent {
    /// The agent's name.
    pub name: String,
    /// The agent's kind (`driver`, `cron`, ...).
    pub kind: AgentKind,
    /// Whether it has been revoked.
    pub revoked: bool,
}

/// What the service read about one open pull request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrFacts {
    /// The PR body (empty when GitHub has none).
    pub body: String,
    /// The PR's base ref.
    pub base_ref: String,
    /// The repository's default branch.
    pub default_branch: String,
    /// The PR's head sha.
    pub head_sha: String,
    /// `claimed_by` of the job the body names, found in this namespace; `None` when there is no
    /// such job or it was never claimed.
    pub job_claimed_by: Option<String>,
    /// The agent row for [`agent_name_of`] the claimant, when there is one.
    pub driver_agent: Option<DriverAgent>,
    /// Check runs on the head sha; `None` when they could not be read.
    pub check_runs: Option<Vec<CheckRun>>,
    /// Changed file paths; `None` when the file list could not be read.
    pub changed_paths: Option<Vec<String>>,
}

static JOB_ID_IN_BODY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)job_[0-9a-f]{12}(?-u:\b)")
        .unwrap_or_else(|e| unreachable!("job id pattern is valid: {e}"))
});

/// The first job id (`job_` + 12 lower-case hex) anywhere in a PR body.
pub fn job_id_from_body(body: &str) -> Option<&str> {
    JOB_ID_IN_BODY.find(body).map(|m| m.as_str())
}

/// The agent name in a `claimed_by` of the form `agent:<name>`; other claimants are no agent.
pub fn agent_name_of(claimed_by: &str) -> Option<&str> {
    claimed_by.strip_prefix("agent:")
}

/// What the check runs on the head sha say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CiVerdict {
    /// At least one run, all completed, every conclusion success, skipped or neutral.
    Green {
        /// How many runs.
        runs: usize,
    },
    /// Some runs are still running.
    Pending {
        /// Their names.
        running: Vec<String>,
    },
    /// Some completed runs concluded otherwise.
    Failed {
        /// `name=conclusion` for each.
        bad: Vec<String>,
    },
    /// No run has reported: a workflow that never started looks exactly like a removed one.
    NotReported,
    /// The check runs could not be read.
    ChecksUnreadable,
    /// The changed-file list could not be read, so the PR is not evaluated.
    FilesUnreadable,
}

impl fmt::Display for CiVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CiVerdict::Green { runs } => write!(f, "success: {runs} check(s) green"),
            CiVerdict::Pending { running } => {
                write!(f, "pending: {} check(s) still running: {}", running.len(), running.join(", "))
            }
            CiVerdict::Failed { bad } => write!(f, "failure: {}", bad.join(", ")),
            CiVerdict::NotReported => f.write_str("not reported: no check run has reported on this commit"),
            CiVerdict::ChecksUnreadable => f.write_str("not reported: the check runs could not be read"),
            CiVerdict::FilesUnreadable => {
                f.write_str("not evaluated: the changed-file list could not be read, so this PR is not evaluated")
            }
        }
    }
}

const GREEN_CONCLUSIONS: [&str; 3] = ["success", "skipped", "neutral"];

/// The CI verdict for a PR: an unreadable file list first, then the runs themselves.
pub fn ci_verdict(check_runs: Option<&[CheckRun]>, files_readable: bool) -> CiVerdict {
    if !files_readable {
        return CiVerdict::FilesUnreadable;
    }
    let Some(runs) = check_runs else {
        return CiVerdict::ChecksUnreadable;
    };
    if runs.is_empty() {
        return CiVerdict::NotReported;
    }
    let running: Vec<String> = runs
        .iter()
        .filter(|r| r.status != "completed")
        .map(|r| r.name.clone())
        .collect();
    if !running.is_empty() {
        return CiVerdict::Pending { running };
    }
    let bad: Vec<String> = runs
        .iter()
        .filter(|r| {
            !r.conclusion
                .as_deref()
                .is_some_and(|c| GREEN_CONCLUSIONS.contains(&c))
        })
        .map(|r| format!("{}={}", r.name, r.conclusion.as_deref().unwrap_or("null")))
        .collect();
    if bad.is_empty() {
        CiVerdict::Green { runs: runs.len() }
    } else {
        CiVerdict::Failed { bad }
    }
}

/// The policy's answer for one pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeVerdict {
    /// Every check passed: merge with [`MERGE_METHOD`].
    Merge {
        /// All seven, in order.
        passed: Vec<CheckId>,
    },
    /// A check failed: the PR stays open for the seat.
    Declined {
        /// The first check that failed.
        failed: CheckId,
        /// Why, naming the offending fact.
        why: String,
        /// The checks that passed before it.
        passed: Vec<CheckId>,
    },
}

fn short_sha(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// The path predicates the last three checks apply. The seventh check's list is stated apart
/// from the protected list, so narrowing one cannot open auto-merge through the other; tests
/// swap a predicate out to prove each check refuses on its own.
#[derive(Clone, Copy, Debug)]
pub struct PathRules {
    /// The first protected pattern's reason for a path, if any.
    pub protected: fn(&str) -> Option<&'static str>,
    /// Whether a path is a money path.
    pub money: fn(&str) -> bool,
    /// Whether a path is a migration, a workflow or a lockfile.
    pub migration_workflow_lockfile: fn(&str) -> bool,
}

impl PathRules {
    /// The guards of reference section 5.
    pub const STANDARD: PathRules = PathRules {
        protected: |path| protected_match(path).map(|p| p.reason),
        money: is_money_path,
        migration_workflow_lockfile: is_migration_workflow_or_lockfile,
    };
}

/// Evaluates the seven checks in order, stopping at the first failure.
pub fn evaluate_pr(facts: &PrFacts) -> MergeVerdict {
    evaluate_pr_with(facts, &PathRules::STANDARD)
}

/// [`evaluate_pr`] with the path predicates given.
pub fn evaluate_pr_with(facts: &PrFacts, rules: &PathRules) -> MergeVerdict {
    let mut passed = Vec::new();
    for check in CheckId::ALL {
        if let Err(why) = run_check(check, facts, rules) {
            return MergeVerdict::Declined {
                failed: check,
                why,
                passed,
            };
        }
        passed.push(check);
    }
    MergeVerdict::Merge { passed }
}

fn run_check(check: CheckId, facts: &PrFacts, rules: &PathRules) -> Result<(), String> {
    let paths = facts.changed_paths.as_deref().unwrap_or_default();
    match check {
        CheckId::BodyNamesJob => job_id_from_body(&facts.body).map(|_| ()).ok_or_else(|| {
            "the PR body names no job id, so there is no request this change can be traced back to".to_owned()
        }),
        CheckId::AuthorIsDriver => author_is_driver(facts),
        CheckId::BaseIsDefaultBranch => (facts.base_ref == facts.default_branch).then_some(()).ok_or_else(|| {
            format!("the PR targets '{}', not the default branch '{}'", facts.base_ref, facts.default_branch)
        }),
        CheckId::CiGreen => match ci_verdict(facts.check_runs.as_deref(), facts.changed_paths.is_some()) {
            CiVerdict::Green { .. } => Ok(()),
            other => Err(format!("CI on {} is {other}", short_sha(&facts.head_sha))),
        },
        CheckId::PathsUnprotected => {
            let hits: Vec<String> = paths
                .iter()
                .filter_map(|p| (rules.protected)(p).map(|reason| format!("{p} ({reason})")))
                .collect();
            if hits.is_empty() {
                Ok(())
            } else {
                Err(format!("the change touches {} protected path(s): {}", hits.len(), hits.join("; ")))
            }
        }
        CheckId::PathsNotMoney => {
            let money: Vec<&str> = paths.iter().map(String::as_str).filter(|p| (rules.money)(p)).collect();
            if money.is_empty() {
                Ok(())
            } else {
                Err(format!("the change touches a billing or payment surface: {}", money.join(", ")))
            }
        }
        CheckId::NoMigrationWorkflowLockfile => match paths.iter().find(|p| (rules.migration_workflow_lockfile)(p)) {
            None => Ok(()),
            Some(p) => Err(format!(
                "{p} is a migration, a workflow or a lockfile, which runs against the live database, measures the code or decides what gets installed"
            )),
        },
    }
}

fn author_is_driver(facts: &PrFacts) -> Result<(), String> {
    let job = job_id_from_body(&facts.body).unwrap_or("the job");
    let Some(claimed_by) = facts.job_claimed_by.as_deref() else {
        return Err(format!(
            "the PR body names {job}, but no such claimed job is recorded in this namespace"
        ));
    };
    let agent = agent_name_of(claimed_by)
        .and(facts.driver_agent.as_ref())
        .filter(|a| agent_name_of(claimed_by) == Some(a.name.as_str()));
    let Some(agent) = agent else {
        return Err(format!(
            "{job} was held by {claimed_by}, which is not a minted agent; only a driver agent's work auto-merges"
        ));
    };
    if agent.kind != AgentKind::Driver {
        return Err(format!(
            "{} is kind '{}', not a driver",
            agent.name, agent.kind
        ));
    }
    if agent.revoked {
        return Err(format!(
            "{} has been revoked, so its open work waits for the seat",
            agent.name
        ));
    }
    Ok(())
}

pub mod audit;

#[cfg(test)]
mod tests;
