//! `history` and `restore` (reference 2.1): reading snapshots back, and putting one back
//! verbatim. A restore is not a `write`: no dash normalization, and type, status, tags and
//! links are neither validated nor restored, because a version row does not carry them.

use crate::time::Timestamp;
use serde::Serialize;
use thiserror::Error;

use super::write::{ConfirmationText, IfMatchFailure, check_if_match};
use crate::crypto::sha256_hex;
use crate::guards::improve_write_refusal;

/// The `history` note when the path has no live document.
pub const HISTORY_DELETED_NOTE: &str =
    "no live document at this path: these are the snapshots of a deleted or moved document";

/// The `restore` note when the document was recreated.
pub const RECREATED_NOTE: &str = "the document did not exist and was recreated; its type, status, tags and links are defaults, not the ones it had";

/// The refusal when a version id does not belong to `namespace/path` (the lookup needs all
/// three, so ids cannot be walked across documents).
pub fn version_not_found(version_id: i64, namespace: &str, path: &str) -> String {
    format!("no version {version_id} for {namespace}/{path}")
}

/// The snapshot being restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionSnapshot {
    /// Version id.
    pub id: i64,
    /// Title at snapshot time.
    pub title: Option<String>,
    /// Body at snapshot time.
    pub body: Option<String>,
    /// When it was taken.
    pub snapshot_at: Timestamp,
}

/// Why a `restore` refused. Nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RestoreError {
    /// The improve control-surface guard refused.
    #[error("{0}")]
    ImproveGuard(String),
    /// `if_match` given but the document does not exist.
    #[error(
        "if_match was given but {namespace}/{path} does not exist. Nothing was written. Omit if_match to recreate it from a version."
    )]
    IfMatchOnMissing {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
    },
    /// The live body is not the one the caller read.
    #[error(
        "if_match mismatch on {namespace}/{path}: the live body is not the one you read. Nothing was restored. \
         Current sha256 is {current}; you passed {passed}."
    )]
    IfMatchMismatch {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
        /// sha256 of the live body.
        current: String,
        /// What the caller passed (trimmed, lower-cased).
        passed: String,
    },
    /// Another writer created the document after the restore read it as missing.
    #[error(
        "create collision on {namespace}/{path}: it did not exist when this restore started and it does now, so \
         another writer created it first. Nothing was written and that body is intact."
    )]
    CreateCollision {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
    },
    /// The document was deleted while the restore was in flight.
    #[error(
        "conflict on {namespace}/{path}: the document was deleted while this restore was in flight. Nothing was written."
    )]
    DeletedInFlight {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
    },
    /// The live body changed after the restore read it.
    #[error(
        "conflict on {namespace}/{path}: the live body changed after this restore read it. Nothing was written. \
         Current sha256 is {current}. Re-read history and retry."
    )]
    BodyChanged {
        /// Namespace.
        namespace: String,
        /// Path.
        path: String,
        /// sha256 of the body stored now.
        current: String,
    },
}

/// What a restore stores: the version's title and body, verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestorePlan {
    /// The version's title.
    pub title: Option<String>,
    /// The version's body (`""` for a NULL body).
    pub body: String,
}

/// The checks `restore` runs before asking for confirmation, in the Worker's order: the
/// improve guard on the version's body, then the `if_match` precheck. `live_body` is
/// `None` when the document does not exist (a NULL body is `""`).
pub fn plan_restore(
    namespace: &str,
    path: &str,
    version: &VersionSnapshot,
    live_body: Option<&str>,
    if_match: Option<&str>,
    allow_improve_paths: bool,
) -> Result<RestorePlan, RestoreError> {
    let body = version.body.clone().unwrap_or_default();
    if let Some(refusal) =
        improve_write_refusal(namespace, path, live_body, &body, allow_improve_paths)
    {
        return Err(RestoreError::ImproveGuard(refusal));
    }
    if let Some(if_match) = if_match {
        let (namespace, path) = (namespace.to_owned(), path.to_owned());
        check_if_match(live_body, if_match).map_err(|failure| match failure {
            IfMatchFailure::Missing => RestoreError::IfMatchOnMissing { namespace, path },
            IfMatchFailure::Mismatch { current, passed } => RestoreError::IfMatchMismatch {
                namespace,
                path,
                current,
                passed,
            },
        })?;
    }
    Ok(RestorePlan {
        title: version.title.clone(),
        body,
    })
}

/// The confirmation texts of `restore` (always asked).
pub fn restore_confirmation(
    namespace: &str,
    path: &str,
    version: &VersionSnapshot,
) -> ConfirmationText {
    let (id, at) = (version.id, &version.snapshot_at);
    ConfirmationText {
        prompt: format!(
            "Restore {namespace}/{path} to the version snapshotted at {at}? The current body will be snapshotted first."
        ),
        declined: format!("restore of {namespace}/{path} declined"),
        unsupported: format!(
            "confirmation required: re-run restore with confirm: true to overwrite {namespace}/{path} with version \
             {id} (snapshotted {at}). The current body will be snapshotted first."
        ),
    }
}

/// Whether the restore overwrote a live document or recreated a deleted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RestoreAction {
    /// A live document was overwritten (and snapshotted first).
    Restored,
    /// The document did not exist.
    Recreated,
}

