//! The review-verdict port: a verdict and its audit row in one transaction, and one pull
//! request's verdicts newest first (served by the `(repo, number, id DESC)` index), and one
//! head commit's verdicts in a namespace (a scan: the table holds one row per verdict posted).

use crate::rows::TimeColumns;
use async_trait::async_trait;
use capsid_core::ports::{AuditEntry, NewReview, ReviewRow, ReviewStore, StoreResult};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::error::DbResult;
use crate::rows::{self, insert_audit, limit as sql_limit};
use crate::store::{SqliteStore, commit};
use capsid_core::jobs::review::Verdict;

fn review_row(row: &SqliteRow) -> Result<ReviewRow, sqlx::Error> {
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
impl ReviewStore for SqliteStore {
    async fn record_review(&self, review: NewReview, audit: AuditEntry) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO review_verdicts (repo, number, namespace, reviewer, verdict, said, head_sha, \
             comment_url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&review.repo)
        .bind(i64::try_from(review.number).unwrap_or(i64::MAX))
        .bind(&review.namespace)
        .bind(&review.reviewer)
        .bind(review.verdict.as_str())
        .bind(&review.said)
        .bind(&review.head_sha)
        .bind(&review.comment_url)
        .bind(review.at.to_string())
        .execute(&mut *tx)
        .await
        .db()?;
        insert_audit(&mut tx, &audit).await.db()?;
        commit(tx).await
    }

    async fn reviews(&self, repo: &str, number: u64, limit: usize) -> StoreResult<Vec<ReviewRow>> {
        let found = sqlx::query(
            "SELECT id, repo, number, namespace, reviewer, verdict, said, head_sha, comment_url, created_at \
             FROM review_verdicts WHERE repo = ? AND number = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(repo)
        .bind(i64::try_from(number).unwrap_or(i64::MAX))
        .bind(sql_limit(limit))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, review_row).db()
    }

    async fn head_reviews(
        &self,
        namespace: &str,
        head_sha: &str,
        limit: usize,
    ) -> StoreResult<Vec<ReviewRow>> {
        let found = sqlx::query(
            "SELECT id, repo, number, namespace, reviewer, verdict, said, head_sha, comment_url, created_at \
             FROM review_verdicts WHERE namespace = ? AND head_sha = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(namespace)
        .bind(head_sha)
        .bind(sql_limit(limit))
        .fetch_all(self.reader())
        .await
        .db()?;
        rows::all(&found, review_row).db()
    }
}
