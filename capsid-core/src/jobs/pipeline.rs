//! The pipeline's own hand-offs (issue 55, item 6), as the sister design runs them: a junior
//! whose job is done with a pull request gets a **senior** review job posted for that pull
//! request, and an approval of a junior's pull request (its head branch `capsid/<job>`) gets a
//! **deploy** job posted to merge it. Each is a child of the junior's job (`parent`), so the
//! console shows one chain, bounded by the namespace's dispatch limits like any dispatch; the
//! merge itself still goes through the gate, which wants a standing approval of that head by an
//! agent other than the author and the merger.

use serde::{Deserialize, Serialize};

use super::role::{Role, Ships};
use crate::ports::AuditRow;

/// The audit action of a merge the gate refused a run (its job, the pull request, the head and
/// the refusal), on the job's trail: what a deploy run's verdict blocks on.
pub const MERGE_REFUSED_ACTION: &str = "pr-merge-refused";
/// The audit action of a repository mutation through `manage_pr` (a merge among them).
const MANAGE_PR_ACTION: &str = "manage_pr";

/// A merge a job's run made or was refused, as the server recorded it (never the agent's
/// word): what a deploy run's verdict is decided on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunMerge {
    /// `owner/name`.
    pub repo: String,
    /// The pull request.
    pub number: u64,
    /// Whether GitHub merged it.
    pub merged: bool,
    /// The merge commit (merged), or the head the refusal was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// Why the gate refused it (not merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The command that lets it through: a person's approval of that head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve_command: Option<String>,
}

/// The merges of the run whose audit actor is `run_actor`, oldest first, from its audit rows
/// (`rows` newest first, as the log returns them): each `manage_pr` merge GitHub accepted and
/// each merge the gate refused.
pub fn run_merges(rows: &[AuditRow], run_actor: &str) -> Vec<RunMerge> {
    let text = |v: &serde_json::Value, k: &str| v[k].as_str().map(str::to_owned);
    rows.iter()
        .rev()
        .filter(|r| r.actor.as_deref() == Some(run_actor))
        .filter_map(|r| {
            let p: serde_json::Value = serde_json::from_str(r.params.as_deref()?).ok()?;
            let repo = text(&p, "repo")?;
            let number = p["number"].as_u64()?;
            match r.action.as_deref()? {
                MANAGE_PR_ACTION if p["action"] == "merge" => Some(RunMerge {
                    repo,
                    number,
                    merged: p["merged"] == true,
                    sha: text(&p, "sha"),
                    refusal: None,
                    approve_command: None,
                }),
                MERGE_REFUSED_ACTION => Some(RunMerge {
                    repo,
                    number,
                    merged: false,
                    sha: text(&p, "head_sha"),
                    refusal: text(&p, "refusal"),
                    approve_command: text(&p, "approve_command"),
                }),
                _ => None,
            }
        })
        .collect()
}

/// The command a person runs to approve `repo#number` at `head` in `namespace` (the gate's
/// own, never the agent's words).
pub fn approve_command(namespace: &str, repo: &str, number: u64, head: &str) -> String {
    format!("capsid jobs approve --namespace {namespace} --repo {repo} --pr {number} --head {head}")
}

/// The actor of the hand-offs the pipeline posts and of their audit rows.
pub const PIPELINE_ACTOR: &str = "pipeline";

/// A job the pipeline posts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// Its role (`senior` or `deploy`).
    pub role: &'static str,
    /// Its title (one open job per title holds a second hand-off of the same pull request).
    pub title: String,
    /// Its body: what to review or merge, and at which head.
    pub body: String,
}

/// Whether the pipeline hands on the pull request of a job of `role` (a junior's, or an owner's
/// role that ships code: a branch and a pull request for review).
pub fn hands_on(role: Option<&Role>) -> bool {
    role.is_some_and(|r| r.ships == Ships::Code)
}

/// The senior review of `repo#number` (at `url`), the junior job `author_job`'s work, at `head`
/// when GitHub told it.
pub fn review_handoff(
    repo: &str,
    number: u64,
    url: &str,
    head: Option<&str>,
    author_job: &str,
) -> Handoff {
    let at = head.map_or(String::new(), |h| format!(" at head {h}"));
    Handoff {
        role: "senior",
        title: format!("Review {repo}#{number}"),
        body: format!(
            "Review pull request {url}{at}, the work of job {author_job}.\n\nRead its diff, run its tests in your clone, then record your verdict with Capsid's `jobs` tool: action `approve` or `reject`, `pull_request` {number}, `repo` {repo}, `head_sha` the full head commit you reviewed, and `body` your findings (the lines concerned). An approval lets a deploy job merge exactly that head; a newer commit needs a new review.\n"
        ),
    }
}

