//! Run credentials: what a driven agent process holds instead of its driver's key. The server
//! issues one with each claim and each resume of a job by a minted agent; it names the job and
//! is tagged with an HMAC (under a key derived from the signing secret) over the job, its
//! holder and the start of the current claim. Nothing is stored: a credential resolves only
//! while the job is still `claimed` by that holder in that same claim and its lease runs, so
//! it stops working the moment the job is completed, failed, blocked, swept or claimed again.
//!
//! What it may do is [`run_scopes`]: record checkpoints for its job, read and search the
//! job's namespace, ask whether an approval stands, and post follow-ups whose parent is its
//! job. It may not complete, fail, block, resume, heartbeat or claim any job: only the
//! driver's own process closes the job, from what it measured.

use std::collections::BTreeSet;

use crate::crypto::{ct_eq, hmac_sha256_hex};
use crate::jobs::role::Role;
use crate::jobs::{Job, JobStatus};
use crate::scope::{Axis, Flag, Grant, Scopes};
use crate::time::Timestamp;

/// Every run credential starts with this.
pub const PREFIX: &str = "capsid_run_";

/// The label the credential key is derived under (domain separation from job signatures).
const KEY_LABEL: &str = "capsid-run-credential/v1";

/// The tools (and `tool.action` entries) a run credential may call.
pub const RUN_TOOLS: &[&str] = &[
    "checkpoint",
    "checkmarks",
    "checkmarks.get",
    "checkmarks.list",
    "checkmarks.log",
    "shared",
    "shared.get",
    "shared.list",
    "jobs",
    "jobs.approval",
    "jobs.post",
    "namespaces",
    "read",
    "list",
    "brief",
    "backlinks",
    "find",
    "search",
    "history",
];

/// Why a presented run credential does not resolve (said only in logs: the caller gets 401).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunRefusal {
    /// Not of the credential's shape.
    Malformed,
    /// The job is not claimed (done, failed, blocked, queued) or has no holder.
    NotClaimed,
    /// The lease has run out.
    LeaseOver,
    /// The tag does not match this claim (another claim, another secret, forged).
    Mismatch,
}

/// The job id a presented credential names, if it has the credential's shape.
pub fn job_id_of(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(PREFIX)?;
    let (job, tag) = rest.split_once('.')?;
    let shaped = !job.is_empty()
        && job.len() <= 64
        && job
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && tag.len() == 64
        && tag.bytes().all(|b| b.is_ascii_hexdigit());
    shaped.then_some(job)
}

fn tag(secret: &str, job_id: &str, holder: &str, claimed_at: Timestamp) -> String {
    let key = hmac_sha256_hex(secret, KEY_LABEL);
    hmac_sha256_hex(key, format!("{job_id}\n{holder}\n{claimed_at}"))
}

/// The driver agent's name holding `job`, when a minted agent holds it in a claim.
fn holder(job: &Job) -> Option<(&str, Timestamp)> {
    let name = job.claimed_by.as_deref()?.strip_prefix("agent:")?;
    Some((name, job.claimed_at?))
}

/// Whether `driver` still holds `job` in a live claim (claimed by it, the lease not over): what
/// a run credential resolved earlier needs to still hold, without the credential itself (a
/// subscription re-checks its caller with this).
pub fn still_held(job: &Job, driver: &str, now: Timestamp) -> bool {
    job.status == JobStatus::Claimed
        && holder(job).is_some_and(|(name, _)| name == driver)
        && job.lease_expires.is_some_and(|l| l > now)
}

/// The run credential of `job`'s current claim, when a minted agent holds it and signing is
/// configured.
pub fn issue(secret: Option<&str>, job: &Job) -> Option<String> {
    let secret = secret.filter(|s| !s.is_empty())?;
    if job.status != JobStatus::Claimed {
        return None;
    }
    let (name, at) = holder(job)?;
    Some(format!(
        "{PREFIX}{}.{}",
        job.id,
        tag(secret, &job.id, &format!("agent:{name}"), at)
    ))
}

/// Checks `token` against `job` (the job it names, as stored now): the driver's name when it
/// stands.
pub fn verify<'j>(
    secret: &str,
    token: &str,
    job: &'j Job,
    now: Timestamp,
) -> Result<&'j str, RunRefusal> {
    let Some(id) = job_id_of(token) else {
        return Err(RunRefusal::Malformed);
    };
    if id != job.id || secret.is_empty() {
        return Err(RunRefusal::Mismatch);
    }
    if job.status != JobStatus::Claimed {
        return Err(RunRefusal::NotClaimed);
    }
    let Some((name, at)) = holder(job) else {
        return Err(RunRefusal::NotClaimed);
    };
    if job.lease_expires.is_none_or(|l| l <= now) {
        return Err(RunRefusal::LeaseOver);
    }
    let want = format!(
        "{PREFIX}{}.{}",
        job.id,
        tag(secret, &job.id, &format!("agent:{name}"), at)
    );
    if !ct_eq(want.as_bytes(), token.as_bytes()) {
        return Err(RunRefusal::Mismatch);
    }
    Ok(name)
}

