//! Outcomes (reference 6.7): one write-once row per finished job, counts rather than prose,
//! checked against GitHub where the server could check them.
//!
//! Two pure steps around the service's fetches: [`prs_to_verify`] resolves evidence URLs
//! through the namespace's repo mapping (the authorization boundary); the service reads
//! each pull request and, when all were read, the CI runs of the last one's head
//! ([`ci_head_to_check`]); [`verify_evidence`] and [`build_outcome`] turn that into the row.
//! Partial verification is no verification, NULL is not zero, and CI that has not
//! finished is NULL, never red.

use serde::Serialize;

use super::evidence::Evidence;
use super::model::Job;
use super::pr_url::evidence_pr;
use crate::time::{MINUTE_MS, Timestamp};

mod verified;

pub use verified::VerifiedFields;

/// Conclusions that do not fail a run: a skipped or neutral workflow did not judge the change.
pub const CI_NOT_A_FAILURE: [&str; 3] = ["success", "skipped", "neutral"];

/// At most this many workflow runs are read for the head commit.
pub const CI_RUNS_LIMIT: usize = 20;

/// A pull request named in evidence, resolved through the namespace's mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrRef {
    /// The URL as the driver gave it.
    pub url: String,
    /// The owner, as the mapping spells it.
    pub owner: String,
    /// The repository, as the mapping spells it.
    pub repo: String,
    /// The pull-request number.
    pub number: u64,
}

/// Evidence URLs that cannot all be read: nothing will be verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unresolvable {
    /// How many URLs were named.
    pub named: usize,
    /// How many of them resolved.
    pub resolved: usize,
    /// One note per URL that did not.
    pub notes: Vec<String>,
}

/// What GitHub says about one pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrFacts {
    /// Whether it was merged.
    pub merged: bool,
    /// Its commit count.
    pub commits: u64,
    /// Its changed-file count.
    pub changed_files: u64,
    /// Its head commit (empty when GitHub gave none).
    pub head_sha: String,
}

/// One workflow run on the head commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkflowRun {
    /// `queued`, `in_progress`, `completed`, ...
    pub status: String,
    /// Set once completed: `success`, `failure`, ...
    pub conclusion: Option<String>,
}

/// The evidence after verification: the row's counts and what the server checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvidenceVerdict {
    /// Pull requests opened (driver-named when unverified).
    pub prs_opened: Option<i64>,
    /// Pull requests merged (only ever from GitHub).
    pub prs_merged: Option<i64>,
    /// Commits.
    pub commits: Option<i64>,
    /// Files changed.
    pub files_changed: Option<i64>,
    /// Tests added (never verified).
    pub tests_added: Option<i64>,
    /// 1 green, 0 red, NULL undecided.
    pub ci_green: Option<i64>,
    /// Which fields the server checked.
    pub verified: VerifiedFields,
    /// Every verification that could not run, by name.
    pub notes: Vec<String>,
    /// The session's cost in US dollars, as the driver measured it (never verified).
    pub cost_usd: Option<f64>,
    /// The session's turns (never verified).
    pub turns: Option<i64>,
    /// The session's wall time in milliseconds (never verified).
    pub duration_ms: Option<i64>,
}

/// How a job ended up, derived from `result_ref`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResultKind {
    /// An `https://` reference.
    Pr,
    /// Any other reference: a document path.
    Doc,
    /// No reference.
    None,
}

/// One row of `job_outcomes`, in the Worker's column order (Capsid's own columns after).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OutcomeRow {
    /// The job.
    pub job_id: String,
    /// `claimed_by` when the job ended, or `unattributed`.
    pub agent: String,
    /// The job's namespace.
    pub namespace: String,
    /// See [`EvidenceVerdict`].
    pub prs_opened: Option<i64>,
    /// See [`EvidenceVerdict`].
    pub prs_merged: Option<i64>,
    /// See [`EvidenceVerdict`].
    pub commits: Option<i64>,
    /// See [`EvidenceVerdict`].
    pub files_changed: Option<i64>,
    /// See [`EvidenceVerdict`].
    pub tests_added: Option<i64>,
    /// See [`EvidenceVerdict`].
    pub ci_green: Option<i64>,
    /// Gates hit.
    pub blocked_count: i64,
    /// Times resumed.
    pub resumed_count: i64,
    /// Whole minutes of the final working stretch.
    pub duration_minutes: Option<i64>,
    /// `pr`, `doc` or `none`.
    pub result_kind: ResultKind,
    /// JSON text of [`VerifiedFields`], all five keys.
    pub verified: String,
    /// When recorded.
    pub recorded_at: Timestamp,
    /// The agent whose approval let a `review_required` job complete (SPEC 8), if any.
    pub reviewed_by: Option<String>,
    /// JSON array of the skill ids offered with the claim; `None` when none were computed.
    pub skill_ids_offered: Option<String>,
    /// JSON array of the skill ids the driver reported using; `None` when it reported nothing.
    pub skill_ids_used: Option<String>,
    /// The verifier's verdict the completing call reported (`verified-success`, ...); `None`
    /// when it reported none. A job done with `verified-success` is a source of skills.
    pub skill_verdict: Option<String>,
    /// What the job's agent session cost in US dollars, as its driver measured it; the
    /// namespace's month spend sums these. Shown only when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The session's turns, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<i64>,
    /// The session's wall time in milliseconds, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
}

