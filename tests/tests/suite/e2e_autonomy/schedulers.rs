//! Tick hygiene (each scenario once per store): two schedulers over one store run each due
//! task once per cadence, whoever leads; ticks on demand racing each other still run each
//! task once; each task's cadence is a setting; a task that fails or overruns its bound is
//! reported with its error and the others still run.

use std::sync::Arc;

use capsid_core::error::Error;
use capsid_core::ports::{Deadline, TaskFuture};
use capsid_core::schedule::Task;
use capsid_core::service::{Scheduler, TaskOutcome, TickReport};
use capsid_core::time::MINUTE_MS;
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::TestServer;
use serde_json::Value;

use super::{GREEN, audit_rows, claimed_job, merge_policy, pull, setup, sign_merge_policy};

capsid_tests::github_cases!(
    two_schedulers_over_one_store_run_each_tick_once,
    ticks_on_demand_racing_run_each_task_once,
    a_failing_or_overrunning_task_never_stops_the_others,
);

fn ran(reports: &[&TickReport], task: Task) -> usize {
    reports
        .iter()
        .filter_map(|r| r.run_of(task))
        .filter(|r| r.outcome == TaskOutcome::Ran)
        .count()
}

async fn two_schedulers_over_one_store_run_each_tick_once(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    sign_merge_policy(s, &merge_policy("v1", true, "alpha")).await;
    let job = claimed_job(s, "d1", "driver").await;
    pull(
        g,
        "feat/x",
        "main",
        &[("src/x.rs", Some("x"))],
        "no job named",
        GREEN,
    );
    let (a, b) = (
        Scheduler::new(s.service.clone(), "replica-a"),
        Scheduler::new(s.service.clone(), "replica-b"),
    );
    // The auto-merge task's cadence is a setting the admin sets: ten minutes (audited); the
    // watcher's floor is five.
    let set = s
        .admin(
            "improve_run",
            serde_json::json!({"action": "cadence", "task": "auto-merge", "value": "10"}),
        )
        .await;
    assert_eq!(set["cadence_minutes"], 10, "{set}");
    assert_eq!(audit_rows(s, "improve-cadence").await.len(), 1);
    let floor = s
        .service
        .call_tool(
            &capsid_core::caller::Caller::cli("test"),
            "improve_run",
            serde_json::json!({"action": "cadence", "task": "watcher", "value": "2"}),
            &capsid_core::service::NoConfirmer,
        )
        .await;
    assert!(floor.is_err_and(|e| {
        e.to_string()
            .contains("value: watcher's cadence is whole minutes from 5")
    }));
    let shown = s
        .admin(
            "improve_run",
            serde_json::json!({"action": "cadence", "task": "watcher"}),
        )
        .await;
    assert_eq!(shown["cadence_minutes"], 30, "{shown}");
    let mut leaders = Vec::new();
    let mut runs = std::collections::BTreeMap::<Task, Vec<u32>>::new();
    // Both replicas tick every minute for twenty minutes.
    for minute in 0..20u32 {
        let (ra, rb) = tokio::join!(a.tick(), b.tick());
        let (ra, rb) = (ra.expect("tick a"), rb.expect("tick b"));
        assert!(
            !(ra.led && rb.led),
            "minute {minute}: one leader: {ra:?} {rb:?}"
        );
        if ra.led || rb.led {
            leaders.push(if ra.led { "a" } else { "b" });
        }
        for task in Task::ALL {
            match ran(&[&ra, &rb], task) {
                0 => {}
                1 => runs.entry(task).or_default().push(minute),
                n => panic!("minute {minute}: {task} ran {n} times"),
            }
        }
        s.clock.advance(MINUTE_MS);
    }
    // The sweep, the CI poller and the backup check every five minutes, auto-merge every ten
    // (its setting), the watcher every thirty.
    for task in [Task::Sweep, Task::CiPoll, Task::Backup] {
        assert_eq!(runs[&task], [0, 5, 10, 15], "{task}");
    }
    assert_eq!(runs[&Task::AutoMerge], [0, 10], "{runs:?}");
    assert_eq!(runs[&Task::Watcher], [0], "{runs:?}");
    assert!(
        leaders.iter().all(|l| *l == leaders[0]),
        "the leader renews its lease: {leaders:?}"
    );
    // The declined PR was decided once, whoever ran the task.
    assert_eq!(audit_rows(s, "auto-merge-declined").await.len(), 1);
    // When the leader stops ticking, the other takes over once its lease runs out.
    let follower = if leaders[0] == "a" { &b } else { &a };
    s.clock.advance(5 * MINUTE_MS);
    let took_over = follower.tick().await.expect("tick");
    assert!(took_over.led, "{took_over:?}");
    assert_eq!(ran(&[&took_over], Task::Sweep), 1);
    let _ = job;
}

