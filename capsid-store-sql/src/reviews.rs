//! The review-verdict port: a verdict and its audit row in one unit of work; one pull
//! request's verdicts newest first (the `(repo, number, id DESC)` index), and one head
//! commit's verdicts in a namespace.

use capsid_core::jobs::review::Verdict;
use capsid_core::ports::{AuditEntry, NewReview, ReviewRow, StoreResult};

use crate::engine::in_unit;
use crate::engine::{Engine, always, read_all};
use crate::row::Row;
use crate::stmt::Stmt;

const INSERT: &str = "INSERT INTO review_verdicts (repo, number, namespace, reviewer, verdict, said, \
     head_sha, comment_url, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const COLUMNS: &str = "SELECT id, repo, number, namespace, reviewer, verdict, said, head_sha, comment_url, created_at \
     FROM review_verdicts";

fn review(row: &Row) -> Result<ReviewRow, sqlx::Error> {
    Ok(ReviewRow {
        id: row.int("id")?,
        repo: row.text("repo")?,
        number: row.count("number")?,
        namespace: row.text("namespace")?,
        reviewer: row.text("reviewer")?,
        verdict: row.word("verdict", Verdict::parse)?,
        said: row.text("said")?,
        head_sha: row.text("head_sha")?,
        comment_url: row.text("comment_url")?,
        created_at: row.time("created_at")?,
    })
}

/// `ReviewStore::record_review`.
pub async fn record_review(
    engine: &impl Engine,
    review: NewReview,
    audit: AuditEntry,
) -> StoreResult<()> {
    let (review, audit) = (&review, &audit);
    in_unit!(engine, always, |tx| async {
        tx.execute(
            Stmt::new(INSERT)
                .bind(&review.repo)
                .bind(review.number)
                .bind(&review.namespace)
                .bind(&review.reviewer)
                .bind(review.verdict.as_str())
                .bind(&review.said)
                .bind(&review.head_sha)
                .bind(&review.comment_url)
                .bind(review.at),
        )
        .await?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(())
    }
    .await)
}

/// `ReviewStore::reviews`.
pub async fn reviews(
    engine: &impl Engine,
    repo: &str,
    number: u64,
    limit: usize,
) -> StoreResult<Vec<ReviewRow>> {
    let sql = format!("{COLUMNS} WHERE repo = $1 AND number = $2 ORDER BY id DESC LIMIT $3");
    read_all(
        engine,
        Stmt::new(sql).bind(repo).bind(number).bind(limit),
        review,
    )
    .await
}

/// `ReviewStore::head_reviews`.
pub async fn head_reviews(
    engine: &impl Engine,
    namespace: &str,
    head_sha: &str,
    limit: usize,
) -> StoreResult<Vec<ReviewRow>> {
    let sql = format!("{COLUMNS} WHERE namespace = $1 AND head_sha = $2 ORDER BY id DESC LIMIT $3");
    read_all(
        engine,
        Stmt::new(sql).bind(namespace).bind(head_sha).bind(limit),
        review,
    )
    .await
}
