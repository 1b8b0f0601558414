//! The skill lifecycle (reference 9): candidate → live → retired, moved by evaluation
//! evidence at one version and one probe set.
//!
//! Evidence is the evaluations at the skill's current version, ordered by `evaluated_at`
//! (rows with equal stamps keep the order given, so pass them in insertion order); among
//! those, only rows whose `probe_set_version` equals the newest row's count, because deltas
//! against different probe sets are not comparable. An accepted edit bumps the version and so
//! costs the skill its evidence.
//!
//! Promotion takes any two positive verdicts in that evidence; retirement takes the two most
//! recent both non-positive. A live skill alternating positive and neutral is still helping.

use std::fmt;

use crate::skills::{SkillStatus, Verdict};
use crate::time::Timestamp;

/// The fewest evaluations that can move a status, in either direction.
pub const MIN_EVALUATIONS: usize = 2;

/// One `skill_evaluations` row.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The skill version evaluated.
    pub version: i64,
    /// The probe set the deltas were measured against.
    pub probe_set_version: String,
    /// With-skill minus without-skill.
    pub delta: f64,
    /// The verdict stored with the row.
    pub verdict: Verdict,
    /// When the row was written.
    pub evaluated_at: Timestamp,
}

/// What the evidence says about a skill's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Retired is permanent.
    StaysRetired,
    /// Fewer than two evaluations at the current version.
    TooFewAtVersion {
        /// The version.
        version: i64,
        /// How many there are.
        count: usize,
    },
    /// Fewer than two evaluations against the newest probe set.
    TooFewAtProbeSet {
        /// The version.
        version: i64,
        /// The newest probe set.
        probe_set: String,
        /// How many there are.
        count: usize,
    },
    /// A candidate without two positive verdicts.
    NotEnoughPositives {
        /// How many positives.
        positives: usize,
        /// Out of how many comparable evaluations.
        of: usize,
    },
    /// A live skill whose two most recent verdicts are not both non-positive.
    StillHelping,
    /// Candidate → live.
    Promote {
        /// How many positives.
        positives: usize,
    },
    /// Live → retired.
    Retire {
        /// The two most recent verdicts, oldest first.
        recent: [Verdict; 2],
    },
}

impl Transition {
    /// The status after this transition, from `current`.
    pub fn next(&self, current: SkillStatus) -> SkillStatus {
        match self {
            Transition::Promote { .. } => SkillStatus::Live,
            Transition::Retire { .. } => SkillStatus::Retired,
            _ => current,
        }
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transition::StaysRetired => {
                f.write_str("a retired skill stays retired; its record is kept as evidence about what did not work")
            }
            Transition::TooFewAtVersion { version, count } => write!(
                f,
                "version {version} has {count} evaluation(s) and a status change needs {MIN_EVALUATIONS}"
            ),
            Transition::TooFewAtProbeSet { version, probe_set, count } => write!(
                f,
                "version {version} has {count} evaluation(s) against probe set {probe_set}; deltas from different probe sets are not comparable"
            ),
            Transition::NotEnoughPositives { positives, of } => {
                write!(f, "{positives} positive evaluation(s) of {of}; promotion needs {MIN_EVALUATIONS}")
            }
            Transition::StillHelping => {
                write!(f, "the most recent evaluations are not {MIN_EVALUATIONS} consecutive non-positive ones")
            }
            Transition::Promote { positives } => write!(f, "promoted to live on {positives} positive evaluations"),
            Transition::Retire { recent } => {
                write!(f, "retired on {MIN_EVALUATIONS} consecutive non-positive evaluations ({}, {})", recent[0], recent[1])
            }
        }
    }
}

/// What the evaluations say about a skill at `version` whose status is `current`.
pub fn transition(current: SkillStatus, version: i64, evaluations: &[Evaluation]) -> Transition {
    if current == SkillStatus::Retired {
        return Transition::StaysRetired;
    }
    let mut at_version: Vec<&Evaluation> = evaluations
        .iter()
        .filter(|e| e.version == version)
        .collect();
    at_version.sort_by_key(|e| e.evaluated_at);
    let Some(newest) = at_version.last() else {
        return Transition::TooFewAtVersion { version, count: 0 };
    };
    if at_version.len() < MIN_EVALUATIONS {
        return Transition::TooFewAtVersion {
            version,
            count: at_version.len(),
        };
    }
    let probe_set = newest.probe_set_version.clone();
    let comparable: Vec<Verdict> = at_version
        .iter()
        .filter(|e| e.probe_set_version == probe_set)
        .map(|e| e.verdict)
        .collect();
    if comparable.len() < MIN_EVALUATIONS {
        return Transition::TooFewAtProbeSet {
            version,
            probe_set,
            count: comparable.len(),
        };
    }
    match current {
        SkillStatus::Candidate => {
            let positives = comparable
                .iter()
                .filter(|v| **v == Verdict::Positive)
                .count();
            if positives >= MIN_EVALUATIONS {
                Transition::Promote { positives }
            } else {
                Transition::NotEnoughPositives {
                    positives,
                    of: comparable.len(),
                }
            }
        }
        _ => match comparable.last_chunk::<MIN_EVALUATIONS>() {
            Some(&[a, b]) if a != Verdict::Positive && b != Verdict::Positive => {
                Transition::Retire { recent: [a, b] }
            }
            _ => Transition::StillHelping,
        },
    }
}

/// The status the evaluations give a skill at `version` whose status is `current`.
pub fn next_status(current: SkillStatus, version: i64, evaluations: &[Evaluation]) -> SkillStatus {
    transition(current, version, evaluations).next(current)
}

#[cfg(test)]
mod tests;
