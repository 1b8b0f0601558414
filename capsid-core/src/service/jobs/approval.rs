//! `jobs` action `approval`: whether a review verdict by an agent other than the caller
//! stands for one head commit in a namespace (`crate::jobs::approval` decides). `capsid hook
//! pre-tool-use` asks it before letting a push to a protected branch or a merge through; it
//! reads only, so the one scope check asks the read grant on the namespace.

use serde_json::{Value, json};

use super::{JobsAction, JobsArgs, JobsCx};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::jobs::approval::{HEAD_REVIEWS_MAX, Standing, head_sha_problem, standing_approval};
use crate::service::require_namespace;

impl JobsCx<'_> {
    pub(crate) async fn approval(&self, caller: &Caller, a: JobsArgs) -> Result<Value> {
        let act = JobsAction::Approval;
        let Some(ns) = &a.namespace else {
            return Err(Error::Invalid(
                "jobs approval: namespace is required (the namespace whose review verdicts count)"
                    .into(),
            ));
        };
        let Some(head) = &a.head_sha else {
            return Err(Error::Invalid(
                "jobs approval: head_sha is required (the full commit sha, as `git rev-parse HEAD` prints it)".into(),
            ));
        };
        if let Some(problem) = head_sha_problem(head.as_str()) {
            return Err(Error::Invalid(format!("jobs approval: head_sha {problem}")));
        }
        let head = head.as_str().to_ascii_lowercase();
        require_namespace(self.namespaces, ns.as_str()).await?;
        let recorded = self
            .reviews
            .head_reviews(ns.as_str(), &head, HEAD_REVIEWS_MAX)
            .await?;
        // A run credential asks on behalf of its driver: the driver's own approval never counts.
        let actor = caller.holder_actor();
        let mut out = json!({
            "ok": true,
            "action": act.name(),
            "namespace": ns.as_str(),
            "head_sha": head,
            "caller": actor,
        });
        match standing_approval(&actor, ns.as_str(), &head, &recorded) {
            Standing::Approved(r) => {
                out["approved"] = json!(true);
                out["approval"] = json!({
                    "reviewer": r.reviewer,
                    "repo": r.repo,
                    "number": r.number,
                    "head_sha": r.head_sha,
                    "comment_url": r.comment_url,
                    "at": r.created_at,
                });
                out["reason"] = json!(format!(
                    "{} approved head {} on {}#{} ({})",
                    r.reviewer, head, r.repo, r.number, r.created_at
                ));
            }
            Standing::None(why) => {
                out["approved"] = json!(false);
                out["approval"] = Value::Null;
                out["reason"] = json!(why);
            }
        }
        Ok(out)
    }
}
