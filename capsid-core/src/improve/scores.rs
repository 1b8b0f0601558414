//! `improve/scores.md` (reference 8.3): parsing its Anchors and Secondary sections into specs,
//! the problems that refuse a run, and the check of the human-pinned anchor checksum.
//!
//! The Anchors section is read from exactly the block that [`anchors_block`] hashes, so the
//! anchors the loop enforces are the anchors the pin covers.

use std::fmt;
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use crate::improve::anchors::{anchors_block, anchors_checksum};
use crate::improve::keys::anchor_key;

/// What an anchor demands of its metric.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "kind", content = "bound", rename_all = "lowercase")]
pub enum AnchorRule {
    /// The value must be greater than zero.
    Required,
    /// The value must be at least the bound.
    Min(f64),
    /// The value must be at most the bound.
    Max(f64),
}

/// One `## Anchors` line: `- metric: required` | `- metric: min <n>` | `- metric: max <n>`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AnchorSpec {
    /// The metric name, as written.
    pub metric: String,
    /// What the metric must satisfy.
    pub rule: AnchorRule,
}

/// Which way a secondary metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Higher is better.
    Maximize,
    /// Lower is better.
    Minimize,
}

/// One `## Secondary` line: `- metric: maximize|minimize weight <n> [stub]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SecondarySpec {
    /// The metric name, as written.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// The metric's weight in the secondary score.
    pub weight: f64,
    /// Declared but not wired: listed and reported, excluded from every comparison.
    pub stub: bool,
}

/// What is wrong with a scores document. Any problem refuses the run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScoresProblem {
    /// No `## Anchors` heading.
    #[error("no '## Anchors' section: the loop has no floor and cannot run")]
    NoAnchorsSection,
    /// No `## Secondary` heading.
    #[error("no '## Secondary' section: the loop has nothing to optimise")]
    NoSecondarySection,
    /// A list line in the Anchors section that is not `- metric: required|min <n>|max <n>`.
    #[error("anchor line not understood: {line}")]
    AnchorLine {
        /// The line, trimmed.
        line: String,
    },
    /// `min` or `max` with no number after it.
    #[error("anchor '{metric}' declares {kind} with no bound: {line}")]
    BoundMissing {
        /// The metric.
        metric: String,
        /// `min` or `max`.
        kind: String,
        /// The line, trimmed.
        line: String,
    },
    /// A list line in the Secondary section that is not `- metric: <direction> weight <n> [stub]`.
    #[error("secondary line not understood: {line}")]
    SecondaryLine {
        /// The line, trimmed.
        line: String,
    },
    /// An Anchors section with no anchor in it.
    #[error("the Anchors section declares no anchors; a loop with no floor is refused")]
    NoAnchors,
}

/// A parsed scores document. Returned even with problems, so the refusal can say what is wrong.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScoresDoc {
    /// The anchors, in document order.
    pub anchors: Vec<AnchorSpec>,
    /// The secondary metrics, in document order.
    pub secondary: Vec<SecondarySpec>,
    /// Everything that refuses a run.
    pub problems: Vec<ScoresProblem>,
}

static ANCHOR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    insensitive(r"^-\s*([a-z0-9_]+)\s*:\s*(required|min|max)(?:\s+(-?[0-9]*\.?[0-9]+))?\s*$")
});
static SECONDARY_LINE: LazyLock<Regex> = LazyLock::new(|| {
    insensitive(
        r"^-\s*([a-z0-9_]+)\s*:\s*(maximize|minimize)\s+weight\s+(-?[0-9]*\.?[0-9]+)(\s+stub)?\s*$",
    )
});
static SECONDARY_HEADING: LazyLock<Regex> = LazyLock::new(|| insensitive(r"^##\s+secondary\s*$"));
static SECTION_HEADING: LazyLock<Regex> = LazyLock::new(|| insensitive(r"^##\s+"));

fn insensitive(source: &str) -> Regex {
    RegexBuilder::new(source)
        .case_insensitive(true)
        .build()
        .unwrap_or_else(|e| unreachable!("built-in pattern {source} is valid: {e}"))
}

/// A number from the document; an overflowing digit string is no number at all.
fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// The lines of a section after its heading, up to the next `## ` heading.
fn section_body<'a>(lines: &[&'a str], heading: usize) -> Vec<&'a str> {
    lines[heading + 1..]
        .iter()
        .take_while(|l| !SECTION_HEADING.is_match(l))
        .copied()
        .collect()
}

