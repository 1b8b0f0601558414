//! Keep or revert (reference 8.3): anchors must all pass on the attempt's metrics, and the
//! weighted secondary score must strictly improve over the base. The default is revert.
//!
//! Reporting nothing must never be the cheapest way to score well, so a missing anchor fails
//! and a comparison with no comparable metric reverts.

use std::collections::BTreeMap;
use std::fmt;

use crate::improve::scores::{AnchorRule, AnchorSpec, Direction, SecondarySpec};

/// Reported metric values by name; `None` is a reported null. Non-finite values count as
/// not reported.
pub type MetricMap = BTreeMap<String, Option<f64>>;

fn value(map: &MetricMap, metric: &str) -> Option<f64> {
    map.get(metric).copied().flatten().filter(|v| v.is_finite())
}

/// Why one anchor failed.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "failure", rename_all = "snake_case")]
pub enum AnchorFailure {
    /// The metric was missing or null.
    NotReported {
        /// The metric.
        metric: String,
    },
    /// A `required` anchor reported a value that is not greater than zero.
    RequiredNotPositive {
        /// The metric.
        metric: String,
        /// The reported value.
        value: f64,
    },
    /// A `min` anchor reported below its bound.
    BelowFloor {
        /// The metric.
        metric: String,
        /// The reported value.
        value: f64,
        /// The floor.
        bound: f64,
    },
    /// A `max` anchor reported above its bound.
    AboveCeiling {
        /// The metric.
        metric: String,
        /// The reported value.
        value: f64,
        /// The ceiling.
        bound: f64,
    },
}

impl fmt::Display for AnchorFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnchorFailure::NotReported { metric } => write!(f, "anchor {metric} was not reported"),
            AnchorFailure::RequiredNotPositive { metric, value } => {
                write!(f, "anchor {metric} is required and reported {value}")
            }
            AnchorFailure::BelowFloor {
                metric,
                value,
                bound,
            } => {
                write!(
                    f,
                    "anchor {metric} reported {value}, below its floor of {bound}"
                )
            }
            AnchorFailure::AboveCeiling {
                metric,
                value,
                bound,
            } => {
                write!(
                    f,
                    "anchor {metric} reported {value}, above its ceiling of {bound}"
                )
            }
        }
    }
}

/// Every anchor `values` fails, in document order. Empty means the anchors hold.
pub fn anchor_failures(anchors: &[AnchorSpec], values: &MetricMap) -> Vec<AnchorFailure> {
    let mut failures = Vec::new();
    for spec in anchors {
        let metric = spec.metric.clone();
        let Some(value) = value(values, &spec.metric) else {
            failures.push(AnchorFailure::NotReported { metric });
            continue;
        };
        match spec.rule {
            AnchorRule::Required if value <= 0.0 => {
                failures.push(AnchorFailure::RequiredNotPositive { metric, value });
            }
            AnchorRule::Min(bound) if value < bound => {
                failures.push(AnchorFailure::BelowFloor {
                    metric,
                    value,
                    bound,
                });
            }
            AnchorRule::Max(bound) if value > bound => {
                failures.push(AnchorFailure::AboveCeiling {
                    metric,
                    value,
                    bound,
                });
            }
            _ => {}
        }
    }
    failures
}

/// Anchors that got worse from `before` to `after` while perhaps still inside their bound
/// (the drift gate's "any anchor regressing versus the best record"). Metrics missing on either
/// side are skipped; a `max` anchor regresses upward, every other downward.
pub fn anchor_regressions(
    anchors: &[AnchorSpec],
    before: &MetricMap,
    after: &MetricMap,
) -> Vec<String> {
    anchors
        .iter()
        .filter_map(|spec| {
            let (a, b) = (value(before, &spec.metric)?, value(after, &spec.metric)?);
            let worse = if matches!(spec.rule, AnchorRule::Max(_)) {
                b > a
            } else {
                b < a
            };
            worse.then(|| format!("{} moved from {a} to {b}", spec.metric))
        })
        .collect()
}

/// The relative change of one metric, `(after - before) / max(|before|, 1)`, clamped to
/// `[-1, 1]` and sign-flipped for `minimize`, so positive always means better.
pub fn relative_change(direction: Direction, before: f64, after: f64) -> f64 {
    let raw = (after - before) / before.abs().max(1.0);
    let better = match direction {
        Direction::Maximize => raw,
        Direction::Minimize => -raw,
    };
    better.clamp(-1.0, 1.0)
}

