//! The CI follow-through of a pushed checkpoint: what a commit's check runs say, and when a
//! pending entry is asked again. A commit is green only when it has runs and every one
//! completed as `success`, `skipped` or `neutral`; any other conclusion (GitHub's
//! `action_required` and `stale` among them) is not green. An entry is asked again with a
//! backoff that grows with its age, so a slow pipeline costs few calls.

use super::CiStatus;
use crate::ports::CheckRun;
use crate::time::Timestamp;

/// The entries one poll asks about, at most.
pub const CI_POLL_BATCH: usize = 50;
/// The shortest wait between two asks about one entry.
pub const CI_BACKOFF_MIN_MS: i64 = 60_000;
/// The longest.
pub const CI_BACKOFF_MAX_MS: i64 = 60 * 60_000;
/// The audit action of a resolved CI verdict.
pub const AUDIT_CI_RECORDED: &str = "ci-recorded";

/// The verdict `runs` give, or `None` while CI has not finished (or not started).
pub fn ci_verdict(runs: &[CheckRun]) -> Option<CiStatus> {
    if runs.is_empty() || runs.iter().any(|r| r.status != "completed") {
        return None;
    }
    let green = |r: &CheckRun| {
        matches!(
            r.conclusion.as_deref(),
            Some("success" | "skipped" | "neutral")
        )
    };
    Some(if runs.iter().all(green) {
        CiStatus::Pass
    } else {
        CiStatus::Fail
    })
}

/// Whether an entry created at `created` and last asked at `checked` is due at `now`: never
/// asked, or asked longer ago than half its age (clamped to one minute .. one hour).
pub fn ci_check_due(created: Timestamp, checked: Option<Timestamp>, now: Timestamp) -> bool {
    let Some(checked) = checked else {
        return true;
    };
    let wait = (now.millis_since(created) / 2).clamp(CI_BACKOFF_MIN_MS, CI_BACKOFF_MAX_MS);
    now.millis_since(checked) >= wait
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(status: &str, conclusion: Option<&str>) -> CheckRun {
        CheckRun {
            status: status.into(),
            conclusion: conclusion.map(str::to_owned),
        }
    }

    #[test]
    fn green_only_when_every_run_completed_green() {
        assert_eq!(ci_verdict(&[]), None);
        assert_eq!(ci_verdict(&[run("in_progress", None)]), None);
        assert_eq!(
            ci_verdict(&[
                run("completed", Some("success")),
                run("completed", Some("skipped"))
            ]),
            Some(CiStatus::Pass)
        );
        for not_green in [
            "failure",
            "action_required",
            "stale",
            "cancelled",
            "timed_out",
        ] {
            assert_eq!(
                ci_verdict(&[
                    run("completed", Some("success")),
                    run("completed", Some(not_green))
                ]),
                Some(CiStatus::Fail),
                "{not_green}"
            );
        }
        assert_eq!(
            ci_verdict(&[run("completed", Some("success")), run("queued", None)]),
            None
        );
    }

    #[test]
    fn asks_again_with_a_growing_backoff() {
        let t0 = Timestamp::from_millis(1_000_000_000);
        assert!(ci_check_due(t0, None, t0));
        assert!(!ci_check_due(t0, Some(t0), t0.plus_millis(59_999)));
        assert!(ci_check_due(t0, Some(t0), t0.plus_millis(60_000)));
        let day = 24 * 3_600_000;
        let late = t0.plus_millis(day);
        assert!(!ci_check_due(
            t0,
            Some(late.plus_millis(-59 * 60_000)),
            late
        ));
        assert!(ci_check_due(t0, Some(late.plus_millis(-60 * 60_000)), late));
    }

    proptest! {
        #[test]
        fn the_wait_is_clamped(age in 0i64..10_000_000_000, since in 0i64..10_000_000_000) {
            let created = Timestamp::from_millis(0);
            let now = created.plus_millis(age);
            let checked = now.plus_millis(-since);
            let due = ci_check_due(created, Some(checked), now);
            if since >= CI_BACKOFF_MAX_MS { prop_assert!(due); }
            if since < CI_BACKOFF_MIN_MS { prop_assert!(!due); }
        }
    }
}
