//! What auto-merge writes down: the `auto-merged` and `auto-merge-declined` audit params and
//! the `improve:awaiting-seat` entries, built here so their shapes are asserted, not hoped.

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

/// `auto-merge-declined {policy_version, repo, pr, head_sha, failed, why, passed[], at}`.
pub fn declined_params(
    policy_version: &str,
    pr: PrRef<'_>,
    facts: &PrFacts,
    failed: CheckId,
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
    /// The check that declined it.
    pub failed: String,
    /// Why.
    pub why: String,
    /// When, RFC 3339.
    pub at: String,
}

impl AwaitingSeat {
    /// The entry for a declined PR.
    pub fn new(pr: PrRef<'_>, failed: CheckId, why: &str, at: Timestamp) -> AwaitingSeat {
        AwaitingSeat {
            namespace: pr.namespace.to_owned(),
            repo: pr.repo.to_owned(),
            number: pr.number,
            failed: failed.name().to_owned(),
            why: why.to_owned(),
            at: at.to_string(),
        }
    }
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
            CheckId::AuthorIsDriver,
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
        let seat = AwaitingSeat::new(PR, CheckId::CiGreen, "pending", at());
        assert_eq!(
            serde_json::to_value(&seat).ok(),
            Some(
                json!({"namespace": "capsid", "repo": "acme/capsid", "number": 42, "failed": "ci_green",
                        "why": "pending", "at": "2027-01-15T08:00:00.123Z"})
            )
        );
    }
}