async fn ticks_on_demand_racing_run_each_task_once(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    let other = s.service.clone();
    let (x, y) = tokio::join!(s.service.tick_now(None), other.tick_now(None));
    let (x, y) = (x.expect("tick"), y.expect("tick"));
    for task in Task::ALL {
        assert_eq!(ran(&[&x, &y], task), 1, "{task}: {x:?} {y:?}");
    }
    // Nothing is due now, so a second tick on demand runs nothing; naming a task runs it.
    let idle = s.service.tick_now(None).await.expect("tick");
    assert!(!idle.due && idle.ran.is_empty(), "{idle:?}");
    let named = s.service.tick_now(Some(Task::Sweep)).await.expect("tick");
    assert_eq!(named.ran.len(), 1);
    assert_eq!(named.ran[0].task, "sweep");
    assert_eq!(named.ran[0].outcome, TaskOutcome::Ran);
    let unknown = s
        .service
        .call_tool(
            &capsid_core::caller::Caller::cli("test"),
            "improve_run",
            serde_json::json!({"action": "tick", "task": "sweeps"}),
            &capsid_core::service::NoConfirmer,
        )
        .await;
    assert!(
        unknown.is_err_and(|e| e.to_string().contains("'sweeps' is not a periodic task")),
        "a bad task name names the field and the rule"
    );
    assert_eq!(
        audit_rows(s, "improve-tick").await.len(),
        0,
        "the service's own ticks are not tool calls"
    );
}

/// Fails the tasks bounded to a minute (the sweep and the watcher) after running them, and
/// times out the half-hour one (the backup) without running it.
struct Flaky;

#[async_trait::async_trait]
impl Deadline for Flaky {
    async fn within<'a>(
        &self,
        limit_ms: u64,
        task: TaskFuture<'a>,
    ) -> Option<capsid_core::error::Result<Value>> {
        match limit_ms {
            60_000 => {
                let _ = task.await;
                Some(Err(Error::Unavailable(
                    "injected: the store went away".into(),
                )))
            }
            1_800_000 => None,
            _ => Some(task.await),
        }
    }
}

async fn a_failing_or_overrunning_task_never_stops_the_others(s: &TestServer, g: &FakeGitHub) {
    setup(s, g).await;
    let service = s.service.clone().with_deadline(Arc::new(Flaky));
    let report = service
        .tick_now(None)
        .await
        .expect("a tick with failures is still a report");
    let outcome = |t: Task| report.run_of(t).map(|r| r.outcome);
    assert_eq!(
        outcome(Task::Sweep),
        Some(TaskOutcome::Failed),
        "{report:?}"
    );
    assert_eq!(outcome(Task::CiPoll), Some(TaskOutcome::Ran));
    assert_eq!(outcome(Task::Backup), Some(TaskOutcome::TimedOut));
    assert_eq!(outcome(Task::AutoMerge), Some(TaskOutcome::Ran));
    assert_eq!(outcome(Task::Watcher), Some(TaskOutcome::Failed));
    let sweep = report.run_of(Task::Sweep).unwrap();
    assert!(
        sweep
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("injected"),
        "{sweep:?}"
    );
    let backup = report.run_of(Task::Backup).unwrap();
    assert!(
        backup
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("bound of 1800 s"),
        "{backup:?}"
    );
    // The report reaches the metrics by task name.
    s.metrics.record_task_runs(&report);
}