/// The row plus the notes the response carries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// The row written.
    pub row: OutcomeRow,
    /// What could not be verified, and why.
    pub notes: Vec<String>,
}

/// Resolves every evidence URL: it must be an anchored GitHub PR URL of a repo the
/// namespace maps (`owner/name`, exact). No URLs gives an empty list. One that fails
/// means nothing will be verified, so the service need not fetch anything.
pub fn prs_to_verify(
    evidence: Option<&Evidence>,
    namespace: &str,
    mapped_repos: &[String],
) -> Result<Vec<PrRef>, Unresolvable> {
    let urls = evidence.map_or(&[][..], |e| e.prs.as_slice());
    let mut refs = Vec::with_capacity(urls.len());
    let mut notes = Vec::new();
    for url in urls {
        let Some(pr) = evidence_pr(url) else {
            notes.push(format!(
                "{url} is not a GitHub pull request URL, so nothing could be verified about it"
            ));
            continue;
        };
        let full = pr.full_repo();
        match mapped_repos.iter().find(|mapped| **mapped == full) {
            Some(mapped) => {
                let (owner, repo) = mapped.split_once('/').unwrap_or((mapped.as_str(), ""));
                refs.push(PrRef {
                    url: url.clone(),
                    owner: owner.into(),
                    repo: repo.into(),
                    number: pr.number,
                });
            }
            None => notes.push(format!(
                "{url}: repo '{full}' is not mapped to namespace {namespace}, so it was not read"
            )),
        }
    }
    if notes.is_empty() {
        Ok(refs)
    } else {
        Err(Unresolvable {
            named: urls.len(),
            resolved: refs.len(),
            notes,
        })
    }
}

/// The head commit whose CI decides `ci_green`: the last PR's, once every PR was read.
pub fn ci_head_to_check(facts: &[Result<PrFacts, String>]) -> Option<&str> {
    if facts.iter().any(Result::is_err) {
        return None;
    }
    match facts.last() {
        Some(Ok(last)) if !last.head_sha.is_empty() => Some(&last.head_sha),
        _ => None,
    }
}

fn count(n: Option<u64>) -> Option<i64> {
    n.and_then(|n| i64::try_from(n).ok())
}

fn saturating_sum(values: impl Iterator<Item = u64>) -> i64 {
    i64::try_from(values.fold(0u64, u64::saturating_add)).unwrap_or(i64::MAX)
}

fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// CI's verdict on a head commit: `Some(true/false)` once every run finished, else `None`
/// with a note.
fn ci_green(
    head_sha: &str,
    runs: Option<&Result<Vec<WorkflowRun>, String>>,
) -> (Option<bool>, Option<String>) {
    if head_sha.is_empty() {
        return (
            None,
            Some("the pull request carried no head sha, so CI could not be looked up".into()),
        );
    }
    let sha = short(head_sha);
    let runs = match runs {
        None => return (None, Some(format!("CI was not read for {sha}"))),
        Some(Err(why)) => return (None, Some(format!("CI could not be read for {sha}: {why}"))),
        Some(Ok(runs)) => runs,
    };
    if runs.is_empty() {
        return (
            None,
            Some(format!(
                "no workflow runs for {sha}, so CI has nothing to say about it"
            )),
        );
    }
    if runs.iter().any(|r| r.status != "completed") {
        return (
            None,
            Some(format!(
                "CI for {sha} has not finished, so it is neither green nor red yet"
            )),
        );
    }
    let green = runs.iter().all(|r| {
        r.conclusion
            .as_deref()
            .is_some_and(|c| CI_NOT_A_FAILURE.contains(&c))
    });
    (Some(green), None)
}

