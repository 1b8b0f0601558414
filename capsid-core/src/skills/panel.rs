//! What the skills panel and `improve_status` say of skills (reference 9): the counts by
//! status, the offered-to-used rate over job outcomes, and the merge proposals among live
//! skills, each pair named once and in one order.

use std::collections::BTreeSet;

use crate::skills::SkillStatus;
use crate::skills::merge::{MergeCandidate, MergeDecision, merge_decision};

/// Skills per status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct StatusCounts {
    /// Candidates.
    pub candidate: u64,
    /// Live.
    pub live: u64,
    /// Retired.
    pub retired: u64,
}

impl StatusCounts {
    /// Counts `statuses`; a stored status that is not one of the three is not counted.
    pub fn of<'a>(statuses: impl IntoIterator<Item = &'a str>) -> StatusCounts {
        let mut out = StatusCounts::default();
        for s in statuses {
            match SkillStatus::parse(s) {
                Some(SkillStatus::Candidate) => out.candidate += 1,
                Some(SkillStatus::Live) => out.live += 1,
                Some(SkillStatus::Retired) => out.retired += 1,
                None => {}
            }
        }
        out
    }
}

/// How job outcomes used the skills they were offered.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct OfferRate {
    /// Outcomes whose claim offered at least one skill.
    pub outcomes: u64,
    /// Skill ids offered over those outcomes.
    pub offered: u64,
    /// Of those, the ids the driver reported using.
    pub used: u64,
    /// `used ÷ offered`; `None` when nothing was offered.
    pub rate: Option<f64>,
}

/// The JSON array of ids in `text`, or nothing (a value that is not one counts nothing).
fn ids(text: Option<&str>) -> BTreeSet<String> {
    text.and_then(|t| serde_json::from_str::<Vec<String>>(t).ok())
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The offered-to-used rate over `(offered, used)` column pairs. An id counts as used only if
/// it was also offered (the jobs tool refuses any other, so this guards restored rows), and an
/// outcome with an empty offer list is not an outcome that was offered anything.
pub fn offer_rate<'a>(rows: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> OfferRate {
    let mut out = OfferRate::default();
    for (offered, used) in rows {
        let offered = ids(Some(offered));
        if offered.is_empty() {
            continue;
        }
        let used = ids(used);
        out.outcomes += 1;
        out.offered += offered.len() as u64;
        out.used += used.intersection(&offered).count() as u64;
    }
    out.rate = (out.offered > 0).then(|| out.used as f64 / out.offered as f64);
    out
}

/// One skill as the merge check reads it.
#[derive(Clone, Copy, Debug)]
pub struct MergeInput<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its status.
    pub status: SkillStatus,
    /// Its trigger condition.
    pub trigger: &'a str,
    /// Its instruction body.
    pub body: &'a str,
}

/// A proposal to merge two live skills, for a human.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct MergeProposal {
    /// `<a>+<b>`, the ids in order: the name `accept_merge` and `reject_merge` take.
    pub pair: String,
    /// The first id.
    pub a: String,
    /// The second id.
    pub b: String,
    /// The share of lines that differ.
    pub difference: f64,
}

/// The name of the pair `a`, `b`, whichever order they are given in.
pub fn pair_name(a: &str, b: &str) -> String {
    if a <= b {
        format!("{a}+{b}")
    } else {
        format!("{b}+{a}")
    }
}

fn side<'a>(s: &MergeInput<'a>) -> MergeCandidate<'a> {
    MergeCandidate {
        status: s.status,
        trigger: s.trigger,
        body: s.body,
    }
}

/// Every pair of `skills` that [`merge_decision`] proposes and `decided` does not name (a
/// pair a human already rejected is not proposed again), in id order.
pub fn merge_proposals(
    skills: &[MergeInput<'_>],
    decided: &BTreeSet<String>,
) -> Vec<MergeProposal> {
    let mut sorted: Vec<&MergeInput<'_>> = skills.iter().collect();
    sorted.sort_by(|x, y| x.id.cmp(y.id));
    sorted.dedup_by(|x, y| x.id == y.id);
    let mut out = Vec::new();
    for (i, a) in sorted.iter().enumerate() {
        for b in &sorted[i + 1..] {
            let pair = pair_name(a.id, b.id);
            if decided.contains(&pair) {
                continue;
            }
            if let MergeDecision::Propose { difference } = merge_decision(side(a), side(b)) {
                out.push(MergeProposal {
                    pair,
                    a: a.id.to_owned(),
                    b: b.id.to_owned(),
                    difference,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_ignore_unknown_statuses() {
        let c = StatusCounts::of(["live", "candidate", "live", "retired", "Live", ""]);
        assert_eq!(
            c,
            StatusCounts {
                candidate: 1,
                live: 2,
                retired: 1
            }
        );
    }

    #[test]
    fn the_rate_counts_used_ids_that_were_offered() {
        let rows = [
            (r#"["a","b"]"#, Some(r#"["a"]"#)),
            (r#"["c"]"#, None),
            ("[]", Some(r#"["x"]"#)),
            ("not json", Some(r#"["a"]"#)),
            (r#"["d"]"#, Some(r#"["d","zz"]"#)),
        ];
        let r = offer_rate(rows.iter().map(|(o, u)| (*o, *u)));
        assert_eq!((r.outcomes, r.offered, r.used), (3, 4, 2));
        assert_eq!(r.rate, Some(0.5));
        let none = offer_rate(std::iter::empty());
        assert_eq!(none.rate, None);
        assert_eq!(none.outcomes, 0);
    }

    #[test]
    fn proposals_pair_live_near_duplicates_once_and_skip_decided_pairs() {
        let body: String = (0..20).map(|i| format!("step {i}\n")).collect();
        let near = body.replacen("step 3", "step three", 1);
        let skill = |id, status, trigger, body| MergeInput {
            id,
            status,
            trigger,
            body,
        };
        let skills = [
            skill("s2", SkillStatus::Live, "retry flaky tests", &near),
            skill("s1", SkillStatus::Live, "flaky test retry", &body),
            skill("s3", SkillStatus::Candidate, "flaky test retry", &body),
            skill("s4", SkillStatus::Live, "deploy rollback", &body),
        ];
        let got = merge_proposals(&skills, &BTreeSet::new());
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].pair.as_str(), got[0].a.as_str()), ("s1+s2", "s1"));
        // One of 21 lines (the trailing newline makes an empty last line) differs.
        assert!(
            (got[0].difference - 1.0 / 21.0).abs() < 1e-9,
            "{}",
            got[0].difference
        );
        let decided: BTreeSet<String> = [pair_name("s2", "s1")].into_iter().collect();
        assert!(merge_proposals(&skills, &decided).is_empty());
    }
}
