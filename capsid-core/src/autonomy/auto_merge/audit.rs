//! What auto-merge writes down: the `auto-merged` and `auto-merge-declined` audit params and
//! the `improve:awaiting-seat` entries, built here so their shapes are asserted, not hoped;
//! and whether a PR needs a new decision at all (one audit row per decision, not per tick).

use serde_json::{Value, json};

use super::{CheckId, PrFacts, job_id_from_body};
use crate::time::Timestamp;

/// Which pull request a record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrRef<'a> {
    /// The policy namespace the PR's repo belongs to.
    pub namespace: &'a str,
    /// `owner/repo`.
    pub repo: &'a str,
    /// The PR number.
    pub number: u64,
}

/// `auto-merged {policy_version, repo, pr, head_sha, job, driver, merge_sha, passed[], at}`.
pub fn merged_params(
    policy_version: &str,
    pr: PrRef<'_>,
    facts: &PrFacts,
    passed: &[CheckId],
    merge_sha: Option<&str>,
    at: Timestamp,
) -> Value {
    json!({
        "policy_version": policy_version,
        "repo": pr.repo,
        "pr": pr.number,
        "head_sha": facts.head_sha,
        "job": job_id_from_body(&facts.body),
        "driver": facts.job_claimed_by,
        "merge_sha": merge_sha,
        "passed": passed,
        "at": at.to_string(),
    })
}

/// What `failed` names when GitHub refused a merge the seven checks allowed.
pub const MERGE_REFUSED: &str = "merge";

/// `auto-merge-declined {policy_version, repo, pr, head_sha, failed, why, passed[], at}`;
/// `failed` is a check's id, or [`MERGE_REFUSED`] when GitHub refused the merge.
pub fn declined_params(
    policy_version: &str,
    pr: PrRef<'_>,
    facts: &PrFacts,
    failed: &str,
    why: &str,
    passed: &[CheckId],
    at: Timestamp,
) -> Value {
    json!({
        "policy_version": policy_version,
        "repo": pr.repo,
        "pr": pr.number,
        "head_sha": facts.head_sha,
        "failed": failed,
        "why": why,
        "passed": passed,
        "at": at.to_string(),
    })
}

/// One declined PR in `improve:awaiting-seat`, which every tick rewrites whole (an empty array
/// when none), so a PR a human merged or closed simply stops appearing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AwaitingSeat {
    /// The policy namespace.
    pub namespace: String,
    /// `owner/repo`.
    pub repo: String,
    /// The PR number.
    pub number: u64,
    /// The check that declined it ([`MERGE_REFUSED`]: GitHub refused the merge).
    pub failed: String,
    /// Why.
    pub why: String,
    /// When, RFC 3339.
    pub at: String,
    /// The head the decision was made at: the same head is not decided again.
    #[serde(default)]
    pub head_sha: String,
}

impl AwaitingSeat {
    /// The entry for a declined PR.
    pub fn new(
        pr: PrRef<'_>,
        head_sha: &str,
        failed: &str,
        why: &str,
        at: Timestamp,
    ) -> AwaitingSeat {
        AwaitingSeat {
            namespace: pr.namespace.to_owned(),
            repo: pr.repo.to_owned(),
            number: pr.number,
            failed: failed.to_owned(),
            why: why.to_owned(),
            at: at.to_string(),
            head_sha: head_sha.to_owned(),
        }
    }

    /// Whether this entry already records the decision for the PR at `head_sha`, given the
    /// verdict the checks reach now (`declined`: the failing check and why; `None`: all
    /// passed). A merge GitHub refused at this head is never retried; a decline stands while
    /// the same check refuses for the same reason. A new push, or a changed verdict, decides
    /// again.
    pub fn decided(&self, head_sha: &str, declined: Option<(&str, &str)>) -> bool {
        if self.head_sha.is_empty() || self.head_sha != head_sha {
            return false;
        }
        if self.failed == MERGE_REFUSED {
            return true;
        }
        declined == Some((self.failed.as_str(), self.why.as_str()))
    }
}

