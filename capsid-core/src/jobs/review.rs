//! The review gate (reference 6.6, hardened by SPEC 8): which pull request gates a job, the
//! verdict that decides, and what it does to a job on `complete` or `block`.
//!
//! A verdict counts only when a minted agent other than the job's holder posted it through
//! `manage_pr` action `comment`, so Capsid recorded it with the pull request's head at that
//! moment (any GitHub user's comment counts for nothing); a newer commit on the head
//! invalidates it. A `review_required` job completes only with a `result_ref` that is a pull
//! request of one of the namespace's mapped repositories.
//!
//! The envelope is deliberately strict: `REVIEW:` at the start (any case) and one of three
//! words at the end. The verdict word matches case-insensitively, as `src/review.ts`
//! upper-cases the trailing word before comparing. The newest counting verdict wins.

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

/// A verdict as Capsid recorded it: posted through `manage_pr` action `comment` by a minted
/// agent, pinned to the pull request's head commit at that moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedVerdict {
    /// The reviewing agent's actor string.
    pub reviewer: String,
    /// The verdict.
    pub verdict: Verdict,
    /// What the comment said besides the verdict.
    pub said: String,
    /// The head commit it reviewed.
    pub head_sha: String,
    /// When it was recorded.
    pub at: Timestamp,
}

/// A review that decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Review {
    /// The verdict.
    pub verdict: Verdict,
    /// Who gave it (an agent's actor string).
    pub by: String,
    /// When it was recorded.
    pub at: Timestamp,
    /// The comment with its envelope stripped.
    pub said: String,
    /// The head commit it reviewed.
    pub head_sha: String,
}

impl Verdict {
    /// The verdict named `word` (exact upper-case spelling, as recorded).
    pub fn parse(word: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == word)
    }
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

/// Why no recorded verdict decides.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NoReview {
    /// Nobody but the holder gave one.
    None,
    /// The newest one by somebody else reviewed an older head.
    Stale(RecordedVerdict),
}

/// The verdict that decides, from `recorded` (newest first): the newest by an agent other
/// than `holder` on the pull request's current `head`. A verdict on an older head no longer
/// counts (a newer commit invalidates it), and the holder's own never does.
fn deciding<'a>(
    holder: &str,
    head: &str,
    recorded: &'a [RecordedVerdict],
) -> Result<&'a RecordedVerdict, NoReview> {
    let mut others = recorded.iter().filter(|r| r.reviewer != holder).peekable();
    let newest = others.peek().map(|r| (*r).clone());
    others.find(|r| r.head_sha == head).ok_or(match newest {
        Some(stale) => NoReview::Stale(stale),
        None => NoReview::None,
    })
}

/// Whether and how the review gate applies to a job that tries to complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewTarget {
    /// The job was not posted with `review_required`.
    Ungated,
    /// The pull request whose reviews gate it, on a repository the namespace maps (spelled
    /// as the mapping spells it).
    Gated(PrUrl),
    /// It requires a review but names no pull request of the namespace's repositories, so
    /// it cannot complete.
    Refused(String),
}

/// The review gate's target: a `review_required` job completes only with a `result_ref`
/// that is a pull request of one of `mapped` (the namespace's repositories, `owner/name`,
/// compared case-insensitively as GitHub does).
pub fn review_target(
    review_required: bool,
    result_ref: Option<&str>,
    namespace: &str,
    mapped: &[String],
) -> ReviewTarget {
    if !review_required {
        return ReviewTarget::Ungated;
    }
    let shape = "https://github.com/<owner>/<repo>/pull/<n>";
    let Some(reference) = result_ref.map(str::trim).filter(|r| !r.is_empty()) else {
        return ReviewTarget::Refused(format!(
            "this job was posted with review_required, so it completes only with result_ref naming its pull request ({shape}) on a repository mapped to namespace {namespace}, reviewed by another agent"
        ));
    };
    let Some(pr) = review_pr(reference) else {
        return ReviewTarget::Refused(format!(
            "this job was posted with review_required, and result_ref {reference:?} is not a pull request URL ({shape}); a reviewed job completes only with its pull request"
        ));
    };
    let full = pr.full_repo();
    match mapped.iter().find(|m| m.eq_ignore_ascii_case(&full)) {
        Some(m) => {
            let (owner, repo) = m.split_once('/').unwrap_or((m.as_str(), ""));
            ReviewTarget::Gated(PrUrl {
                owner: owner.to_owned(),
                repo: repo.to_owned(),
                number: pr.number,
            })
        }
        None => ReviewTarget::Refused(format!(
            "result_ref names a pull request on {full}, which is not mapped to namespace {namespace} (mapped: {}); the review gate reads only the namespace's own repositories",
            if mapped.is_empty() {
                "none".to_owned()
            } else {
                mapped.join(", ")
            }
        )),
    }
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

/// The gate's outcome for `pr`, held by `holder`, given the pull request's current head (or
/// why it could not be read) and the verdicts Capsid recorded for it, newest first.
pub fn review_gate(
    pr: &PrUrl,
    holder: &str,
    head: Result<&str, &str>,
    recorded: &[RecordedVerdict],
) -> ReviewGate {
    let at = format!("{}#{}", pr.full_repo(), pr.number);
    let head = match head {
        Ok(head) => head,
        Err(why) => {
            return ReviewGate::Unreadable {
                reason: format!(
                    "the head of {at} could not be read ({why}), so no review can be matched to what it reviewed; the job stays held, because an unreadable review is never an approval"
                ),
            };
        }
    };
    let words: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
    let how = format!(
        "a verdict from an agent other than the holder, posted through manage_pr action comment ('{REVIEW_PREFIX} ... ' ending with {}); a comment made on GitHub directly does not count",
        words.join(", ")
    );
    let recorded = match deciding(holder, head, recorded) {
        Ok(r) => r,
        Err(NoReview::None) => {
            return ReviewGate::Waiting {
                reason: format!(
                    "no review yet. This job was posted with review_required, so it waits for {how}, on {at}."
                ),
            };
        }
        Err(NoReview::Stale(stale)) => {
            return ReviewGate::Waiting {
                reason: format!(
                    "the newest review of {at} ({} by {}) was of head {}, and the head is now {}: a newer commit needs a new review, {how}.",
                    stale.verdict.as_str(),
                    stale.reviewer,
                    short(&stale.head_sha),
                    short(head)
                ),
            };
        }
    };
    let review = Review {
        verdict: recorded.verdict,
        by: recorded.reviewer.clone(),
        at: recorded.at,
        said: recorded.said.clone(),
        head_sha: recorded.head_sha.clone(),
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

/// The first 12 characters of a sha, for messages.
fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The note a CHANGES verdict returns: which correction this was, out of the cap.
pub fn changes_note(corrections_after: i64) -> String {
    format!(
        "the review asked for changes, so the job stays with its holder; this spent a correction ({corrections_after} of {CORRECTION_CAP})"
    )
}

#[cfg(test)]
mod tests;
