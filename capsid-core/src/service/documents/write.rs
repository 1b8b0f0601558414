//! The write-side document tools: `write` (four modes, `if_match`, links), `delete`, `move`
//! and `restore`. Each runs the reference's steps in order, asks for confirmation where the
//! reference does, and commits through one store unit of work with its guards.

use super::DocumentsCx;
use crate::service::{Area, require_confirmation, require_namespace};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::caller::Caller;
use crate::crypto::sha256_hex;
use crate::docs::links::Link;
use crate::docs::links::{Edge, dangling_targets_warning, unchecked_targets_warning};
use crate::docs::mutations::{self, DeleteOutcome, MoveOutcome};
use crate::docs::versions::{
    RestoreOutcome, VersionSnapshot, plan_restore, restore_confirmation, version_not_found,
};
use crate::docs::write::{
    MetaChange, WriteError, links_audit_params, overwrite_confirmation, prepare_write,
    write_audit_params,
};
use crate::docs::{
    WriteInput, WriteMode, WriteOutcome, bounds, check_if_match, check_meta, concurrency_warning,
    needs_confirmation,
};
use crate::error::{Error, Result};
use crate::ports::{DocumentWrite, StoreError, WriteGuard};
use crate::scope_args;
use crate::service::Confirmer;
use crate::service::args::{Bounded, DocPathArg, NamespaceArg};
use crate::service::confirm::Confirmed;

/// `write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// Namespace (must be registered).
    pub namespace: NamespaceArg,
    /// Document path.
    pub path: DocPathArg,
    /// Title (required by `replace`).
    pub title: Option<Bounded<{ bounds::TITLE }>>,
    /// Body: the whole document (`replace`) or the text to add (`append`).
    pub body: Option<Bounded<{ bounds::BODY }>>,
    /// replace (default), append, patch or meta.
    pub mode: Option<WriteMode>,
    /// `patch`: the text to find (must occur exactly once).
    pub find: Option<Bounded<{ bounds::BODY }>>,
    /// `patch`: its replacement.
    pub replace_with: Option<Bounded<{ bounds::BODY }>>,
    /// Document type (note by default).
    #[serde(rename = "type")]
    pub doc_type: Option<Bounded<{ bounds::DOC_TYPE }>>,
    /// Tags, free text.
    pub tags: Option<Bounded<{ bounds::TAGS }>>,
    /// Status (published by default).
    pub status: Option<Bounded<{ bounds::DOC_STATUS }>>,
    /// Confirm an overwrite (replace or patch of an existing document).
    pub confirm: Option<bool>,
    /// JSON array of typed edges `[{type, to_path, to_ns?}]`; `[]` clears them.
    pub links: Option<Bounded<{ bounds::LINKS_JSON }>>,
    /// sha256 of the body you believe is stored; the write is refused if it differs.
    pub if_match: Option<Bounded<{ bounds::SHA }>>,
    /// Write under the improve loop's control surface (needs can_touch_protected).
    pub allow_improve_paths: Option<bool>,
}
scope_args!(WriteArgs, namespace, improve_override);

/// `delete`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteArgs {
    /// Namespace.
    pub namespace: NamespaceArg,
    /// Document path.
    pub path: DocPathArg,
    /// Confirm the delete.
    pub confirm: Option<bool>,
    /// Delete from the improve loop's control surface (needs can_touch_protected).
    pub allow_improve_paths: Option<bool>,
}
scope_args!(DeleteArgs, namespace, improve_override);

/// `move`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MoveArgs {
    /// Namespace.
    pub namespace: NamespaceArg,
    /// Current path.
    pub path: DocPathArg,
    /// New path in the same namespace (must not exist).
    pub new_path: DocPathArg,
    /// Confirm the move.
    pub confirm: Option<bool>,
    /// Move within the improve loop's control surface (needs can_touch_protected).
    pub allow_improve_paths: Option<bool>,
}
scope_args!(MoveArgs, namespace, improve_override);

/// `restore`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RestoreArgs {
    /// Namespace.
    pub namespace: NamespaceArg,
    /// Document path.
    pub path: DocPathArg,
    /// The version to restore (from `history`).
    pub version_id: i64,
    /// Confirm the restore.
    pub confirm: Option<bool>,
    /// sha256 of the body you believe is stored.
    pub if_match: Option<Bounded<{ bounds::SHA }>>,
    /// Restore onto the improve loop's control surface (needs can_touch_protected).
    pub allow_improve_paths: Option<bool>,
}
scope_args!(RestoreArgs, namespace, improve_override);

