//! Merge proposals (reference 9): two live skills whose triggers overlap and whose bodies
//! barely differ are near-duplicates, proposed to a human for merging.
//!
//! Deliberately crude word overlap: the output is a proposal a human reviews, never an
//! automatic merge.

use std::collections::BTreeSet;

use crate::skills::SkillStatus;

/// Below this share of differing lines two bodies are near-duplicates.
pub const MERGE_DIFFERENCE_THRESHOLD: f64 = 0.1;
/// At or above this share of shared trigger words (of the smaller set) triggers overlap.
pub const TRIGGER_OVERLAP_THRESHOLD: f64 = 0.5;

/// Words too common to say anything about a trigger.
pub const STOP_WORDS: [&str; 17] = [
    "a", "an", "the", "is", "are", "of", "to", "in", "on", "and", "or", "for", "when", "with",
    "that", "this", "it",
];

/// A trigger's words: lower-cased, split on anything but `a-z0-9`, longer than two characters,
/// stop words removed.
pub fn trigger_words(trigger: &str) -> BTreeSet<String> {
    trigger
        .to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| w.len() > 2 && !STOP_WORDS.contains(w))
        .map(str::to_owned)
        .collect()
}

/// Whether two triggers overlap: shared words ÷ the smaller set ≥ 0.5. An empty set overlaps
/// nothing.
pub fn triggers_overlap(a: &str, b: &str) -> bool {
    let (left, right) = (trigger_words(a), trigger_words(b));
    let smaller = left.len().min(right.len());
    if smaller == 0 {
        return false;
    }
    let shared = left.intersection(&right).count();
    shared as f64 / smaller as f64 >= TRIGGER_OVERLAP_THRESHOLD
}

/// The share of lines that differ: `(L − same) / L`, with `L` the longer line count and
/// `same` the left body's (trimmed) lines present anywhere in the right body.
pub fn body_difference(a: &str, b: &str) -> f64 {
    let left: Vec<&str> = a.split('\n').map(str::trim).collect();
    let right: BTreeSet<&str> = b.split('\n').map(str::trim).collect();
    let longer = left.len().max(b.split('\n').count());
    let same = left.iter().filter(|l| right.contains(*l)).count();
    // `same` can exceed `longer` only by repeated left lines; clamp so the share stays in [0, 1].
    longer.saturating_sub(same) as f64 / longer as f64
}

/// One side of a merge comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeCandidate<'a> {
    /// The skill's status.
    pub status: SkillStatus,
    /// Its declared trigger condition.
    pub trigger: &'a str,
    /// Its body.
    pub body: &'a str,
}

/// Whether to propose merging two skills.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MergeDecision {
    /// Propose the merge; the bodies differ by this share.
    Propose {
        /// The body difference.
        difference: f64,
    },
    /// Only two live skills are merged.
    NotBothLive,
    /// The triggers fire on different work.
    TriggersDisjoint,
    /// The bodies say different things.
    BodiesDiffer {
        /// The body difference.
        difference: f64,
    },
}

/// Decides a merge proposal: both live, triggers overlapping, bodies differing by under 10%.
pub fn merge_decision(a: MergeCandidate<'_>, b: MergeCandidate<'_>) -> MergeDecision {
    if a.status != SkillStatus::Live || b.status != SkillStatus::Live {
        return MergeDecision::NotBothLive;
    }
    if !triggers_overlap(a.trigger, b.trigger) {
        return MergeDecision::TriggersDisjoint;
    }
    let difference = body_difference(a.body, b.body);
    if difference < MERGE_DIFFERENCE_THRESHOLD {
        MergeDecision::Propose { difference }
    } else {
        MergeDecision::BodiesDiffer { difference }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_words_drop_short_and_stop_words() {
        let words = trigger_words("When the D1 migration-fails, re-run it: CI/CD on Ünïcode");
        let want: BTreeSet<String> = ["migration", "fails", "run", "code"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(words, want);
    }

    #[test]
    fn overlap_is_measured_against_the_smaller_set() {
        let table = [
            (
                "flaky test retry",
                "retry a flaky test in CI with backoff and jitter",
                true,
            ),
            ("flaky test retry", "retry deploy rollback", false),
            ("flaky test", "test deploy", true),
            ("the and of", "the and of", false),
            ("", "anything here", false),
        ];
        for (a, b, want) in table {
            assert_eq!(triggers_overlap(a, b), want, "{a:?} / {b:?}");
            assert_eq!(triggers_overlap(b, a), want, "symmetric: {a:?} / {b:?}");
        }
    }

    #[test]
    fn body_difference_counts_left_lines_found_on_the_right() {
        let ten: Vec<String> = (0..10).map(|i| format!("step {i}")).collect();
        let a = ten.join("\n");
        assert_eq!(body_difference(&a, &a), 0.0);
        let mut changed = ten.clone();
        changed[3] = "  step three, reworded".into();
        assert!((body_difference(&a, &changed.join("\n")) - 0.1).abs() < 1e-12);
        let indented: Vec<String> = ten.iter().map(|l| format!("   {l} ")).collect();
        assert_eq!(
            body_difference(&a, &indented.join("\n")),
            0.0,
            "lines are compared trimmed"
        );
        let longer = format!("{a}\nstep 10\nstep 11");
        assert!((body_difference(&a, &longer) - 2.0 / 12.0).abs() < 1e-12);
        assert_eq!(body_difference("x\nx\nx", "x"), 0.0);
    }

    #[test]
    fn decision_table() {
        let body: String = (0..20).map(|i| format!("step {i}\n")).collect();
        let near = body.replacen("step 7", "step seven", 1);
        let far = body.replace("step 1", "other 1");
        let live = |trigger, body| MergeCandidate {
            status: SkillStatus::Live,
            trigger,
            body,
        };
        let table = [
            (
                live("flaky test retry", &body),
                live("retry flaky tests", &near),
                "propose",
            ),
            (
                MergeCandidate {
                    status: SkillStatus::Candidate,
                    trigger: "flaky test retry",
                    body: &body,
                },
                live("flaky test retry", &body),
                "not live",
            ),
            (
                live("flaky test retry", &body),
                live("deploy rollback", &body),
                "disjoint",
            ),
            (
                live("flaky test retry", &body),
                live("flaky test retry", &far),
                "differ",
            ),
        ];
        for (a, b, want) in table {
            let got = match merge_decision(a, b) {
                MergeDecision::Propose { .. } => "propose",
                MergeDecision::NotBothLive => "not live",
                MergeDecision::TriggersDisjoint => "disjoint",
                MergeDecision::BodiesDiffer { .. } => "differ",
            };
            assert_eq!(got, want, "{a:?} / {b:?}");
        }
    }
}
