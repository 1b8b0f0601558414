//! The `write` tool's pure steps (reference 2.1, steps 1-8), in the Worker's order: input
//! validation, the `if_match` precheck, body assembly, dash normalization, the improve
//! control-surface guard, then the answer and audit params. The service runs the store
//! reads, the confirmation and the commit between them.

use serde::Serialize;
use thiserror::Error;

use super::bounds::BODY;
use super::document::Document;
use super::kinds::{DocStatus, DocType, KindError};
use super::links::{Link, LinkError, parse_links};
use super::normalize::{normalize_body, normalize_title};
use super::write_mode::{WriteInput, WriteMode, WriteModeError, assemble_body};
use crate::crypto::sha256_hex;
use crate::guards::improve_write_refusal;
use crate::paths::{Namespace, js_len};

/// Why a `write` (or the `if_match` part of `restore`) refused. Nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WriteError {
    /// `type` or `status` outside the vocabulary.
    #[error(transparent)]
    Kind(#[from] KindError),
    /// `links` refused.
    #[error(transparent)]
    Links(#[from] LinkError),
    /// `if_match` given for a document that does not exist.
    #[error(
        "if_match was given but {namespace}/{path} does not exist. Nothing was written. Omit if_match to create it."
    )]
    IfMatchOnMissing {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
    },
    /// The stored body is not the one the caller read.
    #[error(
        "if_match mismatch on {namespace}/{path}: the stored body is not the one you read. Nothing was written. \
         Current sha256 is {current}; you passed {passed}. Re-read the document, reapply your change to the \
         current body, and retry."
    )]
    IfMatchMismatch {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
        /// sha256 of the stored body.
        current: String,
        /// What the caller passed (trimmed, lower-cased).
        passed: String,
    },
    /// The mode's body rules refused.
    #[error("{source} ({namespace}/{path})")]
    Assembly {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
        /// The rule.
        source: WriteModeError,
    },
    /// The improve control-surface guard refused the final body.
    #[error("{0}")]
    ImproveGuard(String),
    /// The assembled body would pass the body bound (`append` and `patch` grow a body the
    /// caller did not send whole).
    #[error(
        "{} would make the body of {namespace}/{path} {len} characters long; the limit is {max}. Nothing was written. Split the document, or archive part of it.",
        mode.as_str()
    )]
    BodyTooLong {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
        /// The write's mode.
        mode: WriteMode,
        /// The assembled body's length in UTF-16 units.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// Another writer created the document after this write read it as missing.
    #[error(
        "create collision on {namespace}/{path}: the document did not exist when this write started and it does \
         now, so another writer created it first. Nothing was written and the other writer's body is intact. \
         Re-read the document and retry as an update if you still mean to change it."
    )]
    CreateCollision {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
    },
    /// The document was deleted while the write was in flight.
    #[error(
        "conflict on {namespace}/{path}: the document was deleted while this write was in flight. Nothing was written."
    )]
    DeletedInFlight {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
    },
    /// The body changed after the pre-read, under an `if_match`, a human's confirmation, or an
    /// append or patch built on the body it read.
    #[error(
        "{} on {namespace}/{path}: the stored body changed after this write read it{}. Nothing was written. \
         Current sha256 is {current}. Re-read the document, reapply your change to the current body, and retry.",
        if *if_match_given { "if_match mismatch" } else if *elicited { "stale confirmation" } else { "conflict" },
        if *elicited && !*if_match_given { " and while the overwrite confirmation was pending" } else { "" }
    )]
    BodyChanged {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
        /// sha256 of the body stored now.
        current: String,
        /// Whether the caller passed `if_match`.
        if_match_given: bool,
        /// Whether a human confirmed through elicitation.
        elicited: bool,
    },
}

/// Step 1 output: the validated metadata and edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedMeta {
    /// The new type, when given.
    pub doc_type: Option<DocType>,
    /// The new status, when given.
    pub status: Option<DocStatus>,
    /// The new outgoing edges, when `links` was given (`Some(vec![])` clears).
    pub links: Option<Vec<Link>>,
}