fn invalid(e: impl std::fmt::Display) -> Error {
    Error::Invalid(e.to_string())
}

impl DocumentsCx<'_> {
    /// Maps a failed commit to the write's wording, re-reading the body for the current hash.
    async fn commit_failure(
        &self,
        e: StoreError,
        ns: &str,
        path: &str,
        creating: bool,
        if_match: bool,
        elicited: bool,
    ) -> Error {
        let (namespace, path) = (ns.to_owned(), path.to_owned());
        let err = match e {
            StoreError::Conflict(_) if creating => WriteError::CreateCollision { namespace, path },
            StoreError::NotFound(_) => WriteError::DeletedInFlight { namespace, path },
            StoreError::Conflict(_) => {
                let current = match self.docs.document(&namespace, &path).await {
                    Ok(Some(d)) => sha256_hex(d.body_text()),
                    _ => "(unreadable)".to_owned(),
                };
                WriteError::BodyChanged {
                    namespace,
                    path,
                    current,
                    if_match_given: if_match,
                    elicited,
                }
            }
            other => return Error::from(other),
        };
        Error::Conflict(err.to_string())
    }

    pub(crate) async fn write(
        &self,
        caller: &Caller,
        a: WriteArgs,
        confirmer: &dyn Confirmer,
    ) -> Result<WriteOutcome> {
        let (ns_arg, path) = (&a.namespace.0, a.path.as_str());
        let ns = ns_arg.as_str();
        let allow = a.allow_improve_paths == Some(true);
        // A run credential writes only a scout's watermark (only a scout's carries `write`).
        if let Some(job) = caller.run_job()
            && !crate::jobs::scout::run_may_write(path)
        {
            return Err(Error::Forbidden(format!(
                "write: the run credential of {job} writes only under {}, not {path}",
                crate::jobs::scout::RUN_WRITABLE_DIR
            )));
        }
        // Step 1: metadata and links, then the namespace registry.
        let meta = check_meta(
            ns_arg,
            a.doc_type.as_ref().map(|t| t.as_str()),
            a.status.as_ref().map(|s| s.as_str()),
            a.links.as_ref().map(|l| l.as_str()),
        )
        .map_err(invalid)?;
        require_namespace(self.namespaces, ns).await?;
        // Step 2: the pre-read and the if_match precheck.
        let prior = self.docs.document(ns, path).await?;
        let prior_body = prior.as_ref().map(|d| d.body_text().to_owned());
        if let Some(if_match) = &a.if_match {
            check_if_match(prior_body.as_deref(), if_match.as_str())
                .map_err(|f| Error::Conflict(WriteError::if_match(ns, path, f).to_string()))?;
        }
        // Steps 3-5: assemble, normalise, the improve guard.
        let mode = a.mode.unwrap_or_default();
        let input = WriteInput {
            title: a.title.as_ref().map(|t| t.as_str()),
            body: a.body.as_ref().map(|b| b.as_str()),
            find: a.find.as_ref().map(|f| f.as_str()),
            replace_with: a.replace_with.as_ref().map(|r| r.as_str()),
            doc_type: a.doc_type.as_ref().map(|t| t.as_str()),
            tags: a.tags.as_ref().map(|t| t.as_str()),
            status: a.status.as_ref().map(|s| s.as_str()),
        };
        let prepared = prepare_write(ns, path, mode, prior_body.as_deref(), &input, allow)
            .map_err(|e| match e {
                WriteError::ImproveGuard(m) => Error::Forbidden(m),
                other => invalid(other),
            })?;
        // Step 6: confirmation of an overwrite.
        let confirmed = if needs_confirmation(mode, prior.is_some()) {
            Some(
                require_confirmation(a.confirm, confirmer, overwrite_confirmation(ns, path))
                    .await?,
            )
        } else {
            None
        };
        let elicited = confirmed == Some(Confirmed::ByHuman);
        // Step 7: one unit of work with its commit-time guard.
        // append and patch build on the body they read: committing over a body that changed
        // meanwhile would silently drop the other writer's change, so they are guarded too.
        let derived = matches!(mode, WriteMode::Append | WriteMode::Patch);
        let guard = match &prior_body {
            None => WriteGuard::Create,
            Some(body) if a.if_match.is_some() || elicited || derived => WriteGuard::Update {
                expected_body: Some(body.clone()),
            },
            Some(_) => WriteGuard::Update {
                expected_body: None,
            },
        };
        let doc_type = meta.doc_type.map(|t| t.as_str().to_owned());
        let status = meta.status.map(|s| s.as_str().to_owned());
        let change = MetaChange {
            title: prepared.title.as_deref(),
            doc_type: doc_type.as_deref(),
            tags: input.tags,
            status: status.as_deref(),
        };
        let mut audit = vec![self.audit(
            caller,
            "write",
            Some(ns),
            Some(path),
            write_audit_params(&change, mode, prior.as_ref(), allow),
        )];
        if let Some(links) = &meta.links {
            audit.push(self.audit(
                caller,
                "links",
                Some(ns),
                Some(path),
                links_audit_params(links.len()),
            ));
        }
        let write = DocumentWrite {
            namespace: ns.to_owned(),
            path: path.to_owned(),
            title: prepared.title.clone(),
            // meta never touches the body: leaving it out keeps whatever is stored at commit.
            body: (mode != WriteMode::Meta).then(|| prepared.body.clone()),
            doc_type,
            status,
            tags: a.tags.as_ref().map(|t| t.0.clone()),
            links: meta.links.clone(),
            at: self.now(),
        };
        if let Err(e) = self.docs.write_document(write, guard, audit).await {
            return Err(self
                .commit_failure(e, ns, path, prior.is_none(), a.if_match.is_some(), elicited)
                .await);
        }
        // Step 8: warnings that never fail the write.
        let mut outcome = WriteOutcome::new(ns, path, mode, &prepared.body, prior_body.as_deref());
        if let Some(links) = &meta.links {
            outcome.links = Some(links.len());
            outcome.warning = self.dangling_warning(caller, links).await;
        }
        let updated_at = prior.as_ref().map(|d| d.updated_at);
        outcome.concurrency_warning =
            concurrency_warning(updated_at, self.now(), a.if_match.is_some());
        Ok(outcome)
    }

    /// The warning for link targets that do not exist. A target in a namespace the caller
    /// may not name is not looked up: whether it exists is that namespace's business, so the
    /// warning says the same of it either way.
    async fn dangling_warning(&self, caller: &Caller, links: &[Link]) -> Option<String> {
        type Refs = Vec<(String, String)>;
        let (refs, unchecked): (Refs, Refs) = links
            .iter()
            .map(|l| (l.to_ns.as_str().to_owned(), l.to_path.as_str().to_owned()))
            .partition(|(n, _)| caller.scopes.namespaces.allows(n));
        let exists = self.docs.documents_exist(&refs).await.ok()?;
        let missing: Vec<String> = refs
            .iter()
            .zip(exists)
            .filter(|(_, e)| !e)
            .map(|((n, p), _)| format!("{n}/{p}"))
            .collect();
        let unchecked: Vec<String> = unchecked.iter().map(|(n, p)| format!("{n}/{p}")).collect();
        let warnings: Vec<String> = [
            dangling_targets_warning(&missing),
            unchecked_targets_warning(&unchecked),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!warnings.is_empty()).then(|| warnings.join(" "))
    }

    pub(crate) async fn delete(
        &self,
        caller: &Caller,
        a: DeleteArgs,
        confirmer: &dyn Confirmer,
    ) -> Result<DeleteOutcome> {
        let (ns, path) = (a.namespace.as_str(), a.path.as_str());
        let allow = a.allow_improve_paths == Some(true);
        require_namespace(self.namespaces, ns).await?;
        let doc = self
            .docs
            .document(ns, path)
            .await?
            .ok_or_else(|| Error::NotFound(mutations::not_found(ns, path)))?;
        if let Some(refusal) = mutations::delete_guard(ns, path, doc.body_text(), allow) {
            return Err(Error::Forbidden(refusal));
        }
        let confirmed = require_confirmation(
            a.confirm,
            confirmer,
            mutations::delete_confirmation(ns, path),
        )
        .await?;
        let elicited = confirmed == Confirmed::ByHuman;
        let links = self.docs.backlinks(ns, path).await?;
        let touching: Vec<Edge> = links
            .outgoing
            .iter()
            .map(|(t, tn, tp)| Edge {
                from_ns: ns.into(),
                from_path: path.into(),
                link_type: t.clone(),
                to_ns: tn.clone(),
                to_path: tp.clone(),
            })
            .chain(links.incoming.iter().map(|(t, fnm, fp)| Edge {
                from_ns: fnm.clone(),
                from_path: fp.clone(),
                link_type: t.clone(),
                to_ns: ns.into(),
                to_path: path.into(),
            }))
            .collect();
        let mut params = mutations::delete_audit_params(&touching);
        if allow {
            params["allow_improve_paths"] = Value::Bool(true);
        }
        let audit = self.audit(caller, "delete", Some(ns), Some(path), params);
        let expected = elicited.then(|| doc.body_text().to_owned());
        let removed = self
            .docs
            .delete_document(ns, path, expected.as_deref(), audit)
            .await
            .map_err(|e| match e {
                StoreError::NotFound(_) | StoreError::Conflict(_) => {
                    Error::Conflict(mutations::delete_aborted(ns, path, elicited))
                }
                other => Error::from(other),
            })?;
        Ok(DeleteOutcome::new(ns, path, removed.len()))
    }

    pub(crate) async fn move_document(
        &self,
        caller: &Caller,
        a: MoveArgs,
        confirmer: &dyn Confirmer,
    ) -> Result<MoveOutcome> {
        let (ns, path, new_path) = (a.namespace.as_str(), a.path.as_str(), a.new_path.as_str());
        let allow = a.allow_improve_paths == Some(true);
        require_namespace(self.namespaces, ns).await?;
        let doc = self
            .docs
            .document(ns, path)
            .await?
            .ok_or_else(|| Error::NotFound(mutations::not_found(ns, path)))?;
        if let Some(refusal) = mutations::move_guard(ns, path, new_path, doc.body_text(), allow) {
            return Err(Error::Forbidden(refusal));
        }
        let confirmed = require_confirmation(
            a.confirm,
            confirmer,
            mutations::move_confirmation(ns, path, new_path),
        )
        .await?;
        let expected = (confirmed == Confirmed::ByHuman).then(|| doc.body_text().to_owned());
        let links = self.docs.backlinks(ns, path).await?;
        let planned = MoveOutcome::new(
            ns,
            path,
            new_path,
            links.outgoing.len() + links.incoming.len(),
        );
        let mut params = planned.audit_params();
        if allow {
            params["allow_improve_paths"] = Value::Bool(true);
        }
        let audit = self.audit(caller, "move", Some(ns), Some(path), params);
        let repointed = self
            .docs
            .move_document(ns, path, new_path, expected.as_deref(), self.now(), audit)
            .await
            .map_err(|e| match e {
                StoreError::NotFound(_) => Error::Conflict(mutations::move_aborted(ns, path)),
                StoreError::Conflict(m) => Error::Conflict(mutations::move_collision(&m)),
                other => Error::from(other),
            })?;
        let outcome = MoveOutcome::new(
            ns,
            path,
            new_path,
            usize::try_from(repointed).unwrap_or(usize::MAX),
        );
        Ok(outcome)
    }

    pub(crate) async fn restore(
        &self,
        caller: &Caller,
        a: RestoreArgs,
        confirmer: &dyn Confirmer,
    ) -> Result<RestoreOutcome> {
        let (ns, path) = (a.namespace.as_str(), a.path.as_str());
        let allow = a.allow_improve_paths == Some(true);
        if a.version_id <= 0 {
            return Err(Error::Invalid(
                "restore: version_id must be a positive integer".into(),
            ));
        }
        require_namespace(self.namespaces, ns).await?;
        let row = self
            .docs
            .version(a.version_id, ns, path)
            .await?
            .ok_or_else(|| Error::NotFound(version_not_found(a.version_id, ns, path)))?;
        let version = VersionSnapshot {
            id: row.id,
            title: row.title,
            body: row.body,
            snapshot_at: row.snapshot_at,
        };
        let live = self.docs.document(ns, path).await?;
        let live_body = live.as_ref().map(|d| d.body_text().to_owned());
        let plan = plan_restore(
            ns,
            path,
            &version,
            live_body.as_deref(),
            a.if_match.as_ref().map(|m| m.as_str()),
            allow,
        )
        .map_err(|e| match e {
            crate::docs::versions::RestoreError::ImproveGuard(m) => Error::Forbidden(m),
            other => Error::Conflict(other.to_string()),
        })?;
        let confirmed = require_confirmation(
            a.confirm,
            confirmer,
            restore_confirmation(ns, path, &version),
        )
        .await?;
        let elicited = confirmed == Confirmed::ByHuman;
        let guard = match &live_body {
            None => WriteGuard::Create,
            Some(b) if a.if_match.is_some() || elicited => WriteGuard::Update {
                expected_body: Some(b.clone()),
            },
            Some(_) => WriteGuard::Update {
                expected_body: None,
            },
        };
        let outcome = RestoreOutcome::new(ns, path, &version, &plan.body, live.is_some());
        let mut params = outcome.audit_params();
        if allow {
            params["allow_improve_paths"] = Value::Bool(true);
        }
        let audit = vec![self.audit(caller, "restore", Some(ns), Some(path), params)];
        let write = DocumentWrite {
            namespace: ns.to_owned(),
            path: path.to_owned(),
            title: plan.title.clone(),
            body: Some(plan.body.clone()),
            doc_type: None,
            status: None,
            tags: None,
            links: None,
            at: self.now(),
        };
        if let Err(e) = self.docs.write_document(write, guard, audit).await {
            return Err(self
                .commit_failure(e, ns, path, live.is_none(), a.if_match.is_some(), elicited)
                .await);
        }
        Ok(outcome)
    }
}

