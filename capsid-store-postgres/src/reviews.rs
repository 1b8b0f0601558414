//! The review-verdict port: a verdict and its audit row in one transaction, and one pull
//! request's verdicts newest first (served by the `(repo, number, id DESC)` index), and one
//! head commit's verdicts in a namespace (a scan: the table holds one row per verdict posted).

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::ports::{AuditEntry, NewReview, ReviewRow, ReviewStore, StoreResult};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::PgStore;
use crate::audit;
use crate::error::{always, finish, limit, translate, with_retry};
use capsid_core::jobs::review::Verdict;

const INSERT_REVIEW: &str = "INSERT INTO review_verdicts (repo, number, namespace, reviewer, verdict, said, \
     head_sha, comment_url, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const REVIEWS: &str = "SELECT id, repo, number, namespace, reviewer, verdict, said, head_sha, comment_url, \
     created_at FROM review_verdicts WHERE repo = $1 AND number = $2 ORDER BY id DESC LIMIT $3";

const HEAD_REVIEWS: &str = "SELECT id, repo, number, namespace, reviewer, verdict, said, head_sha, comment_url, \
     created_at FROM review_verdicts WHERE namespace = $1 AND head_sha = $2 ORDER BY id DESC LIMIT $3";

fn review_row(row: &PgRow) -> Result<ReviewRow, sqlx::Error> {
    Ok(ReviewRow {
        id: row.try_get("id")?,
        repo: row.try_get("repo")?,
        number: u64::try_from(row.try_get::<i64, _>("number")?).unwrap_or(0),
        namespace: row.try_get("namespace")?,
        reviewer: row.try_get("reviewer")?,
        verdict: crate::rows::word(row, "verdict", Verdict::parse)?,
        said: row.try_get("said")?,
        head_sha: row.try_get("head_sha")?,
        comment_url: row.try_get("comment_url")?,
        created_at: row.time("created_at")?,
    })
}

#[async_trait]
impl ReviewStore for PgStore {
    async fn record_review(&self, review: NewReview, audit: AuditEntry) -> StoreResult<()> {
        let pool = &self.pool;
        let (review, audit) = (&review, &audit);
        let at = review.at.to_string();
        let at = at.as_str();
        with_retry(|| {
            Box::pin(async move {
                let mut tx = pool.begin().await?;
                let result = async {
                    sqlx::query(INSERT_REVIEW)
                        .bind(&review.repo)
                        .bind(i64::try_from(review.number).unwrap_or(i64::MAX))
                        .bind(&review.namespace)
                        .bind(&review.reviewer)
                        .bind(review.verdict.as_str())
                        .bind(&review.said)
                        .bind(&review.head_sha)
                        .bind(&review.comment_url)
                        .bind(at)
                        .execute(&mut *tx)
                        .await?;
                    audit::insert(&mut tx, audit).await
                }
                .await;
                finish(tx, result, always).await
            })
        })
        .await
    }

    async fn reviews(&self, repo: &str, number: u64, max: usize) -> StoreResult<Vec<ReviewRow>> {
        let rows = sqlx::query(REVIEWS)
            .bind(repo)
            .bind(i64::try_from(number).unwrap_or(i64::MAX))
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(review_row)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }

    async fn head_reviews(
        &self,
        namespace: &str,
        head_sha: &str,
        max: usize,
    ) -> StoreResult<Vec<ReviewRow>> {
        let rows = sqlx::query(HEAD_REVIEWS)
            .bind(namespace)
            .bind(head_sha)
            .bind(limit(max))
            .fetch_all(&self.pool)
            .await
            .map_err(translate)?;
        rows.iter()
            .map(review_row)
            .collect::<Result<_, _>>()
            .map_err(translate)
    }
}
