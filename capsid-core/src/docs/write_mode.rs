//! Body assembly for `write` (reference 2.1, step 3): every mode returns the full new body,
//! so there is one write path and its invariants (snapshot, audit) apply to all of them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::is_js_space;

/// How `write` applies its input to the stored body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// The body is the new body (needs title and body).
    #[default]
    Replace,
    /// The body is added to the end of the stored one.
    Append,
    /// One exact anchor (`find`) is replaced by `replace_with`.
    Patch,
    /// Only title, type, tags or status change; the body stays byte-identical.
    Meta,
}

impl WriteMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteMode::Replace => "replace",
            WriteMode::Append => "append",
            WriteMode::Patch => "patch",
            WriteMode::Meta => "meta",
        }
    }
}

/// The parts of a `write` call body assembly looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteInput<'a> {
    /// New title.
    pub title: Option<&'a str>,
    /// Body (replace) or text to add (append).
    pub body: Option<&'a str>,
    /// Patch anchor.
    pub find: Option<&'a str>,
    /// Patch replacement.
    pub replace_with: Option<&'a str>,
    /// New type.
    pub doc_type: Option<&'a str>,
    /// New tags.
    pub tags: Option<&'a str>,
    /// New status.
    pub status: Option<&'a str>,
}

/// Why a body could not be assembled. Nothing is written on any of these.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WriteModeError {
    /// `replace` without title or body.
    #[error(
        "mode 'replace' needs both title and body. Use mode 'append' to add to a document, or 'patch' to change part of one."
    )]
    ReplaceNeedsTitleAndBody,
    /// A non-replace mode on a document that does not exist.
    #[error("cannot {} a document that does not exist. Create it with mode 'replace' first.", .0.as_str())]
    MissingDocument(WriteMode),
    /// `meta` was given a body.
    #[error("mode 'meta' changes type, tags, status or title only, and does not take body.")]
    MetaTakesNoBody,
    /// `find`/`replace_with` outside `patch`.
    #[error("find and replace_with belong to mode 'patch', not '{}'.", .0.as_str())]
    FindOutsidePatch(WriteMode),
    /// `meta` with nothing to change.
    #[error("mode 'meta' needs at least one of title, type, tags or status to change.")]
    MetaNeedsAChange,
    /// `append` without a body.
    #[error("mode 'append' needs body: the text to add to the end of the document.")]
    AppendNeedsBody,
    /// `patch` without find or replace_with.
    #[error("mode 'patch' needs find and replace_with.")]
    PatchNeedsFindAndReplaceWith,
    /// `patch` was given a body.
    #[error("mode 'patch' takes find and replace_with, not body.")]
    PatchTakesNoBody,
    /// `patch` with an empty anchor.
    #[error("mode 'patch' needs a non-empty find. An empty anchor matches everywhere.")]
    EmptyAnchor,
    /// The anchor does not occur in the stored body.
    #[error(
        "patch anchor not found. Nothing was written. The find text must match the stored body exactly, including whitespace and line endings (CRLF versus LF is the usual cause)."
    )]
    AnchorNotFound,
    /// The anchor occurs more than once.
    #[error(
        "patch anchor is ambiguous: it occurs {0} times. Nothing was written. Extend find until it is unique."
    )]
    AmbiguousAnchor(usize),
}

/// Assembles the full body `write` will store, in the Worker's order of checks.
///
/// `prior_body` is the stored body, or `None` when the document does not exist (a stored
/// NULL body is passed as `Some("")`). `replace` needs title and body whether it creates or
/// updates; the other modes refuse a missing document. The result is not yet dash-normalized
/// (see [`super::normalize_body`]; `meta` skips that step).
pub fn assemble_body(
    mode: WriteMode,
    prior_body: Option<&str>,
    input: &WriteInput<'_>,
) -> Result<String, WriteModeError> {
    if mode == WriteMode::Replace {
        return match (input.title, input.body) {
            (Some(_), Some(body)) => Ok(body.to_owned()),
            _ => Err(WriteModeError::ReplaceNeedsTitleAndBody),
        };
    }
    let current = prior_body.ok_or(WriteModeError::MissingDocument(mode))?;
    let patch_fields = input.find.is_some() || input.replace_with.is_some();
    match mode {
        WriteMode::Meta => {
            if input.body.is_some() {
                return Err(WriteModeError::MetaTakesNoBody);
            }
            if patch_fields {
                return Err(WriteModeError::FindOutsidePatch(mode));
            }
            let changes = [input.title, input.doc_type, input.tags, input.status];
            if changes.iter().all(Option::is_none) {
                return Err(WriteModeError::MetaNeedsAChange);
            }
            Ok(current.to_owned())
        }
        WriteMode::Append => {
            let addition = input.body.ok_or(WriteModeError::AppendNeedsBody)?;
            if patch_fields {
                return Err(WriteModeError::FindOutsidePatch(mode));
            }
            Ok(append(current, addition))
        }
        // Replace returned above; what is left is patch.
        WriteMode::Patch | WriteMode::Replace => {
            let (Some(find), Some(replace_with)) = (input.find, input.replace_with) else {
                return Err(WriteModeError::PatchNeedsFindAndReplaceWith);
            };
            if input.body.is_some() {
                return Err(WriteModeError::PatchTakesNoBody);
            }
            patch(current, find, replace_with)
        }
    }
}

/// Exactly one blank line between the stored body and the addition, whatever trailing
/// whitespace the one carries and whatever leading blank lines the other: repeated appends
/// neither run together nor pile up blank lines.
fn append(current: &str, addition: &str) -> String {
    let kept = current.trim_end_matches(is_js_space);
    // Drop leading whitespace up to and including its last newline (`/^\s*\n/`), so an
    // indented first line keeps its indentation.
    let lead_end = addition
        .find(|c: char| !is_js_space(c))
        .unwrap_or(addition.len());
    let rest = match addition[..lead_end].rfind('\n') {
        Some(newline) => &addition[newline + 1..],
        None => addition,
    };
    format!("{kept}\n\n{rest}")
}

/// Splices `replace_with` over the one occurrence of `find`. The replacement is literal (the
/// Worker's `String.replace` would have expanded `$&` and friends in it).
fn patch(current: &str, find: &str, replace_with: &str) -> Result<String, WriteModeError> {
    if find.is_empty() {
        return Err(WriteModeError::EmptyAnchor);
    }
    let mut occurrences = current.match_indices(find);
    let Some((at, _)) = occurrences.next() else {
        return Err(WriteModeError::AnchorNotFound);
    };
    let more = occurrences.count();
    if more > 0 {
        return Err(WriteModeError::AmbiguousAnchor(more + 1));
    }
    let mut body = String::with_capacity(current.len() - find.len() + replace_with.len());
    body.push_str(&current[..at]);
    body.push_str(replace_with);
    body.push_str(&current[at + find.len()..]);
    Ok(body)
}

/// Whether a write needs confirmation: overwriting an existing document with `replace` or
/// `patch`. Creating, `append` (destroys nothing) and `meta` (body untouched) never do.
pub fn needs_confirmation(mode: WriteMode, exists: bool) -> bool {
    exists && matches!(mode, WriteMode::Replace | WriteMode::Patch)
}

#[cfg(test)]
mod tests;
