//! The standing approval a protected push or a merge needs (issue 14 item 3, the review gate
//! of SPEC 8 seen from an agent host): it stands when the newest review verdict recorded for
//! the exact head commit, by an agent other than the caller, is `APPROVE`. The caller's own
//! verdicts never count, a verdict on any other commit says nothing about this one (a newer
//! commit needs a new review), and a newer `CHANGES` or `BLOCK` by another agent on the same
//! head overrides an earlier approval, as it does for a job's pull request.

use crate::jobs::review::Verdict;
use crate::ports::ReviewRow;

/// At most this many verdicts on one head are read for the decision.
pub const HEAD_REVIEWS_MAX: usize = 100;

/// Why `sha` is not a full commit id (40 or 64 hex digits, as `git rev-parse HEAD` prints).
pub fn head_sha_problem(sha: &str) -> Option<&'static str> {
    if !(sha.len() == 40 || sha.len() == 64) {
        Some("must be a full commit sha (40 or 64 hex digits, as `git rev-parse HEAD` prints it)")
    } else if !sha.chars().all(|c| c.is_ascii_hexdigit()) {
        Some("must hold hex digits only (a full commit sha, as `git rev-parse HEAD` prints it)")
    } else {
        None
    }
}

/// The decision for one head commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Another agent's `APPROVE` on this head is the newest verdict that counts.
    Approved(ReviewRow),
    /// No approval stands: why, for the agent.
    None(String),
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Whether an approval by an agent other than `caller` stands for `head` in `namespace`,
/// from the verdicts recorded for that head, newest first.
pub fn standing_approval(
    caller: &str,
    namespace: &str,
    head: &str,
    recorded: &[ReviewRow],
) -> Standing {
    standing_approval_excluding(&[caller], namespace, head, recorded)
}

/// The job a pull request's head branch names, when it is a driven job's (`capsid/<job>`):
/// its holder is the pull request's author, whose approval never counts for its merge.
pub fn job_of_branch(head_ref: &str) -> Option<&str> {
    head_ref
        .strip_prefix(crate::drive::push_policy::JOB_BRANCH_PREFIX)
        .filter(|id| id.starts_with("job_") && !id.contains('/'))
}

