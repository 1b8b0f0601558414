//! The watcher (reference 10.3) as rules: which facts about the running system are findings,
//! each with a stable fingerprint that the job it becomes carries in its title (so the
//! queue's open-title rule dedupes a repeat), and when CI on a default branch has been red
//! for too long. A human-set pause is not a finding; only the loop's own pauses are.

use crate::time::{DAY_MS, HOUR_MS, Timestamp};

/// A backup older than this is a finding.
pub const BACKUP_STALE_MS: i64 = 26 * HOUR_MS;
/// A job blocked longer than this is a finding.
pub const BLOCKED_STALE_MS: i64 = DAY_MS;
/// CI red on a default branch for longer than this is a finding.
pub const CI_RED_MS: i64 = 2 * HOUR_MS;
/// The prefix of a pause reason the loop itself wrote (a drift gate, a budget stop); a
/// human's pause (`improve_run pause`) may not start with it, so it is never taken for one.
pub const LOOP_PAUSE_PREFIX: &str = "improve-loop:";
/// The namespace findings are posted in.
pub const WATCHER_NAMESPACE: &str = "capsid";

/// One thing the watcher reports.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    /// Stable across passes while the condition holds.
    pub fingerprint: String,
    /// One line.
    pub summary: String,
    /// What to look at.
    pub detail: String,
}

impl Finding {
    fn new(
        fingerprint: impl Into<String>,
        summary: impl Into<String>,
        detail: impl Into<String>,
    ) -> Finding {
        Finding {
            fingerprint: fingerprint.into(),
            summary: summary.into(),
            detail: detail.into(),
        }
    }

    /// The job's title: the fingerprint in it, so one open job per finding.
    pub fn job_title(&self) -> String {
        let summary: String = self.summary.chars().take(120).collect();
        format!("watcher [{}]: {summary}", self.fingerprint)
    }

    /// The job's body.
    pub fn job_body(&self) -> String {
        format!(
            "The watcher found: {}\n\n{}\n\nFingerprint: {}. The watcher fails this job with `cleared` once the condition clears, while it is still queued.\n",
            self.summary, self.detail, self.fingerprint
        )
    }
}

/// A job blocked at a gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedJob {
    /// Its id.
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// When it last changed (blocked since).
    pub since: Option<Timestamp>,
}

/// CI on a namespace's default branch that is red.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CiRed {
    /// The namespace.
    pub namespace: String,
    /// `owner/name`.
    pub repo: String,
    /// The default branch.
    pub branch: String,
    /// The oldest run of the current red streak.
    pub since: Timestamp,
}

/// What the service read for one pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WatchFacts {
    /// Why the store is degraded, when it is.
    pub store_problem: Option<String>,
    /// When the last backup succeeded.
    pub backup_last_ok: Option<Timestamp>,
    /// The newest applied migration.
    pub schema: Option<String>,
    /// The newest migration this build knows.
    pub newest_schema: Option<String>,
    /// `(namespace, reason)` of every pause set on a roster namespace.
    pub pauses: Vec<(String, String)>,
    /// `(cap field, spent, cap)` of each cap at or over 80%.
    pub caps_near: Vec<(&'static str, f64, f64)>,
    /// Blocked jobs.
    pub blocked: Vec<BlockedJob>,
    /// Red default branches.
    pub ci_red: Vec<CiRed>,
}

/// The findings `facts` make at `now`, in a stable order.
pub fn findings(facts: &WatchFacts, now: Timestamp) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(why) = &facts.store_problem {
        out.push(Finding::new(
            "store-degraded",
            "the store is degraded",
            why.clone(),
        ));
    }
    match facts.backup_last_ok {
        None => out.push(Finding::new(
            "backup-stale",
            "no successful backup is recorded",
            "backup:last-ok is unset: run `capsid backup` and check the media store",
        )),
        Some(t) if now.millis_since(t) > BACKUP_STALE_MS => out.push(Finding::new(
            "backup-stale",
            "the last successful backup is older than 26 hours",
            format!("backup:last-ok is {t}"),
        )),
        Some(_) => {}
    }
    if let (Some(have), Some(want)) = (&facts.schema, &facts.newest_schema)
        && schema_number(have) < schema_number(want)
    {
        out.push(Finding::new(
            "schema-behind",
            "the schema is behind the newest migration",
            format!("applied {have}, this build knows {want}: run `capsid migrate`"),
        ));
    }
    for (ns, reason) in &facts.pauses {
        if reason.starts_with(LOOP_PAUSE_PREFIX) {
            out.push(Finding::new(
                format!("loop-paused:{ns}"),
                format!("the loop paused {ns}"),
                reason.clone(),
            ));
        }
    }
    for (field, spent, cap) in &facts.caps_near {
        out.push(Finding::new(
            format!("budget:{field}"),
            format!("{field} is over 80% of its cap"),
            format!("{spent:.2} of {cap} this month"),
        ));
    }
    for job in &facts.blocked {
        if job
            .since
            .is_some_and(|t| now.millis_since(t) > BLOCKED_STALE_MS)
        {
            out.push(Finding::new(
                format!("blocked:{}", job.id),
                format!(
                    "{} in {} is blocked for more than a day",
                    job.id, job.namespace
                ),
                "a human gate is waiting: resume or fail the job",
            ));
        }
    }
    for red in &facts.ci_red {
        if now.millis_since(red.since) > CI_RED_MS {
            out.push(Finding::new(
                format!("ci-red:{}", red.namespace),
                format!(
                    "CI on {} {} is red for more than two hours",
                    red.repo, red.branch
                ),
                format!("red since {}", red.since),
            ));
        }
    }
    out
}