/// The deploy of `repo#number` at `head`, approved by `reviewer`, the junior job `author_job`'s
/// work.
pub fn deploy_handoff(
    repo: &str,
    number: u64,
    head: &str,
    reviewer: &str,
    author_job: &str,
) -> Handoff {
    Handoff {
        role: "deploy",
        title: format!("Merge {repo}#{number}"),
        body: format!(
            "Merge pull request {repo}#{number} (the work of job {author_job}) at head {head}, which {reviewer} approved.\n\nMerge it with Capsid's `manage_pr` tool (action `merge`, `repo` {repo}, `number` {number}); the gate refuses a merge without a standing approval of the current head by an agent other than its author and you. If the head moved, stop and say so: it needs a new review.\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(actor: &str, action: &str, params: serde_json::Value) -> AuditRow {
        AuditRow {
            id: 0,
            actor: Some(actor.into()),
            action: Some(action.into()),
            namespace: Some("alpha".into()),
            path: None,
            params: Some(params.to_string()),
            at: crate::time::Timestamp::from_millis(0),
        }
    }

    #[test]
    fn a_runs_merges_come_from_the_servers_rows_of_that_run_only() {
        let run = "agent:d/run:job_1";
        let rows = [
            row(
                run,
                "manage_pr",
                serde_json::json!({"action": "merge", "repo": "o/r", "number": 3, "merged": true, "sha": "m1"}),
            ),
            row(
                "agent:e/run:job_2",
                "manage_pr",
                serde_json::json!({"action": "merge", "repo": "o/r", "number": 4, "merged": true}),
            ),
            row(
                run,
                "manage_pr",
                serde_json::json!({"action": "comment", "repo": "o/r", "number": 3}),
            ),
            row(
                run,
                MERGE_REFUSED_ACTION,
                serde_json::json!({"repo": "o/r", "number": 3, "head_sha": "h", "refusal": "no approval", "approve_command": "capsid jobs approve"}),
            ),
        ];
        let merges = run_merges(&rows, run);
        assert_eq!(merges.len(), 2, "{merges:?}");
        assert_eq!(
            merges[0].refusal.as_deref(),
            Some("no approval"),
            "oldest first"
        );
        assert_eq!(merges[0].sha.as_deref(), Some("h"));
        assert!(merges[1].merged && merges[1].sha.as_deref() == Some("m1"));
        assert_eq!(
            approve_command("alpha", "o/r", 3, "h"),
            "capsid jobs approve --namespace alpha --repo o/r --pr 3 --head h"
        );
    }

    #[test]
    fn only_a_role_that_ships_code_hands_its_pull_request_on() {
        let named = |n| crate::jobs::role::parse("role", n).ok();
        assert!(hands_on(named("junior")));
        for n in ["scout", "planner", "senior", "deploy"] {
            assert!(!hands_on(named(n)), "{n}");
        }
        assert!(!hands_on(None), "a job with no role is not a pipeline's");
        let owners = crate::jobs::role::parse_role_doc(
            "policy/roles/demo/docs-writer.md",
            "- version: 1\n- ships: code\n- description: Docs.\n## Instructions\nWrite.",
        )
        .expect("a role");
        assert!(hands_on(Some(&owners)));
    }

    #[test]
    fn the_handoffs_name_the_pull_request_the_head_and_the_author() {
        let r = review_handoff(
            "o/r",
            12,
            "https://github.com/o/r/pull/12",
            Some("abc"),
            "job_1",
        );
        assert_eq!((r.role, r.title.as_str()), ("senior", "Review o/r#12"));
        assert!(
            r.body
                .contains("https://github.com/o/r/pull/12 at head abc")
        );
        assert!(r.body.contains("job_1") && r.body.contains("`pull_request` 12"));
        let unknown = review_handoff("o/r", 12, "https://github.com/o/r/pull/12", None, "job_1");
        assert!(!unknown.body.contains("pull/12 at head"));
        let d = deploy_handoff("o/r", 12, "abc", "agent:rev", "job_1");
        assert_eq!((d.role, d.title.as_str()), ("deploy", "Merge o/r#12"));
        assert!(d.body.contains("at head abc, which agent:rev approved"));
    }
}
