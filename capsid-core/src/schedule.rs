//! The scheduler's periodic tasks as rules: their names, their cadences (each stored in
//! settings, with a default and a floor), the keys that record when each last ran, when one
//! is due, and how long one may take. `service::schedule` runs them on the leader.

use std::fmt;

use crate::improve::keys::WATCHER_CADENCE_KEY;
use crate::time::{DAY_MS, MINUTE_MS, SECOND_MS, Timestamp};

/// One periodic task, in the order a tick runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Task {
    /// Expired job leases back to the queue, and spent login state purged.
    Sweep,
    /// Pushed checkpoints' CI verdicts.
    CiPoll,
    /// The scheduled backup (09:00 UTC daily, or every `--backup-every-hours`); the task itself
    /// decides whether a run is due.
    Backup,
    /// The restore rehearsal (weekly, or every `--rehearse-every-days`): the newest dump
    /// restored into a throwaway store and verified; the task itself decides whether one is due.
    Rehearsal,
    /// Open pull requests merged or declined by the signed auto-merge policy.
    AutoMerge,
    /// Health findings posted as jobs, and cleared ones failed.
    Watcher,
    /// The self-improvement loop: the budget, the nightly opener, one step per live run.
    Improve,
    /// Labelled tracker issues taken in as signed jobs by the signed intake policy, and the
    /// loop between each issue and its job closed.
    Intake,
    /// Scheduled scouts: each signed scout schedule's job posted once per its window.
    Scouts,
}

impl Task {
    /// Every task, in run order.
    pub const ALL: [Task; 9] = [
        Task::Sweep,
        Task::CiPoll,
        Task::Backup,
        Task::Rehearsal,
        Task::AutoMerge,
        Task::Watcher,
        Task::Improve,
        Task::Intake,
        Task::Scouts,
    ];

    /// The name the CLI, the tool, the tick report and the metrics use.
    pub fn name(self) -> &'static str {
        match self {
            Task::Sweep => "sweep",
            Task::CiPoll => "ci-poll",
            Task::Backup => "backup",
            Task::Rehearsal => "rehearsal",
            Task::AutoMerge => "auto-merge",
            Task::Watcher => "watcher",
            Task::Improve => "improve",
            Task::Intake => "intake",
            Task::Scouts => "scouts",
        }
    }

    /// The task named exactly `name`.
    pub fn parse(name: &str) -> Result<Task, String> {
        Task::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| {
                format!(
                    "task: '{name}' is not a periodic task (one of {})",
                    Task::ALL.map(Task::name).join(", ")
                )
            })
    }

    /// The settings key holding the task's cadence in minutes.
    pub fn cadence_key(self) -> String {
        match self {
            Task::Watcher => WATCHER_CADENCE_KEY.to_owned(),
            other => format!("tick:cadence-minutes:{}", other.name()),
        }
    }

    /// The settings key recording when the task last ran (RFC 3339), claimed by compare-and-set
    /// so that replicas sharing a store run each due task once.
    pub fn last_run_key(self) -> String {
        format!("tick:last:{}", self.name())
    }

    /// The cadence when none is stored, in minutes.
    pub fn default_cadence_minutes(self) -> i64 {
        match self {
            Task::Watcher => 30,
            _ => 5,
        }
    }

    /// The shortest cadence a stored value may ask for, in minutes.
    pub fn floor_minutes(self) -> i64 {
        match self {
            Task::Watcher => 5,
            _ => 1,
        }
    }

    /// How long one run may take before it is abandoned.
    pub fn time_bound_ms(self) -> u64 {
        let ms = match self {
            Task::Sweep | Task::Watcher => 60 * SECOND_MS,
            Task::CiPoll | Task::AutoMerge | Task::Intake | Task::Scouts => 2 * MINUTE_MS,
            Task::Improve => 4 * MINUTE_MS,
            Task::Backup | Task::Rehearsal => 30 * MINUTE_MS,
        };
        u64::try_from(ms).unwrap_or(u64::MAX)
    }

    /// The cadence a stored value means, in milliseconds: whole minutes, at least the floor
    /// and at most a week; unset or unreadable means the default.
    pub fn cadence_ms(self, stored: Option<&str>) -> i64 {
        let minutes = stored
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(self.default_cadence_minutes())
            .clamp(self.floor_minutes(), 7 * DAY_MS / MINUTE_MS);
        minutes * MINUTE_MS
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a task that last ran at `last` (as stored) is due at `now` under `cadence_ms`. A
/// stored time that does not parse is due (it will be rewritten by the run).
pub fn is_due(last: Option<&str>, now: Timestamp, cadence_ms: i64) -> bool {
    match last.and_then(Timestamp::parse) {
        None => true,
        Some(t) => now.millis_since(t) >= cadence_ms,
    }
}

/// The leader lease's length: a little less than the shortest default cadence, renewed by
/// every tick the leader runs, so a replica that stops ticking hands over within minutes.
pub const LEADER_LEASE_MS: i64 = 5 * MINUTE_MS - SECOND_MS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_names_list_the_tasks() {
        for t in Task::ALL {
            assert_eq!(Task::parse(t.name()), Ok(t));
        }
        let err = Task::parse("sweeps").unwrap_err();
        assert!(
            err.contains("'sweeps'") && err.contains("auto-merge, watcher"),
            "{err}"
        );
        assert_eq!(Task::Watcher.cadence_key(), "watcher:cadence-minutes");
        assert_eq!(
            Task::AutoMerge.cadence_key(),
            "tick:cadence-minutes:auto-merge"
        );
        assert_eq!(Task::Sweep.last_run_key(), "tick:last:sweep");
        assert_eq!(Task::parse("intake"), Ok(Task::Intake));
        assert_eq!(Task::Intake.cadence_key(), "tick:cadence-minutes:intake");
        assert_eq!(Task::Intake.cadence_ms(None), 5 * MINUTE_MS);
        assert_eq!(Task::Intake.time_bound_ms(), 120_000);
    }

    #[test]
    fn cadences_default_floor_and_cap() {
        assert_eq!(Task::Watcher.cadence_ms(None), 30 * MINUTE_MS);
        assert_eq!(
            Task::Watcher.cadence_ms(Some("2")),
            5 * MINUTE_MS,
            "floor 5"
        );
        assert_eq!(Task::Watcher.cadence_ms(Some(" 45 ")), 45 * MINUTE_MS);
        assert_eq!(Task::Watcher.cadence_ms(Some("half")), 30 * MINUTE_MS);
        assert_eq!(Task::AutoMerge.cadence_ms(None), 5 * MINUTE_MS);
        assert_eq!(Task::AutoMerge.cadence_ms(Some("0")), MINUTE_MS);
        assert_eq!(Task::Sweep.cadence_ms(Some("-3")), MINUTE_MS);
        assert_eq!(Task::Sweep.cadence_ms(Some("99999999")), 7 * DAY_MS);
    }

    #[test]
    fn due_at_the_cadence_not_before() {
        let t0 = Timestamp::from_millis(1_800_000_000_000);
        let last = t0.to_string();
        assert!(is_due(None, t0, MINUTE_MS));
        assert!(is_due(Some("garbage"), t0, MINUTE_MS));
        assert!(!is_due(
            Some(&last),
            t0.plus_millis(MINUTE_MS - 1),
            MINUTE_MS
        ));
        assert!(is_due(Some(&last), t0.plus_millis(MINUTE_MS), MINUTE_MS));
    }
}