/// The `restore` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RestoreOutcome {
    /// Namespace.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Restored or recreated.
    pub action: RestoreAction,
    /// The version put back.
    pub version_id: i64,
    /// When that version was snapshotted.
    pub snapshot_at: Timestamp,
    /// sha256 of the stored body.
    pub sha256: String,
    /// UTF-8 length of the stored body.
    pub bytes: usize,
    /// Whether the live row was snapshotted first.
    pub snapshotted: bool,
    /// [`RECREATED_NOTE`] when recreated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl RestoreOutcome {
    /// The answer for a committed restore; `existed` is whether a live row was overwritten.
    pub fn new(
        namespace: &str,
        path: &str,
        version: &VersionSnapshot,
        body: &str,
        existed: bool,
    ) -> Self {
        RestoreOutcome {
            namespace: namespace.to_owned(),
            path: path.to_owned(),
            action: if existed {
                RestoreAction::Restored
            } else {
                RestoreAction::Recreated
            },
            version_id: version.id,
            snapshot_at: version.snapshot_at,
            sha256: sha256_hex(body),
            bytes: body.len(),
            snapshotted: existed,
            note: (!existed).then(|| RECREATED_NOTE.to_owned()),
        }
    }

    /// Params of the `restore` audit row: `{version_id, snapshot_at, recreated, snapshotted}`.
    pub fn audit_params(&self) -> serde_json::Value {
        serde_json::json!({
            "version_id": self.version_id,
            "snapshot_at": self.snapshot_at,
            "recreated": self.action == RestoreAction::Recreated,
            "snapshotted": self.snapshotted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(body: Option<&str>) -> VersionSnapshot {
        VersionSnapshot {
            id: 9,
            title: Some("Old — title".into()),
            body: body.map(str::to_owned),
            snapshot_at: Timestamp::parse("2026-11-01T00:00:00.000Z").expect("instant"),
        }
    }

    #[test]
    fn restore_puts_the_version_back_verbatim() {
        let plan = plan_restore(
            "n",
            "a.md",
            &version(Some("em — dash")),
            Some("live"),
            None,
            false,
        )
        .unwrap();
        assert_eq!(
            plan,
            RestorePlan {
                title: Some("Old — title".into()),
                body: "em — dash".into()
            }
        );
        let plan = plan_restore("n", "a.md", &version(None), None, None, false).unwrap();
        assert_eq!(plan.body, "");
    }

    #[test]
    fn restore_checks_the_improve_guard_before_if_match() {
        let err = plan_restore(
            "n",
            "improve/prompts/run.md",
            &version(Some("x")),
            None,
            Some("abc"),
            false,
        );
        assert!(matches!(err, Err(RestoreError::ImproveGuard(_))), "{err:?}");
        assert!(
            plan_restore(
                "n",
                "improve/prompts/run.md",
                &version(Some("x")),
                None,
                None,
                true
            )
            .is_ok()
        );
    }

    #[test]
    fn restore_if_match_wording() {
        let err =
            plan_restore("n", "a.md", &version(Some("x")), None, Some("abc"), false).unwrap_err();
        assert!(
            err.to_string()
                .contains("Omit if_match to recreate it from a version."),
            "{err}"
        );
        let live_sha = sha256_hex("live");
        let err = plan_restore(
            "n",
            "a.md",
            &version(Some("x")),
            Some("live"),
            Some(" ABC "),
            false,
        )
        .unwrap_err();
        assert_eq!(
            err,
            RestoreError::IfMatchMismatch {
                namespace: "n".into(),
                path: "a.md".into(),
                current: live_sha.clone(),
                passed: "abc".into()
            }
        );
        assert!(err.to_string().contains("Nothing was restored."), "{err}");
        let upper = live_sha.to_uppercase();
        assert!(
            plan_restore(
                "n",
                "a.md",
                &version(Some("x")),
                Some("live"),
                Some(&upper),
                false
            )
            .is_ok()
        );
    }

    #[test]
    fn outcomes_and_audit_params() {
        let v = version(Some("body"));
        let recreated = RestoreOutcome::new("n", "a.md", &v, "body", false);
        let wire = serde_json::to_value(&recreated).unwrap();
        assert_eq!(wire["action"], "recreated");
        assert_eq!(wire["note"], RECREATED_NOTE);
        assert_eq!(wire["bytes"], 4);
        assert_eq!(wire["sha256"], sha256_hex("body"));
        assert_eq!(
            recreated.audit_params(),
            serde_json::json!({"version_id": 9, "snapshot_at": "2026-11-01T00:00:00.000Z", "recreated": true, "snapshotted": false})
        );
        let restored =
            serde_json::to_value(RestoreOutcome::new("n", "a.md", &v, "body", true)).unwrap();
        assert_eq!(restored["action"], "restored");
        assert!(restored.get("note").is_none());
        assert_eq!(restored["snapshotted"], true);
    }

    #[test]
    fn texts_name_the_document_and_version() {
        let t = restore_confirmation("n", "a.md", &version(None));
        assert!(
            t.unsupported.contains("confirm: true") && t.unsupported.contains("version 9"),
            "{}",
            t.unsupported
        );
        assert!(t.prompt.contains("2026-11-01T00:00:00.000Z"));
        assert_eq!(version_not_found(4, "n", "a.md"), "no version 4 for n/a.md");
        let e = RestoreError::BodyChanged {
            namespace: "n".into(),
            path: "a.md".into(),
            current: "c".into(),
        };
        assert!(e.to_string().contains("Current sha256 is c"));
    }
}
