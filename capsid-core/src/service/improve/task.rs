//! Subscription mode's signed task document (reference 6.3, 8.1): the opener's write of
//! `<ns>/improve/run-<date>.md`, sealed with the job envelope and audited as the loop's actor
//! in the same transaction, and its verification, which needs both the seal and the loop as
//! the document's last audit actor (a leaked key alone cannot forge one). `improve_status`
//! answers `task_verification` with it, scoped to the caller's namespaces.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use super::ImproveCx;
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::improve::judging::LOOP_ACTOR;
use crate::improve::task::{
    TaskFacts, head_value, task_body, task_document_date, task_document_path, task_head,
    valid_task_date,
};
use crate::jobs::signature::{seal_task, verify_task};
use crate::ports::{AuditEntry, DocumentWrite, RunRow, WriteGuard};
use crate::service::{Area, Service, to_json};

/// The audit action of a task document's write.
pub const TASK_WRITTEN_ACTION: &str = "improve-task-written";

/// Whether a document is a task document the loop wrote: `{ok, actor, reason}`, and when it
/// is, where it is and its run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskVerification {
    /// Whether it is.
    pub ok: bool,
    /// The document's last audit actor, when it was read.
    pub actor: Option<String>,
    /// Why it is not.
    pub reason: Option<String>,
    /// When it is: its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// When it is: its path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// When it is: the run its head names (`null` when the head names none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Option<String>>,
}

fn answer(ok: bool, actor: Option<&str>, reason: Option<String>) -> TaskVerification {
    TaskVerification {
        ok,
        actor: actor.map(str::to_owned),
        reason,
        namespace: None,
        path: None,
        run_id: None,
    }
}

