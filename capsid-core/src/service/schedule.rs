//! Periodic work: the lease sweep (and the purge of expired login state) every five minutes, run by one replica at a time (the
//! store's leader lease decides which). Time comes from the clock port, so a test drives the
//! ticks by moving a `ManualClock`; no test waits.

use std::sync::Mutex;

use serde_json::json;

use super::Service;
use super::jobs::{job_audit, mirror_fn};
use crate::error::Result;
use crate::jobs::lease::LEASE_SWEEP_INTERVAL_MS;
use crate::time::Timestamp;

/// The leader lease guarding the sweep.
pub const SWEEP_LEASE: &str = "lease-sweep";

/// What one tick did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Whether the sweep was due.
    pub due: bool,
    /// Whether this replica led it.
    pub led: bool,
    /// Jobs returned to the queue.
    pub swept: usize,
    /// Pushed checkpoints whose CI verdict this tick resolved.
    pub ci_resolved: usize,
    /// Whether the daily backup (09:00 UTC, on the leader) ran in this tick.
    pub backed_up: bool,
}

/// Runs the periodic tasks when they are due.
#[derive(Debug)]
pub struct Scheduler {
    service: Service,
    replica: String,
    last_sweep: Mutex<Option<Timestamp>>,
}

impl Scheduler {
    /// A scheduler for one replica (`replica` names it in the leader lease).
    pub fn new(service: Service, replica: impl Into<String>) -> Scheduler {
        Scheduler {
            service,
            replica: replica.into(),
            last_sweep: Mutex::new(None),
        }
    }

    /// Runs whatever is due now.
    pub async fn tick(&self) -> Result<TickReport> {
        let now = self.service.now();
        let due = {
            let mut last = self.last_sweep.lock().unwrap_or_else(|p| p.into_inner());
            let due = last.is_none_or(|t| now.millis_since(t) >= LEASE_SWEEP_INTERVAL_MS);
            if due {
                *last = Some(now);
            }
            due
        };
        if !due {
            return Ok(TickReport::default());
        }
        // Hold the lease a little less than an interval, so the next tick anywhere can lead.
        let until = now.plus_millis(LEASE_SWEEP_INTERVAL_MS - 1_000);
        if !self
            .service
            .store
            .acquire_lease(SWEEP_LEASE, &self.replica, now, until)
            .await?
        {
            return Ok(TickReport {
                due: true,
                led: false,
                ..TickReport::default()
            });
        }
        let swept = self.service.sweep_expired_leases().await?;
        // Spent login states, codes, counters, sessions and ended grants go with the sweep.
        self.service.store.purge_expired_oauth(now).await?;
        // The CI follow-through of pushed checkpoints rides the same leader lease.
        let ci = self.service.poll_ci().await?;
        let backed_up = self.service.daily_backup_if_due().await?;
        Ok(TickReport {
            due: true,
            led: true,
            swept,
            ci_resolved: ci.resolved,
            backed_up,
        })
    }
}

impl Service {
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
