//! The review gate (reference 6.6): reading a reviewer's verdict off a pull request's
//! issue comments, and what that verdict does to a job on `complete` or `block`.
//!
//! The envelope is deliberately strict: `REVIEW:` at the start (any case) and one of three
//! words at the end. The verdict word matches case-insensitively, as `src/review.ts`
//! upper-cases the trailing word before comparing. The newest review wins.

use std::sync::LazyLock;

use regex::Regex;

use super::block::CORRECTION_CAP;
use super::pr_url::{PrUrl, review_pr};
use crate::time::Timestamp;

/// The prefix a review comment opens with (compared case-insensitively).
pub const REVIEW_PREFIX: &str = "REVIEW:";

/// What a reviewer decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The work may proceed.
    Approve,
    /// Back to the driver; costs a correction.
    Changes,
    /// Stopped for a human.
    Block,
}

impl Verdict {
    /// Every verdict, in the Worker's order.
    pub const ALL: [Verdict; 3] = [Verdict::Approve, Verdict::Changes, Verdict::Block];

    /// The word a comment ends with.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "APPROVE",
            Verdict::Changes => "CHANGES",
            Verdict::Block => "BLOCK",
        }
    }
}

/// One issue comment on the pull request, as the adapter reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewComment {
    /// The author's login (names the reviewer; authorizes nothing).
    pub login: String,
    /// The comment text.
    pub body: String,
    /// GitHub's `created_at`, as given.
    pub created_at: String,
}

/// A comment that is a review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Review {
    /// The verdict.
    pub verdict: Verdict,
    /// Who wrote it.
    pub by: String,
    /// When, as given.
    pub at: String,
    /// The comment with its envelope stripped.
    pub said: String,
}

fn pattern(source: &str) -> Regex {
    Regex::new(source).unwrap_or_else(|e| unreachable!("built-in pattern {source} is valid: {e}"))
}

static TRAILING_FORMAT: LazyLock<Regex> = LazyLock::new(|| pattern(r"[\s*_`.!]+$"));
static LAST_WORD: LazyLock<Regex> = LazyLock::new(|| pattern(r"[A-Za-z]+$"));
static SAID_TAIL: LazyLock<Regex> = LazyLock::new(|| pattern(r"[\s*_`,:-]+$"));

/// The verdict a comment body carries and what it said besides, or `None` when it is not
/// a review. Both ends are required: the prefix and a verdict as the last word.
pub fn verdict_of(body: &str) -> Option<(Verdict, String)> {
    let body = body.trim();
    let prefix = body.get(..REVIEW_PREFIX.len())?;
    if !prefix.eq_ignore_ascii_case(REVIEW_PREFIX) {
        return None;
    }
    let rest = body[REVIEW_PREFIX.len()..].trim();
    let tail = TRAILING_FORMAT.replace(rest, "");
    let word = LAST_WORD.find(&tail)?;
    let verdict = Verdict::ALL
        .into_iter()
        .find(|v| v.as_str().eq_ignore_ascii_case(word.as_str()))?;
    let said = SAID_TAIL
        .replace(&tail[..word.start()], "")
        .trim()
        .to_owned();
    Some((verdict, said))
}

/// The review that decides: the newest by `created_at`. Unparseable timestamps rank below
/// every parseable one; ties go to the later comment in the list.
pub fn latest_review(comments: &[ReviewComment]) -> Option<Review> {
    let mut best: Option<(Option<Timestamp>, Review)> = None;
    for comment in comments {
        let Some((verdict, said)) = verdict_of(&comment.body) else {
            continue;
        };
        let rank = Timestamp::parse(&comment.created_at);
        // `None < Some(_)`, so an unparseable timestamp wins only when nothing else does.
        if best
            .as_ref()
            .is_none_or(|(best_rank, _)| rank >= *best_rank)
        {
            let review = Review {
                verdict,
                by: comment.login.clone(),
                at: comment.created_at.clone(),
                said,
            };
            best = Some((rank, review));
        }
    }
    best.map(|(_, review)| review)
}

/// The pull request whose review gates this job, when the gate applies: the job requires a
/// review and its `result_ref` is an anchored PR URL. Otherwise the job proceeds ungated.
pub fn review_target(review_required: bool, result_ref: Option<&str>) -> Option<PrUrl> {
    if !review_required {
        return None;
    }
    review_pr(result_ref?)
}

/// What the gate does to a job that tries to complete or block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewGate {
    /// No review yet: refused, the job stays claimed and its lease keeps running.
    Waiting {
        /// The refusal.
        reason: String,
    },
    /// APPROVE: the transition proceeds.
    Approved(Review),
    /// CHANGES: the job stays claimed, its summary becomes `summary`, a correction is spent.
    Changes {
        /// The deciding review.
        review: Review,
        /// `review by <login>: CHANGES. <said>`.
        summary: String,
    },
    /// BLOCK: the job is blocked through the normal block path with `reason`.
    Block {
        /// The deciding review.
        review: Review,
        /// `review by <login>: BLOCK. <said>`.
        reason: String,
    },
    /// GitHub could not be read: refused, the job stays held. Never an approval.
    Unreadable {
        /// The refusal.
        reason: String,
    },
}

fn verdict_line(review: &Review) -> String {
    let head = format!("review by {}: {}.", review.by, review.verdict.as_str());
    if review.said.is_empty() {
        head
    } else {
        format!("{head} {}", review.said)
    }
}

/// The gate's outcome for `pr` given its comments, or the reason they could not be read.
pub fn review_gate(pr: &PrUrl, comments: Result<&[ReviewComment], &str>) -> ReviewGate {
    let comments = match comments {
        Ok(comments) => comments,
        Err(why) => {
            return ReviewGate::Unreadable {
                reason: format!(
                    "the review comments on {}#{} could not be read ({why}); the job stays held, because an unreadable review is never an approval",
                    pr.full_repo(),
                    pr.number
                ),
            };
        }
    };
    let Some(review) = latest_review(comments) else {
        let words: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
        return ReviewGate::Waiting {
            reason: format!(
                "no review yet. This job was posted with review_required, so it waits for a comment on {}#{} starting with '{REVIEW_PREFIX}' and ending with {}.",
                pr.full_repo(),
                pr.number,
                words.join(", ")
            ),
        };
    };
    match review.verdict {
        Verdict::Approve => ReviewGate::Approved(review),
        Verdict::Changes => ReviewGate::Changes {
            summary: verdict_line(&review),
            review,
        },
        Verdict::Block => ReviewGate::Block {
            reason: verdict_line(&review),
            review,
        },
    }
}

/// The note a CHANGES verdict returns: which correction this was, out of the cap.
pub fn changes_note(corrections_after: i64) -> String {
    format!(
        "the review asked for changes, so the job stays with its holder; this spent a correction ({corrections_after} of {CORRECTION_CAP})"
    )
}

#[cfg(test)]
mod tests;