impl ImproveCx<'_> {
    /// Writes the signed task document of `run` for the night `date` as the loop's actor:
    /// its path inside the run's namespace. Writing the same body again changes nothing.
    pub(crate) async fn write_task_document(&self, run: &RunRow, date: &str) -> Result<String> {
        if !valid_task_date(date) {
            return Err(Error::Invalid(format!(
                "task document: date must be a calendar date written YYYY-MM-DD (got {date:?})"
            )));
        }
        if run.mode != "subscription" {
            return Err(Error::Invalid(format!(
                "task document: run {} is in mode {}; only subscription runs are driven from a task document",
                run.id, run.mode
            )));
        }
        let Some(secret) = self.config.signing_secret() else {
            return Err(Error::Unavailable(
                "task document: signing is not configured (CAPSID_SIGNING_SECRET), so no task document can be signed".into(),
            ));
        };
        let path = task_document_path(date);
        let body = task_body(&TaskFacts {
            namespace: run.namespace.clone(),
            run_id: run.id.clone(),
            base_sha: run.base_sha.clone(),
            date: date.to_owned(),
            mode: run.mode.clone(),
            condition: run.condition.clone(),
            started: run.started,
        });
        let sealed = seal_task(secret, &body);
        let stored = self.docs.document(&run.namespace, &path).await?;
        if stored.as_ref().is_some_and(|d| d.body_text() == sealed)
            && self
                .docs
                .last_actor(&run.namespace, &path)
                .await?
                .as_deref()
                == Some(LOOP_ACTOR)
        {
            return Ok(path);
        }
        let now = self.now();
        let audit = AuditEntry {
            actor: LOOP_ACTOR.to_owned(),
            action: TASK_WRITTEN_ACTION.to_owned(),
            namespace: Some(run.namespace.clone()),
            path: Some(path.clone()),
            params: json!({
                "run_id": run.id, "date": date, "bytes": sealed.len(),
                "sha256": crate::crypto::sha256_hex(&sealed),
            }),
            at: now,
        };
        let write = DocumentWrite {
            namespace: run.namespace.clone(),
            path: path.clone(),
            title: Some(format!("Improve run {}", run.id)),
            body: Some(sealed),
            doc_type: None,
            status: None,
            tags: None,
            links: None,
            at: now,
        };
        self.docs
            .write_document(write, WriteGuard::Upsert, vec![audit])
            .await?;
        Ok(path)
    }

    /// Whether `ns/path` is a task document the loop wrote: `{ok, actor, reason}` (and the
    /// run's id when it is). Ok iff the path is a task document path, the stored body
    /// verifies under the signing secret, and the newest audit row of the document is the
    /// loop's.
    pub(crate) async fn verify_task_document(
        &self,
        ns: &str,
        path: &str,
    ) -> Result<TaskVerification> {
        if task_document_date(path).is_none() {
            return Ok(answer(
                false,
                None,
                Some(format!(
                    "{path} is not a task document path (improve/run-<YYYY-MM-DD>.md)"
                )),
            ));
        }
        let Some(secret) = self.config.signing_secret() else {
            return Ok(answer(
                false,
                None,
                Some(
                    "signing is not configured (CAPSID_SIGNING_SECRET), so no task document can be verified"
                        .into(),
                ),
            ));
        };
        let Some(doc) = self.docs.document(ns, path).await? else {
            return Ok(answer(
                false,
                None,
                Some(format!("no task document {ns}/{path}")),
            ));
        };
        let actor = self.docs.last_actor(ns, path).await?;
        let body = match verify_task(secret, doc.body_text()) {
            Ok(body) => body,
            Err(e) => {
                return Ok(answer(
                    false,
                    actor.as_deref(),
                    Some(format!("{ns}/{path}: {e}")),
                ));
            }
        };
        if actor.as_deref() != Some(LOOP_ACTOR) {
            return Ok(answer(
                false,
                actor.as_deref(),
                Some(format!(
                    "{ns}/{path} was last changed by {}, not by {LOOP_ACTOR}: a valid seal alone does not make a task document",
                    actor.as_deref().unwrap_or("nobody on record")
                )),
            ));
        }
        let head = task_head(body).unwrap_or_default();
        Ok(TaskVerification {
            namespace: Some(ns.to_owned()),
            path: Some(path.to_owned()),
            run_id: Some(head_value(&head, "run_id").map(str::to_owned)),
            ..answer(true, Some(LOOP_ACTOR), None)
        })
    }

    /// `improve_status`'s `task_verification`: `task_path` is `<ns>/improve/run-<date>.md`, or
    /// `improve/run-<date>.md` inside `namespace`; a namespace the caller may not read answers
    /// ok:false without reading anything.
    pub(crate) async fn task_verification(
        &self,
        caller: &Caller,
        namespace: Option<&str>,
        task_path: &str,
    ) -> Result<TaskVerification> {
        let (ns, path) = match (namespace, task_path.split_once('/')) {
            (Some(ns), _) if task_document_date(task_path).is_some() => (ns, task_path),
            (Some(ns), Some((first, rest))) if first == ns => (ns, rest),
            (None, Some((first, rest))) if task_document_date(task_path).is_none() => (first, rest),
            (None, _) => {
                return Ok(answer(
                    false,
                    None,
                    Some(format!(
                        "name the namespace of {task_path}: pass namespace, or task_path as <namespace>/improve/run-<YYYY-MM-DD>.md"
                    )),
                ));
            }
            (Some(ns), _) => {
                return Ok(answer(
                    false,
                    None,
                    Some(format!(
                        "{task_path} is not a task document of namespace {ns} (improve/run-<YYYY-MM-DD>.md)"
                    )),
                ));
            }
        };
        if task_document_date(path).is_none() {
            return self.verify_task_document(ns, path).await;
        }
        if !caller.scopes.namespaces.allows(ns) {
            return Ok(answer(
                false,
                None,
                Some(format!(
                    "this key may not read namespace {ns}, so its task document is not verified here"
                )),
            ));
        }
        self.verify_task_document(ns, path).await
    }
}

impl Service {
    /// Writes the signed task document of a subscription `run` for the night `date` (the
    /// nightly opener's step): its path inside the run's namespace.
    pub async fn write_task_document(&self, run: &RunRow, date: &str) -> Result<String> {
        self.improve().write_task_document(run, date).await
    }

    /// Verifies the task document `ns/path`: `{ok, actor, reason}`.
    pub async fn verify_task_document(&self, ns: &str, path: &str) -> Result<Value> {
        to_json(self.improve().verify_task_document(ns, path).await?)
    }
}
