//! Periodic work on one leader: the lease sweep (and the purge of expired login state), the CI
//! poller, the daily backup, the weekly restore rehearsal, the auto-merge tick, the watcher and the intake, each at its own cadence
//! stored in settings (`schedule::Task`). Every tick renews the store's leader lease (so the
//! leader keeps leading while it ticks); each due task is then claimed by compare-and-set on its last-run key, so replicas
//! sharing a store run it once per cadence; each runs bounded in time (the `Deadline` port), and
//! a failing task is reported with its error without stopping the others. Time comes from the
//! clock port, so a test drives the ticks by moving a `ManualClock`; no test waits.

use serde::Serialize;
use serde_json::{Value, json};

use super::Service;
use super::jobs::{job_audit, mirror_fn};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::schedule::{LEADER_LEASE_MS, Task, is_due};

/// The leader lease the scheduler's replicas compete for.
pub const SWEEP_LEASE: &str = "lease-sweep";

/// How a task's turn in a tick ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    /// It ran to the end.
    Ran,
    /// It failed; the error is in the run.
    Failed,
    /// It ran out of its time bound and was abandoned.
    TimedOut,
    /// Another replica (or an on-demand tick) claimed this turn first.
    RanElsewhere,
}

impl TaskOutcome {
    /// The label the metrics use.
    pub fn name(self) -> &'static str {
        match self {
            TaskOutcome::Ran => "ran",
            TaskOutcome::Failed => "failed",
            TaskOutcome::TimedOut => "timed_out",
            TaskOutcome::RanElsewhere => "ran_elsewhere",
        }
    }
}

/// One task's turn in a tick.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TaskRun {
    /// Its name (`schedule::Task::name`).
    pub task: &'static str,
    /// How it ended.
    pub outcome: TaskOutcome,
    /// What it reported, when it ran (each task's own report object; `null` when it did not).
    #[schemars(schema_with = "task_report")]
    pub report: Value,
    /// Its error, when it failed or timed out.
    pub error: Option<String>,
}

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TickReport {
    /// When.
    pub at: String,
    /// Whether any task was due (or asked for).
    pub due: bool,
    /// Whether this replica leads (holds the leader lease, or runs on demand).
    pub led: bool,
    /// Jobs returned to the queue.
    pub swept: usize,
    /// Pushed checkpoints whose CI verdict this tick resolved.
    pub ci_resolved: usize,
    /// Whether the scheduled backup ran in this tick.
    pub backed_up: bool,
    /// Every task that took its turn, in run order.
    pub ran: Vec<TaskRun>,
}

/// A task's report: an object (each task reports its own fields), or `null` when the task
/// failed, timed out or ran elsewhere.
fn task_report(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "anyOf": [{ "type": "object" }, { "type": "null" }] })
}

impl TickReport {
    /// The run of `task`, if it took a turn.
    pub fn run_of(&self, task: Task) -> Option<&TaskRun> {
        self.ran.iter().find(|r| r.task == task.name())
    }
}

/// Runs the periodic tasks when they are due.
#[derive(Debug)]
pub struct Scheduler {
    service: Service,
    replica: String,
}

impl Scheduler {
    /// A scheduler for one replica (`replica` names it in the leader lease).
    pub fn new(service: Service, replica: impl Into<String>) -> Scheduler {
        Scheduler {
            service,
            replica: replica.into(),
        }
    }

    /// Runs whatever is due now, if this replica leads.
    pub async fn tick(&self) -> Result<TickReport> {
        self.service.run_tick(Some(&self.replica), None).await
    }
}

impl Service {
    /// A tick on demand (`capsid tick`, `improve_run` action `tick`): the due tasks now, or
    /// only `task` whether due or not. It needs no leader lease, but claims each task's turn
    /// like any tick, so a task the leader is running is not run twice.
    pub async fn tick_now(&self, task: Option<Task>) -> Result<TickReport> {
        self.run_tick(None, task).await
    }

    async fn run_tick(&self, replica: Option<&str>, only: Option<Task>) -> Result<TickReport> {
        let now = self.now();
        let mut report = TickReport {
            at: now.to_string(),
            ..TickReport::default()
        };
        let mut due = Vec::new();
        for task in Task::ALL {
            if only.is_some_and(|o| o != task) {
                continue;
            }
            let cadence = self.store.setting(&task.cadence_key(), now).await?;
            let last = self.store.setting(&task.last_run_key(), now).await?;
            if only.is_some() || is_due(last.as_deref(), now, task.cadence_ms(cadence.as_deref())) {
                due.push((task, last));
            }
        }
        report.due = !due.is_empty();
        // The leader renews its lease on every tick, due or not, so it keeps leading.
        if let Some(replica) = replica {
            let until = now.plus_millis(LEADER_LEASE_MS);
            if !self
                .store
                .acquire_lease(SWEEP_LEASE, replica, now, until)
                .await?
            {
                return Ok(report);
            }
        }
        report.led = true;
        if due.is_empty() {
            return Ok(report);
        }
        let stamp = now.to_string();
        // Who holds a task while it runs: unique per tick, so two ticks on demand exclude
        // each other too.
        let holder = format!(
            "{}:{}",
            replica.unwrap_or("on-demand"),
            crate::ids::new_token(&*self.entropy)
        );
        for (task, last) in due {
            let run = match self
                .claim_turn(task, last.as_deref(), &stamp, &holder)
                .await?
            {
                true => {
                    let run = self.bounded(task).await;
                    // A failed release only delays the next turn: the lease runs out itself.
                    let _ = self
                        .store
                        .release_lease(&running_lease(task), &holder)
                        .await;
                    run
                }
                false => TaskRun {
                    task: task.name(),
                    outcome: TaskOutcome::RanElsewhere,
                    report: Value::Null,
                    error: None,
                },
            };
            match task {
                Task::Sweep => report.swept = count(&run.report, "swept"),
                Task::CiPoll => report.ci_resolved = count(&run.report, "resolved"),
                Task::Backup => report.backed_up = run.report["backed_up"] == json!(true),
                Task::Rehearsal
                | Task::AutoMerge
                | Task::Watcher
                | Task::Improve
                | Task::Intake
                | Task::Scouts => {}
            }
            report.ran.push(run);
        }
        Ok(report)
    }