/// Whether an approval stands for `head` by an agent none of `excluded` (the merger, and the
/// pull request's author when it is known), from the verdicts recorded for that head, newest
/// first.
pub fn standing_approval_excluding(
    excluded: &[&str],
    namespace: &str,
    head: &str,
    recorded: &[ReviewRow],
) -> Standing {
    let caller = excluded.join(" or ");
    let at = format!("head {} in namespace {namespace}", short(head));
    let how = "another agent's approval of this exact commit (jobs approve, or REVIEW ... APPROVE posted through manage_pr action comment)";
    let mut others = recorded.iter().filter(|r| {
        !excluded.contains(&r.reviewer.as_str()) && r.head_sha.eq_ignore_ascii_case(head)
    });
    match others.next() {
        Some(r) if r.verdict == Verdict::Approve => Standing::Approved(r.clone()),
        Some(r) => Standing::None(format!(
            "the newest verdict on {at} by another agent is {} by {} on {}#{}, so no approval stands; it needs {how}.",
            r.verdict.as_str(),
            r.reviewer,
            r.repo,
            r.number
        )),
        None if recorded
            .iter()
            .any(|r| excluded.contains(&r.reviewer.as_str())) =>
        {
            Standing::None(match excluded {
                [one] => format!(
                    "the only verdicts on {at} are {one}'s own, and an agent's own approval never counts; it needs {how}."
                ),
                _ => format!(
                    "the only verdicts on {at} are by {caller}, the merger's and the author's own, which never count; it needs {how}."
                ),
            })
        }
        None => Standing::None(format!(
            "no review verdict is recorded for {at}; it needs {how}."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

    fn verdict(id: i64, reviewer: &str, verdict: &str, head: &str) -> ReviewRow {
        ReviewRow {
            id,
            repo: "octo/alpha".into(),
            number: 4,
            namespace: "alpha".into(),
            reviewer: reviewer.into(),
            verdict: Verdict::parse(verdict).expect("a verdict word"),
            said: String::new(),
            head_sha: head.into(),
            comment_url: "https://github.com/octo/alpha/pull/4#c".into(),
            created_at: crate::time::Timestamp::parse("2026-12-01T10:00:00.000Z").expect("instant"),
        }
    }

    #[test]
    fn a_merge_counts_neither_the_authors_nor_the_mergers_approval() {
        let author = verdict(2, "agent:junior", "APPROVE", HEAD);
        let merger = verdict(3, "agent:deployer", "APPROVE", HEAD);
        let excluded = ["agent:deployer", "agent:junior"];
        let Standing::None(why) = standing_approval_excluding(
            &excluded,
            "alpha",
            HEAD,
            &[merger.clone(), author.clone()],
        ) else {
            panic!("the author's and the merger's own approvals stand")
        };
        assert!(why.contains("the merger's and the author's own"), "{why}");
        let senior = verdict(4, "agent:senior", "APPROVE", HEAD);
        assert_eq!(
            standing_approval_excluding(
                &excluded,
                "alpha",
                HEAD,
                &[merger, senior.clone(), author]
            ),
            Standing::Approved(senior)
        );
        assert_eq!(
            job_of_branch("capsid/job_0123456789ab"),
            Some("job_0123456789ab")
        );
        for other in [
            "feature/x",
            "capsid/",
            "capsid/job_1/x",
            "capsid/other",
            "main",
        ] {
            assert_eq!(job_of_branch(other), None, "{other}");
        }
    }

    #[test]
    fn another_agents_newest_approval_on_the_head_stands() {
        let approve = verdict(2, "agent:reviewer", "APPROVE", HEAD);
        assert_eq!(
            standing_approval(
                "agent:driver",
                "alpha",
                HEAD,
                std::slice::from_ref(&approve)
            ),
            Standing::Approved(approve.clone())
        );
        // The caller's own newer verdict does not hide it.
        let own = verdict(3, "agent:driver", "APPROVE", HEAD);
        assert_eq!(
            standing_approval(
                "agent:driver",
                "alpha",
                HEAD,
                &[own.clone(), approve.clone()]
            ),
            Standing::Approved(approve.clone())
        );
        // A newer CHANGES by another agent overrides it.
        let changes = verdict(4, "agent:other", "CHANGES", HEAD);
        let Standing::None(why) =
            standing_approval("agent:driver", "alpha", HEAD, &[changes, approve])
        else {
            panic!("a newer CHANGES left the approval standing");
        };
        assert!(why.contains("CHANGES by agent:other"), "{why}");
    }

    #[test]
    fn own_verdicts_and_other_heads_never_count() {
        let own = verdict(1, "agent:driver", "APPROVE", HEAD);
        let Standing::None(why) = standing_approval("agent:driver", "alpha", HEAD, &[own]) else {
            panic!("an own approval counted");
        };
        assert!(why.contains("agent:driver's own"), "{why}");
        let older = verdict(1, "agent:reviewer", "APPROVE", &"f".repeat(40));
        let Standing::None(why) = standing_approval("agent:driver", "alpha", HEAD, &[older]) else {
            panic!("an approval of another commit counted");
        };
        assert!(
            why.contains("no review verdict is recorded for head 0123456789ab"),
            "{why}"
        );
        assert!(matches!(
            standing_approval("agent:driver", "alpha", HEAD, &[]),
            Standing::None(_)
        ));
    }

    #[test]
    fn a_head_is_a_full_sha() {
        assert_eq!(head_sha_problem(HEAD), None);
        assert_eq!(head_sha_problem(&"a".repeat(64)), None);
        assert!(head_sha_problem("0123abc").is_some());
        assert!(head_sha_problem(&"g".repeat(40)).is_some());
        assert!(head_sha_problem("").is_some());
    }
}