/// The awaiting-seat list a stored value holds (unreadable: empty, so every PR is decided
/// again and the list is rewritten).
pub fn awaiting_from_setting(raw: Option<&str>) -> Vec<AwaitingSeat> {
    raw.and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PrFacts {
        PrFacts {
            body: "for job_00112233aabb".into(),
            head_sha: "feedface".into(),
            job_claimed_by: Some("agent:capsid-driver".into()),
            ..PrFacts::default()
        }
    }

    const PR: PrRef<'static> = PrRef {
        namespace: "capsid",
        repo: "acme/capsid",
        number: 42,
    };

    fn at() -> Timestamp {
        Timestamp::from_millis(1_800_000_000_123)
    }

    #[test]
    fn merged_params_shape() {
        let passed = CheckId::ALL;
        let params = merged_params("v3", PR, &facts(), &passed, Some("c0ffee"), at());
        assert_eq!(
            params,
            json!({
                "policy_version": "v3", "repo": "acme/capsid", "pr": 42, "head_sha": "feedface",
                "job": "job_00112233aabb", "driver": "agent:capsid-driver", "merge_sha": "c0ffee",
                "passed": ["body_names_job", "author_is_driver", "base_is_default_branch", "ci_green",
                           "paths_unprotected", "paths_not_money", "no_migration_workflow_lockfile"],
                "at": "2027-01-15T08:00:00.123Z",
            })
        );
    }

    #[test]
    fn declined_params_and_awaiting_seat_shape() {
        let passed = [CheckId::BodyNamesJob];
        let params = declined_params(
            "v3",
            PR,
            &facts(),
            CheckId::AuthorIsDriver.name(),
            "revoked",
            &passed,
            at(),
        );
        assert_eq!(
            params,
            json!({
                "policy_version": "v3", "repo": "acme/capsid", "pr": 42, "head_sha": "feedface",
                "failed": "author_is_driver", "why": "revoked", "passed": ["body_names_job"],
                "at": "2027-01-15T08:00:00.123Z",
            })
        );
        let seat = AwaitingSeat::new(PR, "feedface", CheckId::CiGreen.name(), "pending", at());
        assert_eq!(
            serde_json::to_value(&seat).ok(),
            Some(
                json!({"namespace": "capsid", "repo": "acme/capsid", "number": 42, "failed": "ci_green",
                        "why": "pending", "at": "2027-01-15T08:00:00.123Z", "head_sha": "feedface"})
            )
        );
    }

    #[test]
    fn a_decision_stands_for_its_head_and_verdict_only() {
        let seat = AwaitingSeat::new(PR, "aaa", "ci_green", "pending", at());
        assert!(seat.decided("aaa", Some(("ci_green", "pending"))));
        assert!(
            !seat.decided("bbb", Some(("ci_green", "pending"))),
            "a push decides again"
        );
        assert!(
            !seat.decided("aaa", Some(("ci_green", "failure"))),
            "a new reason"
        );
        assert!(!seat.decided("aaa", None), "now green: merge");
        let refused = AwaitingSeat::new(PR, "aaa", MERGE_REFUSED, "409 conflict", at());
        assert!(
            refused.decided("aaa", None),
            "a refused merge is not retried"
        );
        assert!(!refused.decided("bbb", None));
        let legacy: AwaitingSeat = serde_json::from_value(json!({"namespace": "capsid",
            "repo": "acme/capsid", "number": 1, "failed": "ci_green", "why": "x", "at": "t"}))
        .unwrap();
        assert!(
            !legacy.decided("", Some(("ci_green", "x"))),
            "no head: decide again"
        );
        assert_eq!(awaiting_from_setting(Some("not json")), Vec::new());
        assert_eq!(
            awaiting_from_setting(Some(&serde_json::to_string(&vec![seat.clone()]).unwrap())),
            vec![seat]
        );
    }
}