fn schema_number(version: &str) -> u64 {
    version
        .split('_')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// One completed-or-not run on a default branch, newest first, as GitHub lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchRun<'a> {
    /// `completed`, `in_progress`, ...
    pub status: &'a str,
    /// Its conclusion once completed.
    pub conclusion: Option<&'a str>,
    /// When it was created.
    pub created_at: Option<Timestamp>,
}

/// When the current red streak on a branch began: `runs` newest first; running ones are
/// skipped; `None` when the newest completed run is green (or none completed).
pub fn red_since(runs: &[BranchRun<'_>]) -> Option<Timestamp> {
    let mut since = None;
    for run in runs.iter().filter(|r| r.status == "completed") {
        let green = matches!(run.conclusion, Some("success" | "skipped" | "neutral"));
        if green {
            break;
        }
        since = run.created_at.or(since);
    }
    since
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MINUTE_MS;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(1_800_000_000_000 + ms)
    }

    #[test]
    fn a_healthy_system_has_no_findings() {
        let now = t(10 * DAY_MS);
        let facts = WatchFacts {
            backup_last_ok: Some(now.plus_millis(-HOUR_MS)),
            schema: Some("0014_x".into()),
            newest_schema: Some("0014_x".into()),
            pauses: vec![("capsid".into(), "paused by an operator".into())],
            blocked: vec![BlockedJob {
                id: "job_1".into(),
                namespace: "a".into(),
                since: Some(now.plus_millis(-HOUR_MS)),
            }],
            ..WatchFacts::default()
        };
        assert_eq!(
            findings(&facts, now),
            Vec::new(),
            "a human pause is not a finding"
        );
    }

    #[test]
    fn each_fact_is_one_finding_with_a_stable_fingerprint() {
        let now = t(10 * DAY_MS);
        let facts = WatchFacts {
            store_problem: Some("fts: no match".into()),
            backup_last_ok: Some(now.plus_millis(-27 * HOUR_MS)),
            schema: Some("0013_a".into()),
            newest_schema: Some("0014_b".into()),
            pauses: vec![("orchard".into(), "improve-loop: drift".into())],
            caps_near: vec![("model_usd_month", 45.0, 50.0)],
            blocked: vec![BlockedJob {
                id: "job_1".into(),
                namespace: "a".into(),
                since: Some(now.plus_millis(-DAY_MS - 1)),
            }],
            ci_red: vec![
                CiRed {
                    namespace: "a".into(),
                    repo: "o/a".into(),
                    branch: "main".into(),
                    since: now.plus_millis(-3 * HOUR_MS),
                },
                CiRed {
                    namespace: "b".into(),
                    repo: "o/b".into(),
                    branch: "main".into(),
                    since: now.plus_millis(-HOUR_MS),
                },
            ],
        };
        let prints: Vec<String> = findings(&facts, now)
            .into_iter()
            .map(|f| f.fingerprint)
            .collect();
        assert_eq!(
            prints,
            [
                "store-degraded",
                "backup-stale",
                "schema-behind",
                "loop-paused:orchard",
                "budget:model_usd_month",
                "blocked:job_1",
                "ci-red:a"
            ]
        );
        let missing = findings(&WatchFacts::default(), now);
        assert_eq!(missing.len(), 1);
        assert!(
            missing[0].job_title().contains("[backup-stale]"),
            "{:?}",
            missing[0]
        );
        assert!(missing[0].job_body().contains("cleared"));
    }

    #[test]
    fn a_red_streak_starts_at_its_oldest_red_run() {
        let run = |status, conclusion, at| BranchRun {
            status,
            conclusion,
            created_at: Some(t(at)),
        };
        assert_eq!(red_since(&[]), None);
        assert_eq!(red_since(&[run("completed", Some("success"), 0)]), None);
        let runs = [
            run("in_progress", None, 50 * MINUTE_MS),
            run("completed", Some("failure"), 40 * MINUTE_MS),
            run("completed", Some("timed_out"), 30 * MINUTE_MS),
            run("completed", Some("success"), 20 * MINUTE_MS),
            run("completed", Some("failure"), 10 * MINUTE_MS),
        ];
        assert_eq!(red_since(&runs), Some(t(30 * MINUTE_MS)));
        assert_eq!(red_since(&runs[3..]), None, "newest completed is green");
    }
}
