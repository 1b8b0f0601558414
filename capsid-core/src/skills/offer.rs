//! Offering (reference 9): which skills a claimed job is offered. Live skills and candidates
//! under evaluation whose namespaces admit the job and whose trigger's words the job's text
//! covers at least half of; retired skills never.

use std::cmp::Reverse;

use crate::skills::SkillStatus;
use crate::skills::merge::{TRIGGER_OVERLAP_THRESHOLD, trigger_words};

/// At most this many skills are offered with one claim.
pub const OFFERED_MAX: usize = 5;
/// At most this many failure notes ride along with each offered skill.
pub const OFFERED_FAILURES: usize = 2;

/// One skill as offering sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OfferSkill<'a> {
    /// Skill id.
    pub id: &'a str,
    /// Its status.
    pub status: SkillStatus,
    /// Its declared trigger condition.
    pub trigger: Option<&'a str>,
    /// Its stored namespaces (JSON array text; `None` means any).
    pub namespaces: Option<&'a str>,
}

/// Whether a skill's stored namespaces admit `namespace`: `None` admits every namespace; a
/// JSON array of strings admits its members; anything unreadable admits none (a corrupt
/// scope must not widen to everything).
pub fn namespaces_admit(stored: Option<&str>, namespace: &str) -> bool {
    match stored {
        None => true,
        Some(text) => serde_json::from_str::<Vec<String>>(text)
            .map(|list| list.iter().any(|n| n == namespace))
            .unwrap_or(false),
    }
}

/// How much of a trigger the job's text covers: shared words ÷ the trigger's words, or `None`
/// when the trigger has no words (an empty trigger matches nothing).
pub fn trigger_coverage(trigger: &str, job_text: &str) -> Option<f64> {
    let want = trigger_words(trigger);
    if want.is_empty() {
        return None;
    }
    let have = trigger_words(job_text);
    let shared = want.intersection(&have).count();
    Some(shared as f64 / want.len() as f64)
}

/// The ids to offer a job in `namespace` whose title and task read `job_text`: live before
/// candidate, then by coverage (highest first), then by id; at most [`OFFERED_MAX`].
pub fn skills_to_offer<'a>(
    skills: &[OfferSkill<'a>],
    namespace: &str,
    job_text: &str,
) -> Vec<&'a str> {
    let mut matched: Vec<(bool, f64, &'a str)> = skills
        .iter()
        .filter(|s| s.status != SkillStatus::Retired)
        .filter(|s| namespaces_admit(s.namespaces, namespace))
        .filter_map(|s| {
            let coverage = trigger_coverage(s.trigger?, job_text)?;
            (coverage >= TRIGGER_OVERLAP_THRESHOLD).then_some((
                s.status == SkillStatus::Live,
                coverage,
                s.id,
            ))
        })
        .collect();
    matched.sort_by(|a, b| {
        (Reverse(a.0), b.1, a.2)
            .partial_cmp(&(Reverse(b.0), a.1, b.2))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    matched
        .into_iter()
        .take(OFFERED_MAX)
        .map(|(_, _, id)| id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s<'a>(
        id: &'a str,
        status: SkillStatus,
        trigger: Option<&'a str>,
        ns: Option<&'a str>,
    ) -> OfferSkill<'a> {
        OfferSkill {
            id,
            status,
            trigger,
            namespaces: ns,
        }
    }

    #[test]
    fn namespaces_admit_any_listed_or_none_when_unreadable() {
        assert!(namespaces_admit(None, "proj"));
        assert!(namespaces_admit(Some(r#"["a","proj"]"#), "proj"));
        assert!(!namespaces_admit(Some(r#"["a"]"#), "proj"));
        assert!(!namespaces_admit(Some("[]"), "proj"));
        assert!(!namespaces_admit(Some("proj"), "proj"), "not JSON");
        assert!(!namespaces_admit(Some(r#"{"proj":1}"#), "proj"));
    }

    #[test]
    fn coverage_is_measured_against_the_trigger() {
        assert_eq!(
            trigger_coverage("flaky test retry", "Retry the flaky login test"),
            Some(1.0)
        );
        assert_eq!(
            trigger_coverage("flaky test retry backoff", "a flaky deploy test"),
            Some(0.5)
        );
        assert_eq!(trigger_coverage("the and of", "the and of"), None);
        assert_eq!(trigger_coverage("", "anything"), None);
    }

    #[test]
    fn offer_table() {
        use SkillStatus::*;
        let skills = [
            s("cand", Candidate, Some("flaky test retry"), None),
            s("live-half", Live, Some("flaky test deploy rollback"), None),
            s("live-full", Live, Some("flaky retry"), Some(r#"["proj"]"#)),
            s("retired", Retired, Some("flaky test retry"), None),
            s(
                "elsewhere",
                Live,
                Some("flaky test retry"),
                Some(r#"["other"]"#),
            ),
            s("no-trigger", Live, None, None),
            s("unrelated", Live, Some("database migration lockfile"), None),
            s(
                "corrupt-ns",
                Live,
                Some("flaky test retry"),
                Some("not json"),
            ),
        ];
        assert_eq!(
            skills_to_offer(&skills, "proj", "Fix: retry the flaky test"),
            ["live-full", "live-half", "cand"]
        );
        assert_eq!(
            skills_to_offer(&skills, "other", "retry the flaky test"),
            ["elsewhere", "live-half", "cand"]
        );
        assert!(skills_to_offer(&skills, "proj", "write the changelog").is_empty());
    }

    #[test]
    fn offers_are_bounded() {
        let ids: Vec<String> = (0..12).map(|i| format!("sk{i:02}")).collect();
        let skills: Vec<OfferSkill<'_>> = ids
            .iter()
            .map(|id| s(id, SkillStatus::Live, Some("flaky test"), None))
            .collect();
        let offered = skills_to_offer(&skills, "proj", "flaky test");
        assert_eq!(offered.len(), OFFERED_MAX);
        assert_eq!(offered[0], "sk00", "ties by id");
    }
}
