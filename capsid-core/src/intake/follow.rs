//! What the intake does about an issue it took in, given its job and the issue now: wait, fail
//! the still-queued job of an issue closed or unlabelled, or close the loop on a finished job
//! (the pull request commented on the issue).

use crate::jobs::JobStatus;
use crate::jobs::pr_url::review_pr;

/// The issue as the intake finds it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssueNow {
    /// Open and labelled (the listing showed it).
    OpenLabelled,
    /// Open, without the policy's label.
    Unlabelled,
    /// Closed.
    Closed,
    /// GitHub no longer shows it (deleted, transferred, or the App lost access).
    Gone,
}

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FollowUp {
    /// Nothing yet: the job is queued for an open labelled issue, or someone holds it.
    Wait,
    /// Fail the still-queued job with this reason.
    FailJob(String),
    /// The job is done with this pull request: comment it on the issue, then close the loop.
    CommentPr(String),
    /// The job is done without a pull request: say so on the issue (with its result, if any),
    /// then close the loop.
    CommentDone(Option<String>),
    /// The job failed: close the loop without a word on the issue.
    Ended(String),
}

/// The job's branch, which the pull request that finishes an issue comes from.
pub fn job_branch(job_id: &str) -> String {
    format!("capsid/{job_id}")
}

/// The follow-up for a job in `status` with `result_ref`, for issue `number` of `repo` that
/// is `issue` now (asked only while the job is queued: `None` when not known), under `label`.
/// `pr` is the pull request GitHub knows for the job's branch (asked only once the job is
/// done): the only one the issue is told of. A pull request the job's result names but GitHub
/// does not show from the job's branch is not repeated on the issue.
pub fn follow_up(
    status: JobStatus,
    result_ref: Option<&str>,
    pr: Option<&str>,
    issue: Option<IssueNow>,
    repo: &str,
    number: u64,
    label: &str,
) -> FollowUp {
    match status {
        JobStatus::Done => match (pr, result_ref.map(str::trim).filter(|r| !r.is_empty())) {
            (Some(pr), _) => FollowUp::CommentPr(pr.to_owned()),
            (None, Some(r)) if review_pr(r).is_some() => FollowUp::CommentDone(None),
            (None, other) => FollowUp::CommentDone(other.map(str::to_owned)),
        },
        JobStatus::Failed => FollowUp::Ended("the job failed".to_owned()),
        JobStatus::Claimed | JobStatus::Blocked => FollowUp::Wait,
        JobStatus::Queued => match issue {
            None | Some(IssueNow::OpenLabelled) => FollowUp::Wait,
            Some(IssueNow::Closed) => FollowUp::FailJob(format!(
                "issue {repo}#{number} was closed while its job was still queued"
            )),
            Some(IssueNow::Unlabelled) => FollowUp::FailJob(format!(
                "the label '{label}' was removed from issue {repo}#{number} while its job was still queued"
            )),
            Some(IssueNow::Gone) => FollowUp::FailJob(format!(
                "issue {repo}#{number} is no longer on GitHub (deleted, transferred or out of the App's reach) while its job was still queued"
            )),
        },
    }
}

/// How an issue read from GitHub stands under `label`.
pub fn issue_now(open: bool, labels: &[String], label: &str) -> IssueNow {
    if !open {
        IssueNow::Closed
    } else if labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
        IssueNow::OpenLabelled
    } else {
        IssueNow::Unlabelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PR: &str = "https://github.com/octo/alpha/pull/12";

    fn f(status: JobStatus, result: Option<&str>, issue: Option<IssueNow>) -> FollowUp {
        follow_up(status, result, None, issue, "octo/alpha", 7, "capsid")
    }

    #[test]
    fn a_done_issue_hears_of_the_pull_request_github_shows_from_the_jobs_branch_only() {
        let done =
            |result, pr| follow_up(JobStatus::Done, result, pr, None, "octo/alpha", 7, "capsid");
        assert_eq!(done(Some(PR), Some(PR)), FollowUp::CommentPr(PR.into()));
        let other = "https://github.com/octo/alpha/pull/99";
        assert_eq!(done(Some(other), Some(PR)), FollowUp::CommentPr(PR.into()));
        assert_eq!(done(None, Some(PR)), FollowUp::CommentPr(PR.into()));
        // A URL on the job's word alone is not repeated.
        assert_eq!(done(Some(other), None), FollowUp::CommentDone(None));
        assert_eq!(
            done(Some("notes/result.md"), None),
            FollowUp::CommentDone(Some("notes/result.md".into()))
        );
        assert_eq!(job_branch("job_0123456789ab"), "capsid/job_0123456789ab");
    }

    #[test]
    fn a_queued_job_fails_when_its_issue_closes_or_loses_the_label() {
        assert_eq!(
            f(JobStatus::Queued, None, Some(IssueNow::OpenLabelled)),
            FollowUp::Wait
        );
        assert_eq!(f(JobStatus::Queued, None, None), FollowUp::Wait);
        let FollowUp::FailJob(why) = f(JobStatus::Queued, None, Some(IssueNow::Closed)) else {
            panic!("closed fails the job");
        };
        assert!(why.contains("octo/alpha#7 was closed"), "{why}");
        let FollowUp::FailJob(why) = f(JobStatus::Queued, None, Some(IssueNow::Unlabelled)) else {
            panic!("unlabelled fails the job");
        };
        assert!(why.contains("label 'capsid' was removed"), "{why}");
        assert!(matches!(
            f(JobStatus::Queued, None, Some(IssueNow::Gone)),
            FollowUp::FailJob(_)
        ));
    }

    #[test]
    fn a_held_job_is_never_failed_by_the_issue() {
        for status in [JobStatus::Claimed, JobStatus::Blocked] {
            for issue in [IssueNow::Closed, IssueNow::Unlabelled, IssueNow::Gone] {
                assert_eq!(f(status, None, Some(issue)), FollowUp::Wait, "{status:?}");
            }
        }
    }

    #[test]
    fn a_done_job_comments_its_pull_request_or_its_result() {
        assert_eq!(
            f(JobStatus::Done, Some(PR), Some(IssueNow::Closed)),
            FollowUp::CommentDone(None),
            "a pull request GitHub does not show from the job's branch is not repeated"
        );
        assert_eq!(
            f(JobStatus::Done, Some(" notes/x.md "), None),
            FollowUp::CommentDone(Some("notes/x.md".into()))
        );
        assert_eq!(f(JobStatus::Done, None, None), FollowUp::CommentDone(None));
        assert_eq!(
            f(JobStatus::Done, Some("https://example.com/pull/1"), None),
            FollowUp::CommentDone(Some("https://example.com/pull/1".into())),
            "only a GitHub pull request URL is a pull request"
        );
        assert!(matches!(
            f(JobStatus::Failed, Some(PR), None),
            FollowUp::Ended(_)
        ));
    }

    #[test]
    fn the_label_is_matched_without_case() {
        let labels = vec!["bug".to_owned(), "Capsid".to_owned()];
        assert_eq!(issue_now(true, &labels, "capsid"), IssueNow::OpenLabelled);
        assert_eq!(
            issue_now(true, &labels[..1], "capsid"),
            IssueNow::Unlabelled
        );
        assert_eq!(issue_now(false, &labels, "capsid"), IssueNow::Closed);
    }
}