mod registered {
    //! The document write tools as the registry serves them.
    use super::*;
    use crate::service::Areas;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Confirmation, Requirement::Fixed, Rule, ToolGroup::Documents, ToolSpec};

    /// `write`.
    #[derive(Debug)]
    pub struct Write;
    impl Tool for Write {
        type Args = WriteArgs;
        type Answer = WriteOutcome;
        const SPEC: ToolSpec = ToolSpec::new(
            "write",
            Documents,
            Fixed(Rule::write()),
            "Create or change a document: mode replace (default), append, patch (find/replace_with) or meta; if_match guards against lost updates; links replaces outgoing edges. Overwrites need confirm.",
        )
        .confirmed(Confirmation::OnOverwrite)
        .destructive()
        .titled("Write a document");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: WriteArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().write(c, a, k).await })
        }
    }

    /// `delete`.
    #[derive(Debug)]
    pub struct Delete;
    impl Tool for Delete {
        type Args = DeleteArgs;
        type Answer = DeleteOutcome;
        const SPEC: ToolSpec = ToolSpec::new(
            "delete",
            Documents,
            Fixed(Rule::write()),
            "Delete a document (snapshotted first) and every link touching it. Needs confirm.",
        )
        .idempotent()
        .confirmed(Confirmation::Always)
        .destructive()
        .titled("Delete a document");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: DeleteArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().delete(c, a, k).await })
        }
    }

    /// `move`.
    #[derive(Debug)]
    pub struct Move;
    impl Tool for Move {
        type Args = MoveArgs;
        type Answer = MoveOutcome;
        const SPEC: ToolSpec = ToolSpec::new(
            "move",
            Documents,
            Fixed(Rule::write()),
            "Rename a document within its namespace, repointing links. Needs confirm.",
        )
        .confirmed(Confirmation::Always)
        .destructive()
        .titled("Move a document");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: MoveArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().move_document(c, a, k).await })
        }
    }

    /// `restore`.
    #[derive(Debug)]
    pub struct Restore;
    impl Tool for Restore {
        type Args = RestoreArgs;
        type Answer = RestoreOutcome;
        const SPEC: ToolSpec = ToolSpec::new(
            "restore",
            Documents,
            Fixed(Rule::write()),
            "Restore a document's title and body from a version snapshot (recreating it if deleted). Needs confirm.",
        )
        .confirmed(Confirmation::Always)
        .destructive()
        .titled("Restore a document version");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: RestoreArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().restore(c, a, k).await })
        }
    }
}
pub use registered::*;