/// Parses a scores document. CRLF (and a lone CR) is normalised first.
pub fn parse_scores(text: &str) -> ScoresDoc {
    let mut doc = ScoresDoc::default();
    let anchors = anchors_block(text);
    let normalised = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = normalised.split('\n').collect();
    let secondary_at = lines
        .iter()
        .position(|l| SECONDARY_HEADING.is_match(l.trim()));

    if anchors.is_none() {
        doc.problems.push(ScoresProblem::NoAnchorsSection);
    }
    if secondary_at.is_none() {
        doc.problems.push(ScoresProblem::NoSecondarySection);
    }

    if let Some(block) = &anchors {
        for line in block
            .split('\n')
            .skip(1)
            .map(str::trim)
            .filter(|l| l.starts_with('-'))
        {
            match parse_anchor_line(line) {
                Ok(spec) => doc.anchors.push(spec),
                Err(problem) => doc.problems.push(problem),
            }
        }
    }

    if let Some(at) = secondary_at {
        for line in section_body(&lines, at)
            .into_iter()
            .map(str::trim)
            .filter(|l| l.starts_with('-'))
        {
            match parse_secondary_line(line) {
                Some(spec) => doc.secondary.push(spec),
                None => doc.problems.push(ScoresProblem::SecondaryLine {
                    line: line.to_owned(),
                }),
            }
        }
    }

    if anchors.is_some() && doc.anchors.is_empty() {
        doc.problems.push(ScoresProblem::NoAnchors);
    }
    doc
}

fn parse_anchor_line(line: &str) -> Result<AnchorSpec, ScoresProblem> {
    let not_understood = || ScoresProblem::AnchorLine {
        line: line.to_owned(),
    };
    let caps = ANCHOR_LINE.captures(line).ok_or_else(not_understood)?;
    let metric = caps[1].to_owned();
    let kind = caps[2].to_lowercase();
    let bound = match caps.get(3) {
        Some(n) => Some(finite(n.as_str()).ok_or_else(not_understood)?),
        None => None,
    };
    let rule = match (kind.as_str(), bound) {
        ("required", _) => AnchorRule::Required,
        ("min", Some(b)) => AnchorRule::Min(b),
        ("max", Some(b)) => AnchorRule::Max(b),
        _ => {
            return Err(ScoresProblem::BoundMissing {
                metric,
                kind,
                line: line.to_owned(),
            });
        }
    };
    Ok(AnchorSpec { metric, rule })
}

fn parse_secondary_line(line: &str) -> Option<SecondarySpec> {
    let caps = SECONDARY_LINE.captures(line)?;
    let direction = if caps[2].eq_ignore_ascii_case("maximize") {
        Direction::Maximize
    } else {
        Direction::Minimize
    };
    Some(SecondarySpec {
        metric: caps[1].to_owned(),
        direction,
        weight: finite(&caps[3])?,
        stub: caps.get(4).is_some(),
    })
}

/// Why a namespace's scores document refuses every run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScoresRefusal {
    /// The document has problems.
    #[error("{namespace}/improve/scores.md does not parse: {}", join(.problems))]
    Unparseable {
        /// The namespace.
        namespace: String,
        /// Every problem found.
        problems: Vec<ScoresProblem>,
    },
    /// No pin is stored. The loop never pins on first sight: that would install whatever floor
    /// the document happens to hold.
    #[error(
        "no anchor pin for {namespace}: a namespace joins the loop when a human pins its Anchors block, \
         never by the loop pinning what it finds; set {} to {current} once the Anchors section reads as intended",
        anchor_key(.namespace)
    )]
    PinMissing {
        /// The namespace.
        namespace: String,
        /// The checksum the Anchors block has now.
        current: String,
    },
    /// The Anchors block changed since a human pinned it.
    #[error(
        "anchor checksum mismatch for {namespace}: pinned {pinned}, the Anchors section now hashes to {current}; \
         nothing runs until a human re-pins"
    )]
    PinMismatch {
        /// The namespace.
        namespace: String,
        /// The pinned checksum (trimmed, lower-cased).
        pinned: String,
        /// The checksum the Anchors block has now.
        current: String,
    },
}

fn join(problems: &[ScoresProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl fmt::Display for AnchorRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnchorRule::Required => f.write_str("required"),
            AnchorRule::Min(b) => write!(f, "min {b}"),
            AnchorRule::Max(b) => write!(f, "max {b}"),
        }
    }
}

/// Whether a run may use this scores document: it parses without problems, a pin is stored
/// (`pinned`, the value of `improve:anchor:<ns>`; empty counts as missing) and it equals the
/// current Anchors checksum. Problems are reported before the pin, as the Worker does.
pub fn verify_anchor_pin(
    namespace: &str,
    scores_md: &str,
    pinned: Option<&str>,
) -> Result<ScoresDoc, ScoresRefusal> {
    let doc = parse_scores(scores_md);
    let current = anchors_checksum(scores_md);
    if !doc.problems.is_empty() {
        return Err(ScoresRefusal::Unparseable {
            namespace: namespace.to_owned(),
            problems: doc.problems,
        });
    }
    let pinned = pinned
        .map(|p| p.trim().to_lowercase())
        .filter(|p| !p.is_empty());
    match pinned {
        None => Err(ScoresRefusal::PinMissing {
            namespace: namespace.to_owned(),
            current,
        }),
        Some(pinned) if pinned != current => Err(ScoresRefusal::PinMismatch {
            namespace: namespace.to_owned(),
            pinned,
            current,
        }),
        Some(_) => Ok(doc),
    }
}

#[cfg(test)]
mod tests;
