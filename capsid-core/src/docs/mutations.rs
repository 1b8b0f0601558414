//! `delete` and `move` (reference 2.1, 4.4): the guards they run before confirming, their
//! confirmation and abort wording, their answers and audit params. Both always confirm.

use serde::Serialize;

use super::links::Edge;
use super::write::ConfirmationText;
use crate::guards::improve_write_refusal;

/// The refusal for a document that is not there.
pub fn not_found(namespace: &str, path: &str) -> String {
    format!("not found: {namespace}/{path}")
}

/// The refusal for a write into a namespace without a `namespaces` row.
pub fn unknown_namespace(namespace: &str) -> String {
    format!(
        "unknown namespace '{namespace}'. Nothing was written. Documents can only live in a registered namespace, \
         because an unregistered one is invisible to the namespaces list, the lint loop and every repo tool. \
         Check the spelling against the namespaces tool, or create it with register_namespace."
    )
}

/// The improve control-surface guard for a delete: the document's body becomes `""`.
pub fn delete_guard(
    namespace: &str,
    path: &str,
    body: &str,
    allow_improve_paths: bool,
) -> Option<String> {
    improve_write_refusal(namespace, path, Some(body), "", allow_improve_paths)
}

/// The guard for a move, on both ends: the source is emptied, the destination (which must
/// not exist) receives the moved body.
pub fn move_guard(
    namespace: &str,
    path: &str,
    new_path: &str,
    body: &str,
    allow_improve_paths: bool,
) -> Option<String> {
    improve_write_refusal(namespace, path, Some(body), "", allow_improve_paths)
        .or_else(|| improve_write_refusal(namespace, new_path, None, body, allow_improve_paths))
}

/// The confirmation texts of `delete`.
pub fn delete_confirmation(namespace: &str, path: &str) -> ConfirmationText {
    ConfirmationText {
        prompt: format!(
            "Delete {namespace}/{path}? It will be snapshotted to document_versions first, so it can be recovered."
        ),
        declined: format!("delete of {namespace}/{path} declined"),
        unsupported: format!(
            "confirmation required: re-run delete with confirm: true to remove {namespace}/{path}. It will be \
             snapshotted to document_versions first."
        ),
    }
}

/// The confirmation texts of `move`.
pub fn move_confirmation(namespace: &str, path: &str, new_path: &str) -> ConfirmationText {
    ConfirmationText {
        prompt: format!(
            "Rename {namespace}/{path} to {namespace}/{new_path}? Edges pointing at the old path are repointed."
        ),
        declined: format!("move of {namespace}/{path} declined"),
        unsupported: format!(
            "confirmation required: re-run move with confirm: true to rename {namespace}/{path} to {new_path}."
        ),
    }
}

/// The refusal when a delete's commit-time guard fired: after an elicitation the body had
/// to be unchanged, otherwise the row had to exist.
pub fn delete_aborted(namespace: &str, path: &str, elicited: bool) -> String {
    if elicited {
        format!(
            "delete aborted, nothing changed: {namespace}/{path} changed or was removed while the confirmation was \
             open. Re-read it and try again."
        )
    } else {
        format!(
            "delete aborted, nothing changed: {namespace}/{path} no longer exists. Another session removed it \
             after this call started."
        )
    }
}

/// The refusal when the moved document vanished before the commit.
pub fn move_aborted(namespace: &str, path: &str) -> String {
    format!(
        "move aborted, nothing changed: {namespace}/{path} no longer exists. Another session moved or removed it \
         after this call started."
    )
}

/// The refusal when the rename collided (the target exists).
pub fn move_collision(reason: &str) -> String {
    format!("move failed, nothing changed (target may already exist): {reason}")
}

/// The `delete` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DeleteOutcome {
    /// Namespace.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Always `deleted`.
    pub action: &'static str,
    /// Always true: a delete snapshots first.
    pub snapshotted: bool,
    /// Edges touching the document that were removed with it.
    pub edges_removed: usize,
}

impl DeleteOutcome {
    /// The answer for a committed delete.
    pub fn new(namespace: &str, path: &str, edges_removed: usize) -> Self {
        DeleteOutcome {
            namespace: namespace.to_owned(),
            path: path.to_owned(),
            action: "deleted",
            snapshotted: true,
            edges_removed,
        }
    }
}

