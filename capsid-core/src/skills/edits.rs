//! Bounded skill edits (reference 9): operations on numbered lines of the current body, at
//! most a fifth of its distinct lines per edit, accepted only on a strictly better delta.
//!
//! An optimizer that could rewrite a skill wholesale would be replacing it, and the evidence
//! accumulated about it would describe a document that no longer exists.
//!
//! Line numbers are 1-based and always refer to the body the edit starts from, so operations
//! do not shift one another. `add` inserts its text after the named line; several operations
//! may name one line (it counts once), but at most one of them may delete or replace it. Text
//! is a single line: a newline in it would let one touched line grow into many.

use std::collections::{BTreeMap, BTreeSet};

/// One edit operation, as the optimizer sends it.
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum EditOp {
    /// Insert `text` as a new line after `line`.
    Add {
        /// The 1-based line to insert after.
        line: usize,
        /// The new line.
        text: String,
    },
    /// Remove `line`.
    Delete {
        /// The 1-based line to remove.
        line: usize,
    },
    /// Replace `line` with `text`.
    Replace {
        /// The 1-based line to replace.
        line: usize,
        /// The replacement.
        text: String,
    },
}

impl EditOp {
    /// The line the operation names.
    pub fn line(&self) -> usize {
        match self {
            EditOp::Add { line, .. } | EditOp::Delete { line } | EditOp::Replace { line, .. } => {
                *line
            }
        }
    }
}

/// The share of a body's lines one edit may touch.
pub const MAX_EDIT_FRACTION: f64 = 0.2;

/// Lines an edit of a `line_count`-line body may touch: `max(1, floor(lines × 0.2))`.
pub fn allowed_lines(line_count: usize) -> usize {
    // floor(n × 0.2) computed exactly in integers.
    (line_count / 5).max(1)
}

/// Why an edit is refused before anything is measured.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// No operations.
    #[error("an edit with no operations changes nothing and is not evaluated")]
    NoOps,
    /// Operations naming lines outside the body.
    #[error("operation(s) name line(s) outside the {line_count}-line body: {}", join(.lines))]
    OutOfRange {
        /// The offending line numbers, in operation order.
        lines: Vec<usize>,
        /// The body's line count.
        line_count: usize,
    },
    /// More distinct lines than the bound allows.
    #[error(
        "this edit touches {touched} of {line_count} lines and the bound is {allowed} (20 percent); rewriting a skill wholesale is replacing it, not editing it"
    )]
    OverBound {
        /// Distinct lines touched.
        touched: usize,
        /// Lines allowed.
        allowed: usize,
        /// The body's line count.
        line_count: usize,
    },
    /// Two operations both delete or replace the same line.
    #[error("line {line} is deleted or replaced more than once in one edit")]
    ConflictingOps {
        /// The line.
        line: usize,
    },
    /// An operation's text spans several lines.
    #[error("the text for line {line} contains a line break; each operation writes one line")]
    MultilineText {
        /// The line.
        line: usize,
    },
}

fn join(lines: &[usize]) -> String {
    lines
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an edit within bounds touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EditBound {
    /// Distinct lines touched.
    pub touched: usize,
    /// Lines allowed.
    pub allowed: usize,
}

/// Checks an edit against `body`: operations present, every line in range, the distinct lines
/// touched within the bound; then one line per text and no line deleted or replaced twice.
pub fn check_edit_bound(body: &str, ops: &[EditOp]) -> Result<EditBound, EditError> {
    let line_count = body.split('\n').count();
    if ops.is_empty() {
        return Err(EditError::NoOps);
    }
    let out_of_range: Vec<usize> = ops
        .iter()
        .map(EditOp::line)
        .filter(|l| *l < 1 || *l > line_count)
        .collect();
    if !out_of_range.is_empty() {
        return Err(EditError::OutOfRange {
            lines: out_of_range,
            line_count,
        });
    }
    let touched = ops.iter().map(EditOp::line).collect::<BTreeSet<_>>().len();
    let allowed = allowed_lines(line_count);
    if touched > allowed {
        return Err(EditError::OverBound {
            touched,
            allowed,
            line_count,
        });
    }
    let mut rewritten = BTreeSet::new();
    for op in ops {
        if let EditOp::Add { line, text } | EditOp::Replace { line, text } = op
            && text.contains(['\n', '\r'])
        {
            return Err(EditError::MultilineText { line: *line });
        }
        let rewrites = !matches!(op, EditOp::Add { .. });
        if rewrites && !rewritten.insert(op.line()) {
            return Err(EditError::ConflictingOps { line: op.line() });
        }
    }
    Ok(EditBound { touched, allowed })
}

/// The body after the edit, once [`check_edit_bound`] passes. Lines are joined with `\n`.
pub fn apply_edit(body: &str, ops: &[EditOp]) -> Result<String, EditError> {
    check_edit_bound(body, ops)?;
    let mut rewrite: BTreeMap<usize, Option<&str>> = BTreeMap::new();
    let mut added: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for op in ops {
        match op {
            EditOp::Add { line, text } => added.entry(*line).or_default().push(text),
            EditOp::Delete { line } => {
                rewrite.insert(*line, None);
            }
            EditOp::Replace { line, text } => {
                rewrite.insert(*line, Some(text));
            }
        }
    }
    let mut out = Vec::new();
    for (index, original) in body.split('\n').enumerate() {
        let line = index + 1;
        if let Some(kept) = rewrite.get(&line).copied().unwrap_or(Some(original)) {
            out.push(kept);
        }
        out.extend(added.get(&line).into_iter().flatten());
    }
    Ok(out.join("\n"))
}

/// Whether a measured edit is accepted: strictly better only. A tie is a rejection, because
/// the version bump would cost the skill its evidence for no measured gain.
pub fn accept_edit(delta_before: f64, delta_after: f64) -> bool {
    delta_after > delta_before
}

#[cfg(test)]
mod tests;
