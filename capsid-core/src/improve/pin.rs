//! Pinning a namespace's Anchors block (reference 8.3): what `improve_run pin` (and
//! `capsid improve pin`) stores at `improve:anchor:<ns>`, decided from `improve/scores.md`
//! and the pin it replaces, and how a stored pin stands against the document today.
//!
//! A document with problems is never pinned, and the loop never pins on its own: a pin is a
//! human saying "these anchors are the floor".

use crate::improve::anchors::anchors_checksum;
use crate::improve::scores::{ScoresProblem, parse_scores};

/// What pinning would store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The sha256 hex of the Anchors block: the value to store.
    pub checksum: String,
    /// The pin it replaces (trimmed, lower-cased; `None` when there was none).
    pub previous: Option<String>,
    /// How many anchors the pinned block declares.
    pub anchors: usize,
}

impl Pin {
    /// Whether the stored pin already equals the checksum.
    pub fn unchanged(&self) -> bool {
        self.previous.as_deref() == Some(self.checksum.as_str())
    }
}

/// Why a namespace's Anchors block cannot be pinned; nothing is stored.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PinRefusal {
    /// There is no scores document to pin.
    #[error(
        "{namespace}/improve/scores.md does not exist: write it (an Anchors and a Secondary section) before pinning"
    )]
    NoScores {
        /// The namespace.
        namespace: String,
    },
    /// The scores document has problems; each is named.
    #[error("{namespace}/improve/scores.md does not parse, so nothing was pinned: {}", join(.problems))]
    Problems {
        /// The namespace.
        namespace: String,
        /// Every problem found.
        problems: Vec<ScoresProblem>,
    },
}

impl PinRefusal {
    /// The problems, one message each (empty for a missing document).
    pub fn problems(&self) -> Vec<String> {
        match self {
            PinRefusal::NoScores { .. } => Vec::new(),
            PinRefusal::Problems { problems, .. } => {
                problems.iter().map(ToString::to_string).collect()
            }
        }
    }
}

