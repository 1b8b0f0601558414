//! The review-verdict port: a verdict a minted agent posted through `manage_pr` action
//! `comment`, recorded by Capsid with the pull request's head at that moment, in the same
//! transaction as the comment's audit row; and the verdicts recorded for one pull request,
//! newest first, which the review gate reads instead of GitHub's comment list.

use async_trait::async_trait;

use super::{AuditEntry, StoreResult};
use crate::jobs::review::Verdict;
use crate::time::Timestamp;

/// A verdict to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewReview {
    /// The reviewed repository, `owner/name` lower-cased (GitHub's names are case-insensitive).
    pub repo: String,
    /// The pull-request number.
    pub number: u64,
    /// The namespace whose mapping reached the repository.
    pub namespace: String,
    /// The reviewing agent's actor string (`agent:<name>`).
    pub reviewer: String,
    /// `APPROVE`, `CHANGES` or `BLOCK`.
    pub verdict: Verdict,
    /// What the comment said besides the verdict.
    pub said: String,
    /// The pull request's head commit when the verdict was posted.
    pub head_sha: String,
    /// The posted comment's URL.
    pub comment_url: String,
    /// When.
    pub at: Timestamp,
}

/// A recorded verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewRow {
    /// Row id (newest is largest).
    pub id: i64,
    /// See [`NewReview`].
    pub repo: String,
    /// See [`NewReview`].
    pub number: u64,
    /// See [`NewReview`].
    pub namespace: String,
    /// See [`NewReview`].
    pub reviewer: String,
    /// See [`NewReview`].
    pub verdict: Verdict,
    /// See [`NewReview`].
    pub said: String,
    /// See [`NewReview`].
    pub head_sha: String,
    /// See [`NewReview`].
    pub comment_url: String,
    /// When.
    pub created_at: Timestamp,
}

/// Recorded review verdicts.
#[cfg_attr(test, capsid_refusing::refused)]
#[async_trait]
pub trait ReviewStore: Send + Sync {
    /// Records `review` and its audit row in one transaction.
    async fn record_review(&self, review: NewReview, audit: AuditEntry) -> StoreResult<()>;
    /// The verdicts recorded for pull request `number` of `repo` (lower-cased), newest first,
    /// at most `limit`.
    async fn reviews(&self, repo: &str, number: u64, limit: usize) -> StoreResult<Vec<ReviewRow>>;
    /// The verdicts recorded in `namespace` for head commit `head_sha` (any pull request),
    /// newest first, at most `limit`: what the push hook's standing-approval check reads.
    async fn head_reviews(
        &self,
        namespace: &str,
        head_sha: &str,
        limit: usize,
    ) -> StoreResult<Vec<ReviewRow>>;
}