/// Verifies the evidence against what was read. `plan` is [`prs_to_verify`]'s answer,
/// `facts` one read per resolved PR in order, `ci_runs` the runs of [`ci_head_to_check`]'s
/// commit (`None` when not read).
pub fn verify_evidence(
    evidence: Option<&Evidence>,
    plan: &Result<Vec<PrRef>, Unresolvable>,
    facts: &[Result<PrFacts, String>],
    ci_runs: Option<&Result<Vec<WorkflowRun>, String>>,
) -> EvidenceVerdict {
    let named = evidence.map_or(0, |e| e.prs.len());
    let mut verdict = EvidenceVerdict {
        // Unverified, this is the driver's own number of named URLs.
        prs_opened: (named > 0).then(|| i64::try_from(named).unwrap_or(i64::MAX)),
        commits: count(evidence.and_then(|e| e.commits)),
        files_changed: count(evidence.and_then(|e| e.files_changed)),
        tests_added: count(evidence.and_then(|e| e.tests_added)),
        cost_usd: evidence.and_then(|e| e.cost_usd),
        turns: count(evidence.and_then(|e| e.turns)),
        duration_ms: count(evidence.and_then(|e| e.duration_ms)),
        ..EvidenceVerdict::default()
    };
    if named == 0 {
        return verdict;
    }
    let refs = match plan {
        Err(unresolvable) => {
            verdict.notes.extend(unresolvable.notes.iter().cloned());
            verdict.notes.push(format!(
                "{} of {} named pull requests could be resolved through this namespace's repo mapping, so none was read and the counts below are the driver's own, marked unverified.",
                unresolvable.resolved, unresolvable.named
            ));
            return verdict;
        }
        Ok(refs) => refs,
    };
    let mut read = Vec::with_capacity(refs.len());
    for (i, pr) in refs.iter().enumerate() {
        match facts.get(i) {
            Some(Ok(fact)) => read.push(fact),
            Some(Err(why)) => verdict.notes.push(format!("{}: {why}", pr.url)),
            None => verdict.notes.push(format!("{}: it was not read", pr.url)),
        }
    }
    if read.len() != named {
        verdict.notes.push(format!(
            "{} of {named} named pull requests could be read, so the counts below are the driver's own and are marked unverified.",
            read.len()
        ));
        return verdict;
    }
    verdict.prs_opened = Some(saturating_sum(read.iter().map(|_| 1)));
    verdict.prs_merged = Some(saturating_sum(read.iter().map(|f| u64::from(f.merged))));
    verdict.commits = Some(saturating_sum(read.iter().map(|f| f.commits)));
    verdict.files_changed = Some(saturating_sum(read.iter().map(|f| f.changed_files)));
    verdict.verified = VerifiedFields {
        prs_opened: true,
        prs_merged: true,
        commits: true,
        files_changed: true,
        ci_green: false,
    };
    let head = read.last().map_or("", |f| f.head_sha.as_str());
    let (green, note) = ci_green(head, ci_runs);
    verdict.notes.extend(note);
    if let Some(green) = green {
        verdict.ci_green = Some(i64::from(green));
        verdict.verified.ci_green = true;
    }
    verdict
}

/// `pr` for an `https://` reference (any case), `doc` for any other non-empty one, else `none`.
pub fn result_kind(result_ref: Option<&str>) -> ResultKind {
    match result_ref {
        None | Some("") => ResultKind::None,
        Some(r)
            if r.get(..8)
                .is_some_and(|p| p.eq_ignore_ascii_case("https://")) =>
        {
            ResultKind::Pr
        }
        Some(_) => ResultKind::Doc,
    }
}

/// Whole minutes from `claimed_at` to `now`, rounded half up; NULL when missing or
/// negative (clocks that disagree say nothing about the work).
pub fn duration_minutes(claimed_at: Option<Timestamp>, now: Timestamp) -> Option<i64> {
    let started = claimed_at?;
    let elapsed = now.millis_since(started);
    (elapsed >= 0).then(|| (elapsed + MINUTE_MS / 2) / MINUTE_MS)
}

/// The outcome row for `job` as it ends at `now`.
pub fn build_outcome(job: &Job, verdict: EvidenceVerdict, now: Timestamp) -> Outcome {
    let row = OutcomeRow {
        job_id: job.id.clone(),
        agent: job
            .claimed_by
            .clone()
            .unwrap_or_else(|| "unattributed".to_owned()),
        namespace: job.namespace.clone(),
        prs_opened: verdict.prs_opened,
        prs_merged: verdict.prs_merged,
        commits: verdict.commits,
        files_changed: verdict.files_changed,
        tests_added: verdict.tests_added,
        ci_green: verdict.ci_green,
        blocked_count: job.blocked_count,
        resumed_count: job.resumed_count,
        duration_minutes: duration_minutes(job.claimed_at, now),
        result_kind: result_kind(job.result_ref.as_deref()),
        verified: verdict.verified.to_json(),
        recorded_at: now,
        reviewed_by: None,
        skill_ids_offered: None,
        skill_ids_used: None,
        skill_verdict: None,
        cost_usd: verdict.cost_usd,
        turns: verdict.turns,
        duration_ms: verdict.duration_ms,
    };
    Outcome {
        row,
        notes: verdict.notes,
    }
}

#[cfg(test)]
mod tests;