    /// Takes `task`'s turn: its running lease (no other tick is running it; held for its time
    /// bound), then its last-run key by compare-and-set from `last` (no other tick ran it
    /// since this one read it). Either lost: another tick has the turn.
    async fn claim_turn(
        &self,
        task: Task,
        last: Option<&str>,
        stamp: &str,
        holder: &str,
    ) -> Result<bool> {
        let now = self.now();
        let bound = i64::try_from(task.time_bound_ms()).unwrap_or(i64::MAX);
        let lease = running_lease(task);
        if !self
            .store
            .acquire_lease(&lease, holder, now, now.plus_millis(bound))
            .await?
        {
            return Ok(false);
        }
        let claimed = self
            .store
            .compare_and_set_setting(&task.last_run_key(), last, Some(stamp), None, now)
            .await?;
        if !claimed {
            let _ = self.store.release_lease(&lease, holder).await;
        }
        Ok(claimed)
    }

    /// Runs `task` within its time bound.
    async fn bounded(&self, task: Task) -> TaskRun {
        let future = Box::pin(self.run_task(task));
        let result = match &self.deadline {
            Some(deadline) => deadline.within(task.time_bound_ms(), future).await,
            None => Some(future.await),
        };
        let (outcome, report, error) = match result {
            Some(Ok(v)) => (TaskOutcome::Ran, v, None),
            Some(Err(e)) => (TaskOutcome::Failed, Value::Null, Some(e.to_string())),
            None => (
                TaskOutcome::TimedOut,
                Value::Null,
                Some(format!(
                    "{task} ran longer than its bound of {} s and was abandoned",
                    task.time_bound_ms() / 1000
                )),
            ),
        };
        TaskRun {
            task: task.name(),
            outcome,
            report,
            error,
        }
    }

    async fn run_task(&self, task: Task) -> Result<Value> {
        match task {
            Task::Sweep => {
                let swept = self.sweep_expired_leases().await?;
                // Spent login states, codes, counters, sessions and ended grants go with it.
                self.store.purge_expired_oauth(self.now()).await?;
                Ok(json!({"swept": swept}))
            }
            Task::CiPoll => Ok(json!({"resolved": self.poll_ci().await?.resolved})),
            Task::Backup => Ok(json!({"backed_up": self.scheduled_backup_if_due().await?})),
            Task::Rehearsal => self.scheduled_rehearsal_if_due().await,
            Task::AutoMerge => super::to_json(self.autonomy().auto_merge_tick().await?),
            Task::Watcher => super::to_json(self.watcher_tick().await?),
            Task::Improve => self.improve().improve_loop_tick().await,
            Task::Intake => super::to_json(self.intake_pass().await?),
            Task::Scouts => super::to_json(self.scout_pass().await?),
        }
    }

    /// Returns every claimed job whose lease ran out to the queue (reference 6.2), each with
    /// an audit row by `improve-loop` and its mirror rewritten.
    pub async fn sweep_expired_leases(&self) -> Result<usize> {
        let now = self.now();
        let audit = move |job: &crate::jobs::Job| {
            job_audit(
                "improve-loop",
                crate::jobs::state::JobEvent::LeaseExpired.audit_action(),
                job,
                json!({"status": "queued"}),
                now,
            )
        };
        let swept = self
            .store
            .sweep_expired_leases(now, &audit, mirror_fn(now))
            .await?;
        Ok(swept.len())
    }
}

/// The lease a task's run holds (in the leader-lease table, which backups leave out).
fn running_lease(task: Task) -> String {
    format!("task:{}", task.name())
}

fn count(report: &Value, key: &str) -> usize {
    report[key]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}

impl super::improve::Ticker for Service {
    fn tick<'a>(
        &'a self,
        caller: &'a Caller,
        task: Option<&'a str>,
    ) -> crate::service::registry::ToolFuture<'a, super::improve::TickAnswer> {
        Box::pin(self.improve_tick(caller, task))
    }
}

impl Service {
    /// `improve_run` action `tick`: the due periodic tasks now, or only `task`.
    pub(crate) async fn improve_tick(
        &self,
        caller: &Caller,
        task: Option<&str>,
    ) -> Result<super::improve::TickAnswer> {
        let task = task
            .map(Task::parse)
            .transpose()
            .map_err(|e| Error::Invalid(format!("improve_run: {e}")))?;
        let report = self.tick_now(task).await?;
        let ran: Vec<&str> = report.ran.iter().map(|r| r.task).collect();
        let now = self.now();
        self.store
            .append_audit(crate::ports::AuditEntry {
                actor: caller.actor(),
                action: "improve-tick".into(),
                namespace: None,
                path: None,
                params: json!({"task": task.map(Task::name), "ran": ran}),
                at: now,
            })
            .await?;
        Ok(super::improve::TickAnswer {
            ok: true,
            action: "tick",
            task: task.map(Task::name),
            report,
        })
    }
}