/// What a run credential of a job in `namespace` may do: the job's namespace only, the tools
/// of [`RUN_TOOLS`] (none of them a repository tool: the repos axis only lets `jobs approval`
/// name a repository the namespace maps), read and write, no flags.
pub fn run_scopes(namespace: &str, role: Option<&Role>) -> Scopes {
    let mut tools: Vec<String> = RUN_TOOLS.iter().map(|t| (*t).to_owned()).collect();
    let mut flags = BTreeSet::new();
    // What only a role's run may do (issue 55): a senior records review verdicts, a deploy
    // merges (and only with another agent's standing approval of the head, checked at the
    // merge); nobody else's credential can.
    if let Some(role) = role {
        // A scout keeps its watermark, a namespace document under `scouts/` (the write tool
        // refuses a run credential anywhere else).
        if role.keeps_watermark() {
            tools.push("write".to_owned());
        }
        if role.reviews {
            tools.extend(["jobs.approve", "jobs.reject"].map(str::to_owned));
            flags.insert(Flag::CanCommentPr);
        }
        if role.merges() {
            tools.extend(["manage_pr", "manage_pr.merge"].map(str::to_owned));
            flags.insert(Flag::CanMerge);
        }
    }
    Scopes {
        namespaces: Axis::Only(vec![namespace.to_owned()]),
        repos: Axis::All,
        tools: Axis::Only(tools),
        grants: [Grant::Read, Grant::Write].into(),
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::role;
    use crate::scope::{Need, check_scope};

    fn job(status: JobStatus, holder: &str, at: i64, lease: i64) -> Job {
        let mut j: Job = serde_json::from_value(serde_json::json!({
            "id": "job_0123456789ab", "namespace": "demo", "title": "t", "body": "b",
            "priority": 0, "status": "queued", "posted_by": "agent:owner",
            "gate_required": 0, "review_required": 0, "blocked_count": 0, "resumed_count": 0,
            "corrections_count": 0, "created_at": "2026-01-01T00:00:00.000Z",
            "updated_at": "2026-01-01T00:00:00.000Z",
        }))
        .expect("a job");
        j.status = status;
        j.claimed_by = Some(holder.to_owned());
        j.claimed_at = Some(Timestamp::from_millis(at));
        j.lease_expires = Some(Timestamp::from_millis(lease));
        j
    }

    #[test]
    fn a_credential_stands_only_for_its_claim_while_the_lease_runs() {
        let claimed = job(JobStatus::Claimed, "agent:demo-driver", 1_000, 9_000);
        let token = issue(Some("s3cret"), &claimed).expect("issued");
        assert!(token.starts_with("capsid_run_job_0123456789ab."), "{token}");
        assert_eq!(job_id_of(&token), Some("job_0123456789ab"));
        let now = Timestamp::from_millis(5_000);
        assert_eq!(verify("s3cret", &token, &claimed, now), Ok("demo-driver"));
        // Another secret, a later claim, another holder: the tag no longer matches.
        assert_eq!(
            verify("other", &token, &claimed, now),
            Err(RunRefusal::Mismatch)
        );
        let reclaimed = job(JobStatus::Claimed, "agent:demo-driver", 2_000, 9_000);
        assert_eq!(
            verify("s3cret", &token, &reclaimed, now),
            Err(RunRefusal::Mismatch)
        );
        let other = job(JobStatus::Claimed, "agent:thief", 1_000, 9_000);
        assert_eq!(
            verify("s3cret", &token, &other, now),
            Err(RunRefusal::Mismatch)
        );
        // Out of the claim: done, blocked, or the lease over.
        for status in [JobStatus::Done, JobStatus::Blocked, JobStatus::Failed] {
            let j = job(status, "agent:demo-driver", 1_000, 9_000);
            assert_eq!(
                verify("s3cret", &token, &j, now),
                Err(RunRefusal::NotClaimed)
            );
            assert_eq!(issue(Some("s3cret"), &j), None);
        }
        assert_eq!(
            verify("s3cret", &token, &claimed, Timestamp::from_millis(9_000)),
            Err(RunRefusal::LeaseOver)
        );
        // Not minted agents' jobs, and no secret: nothing issued.
        assert_eq!(
            issue(
                Some("s3cret"),
                &job(JobStatus::Claimed, "github:me", 1_000, 9_000)
            ),
            None
        );
        assert_eq!(issue(None, &claimed), None);
        // A changed byte anywhere is refused.
        let mut forged = token.clone().into_bytes();
        let last = forged.len() - 1;
        forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
        let forged = String::from_utf8(forged).expect("ascii");
        assert_eq!(
            verify("s3cret", &forged, &claimed, now),
            Err(RunRefusal::Mismatch)
        );
        assert_eq!(job_id_of("capsid_run_job.short"), None);
        assert_eq!(job_id_of("sk-ant-x"), None);
    }

    #[test]
    fn a_driver_still_holds_its_job_only_while_claimed_by_it_and_the_lease_runs() {
        let claimed = job(JobStatus::Claimed, "agent:demo-driver", 1_000, 9_000);
        let at = Timestamp::from_millis;
        assert!(still_held(&claimed, "demo-driver", at(5_000)));
        assert!(still_held(&claimed, "demo-driver", at(8_999)));
        // The lease's last instant is already over, as it is for `verify`.
        assert!(!still_held(&claimed, "demo-driver", at(9_000)));
        assert!(!still_held(&claimed, "demo-driver", at(9_001)));
        // Another driver, or the holder named without the `agent:` a minted agent has.
        assert!(!still_held(&claimed, "thief", at(5_000)));
        assert!(!still_held(&claimed, "agent:demo-driver", at(5_000)));
        let by_person = job(JobStatus::Claimed, "demo-driver", 1_000, 9_000);
        assert!(!still_held(&by_person, "demo-driver", at(5_000)));
        // Closed, blocked or back in the queue: no longer held, whatever the lease says.
        for status in [
            JobStatus::Done,
            JobStatus::Blocked,
            JobStatus::Failed,
            JobStatus::Queued,
        ] {
            let j = job(status, "agent:demo-driver", 1_000, 9_000);
            assert!(!still_held(&j, "demo-driver", at(5_000)), "{status:?}");
        }
        // No lease, or no claim instant: not a live claim.
        let mut no_lease = claimed.clone();
        no_lease.lease_expires = None;
        assert!(!still_held(&no_lease, "demo-driver", at(5_000)));
        let mut no_claim_time = claimed.clone();
        no_claim_time.claimed_at = None;
        assert!(!still_held(&no_claim_time, "demo-driver", at(5_000)));
        // What `verify` accepts, `still_held` holds, and what it refuses for the claim, not.
        let token = issue(Some("s3cret"), &claimed).expect("issued");
        for now in [4_000, 8_999, 9_000] {
            assert_eq!(
                verify("s3cret", &token, &claimed, at(now)).is_ok(),
                still_held(&claimed, "demo-driver", at(now)),
                "{now}"
            );
        }
    }

    #[test]
    fn only_a_credential_of_the_exact_shape_names_a_job() {
        let hex = "0123456789abcdef".repeat(4);
        let token = |job: &str, tag: &str| format!("{PREFIX}{job}.{tag}");
        assert_eq!(job_id_of(&token("job_a-1", &hex)), Some("job_a-1"));
        assert_eq!(job_id_of(&token("j", &hex.to_uppercase())), Some("j"));
        let longest = "a".repeat(64);
        assert_eq!(
            job_id_of(&token(&longest, &hex)),
            Some(longest.as_str()),
            "a job id of 64 characters"
        );
        for (job, tag) in [
            ("a".repeat(65), hex.clone()),
            (String::new(), hex.clone()),
            ("job!1".to_owned(), hex.clone()),
            ("job.1".to_owned(), hex.clone()),
            ("job 1".to_owned(), hex.clone()),
            ("job_1".to_owned(), hex[..63].to_owned()),
            ("job_1".to_owned(), format!("{hex}0")),
            ("job_1".to_owned(), format!("{}g", &hex[..63])),
            ("job_1".to_owned(), String::new()),
        ] {
            assert_eq!(job_id_of(&token(&job, &tag)), None, "{job}.{tag}");
        }
        assert_eq!(job_id_of(&format!("capsid_job_1.{hex}")), None);
        assert_eq!(job_id_of(&format!("{PREFIX}job_1{hex}")), None);
    }

    #[test]
    fn an_empty_secret_verifies_nothing_even_a_tag_made_under_it() {
        let claimed = job(JobStatus::Claimed, "agent:demo-driver", 1_000, 9_000);
        let now = Timestamp::from_millis(5_000);
        assert_eq!(issue(Some(""), &claimed), None);
        // Anyone can compute the tag an empty secret would give; it is refused all the same.
        let forged = format!(
            "{PREFIX}{}.{}",
            claimed.id,
            tag(
                "",
                &claimed.id,
                "agent:demo-driver",
                Timestamp::from_millis(1_000)
            )
        );
        assert_eq!(
            verify("", &forged, &claimed, now),
            Err(RunRefusal::Mismatch)
        );
        // A credential of another job is refused as a mismatch before the job is looked at.
        let other = job(JobStatus::Done, "agent:demo-driver", 1_000, 9_000);
        let mut elsewhere = claimed.clone();
        elsewhere.id = "job_ffffffffffff".to_owned();
        let theirs = issue(Some("s3cret"), &elsewhere).expect("issued");
        assert_eq!(
            verify("s3cret", &theirs, &other, now),
            Err(RunRefusal::Mismatch)
        );
    }

    #[test]
    fn its_scopes_read_the_namespace_checkpoint_and_post_but_never_close_a_job() {
        let s = run_scopes("demo", None);
        let need = |tool, action: Option<&'static str>, ns| Need {
            tool,
            action,
            namespace: Some(ns),
            grant: Some(Grant::Read),
            ..Need::default()
        };
        for (tool, action) in [
            ("checkpoint", None),
            ("read", None),
            ("search", None),
            ("jobs", Some("approval")),
            ("jobs", Some("post")),
            ("checkmarks", Some("get")),
        ] {
            assert!(
                check_scope(&s, &need(tool, action, "demo")).is_ok(),
                "{tool} {action:?}"
            );
        }
        for action in [
            "complete",
            "fail",
            "block",
            "resume",
            "heartbeat",
            "claim",
            "list",
        ] {
            assert!(
                check_scope(&s, &need("jobs", Some(action), "demo")).is_err(),
                "jobs {action}"
            );
        }
        for (tool, action) in [
            ("checkmarks", Some("answer")),
            ("checkmarks", Some("resume")),
            ("agents", None),
            ("write", None),
            ("improve_run", None),
        ] {
            assert!(
                check_scope(&s, &need(tool, action, "demo")).is_err(),
                "{tool} {action:?}"
            );
        }
        assert!(check_scope(&s, &need("read", None, "other")).is_err());
    }

    #[test]
    fn only_a_seniors_credential_records_verdicts_and_only_a_deploys_merges() {
        let need = |tool, action: Option<&'static str>, flags: &[Flag]| Need {
            tool,
            action,
            namespace: Some("demo"),
            grant: Some(Grant::Write),
            flags: flags.to_vec(),
            ..Need::default()
        };
        let verdict = need("jobs", Some("approve"), &[Flag::CanCommentPr]);
        let reject = need("jobs", Some("reject"), &[Flag::CanCommentPr]);
        let merge = need("manage_pr", Some("merge"), &[Flag::CanMerge]);
        let comment = need("manage_pr", Some("comment"), &[Flag::CanCommentPr]);
        let senior = run_scopes("demo", role::parse("role", "senior").ok());
        let deploy = run_scopes("demo", role::parse("role", "deploy").ok());
        assert!(check_scope(&senior, &verdict).is_ok());
        assert!(check_scope(&senior, &reject).is_ok());
        assert!(check_scope(&senior, &merge).is_err());
        assert!(
            check_scope(&senior, &comment).is_err(),
            "a verdict, not a comment"
        );
        assert!(check_scope(&deploy, &merge).is_ok());
        assert!(check_scope(&deploy, &verdict).is_err());
        // An owner's role that ships code gets nothing a senior or a deploy gets.
        let docs_writer = role::parse_role_doc(
            "policy/roles/demo/docs-writer.md",
            "- version: 1\n- ships: code\n- description: Docs.\n## Instructions\nWrite.",
        )
        .expect("a role");
        for role in [None, Some("scout"), Some("planner"), Some("junior")] {
            let role = role.map(|r| role::parse("role", r).expect("built in"));
            let s = run_scopes("demo", role);
            for n in [&verdict, &reject, &merge, &comment] {
                assert!(
                    check_scope(&s, n).is_err(),
                    "{:?}: {:?} {:?}",
                    role.map(|r| &r.name),
                    n.tool,
                    n.action
                );
            }
        }
        let s = run_scopes("demo", Some(&docs_writer));
        for n in [&verdict, &reject, &merge, &comment] {
            assert!(check_scope(&s, n).is_err(), "{:?} {:?}", n.tool, n.action);
        }
        // An owner's reviewing role records verdicts; an owner's merging role merges.
        let reviewer = role::parse_role_doc(
            "policy/roles/demo/reviewer.md",
            "- version: 1\n- ships: nothing\n- reviews: true\n- description: Reviews.\n## Instructions\nReview.",
        )
        .expect("a role");
        assert!(check_scope(&run_scopes("demo", Some(&reviewer)), &verdict).is_ok());
        let shipper = role::parse_role_doc(
            "policy/roles/demo/shipper.md",
            "- version: 1\n- ships: merge\n- description: Ships.\n## Instructions\nMerge.",
        )
        .expect("a role");
        assert!(check_scope(&run_scopes("demo", Some(&shipper)), &merge).is_ok());
        assert!(check_scope(&run_scopes("demo", Some(&shipper)), &verdict).is_err());
    }
}
