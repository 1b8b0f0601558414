//! Dispatch from a held job under the namespace's bounds: the bounds read from its runner
//! settings, and a refusal recorded on the parent's audit trail (`job-dispatch-refused`), so an
//! owner sees a pipeline that hit its limits.

use serde_json::json;

use super::{JobsAction, JobsAnswer, JobsCx, refuse};
use crate::caller::Caller;
use crate::drive::runner::RunnerSettings;
use crate::error::Result;
use crate::jobs::dispatch::{DispatchLimits, DispatchRefusal};
use crate::jobs::{AUDIT_JOB_DISPATCH_REFUSED, Job, job_doc_path};
use crate::ports::AuditEntry;
use crate::service::Area;

impl JobsCx<'_> {
    /// The dispatch bounds of `namespace` (its runner setting `dispatch_limits`, else the
    /// defaults).
    pub(super) async fn dispatch_limits(&self, namespace: &str) -> Result<DispatchLimits> {
        Ok(self
            .namespaces
            .namespace_runner(namespace)
            .await?
            .map(|json| RunnerSettings::stored(Some(&json)).dispatch_limits())
            .unwrap_or_default())
    }

    /// A dispatch from `parent` refused: one past a bound is recorded on the parent's audit
    /// trail so the owner sees a pipeline that hit its bounds; one that was never the poster's
    /// to make (not the holder, another namespace) is bad input and changes nothing. Either is
    /// then answered.
    pub(super) async fn refuse_dispatch(
        &self,
        caller: &Caller,
        parent: &Job,
        title: &str,
        refusal: DispatchRefusal,
    ) -> Result<JobsAnswer> {
        if refusal.bound {
            self.audit_dispatch_refusal(caller, &parent.namespace, &parent.id, title, &refusal.why)
                .await?;
        }
        Ok(refuse(JobsAction::Post, refusal.why))
    }

    /// The `job-dispatch-refused` row: who tried to dispatch what from `parent_id`, and why not.
    pub(super) async fn audit_dispatch_refusal(
        &self,
        caller: &Caller,
        namespace: &str,
        parent_id: &str,
        title: &str,
        why: &str,
    ) -> Result<()> {
        self.audit_log
            .append_audit(AuditEntry {
                actor: caller.actor(),
                action: AUDIT_JOB_DISPATCH_REFUSED.into(),
                namespace: Some(namespace.to_owned()),
                path: Some(job_doc_path(parent_id)),
                params: json!({ "job_id": parent_id, "title": title, "refusal": why }),
                at: self.now(),
            })
            .await?;
        Ok(())
    }
}