/// Step 1: `type`, then `status`, then `links` (the namespace's registration is checked
/// next, by the service).
pub fn check_meta(
    namespace: &Namespace,
    doc_type: Option<&str>,
    status: Option<&str>,
    links: Option<&str>,
) -> Result<CheckedMeta, WriteError> {
    let doc_type = doc_type.map(DocType::parse).transpose()?;
    let status = status.map(DocStatus::parse).transpose()?;
    let links = links.map(|text| parse_links(text, namespace)).transpose()?;
    Ok(CheckedMeta {
        doc_type,
        status,
        links,
    })
}

/// How an `if_match` precheck failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatchFailure {
    /// There is no stored document.
    Missing,
    /// The stored body hashes to `current`, not `passed`.
    Mismatch {
        /// sha256 of the stored body.
        current: String,
        /// The caller's value, trimmed and lower-cased.
        passed: String,
    },
}

/// The `if_match` precheck (step 2), before any confirmation so a stale caller is refused at
/// once. `stored_body` is `None` when the document does not exist (a NULL body is `""`). The
/// commit-time guard stays the authority.
pub fn check_if_match(stored_body: Option<&str>, if_match: &str) -> Result<(), IfMatchFailure> {
    let body = stored_body.ok_or(IfMatchFailure::Missing)?;
    let current = sha256_hex(body);
    let passed = if_match.trim().to_lowercase();
    if current == passed {
        Ok(())
    } else {
        Err(IfMatchFailure::Mismatch { current, passed })
    }
}

impl WriteError {
    /// The `write` wording of an `if_match` failure.
    pub fn if_match(namespace: &str, path: &str, failure: IfMatchFailure) -> Self {
        let (namespace, path) = (namespace.to_owned(), path.to_owned());
        match failure {
            IfMatchFailure::Missing => WriteError::IfMatchOnMissing { namespace, path },
            IfMatchFailure::Mismatch { current, passed } => WriteError::IfMatchMismatch {
                namespace,
                path,
                current,
                passed,
            },
        }
    }
}

/// What steps 3-5 produce: the title and body to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedWrite {
    /// The normalized title, when given.
    pub title: Option<String>,
    /// The full new body: normalized, except in `meta` mode where it is the stored body
    /// byte for byte.
    pub body: String,
}

/// Steps 3-5: assemble the body for `mode`, normalize wide dashes in the title and (except
/// for `meta`) the body, refuse a body past the body bound (SPEC 8: `append` and `patch`
/// never grow a document past it), then run the improve control-surface guard on the final
/// body.
pub fn prepare_write(
    namespace: &str,
    path: &str,
    mode: WriteMode,
    stored_body: Option<&str>,
    input: &WriteInput<'_>,
    allow_improve_paths: bool,
) -> Result<PreparedWrite, WriteError> {
    let assembled =
        assemble_body(mode, stored_body, input).map_err(|source| WriteError::Assembly {
            namespace: namespace.to_owned(),
            path: path.to_owned(),
            source,
        })?;
    let title = input.title.map(normalize_title);
    let body = if mode == WriteMode::Meta {
        assembled
    } else {
        normalize_body(&assembled)
    };
    let len = js_len(&body);
    if len > BODY {
        return Err(WriteError::BodyTooLong {
            namespace: namespace.to_owned(),
            path: path.to_owned(),
            mode,
            len,
            max: BODY,
        });
    }
    if let Some(refusal) =
        improve_write_refusal(namespace, path, stored_body, &body, allow_improve_paths)
    {
        return Err(WriteError::ImproveGuard(refusal));
    }
    Ok(PreparedWrite { title, body })
}

/// The confirmation texts of an overwriting `write` (step 6).
pub fn overwrite_confirmation(namespace: &str, path: &str) -> ConfirmationText {
    ConfirmationText {
        prompt: format!(
            "Overwrite {namespace}/{path}? The current version will be snapshotted to document_versions first."
        ),
        declined: format!("overwrite of {namespace}/{path} declined"),
        unsupported: format!(
            "confirmation required: {namespace}/{path} already exists. Re-run write with confirm: true to overwrite \
             it. The current version will be snapshotted to document_versions first."
        ),
    }
}