/// Params of the `delete` audit row: the removed edges themselves, since versions keep
/// only title and body and this is the only place they survive.
pub fn delete_audit_params(removed: &[Edge]) -> serde_json::Value {
    serde_json::json!({ "edges_removed": removed })
}

/// The `move` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MoveOutcome {
    /// Namespace.
    pub namespace: String,
    /// Old path.
    pub path: String,
    /// New path.
    pub new_path: String,
    /// Always `moved`.
    pub action: &'static str,
    /// Edges whose endpoint followed the document.
    pub edges_repointed: usize,
}

impl MoveOutcome {
    /// The answer for a committed move.
    pub fn new(namespace: &str, path: &str, new_path: &str, edges_repointed: usize) -> Self {
        MoveOutcome {
            namespace: namespace.to_owned(),
            path: path.to_owned(),
            new_path: new_path.to_owned(),
            action: "moved",
            edges_repointed,
        }
    }

    /// Params of the `move` audit row: `{new_path, edges_repointed}`.
    pub fn audit_params(&self) -> serde_json::Value {
        serde_json::json!({ "new_path": self.new_path, "edges_repointed": self.edges_repointed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_cover_both_ends_of_a_move() {
        assert!(delete_guard("n", "notes/a.md", "x", false).is_none());
        assert!(delete_guard("n", "improve/prompts/run.md", "x", false).is_some());
        assert!(delete_guard("n", "improve/prompts/run.md", "x", true).is_none());
        assert!(move_guard("n", "notes/a.md", "notes/b.md", "x", false).is_none());
        let into = move_guard("n", "notes/a.md", "improve/skills/s.md", "x", false).unwrap();
        assert!(into.contains("improve/skills/s.md"), "{into}");
        let out_of = move_guard("n", "improve/skills/s.md", "notes/s.md", "x", false).unwrap();
        assert!(out_of.contains("improve/skills/s.md"), "{out_of}");
        assert!(move_guard("n", "improve/skills/s.md", "improve/skills/t.md", "x", true).is_none());
    }

    #[test]
    fn wording_names_the_documents() {
        assert_eq!(not_found("n", "a.md"), "not found: n/a.md");
        assert!(unknown_namespace("nope").contains("unknown namespace 'nope'"));
        assert!(unknown_namespace("nope").contains("register_namespace"));
        assert!(
            delete_confirmation("n", "a.md")
                .unsupported
                .contains("confirm: true to remove n/a.md")
        );
        assert!(
            move_confirmation("n", "a.md", "b.md")
                .prompt
                .contains("to n/b.md")
        );
        assert!(delete_aborted("n", "a.md", true).contains("while the confirmation was open"));
        assert!(delete_aborted("n", "a.md", false).contains("no longer exists"));
        assert!(move_aborted("n", "a.md").contains("n/a.md no longer exists"));
        assert!(move_collision("UNIQUE").ends_with("(target may already exist): UNIQUE"));
    }

    #[test]
    fn outcomes_and_audit_params() {
        let edge = Edge {
            from_ns: "n".into(),
            from_path: "a.md".into(),
            link_type: "governs".into(),
            to_ns: "n".into(),
            to_path: "b.md".into(),
        };
        assert_eq!(
            delete_audit_params(&[edge]),
            serde_json::json!({"edges_removed": [
                {"from_ns": "n", "from_path": "a.md", "type": "governs", "to_ns": "n", "to_path": "b.md"}
            ]})
        );
        assert_eq!(
            serde_json::to_value(DeleteOutcome::new("n", "a.md", 1)).unwrap(),
            serde_json::json!({"namespace": "n", "path": "a.md", "action": "deleted", "snapshotted": true, "edges_removed": 1})
        );
        let moved = MoveOutcome::new("n", "a.md", "b.md", 2);
        assert_eq!(serde_json::to_value(&moved).unwrap()["action"], "moved");
        assert_eq!(
            moved.audit_params(),
            serde_json::json!({"new_path": "b.md", "edges_repointed": 2})
        );
    }
}
