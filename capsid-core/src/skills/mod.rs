//! Skills (reference 9): statuses and verdicts, the evaluation cadence, and (in submodules)
//! the lifecycle, bounded edits, merge proposals, outcome attribution and the repository copy.
//!
//! A skill's status moves on evaluation evidence only, never on a driver's judgement of its
//! own run; every rule here is a pure function of rows.

use std::fmt;

use crate::time::{DAY_MS, Timestamp};

pub mod abstraction;
pub mod attribution;
pub mod edit_prompt;
pub mod edits;
pub mod lifecycle;
pub mod merge;
pub mod offer;
pub mod panel;
pub mod probe;
pub mod repo_copy;

pub use attribution::{Credit, RunSignal, attribute};
pub use edits::{EditError, EditOp, accept_edit, apply_edit, check_edit_bound};
pub use lifecycle::{Evaluation, Transition, next_status, transition};
pub use merge::{MergeDecision, body_difference, merge_decision, triggers_overlap};
pub use offer::{OfferSkill, skills_to_offer};

/// Where a skill is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillStatus {
    /// Registered, not yet proven. Every skill starts here.
    Candidate,
    /// Proven and offered.
    Live,
    /// Stopped helping. Permanent, and kept as a record.
    Retired,
}

impl SkillStatus {
    /// All statuses.
    pub const ALL: [SkillStatus; 3] = [
        SkillStatus::Candidate,
        SkillStatus::Live,
        SkillStatus::Retired,
    ];

    /// The stored value.
    pub fn name(self) -> &'static str {
        match self {
            SkillStatus::Candidate => "candidate",
            SkillStatus::Live => "live",
            SkillStatus::Retired => "retired",
        }
    }

    /// The status stored as exactly `value`. Anything else is refused rather than coerced: an
    /// unknown status read as `candidate` would revive a retired skill.
    pub fn parse(value: &str) -> Option<SkillStatus> {
        SkillStatus::ALL.into_iter().find(|s| s.name() == value)
    }
}

impl fmt::Display for SkillStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An evaluation's verdict, derived from its delta once, at write time, and then stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The skill helped.
    Positive,
    /// No measured difference.
    Neutral,
    /// The skill hurt.
    Negative,
}

impl Verdict {
    /// All verdicts.
    pub const ALL: [Verdict; 3] = [Verdict::Positive, Verdict::Neutral, Verdict::Negative];

    /// The verdict a delta earns: above zero positive, below zero negative, zero neutral.
    /// A delta that is not a number earns nothing: neutral.
    pub fn from_delta(delta: f64) -> Verdict {
        if delta > 0.0 {
            Verdict::Positive
        } else if delta < 0.0 {
            Verdict::Negative
        } else {
            Verdict::Neutral
        }
    }

    /// The stored value.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Positive => "positive",
            Verdict::Neutral => "neutral",
            Verdict::Negative => "negative",
        }
    }

    /// The verdict stored as exactly `value`.
    pub fn parse(value: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.name() == value)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The evaluation cadence when `skills:evaluate:cadence-days` is unset or unusable.
pub const DEFAULT_CADENCE_DAYS: u32 = 14;
/// The smallest cadence obeyed: anything lower would run the cycle on every tick.
pub const MIN_CADENCE_DAYS: f64 = 1.0;

/// The cadence a stored `skills:evaluate:cadence-days` value means: a number of at least one
/// day, floored; unset, unreadable, unparseable or below one day means the default.
pub fn cadence_days(raw: Option<&str>) -> u32 {
    raw.map(str::trim)
        .filter(|r| !r.is_empty())
        .and_then(|r| r.parse::<f64>().ok())
        .filter(|d| d.is_finite() && *d >= MIN_CADENCE_DAYS)
        .map_or(DEFAULT_CADENCE_DAYS, |d| d.floor() as u32)
}

/// Whether an evaluation cycle is due: no previous cycle, an unreadable stamp (one extra
/// cycle beats a lifecycle that silently stops), or at least `days` since the last one.
pub fn evaluation_due(last_cycle: Option<&str>, days: u32, now: Timestamp) -> bool {
    match last_cycle.and_then(Timestamp::parse) {
        None => true,
        Some(last) => now.millis_since(last) >= i64::from(days).saturating_mul(DAY_MS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_verdicts_parse_exactly() {
        for s in SkillStatus::ALL {
            assert_eq!(SkillStatus::parse(s.name()), Some(s));
        }
        for bad in ["Live", "", "archived", "retired "] {
            assert_eq!(SkillStatus::parse(bad), None, "{bad:?}");
        }
        for v in Verdict::ALL {
            assert_eq!(Verdict::parse(v.name()), Some(v));
        }
        assert_eq!(Verdict::parse("POSITIVE"), None);
    }

    #[test]
    fn verdict_follows_the_sign_of_the_delta() {
        let table = [
            (0.5, Verdict::Positive),
            (f64::MIN_POSITIVE, Verdict::Positive),
            (0.0, Verdict::Neutral),
            (-0.0, Verdict::Neutral),
            (-3.0, Verdict::Negative),
            (f64::NAN, Verdict::Neutral),
        ];
        for (delta, want) in table {
            assert_eq!(Verdict::from_delta(delta), want, "{delta}");
        }
    }

    #[test]
    fn cadence_falls_back_below_one_day() {
        let table = [
            (None, 14),
            (Some(""), 14),
            (Some("abc"), 14),
            (Some("0"), 14),
            (Some("0.5"), 14),
            (Some("-7"), 14),
            (Some("inf"), 14),
            (Some("NaN"), 14),
            (Some("1"), 1),
            (Some(" 7 "), 7),
            (Some("7.9"), 7),
            (Some("30"), 30),
        ];
        for (raw, want) in table {
            assert_eq!(cadence_days(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn a_cycle_is_due_after_the_cadence_or_without_a_readable_stamp() {
        let last =
            Timestamp::parse("2026-09-01T00:00:00Z").unwrap_or_else(|| Timestamp::from_millis(0));
        let stamp = last.to_string();
        assert!(evaluation_due(None, 14, last));
        assert!(evaluation_due(Some("yesterday"), 14, last));
        assert!(!evaluation_due(
            Some(&stamp),
            14,
            last.plus_millis(14 * DAY_MS - 1)
        ));
        assert!(evaluation_due(
            Some(&stamp),
            14,
            last.plus_millis(14 * DAY_MS)
        ));
        assert!(evaluation_due(
            Some("2026-09-01 00:00:00"),
            1,
            last.plus_millis(DAY_MS)
        ));
    }
}