/// What a destructive tool says when it asks for confirmation, and when it cannot proceed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmationText {
    /// The elicitation message.
    pub prompt: String,
    /// The refusal when the human declined.
    pub declined: String,
    /// The refusal when the client cannot be asked and `confirm: true` was not passed.
    pub unsupported: String,
}

/// Whether the write created or updated the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteAction {
    /// The document did not exist.
    Created,
    /// The document existed.
    Updated,
}

/// The `write` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WriteOutcome {
    /// Namespace.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Created or updated.
    pub action: WriteAction,
    /// The mode applied.
    pub mode: WriteMode,
    /// sha256 of the stored body (the next write's `if_match`).
    pub sha256: String,
    /// UTF-8 length of the stored body.
    pub bytes: usize,
    /// UTF-8 length of the prior body, for non-replace modes on existing documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_before: Option<usize>,
    /// Whether the prior row was snapshotted.
    pub snapshotted: bool,
    /// See [`super::concurrency_warning`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_warning: Option<String>,
    /// How many edges replaced the outgoing ones, when `links` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<usize>,
    /// Dangling link targets (see [`super::links::dangling_targets_warning`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl WriteOutcome {
    /// The answer for `body` stored over `prior_body` (`None`: created). The optional
    /// warnings and the link count are set by the caller after the commit.
    pub fn new(
        namespace: &str,
        path: &str,
        mode: WriteMode,
        body: &str,
        prior_body: Option<&str>,
    ) -> Self {
        WriteOutcome {
            namespace: namespace.to_owned(),
            path: path.to_owned(),
            action: if prior_body.is_some() {
                WriteAction::Updated
            } else {
                WriteAction::Created
            },
            mode,
            sha256: sha256_hex(body),
            bytes: body.len(),
            bytes_before: prior_body
                .filter(|_| mode != WriteMode::Replace)
                .map(str::len),
            snapshotted: prior_body.is_some(),
            concurrency_warning: None,
            links: None,
            warning: None,
        }
    }
}

/// The metadata a `write` sets, as recorded in its audit row.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetaChange<'a> {
    /// New (normalized) title.
    pub title: Option<&'a str>,
    /// New type.
    pub doc_type: Option<&'a str>,
    /// New tags.
    pub tags: Option<&'a str>,
    /// New status.
    pub status: Option<&'a str>,
}

/// Params of the `write` audit row: `{title?, type?, tags?, status?, mode, updated,
/// allow_improve_paths?, prior_meta?}`. The prior title, type, status and tags are recorded
/// whenever the write changes any of them: versions keep only title and body, so this is
/// where a metadata change stays recoverable.
pub fn write_audit_params(
    change: &MetaChange<'_>,
    mode: WriteMode,
    prior: Option<&Document>,
    allow_improve_paths: bool,
) -> serde_json::Value {
    let mut params = serde_json::Map::new();
    for (key, value) in [
        ("title", change.title),
        ("type", change.doc_type),
        ("tags", change.tags),
        ("status", change.status),
    ] {
        if let Some(value) = value {
            params.insert(key.to_owned(), value.into());
        }
    }
    params.insert("mode".to_owned(), mode.as_str().into());
    params.insert("updated".to_owned(), prior.is_some().into());
    if allow_improve_paths {
        params.insert("allow_improve_paths".to_owned(), true.into());
    }
    let meta_changed = change.title.is_some()
        || change.doc_type.is_some()
        || change.tags.is_some()
        || change.status.is_some();
    if let Some(prior) = prior.filter(|_| meta_changed) {
        params.insert(
            "prior_meta".to_owned(),
            serde_json::json!({
                "title": prior.title, "type": prior.doc_type, "status": prior.status, "tags": prior.tags
            }),
        );
    }
    serde_json::Value::Object(params)
}

/// Params of the `links` audit row that follows a write replacing edges: `{edges: n}`.
pub fn links_audit_params(edges: usize) -> serde_json::Value {
    serde_json::json!({ "edges": edges })
}

#[cfg(test)]
mod tests;
