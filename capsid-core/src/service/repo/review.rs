//! Review verdicts posted through `manage_pr` action `comment` (SPEC 8): when a minted agent's
//! comment carries a verdict (`REVIEW: ... APPROVE|CHANGES|BLOCK`), the pull request's head is
//! read before anything is posted, so the verdict is pinned to what was reviewed, and the
//! verdict is recorded with the comment's audit row in one transaction. This record, not
//! GitHub's comment list, is what the review gate reads.

use super::answer::{PrCommented, ReviewShown};
use super::{RepoCx, Target, amend, host_error, rendered};
use crate::caller::{Caller, Principal};
use crate::error::Result;
use crate::jobs::review::{Verdict, verdict_of};
use crate::ports::NewReview;
use crate::service::Area;

/// A verdict about to be posted, with the head it reviews.
pub(crate) struct PendingVerdict {
    verdict: Verdict,
    said: String,
    head_sha: String,
}

impl RepoCx<'_> {
    /// The verdict `body` carries when `caller` is a minted agent (only a minted agent's
    /// verdict ever counts), with pull request `number`'s head read now. A head that cannot
    /// be read refuses the comment before it is posted: an unpinned verdict would count for
    /// whatever is pushed later.
    pub(crate) async fn pending_verdict(
        &self,
        caller: &Caller,
        t: &Target,
        number: u64,
        body: &str,
    ) -> Result<Option<PendingVerdict>> {
        const TOOL: &str = "manage_pr";
        if !matches!(caller.principal, Principal::Agent { .. }) {
            return Ok(None);
        }
        let Some((verdict, said)) = verdict_of(body) else {
            return Ok(None);
        };
        let pr = t.host.pull_request(&t.repo, number).await.map_err(|e| {
            amend(
                host_error(TOOL, e),
                "(a review verdict is pinned to the head commit it reviewed, and the head could not be read, so nothing was posted)",
            )
        })?;
        Ok(Some(PendingVerdict {
            verdict,
            said,
            head_sha: pr.head_sha,
        }))
    }

    /// Records a posted verdict and the comment's audit row together. When the store refuses,
    /// the comment is on GitHub but the verdict does not count; the answer says so (and the
    /// audit row is still attempted on its own).
    pub(crate) async fn record_verdict(
        &self,
        caller: &Caller,
        namespace: &str,
        t: &Target,
        number: u64,
        pending: PendingVerdict,
        mut out: PrCommented,
    ) -> Result<PrCommented> {
        const TOOL: &str = "manage_pr";
        self.repo_reads.invalidate(&t.repo);
        out.review = Some(ReviewShown {
            verdict: pending.verdict.as_str(),
            head_sha: pending.head_sha.clone(),
            reviewer: caller.actor(),
        });
        let review = NewReview {
            repo: t.full().to_ascii_lowercase(),
            number,
            namespace: namespace.to_owned(),
            reviewer: caller.actor(),
            verdict: pending.verdict,
            said: pending.said,
            head_sha: pending.head_sha,
            comment_url: out.url.clone(),
            at: self.now(),
        };
        let audit = self.audit(caller, TOOL, Some(namespace), None, rendered(&out));
        match self.reviews.record_review(review, audit).await {
            Ok(()) => Ok(out),
            Err(e) => {
                out.review_warning = Some(format!(
                    "the comment was posted, but Capsid could not record its verdict ({e}), so it does not count for the review gate; post the verdict again"
                ));
                self.record_repo_mutation(caller, TOOL, namespace, None, &t.repo, out)
                    .await
            }
        }
    }
}