/// Why a secondary metric took no part in the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exclusion {
    /// Declared a stub.
    Stub,
    /// Null or missing on both sides.
    NotReportedEitherSide,
    /// Null or missing in the base.
    NoBaseline,
    /// Null or missing in the attempt.
    NotReportedByAttempt,
}

/// One secondary metric's part in the comparison.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MetricContribution {
    /// The metric.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Its weight.
    pub weight: f64,
    /// The base value.
    pub before: Option<f64>,
    /// The attempt's value.
    pub after: Option<f64>,
    /// `weight * relative_change`, or `None` when excluded.
    pub contribution: Option<f64>,
    /// Why it was excluded, if it was.
    pub excluded: Option<Exclusion>,
}

/// The weighted secondary comparison.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    /// The sum of contributions; positive means the attempt is better.
    pub delta: f64,
    /// How many metrics had a value on both sides (stubs excluded).
    pub compared: usize,
    /// Every secondary metric, in document order.
    pub details: Vec<MetricContribution>,
}

/// Compares `before` (the base) with `after` (the attempt) over the secondary metrics.
pub fn compare(secondary: &[SecondarySpec], before: &MetricMap, after: &MetricMap) -> Comparison {
    let mut delta = 0.0;
    let mut compared = 0;
    let details = secondary
        .iter()
        .map(|spec| {
            let (a, b) = (value(before, &spec.metric), value(after, &spec.metric));
            let excluded = match (spec.stub, a, b) {
                (true, _, _) => Some(Exclusion::Stub),
                (false, None, None) => Some(Exclusion::NotReportedEitherSide),
                (false, None, Some(_)) => Some(Exclusion::NoBaseline),
                (false, Some(_), None) => Some(Exclusion::NotReportedByAttempt),
                (false, Some(_), Some(_)) => None,
            };
            let contribution = match (excluded, a, b) {
                (None, Some(a), Some(b)) => {
                    Some(spec.weight * relative_change(spec.direction, a, b))
                }
                _ => None,
            };
            if let Some(c) = contribution {
                compared += 1;
                delta += c;
            }
            MetricContribution {
                metric: spec.metric.clone(),
                direction: spec.direction,
                weight: spec.weight,
                before: a,
                after: b,
                contribution,
                excluded,
            }
        })
        .collect();
    Comparison {
        delta,
        compared,
        details,
    }
}

/// Why an attempt is reverted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RevertReason {
    /// At least one anchor failed.
    #[error("anchors failed: {}", failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    AnchorsFailed {
        /// Every failing anchor.
        failures: Vec<AnchorFailure>,
    },
    /// No secondary metric could be compared.
    #[error(
        "no secondary metric could be compared: every one was a stub or was missing on one side; \
         an attempt that proves nothing is reverted"
    )]
    NothingComparable,
    /// The weighted secondary score did not strictly improve.
    #[error(
        "secondary score moved {delta:.4} across {compared} comparable metric(s); a tie or a loss reverts"
    )]
    NoImprovement {
        /// The weighted delta.
        delta: f64,
        /// How many metrics were compared.
        compared: usize,
    },
}

/// Keep or revert.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Anchors hold and the secondary score strictly improved.
    Keep,
    /// Anything else.
    Revert(RevertReason),
}

/// The whole scoring decision, with the arithmetic that led to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// Keep or revert.
    pub verdict: Verdict,
    /// The secondary comparison (computed even when anchors fail, for the report).
    pub comparison: Comparison,
}

/// Judges an attempt: anchors checked on `after`, secondary compared from `before` to `after`.
pub fn judge(
    anchors: &[AnchorSpec],
    secondary: &[SecondarySpec],
    before: &MetricMap,
    after: &MetricMap,
) -> Judgement {
    let comparison = compare(secondary, before, after);
    let failures = anchor_failures(anchors, after);
    let verdict = if !failures.is_empty() {
        Verdict::Revert(RevertReason::AnchorsFailed { failures })
    } else if comparison.compared == 0 {
        Verdict::Revert(RevertReason::NothingComparable)
    } else if comparison.delta > 0.0 {
        Verdict::Keep
    } else {
        Verdict::Revert(RevertReason::NoImprovement {
            delta: comparison.delta,
            compared: comparison.compared,
        })
    };
    Judgement {
        verdict,
        comparison,
    }
}

#[cfg(test)]
mod tests;
