//! Agent records (reference 6.8): what a credential has actually done, from outcome rows.
//!
//! Counts and rates, never a composite score. A rate with no denominator is NULL, not 0,
//! and only fields the server verified feed a rate: a credential's own report about its
//! work never grades it.

use serde::Serialize;

use super::outcome::{OutcomeRow, VerifiedFields};
use super::state::JobStatus;
use crate::scope::Axis;

/// One group of the `jobs` table: how many jobs `claimed_by` holds in `status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedJobCount {
    /// The actor in `claimed_by`.
    pub claimed_by: String,
    /// The status.
    pub status: JobStatus,
    /// How many.
    pub n: i64,
}

/// The improve loop's totals for one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceRuns {
    /// The namespace.
    pub namespace: String,
    /// Attempts kept.
    pub kept: i64,
    /// Attempts reverted.
    pub reverts: i64,
}

/// A driver's share of the improve loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttemptSums {
    /// Attempts kept.
    pub kept: i64,
    /// Attempts reverted.
    pub reverted: i64,
}

/// One credential's record.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AgentRecord {
    /// The actor string matched (`agent:<name>`).
    pub actor: String,
    /// Jobs it holds that are done.
    pub jobs_done: i64,
    /// Jobs it holds that failed.
    pub jobs_failed: i64,
    /// Jobs of its sitting at a gate.
    pub jobs_blocked: i64,
    /// Gates hit across its finished jobs.
    pub gates_hit: i64,
    /// Resumes across its finished jobs.
    pub resumed: i64,
    /// Pull requests opened, from verified rows only.
    pub prs_opened: i64,
    /// Pull requests merged, from rows that verified both counts.
    pub prs_merged: i64,
    /// merged / opened to three places; NULL when none opened.
    pub pr_merge_rate: Option<f64>,
    /// Finished jobs whose CI the server decided.
    pub ci_checked: i64,
    /// green / checked to three places; NULL when none checked.
    pub ci_green_rate: Option<f64>,
    /// Median whole minutes of the final working stretch; NULL when none recorded.
    pub median_duration_minutes: Option<i64>,
    /// Improve attempts kept (drivers only).
    pub attempts_kept: Option<i64>,
    /// Improve attempts reverted (drivers only).
    pub attempts_reverted: Option<i64>,
}

/// JavaScript's `Math.round`: halves go up.
fn js_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

/// `numerator / denominator` to three places, or NULL without a denominator.
fn rate(numerator: i64, denominator: i64) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    (denominator > 0).then(|| js_round(numerator as f64 / denominator as f64 * 1000.0) / 1000.0)
}

/// The middle value; an even count takes the rounded mean of the two middles.
fn median(mut values: Vec<i64>) -> Option<i64> {
    values.sort_unstable();
    let mid = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[mid]),
        _ => {
            let sum = i128::from(values[mid - 1]) + i128::from(values[mid]);
            // Floor of (sum + 1) / 2: the JavaScript half-up rounding of the mean.
            i64::try_from((sum + 1).div_euclid(2)).ok()
        }
    }
}

fn sum(values: impl Iterator<Item = i64>) -> i64 {
    values.fold(0, i64::saturating_add)
}

/// The improve loop's totals over the namespaces a driver may use (all for `*`).
pub fn attempt_sums(runs: &[NamespaceRuns], namespaces: &Axis) -> AttemptSums {
    let mine = || runs.iter().filter(|r| namespaces.allows(&r.namespace));
    AttemptSums {
        kept: sum(mine().map(|r| r.kept)),
        reverted: sum(mine().map(|r| r.reverts)),
    }
}

/// The record of `actor` from every outcome row and job group (rows of other actors are
/// ignored). `attempts` is `Some` for drivers only.
pub fn agent_record(
    actor: &str,
    outcomes: &[OutcomeRow],
    jobs: &[ClaimedJobCount],
    attempts: Option<AttemptSums>,
) -> AgentRecord {
    let mine: Vec<(&OutcomeRow, VerifiedFields)> = outcomes
        .iter()
        .filter(|o| o.agent == actor)
        .map(|o| (o, VerifiedFields::parse(&o.verified)))
        .collect();
    let jobs_in = |status: JobStatus| {
        sum(jobs
            .iter()
            .filter(|j| j.claimed_by == actor && j.status == status)
            .map(|j| j.n))
    };
    let pr_verified = || mine.iter().filter(|(_, v)| v.prs_opened);
    let prs_opened = sum(pr_verified().map(|(o, _)| o.prs_opened.unwrap_or(0)));
    let prs_merged = sum(pr_verified()
        .filter(|(_, v)| v.prs_merged)
        .map(|(o, _)| o.prs_merged.unwrap_or(0)));
    let ci: Vec<i64> = mine
        .iter()
        .filter(|(_, v)| v.ci_green)
        .filter_map(|(o, _)| o.ci_green)
        .collect();
    let ci_checked = i64::try_from(ci.len()).unwrap_or(i64::MAX);
    let ci_green = i64::try_from(ci.iter().filter(|g| **g == 1).count()).unwrap_or(i64::MAX);
    AgentRecord {
        actor: actor.to_owned(),
        jobs_done: jobs_in(JobStatus::Done),
        jobs_failed: jobs_in(JobStatus::Failed),
        jobs_blocked: jobs_in(JobStatus::Blocked),
        gates_hit: sum(mine.iter().map(|(o, _)| o.blocked_count)),
        resumed: sum(mine.iter().map(|(o, _)| o.resumed_count)),
        prs_opened,
        prs_merged,
        pr_merge_rate: rate(prs_merged, prs_opened),
        ci_checked,
        ci_green_rate: rate(ci_green, ci_checked),
        median_duration_minutes: median(
            mine.iter()
                .filter_map(|(o, _)| o.duration_minutes)
                .collect(),
        ),
        attempts_kept: attempts.map(|a| a.kept),
        attempts_reverted: attempts.map(|a| a.reverted),
    }
}

/// The claim's track-record bar: a refusal naming the bar and the verified count, or
/// `None` when the record meets it.
pub fn min_record_refusal(bar_prs_merged: u64, record: &AgentRecord) -> Option<String> {
    let has = u64::try_from(record.prs_merged).unwrap_or(0);
    (has < bar_prs_merged).then(|| {
        let plural = if bar_prs_merged == 1 { "" } else { "s" };
        format!(
            "this job asks for a driver with at least {bar_prs_merged} merged pull request{plural} on its record, and this one has {} verified.",
            record.prs_merged
        )
    })
}

#[cfg(test)]
mod tests;