fn join(problems: &[ScoresProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A stored pin as compared: trimmed and lower-cased, empty counting as none (as
/// `verify_anchor_pin` reads it).
fn normalised(pin: Option<&str>) -> Option<String> {
    pin.map(|p| p.trim().to_lowercase())
        .filter(|p| !p.is_empty())
}

/// What pinning `scores_md` (the body of `<namespace>/improve/scores.md`, `None` when it does
/// not exist) over the stored pin `previous` would store, or why it is refused.
pub fn plan_pin(
    namespace: &str,
    scores_md: Option<&str>,
    previous: Option<&str>,
) -> Result<Pin, PinRefusal> {
    let Some(text) = scores_md else {
        return Err(PinRefusal::NoScores {
            namespace: namespace.to_owned(),
        });
    };
    let doc = parse_scores(text);
    if !doc.problems.is_empty() {
        return Err(PinRefusal::Problems {
            namespace: namespace.to_owned(),
            problems: doc.problems,
        });
    }
    Ok(Pin {
        checksum: anchors_checksum(text),
        previous: normalised(previous),
        anchors: doc.anchors.len(),
    })
}

/// How a namespace's pin stands, as `improve_status` reports it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct PinState {
    /// Whether a pin is stored.
    pub pinned: bool,
    /// Whether the pin equals the current Anchors checksum; `None` without a scores document.
    pub matches: Option<bool>,
    /// The stored pin (normalised).
    pub checksum: Option<String>,
    /// The current Anchors checksum; `None` without a scores document.
    pub current: Option<String>,
}

/// The pin `stored` against the scores document `scores_md` (`None`: it does not exist).
pub fn pin_state(scores_md: Option<&str>, stored: Option<&str>) -> PinState {
    let checksum = normalised(stored);
    let current = scores_md.map(anchors_checksum);
    PinState {
        pinned: checksum.is_some(),
        matches: current.as_ref().map(|c| checksum.as_ref() == Some(c)),
        checksum,
        current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::improve::verify_anchor_pin;

    const GOOD: &str = "# Scores\n\n## Anchors\n- tests_pass: required\n- holdout_pass_rate: min 0.5\n\n## Secondary\n- bundle_kb: minimize weight 1\n";

    #[test]
    fn a_missing_document_is_refused() {
        let refused = plan_pin("capsid", None, None).expect_err("refused");
        assert_eq!(
            refused,
            PinRefusal::NoScores {
                namespace: "capsid".into()
            }
        );
        assert!(
            refused.to_string().contains("capsid/improve/scores.md"),
            "{refused}"
        );
        assert!(refused.problems().is_empty());
    }

    #[test]
    fn a_document_with_problems_is_refused_naming_each() {
        let bad = "## Anchors\n- tests_pass: min\n- what is this\n";
        let refused = plan_pin("capsid", Some(bad), Some("ab")).expect_err("refused");
        let problems = refused.problems();
        assert_eq!(problems.len(), 4, "{problems:?}");
        let text = refused.to_string();
        for p in &problems {
            assert!(text.contains(p.as_str()), "{text} names {p}");
        }
        assert!(text.contains("declares min with no bound"), "{text}");
        assert!(text.contains("what is this"), "{text}");
        assert!(text.contains("no '## Secondary' section"), "{text}");
        assert!(text.contains("declares no anchors"), "{text}");
        let empty = "## Anchors\n\n## Secondary\n- a: maximize weight 1\n";
        assert_eq!(
            plan_pin("capsid", Some(empty), None)
                .expect_err("no anchors")
                .problems(),
            [ScoresProblem::NoAnchors.to_string()]
        );
    }

    #[test]
    fn a_good_document_pins_its_anchor_checksum_which_then_verifies() {
        let pin = plan_pin("capsid", Some(GOOD), None).expect("pinned");
        assert_eq!(pin.checksum, anchors_checksum(GOOD));
        assert_eq!(pin.previous, None);
        assert_eq!(pin.anchors, 2);
        assert!(!pin.unchanged());
        assert!(verify_anchor_pin("capsid", GOOD, Some(&pin.checksum)).is_ok());
        let state = pin_state(Some(GOOD), Some(&pin.checksum));
        assert_eq!(
            state,
            PinState {
                pinned: true,
                matches: Some(true),
                checksum: Some(pin.checksum.clone()),
                current: Some(pin.checksum.clone())
            }
        );
    }

    #[test]
    fn a_re_pin_reports_the_pin_it_replaces() {
        let old = plan_pin("capsid", Some(GOOD), None)
            .expect("first")
            .checksum;
        let edited = GOOD.replace("min 0.5", "min 0.6");
        let pin = plan_pin(
            "capsid",
            Some(&edited),
            Some(&format!(" {} ", old.to_uppercase())),
        )
        .expect("re-pinned");
        assert_eq!(pin.previous.as_deref(), Some(old.as_str()));
        assert_ne!(pin.checksum, old);
        assert!(!pin.unchanged());
        let same = plan_pin("capsid", Some(&edited), Some(&pin.checksum)).expect("again");
        assert!(same.unchanged());
        // Only the Anchors block counts: secondary weights stay tunable under a pin.
        let reweighted = edited.replace("weight 1", "weight 3");
        assert_eq!(
            plan_pin("capsid", Some(&reweighted), None)
                .expect("pinned")
                .checksum,
            pin.checksum
        );
    }

    #[test]
    fn pin_state_matches_only_the_current_block() {
        let pin = anchors_checksum(GOOD);
        let edited = GOOD.replace("min 0.5", "min 0.4");
        let state = pin_state(Some(&edited), Some(&pin));
        assert_eq!(state.matches, Some(false));
        assert!(state.pinned);
        assert_eq!(state.current, Some(anchors_checksum(&edited)));
        assert_eq!(pin_state(None, Some(&pin)).matches, None);
        let unpinned = pin_state(Some(GOOD), Some("  "));
        assert_eq!((unpinned.pinned, unpinned.matches), (false, Some(false)));
        assert_eq!(pin_state(None, None).checksum, None);
    }
}
