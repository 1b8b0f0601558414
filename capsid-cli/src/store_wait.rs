//! How `capsid serve` reaches its store: Postgres with short acquire and connect timeouts
//! (so a call during an outage answers 503 in about a second, naming the cause), and, while
//! the server cannot be reached at start, attempts with backoff for at most
//! `--store-wait-secs` (0: exit at once), each logged with the real cause. SQLite opens as
//! every other command opens it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use capsid_core::ports::{Store, StoreError};
use capsid_store_postgres::{DEFAULT_MAX_CONNECTIONS, PgStore, PgTimeouts};
use clap::Args;

use crate::config::{self, GlobalArgs};

/// The store's timeouts and the wait at start, flags of `capsid serve`.
#[derive(Debug, Clone, Args)]
pub struct StoreWaitArgs {
    /// Postgres: milliseconds a call waits for a pooled connection before it answers 503
    /// with Retry-After and the cause.
    #[arg(long, env = "CAPSID_STORE_ACQUIRE_TIMEOUT_MS", default_value_t = 1_000,
          value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub store_acquire_timeout_ms: u64,
    /// Postgres: milliseconds one connection attempt may take before it counts as failed.
    #[arg(long, env = "CAPSID_STORE_CONNECT_TIMEOUT_MS", default_value_t = 1_000,
          value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub store_connect_timeout_ms: u64,
    /// Milliseconds each store probe of /health may take; past it /health answers 503
    /// `degraded`, naming the probe.
    #[arg(long, env = "CAPSID_STORE_PROBE_TIMEOUT_MS", default_value_t = 1_500,
          value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub store_probe_timeout_ms: u64,
    /// Postgres: seconds to keep trying at start while the database cannot be reached
    /// (each attempt logged with the cause, with backoff); 0 exits at once with the cause.
    #[arg(long, env = "CAPSID_STORE_WAIT_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub store_wait_secs: u64,
}

impl StoreWaitArgs {
    /// The Postgres store's timeouts.
    pub fn timeouts(&self) -> PgTimeouts {
        PgTimeouts {
            acquire: Duration::from_millis(self.store_acquire_timeout_ms),
            connect: Duration::from_millis(self.store_connect_timeout_ms),
        }
    }

    /// How long each `/health` probe may take.
    pub fn probe_timeout(&self) -> Duration {
        Duration::from_millis(self.store_probe_timeout_ms)
    }
}

/// The pause before attempt `attempt + 1` (attempts count from 1): 250 ms, doubling, at most
/// 5 s.
pub fn backoff(attempt: u32) -> Duration {
    let doubled = 250u64.saturating_mul(1u64 << attempt.saturating_sub(1).min(16));
    Duration::from_millis(doubled.min(5_000))
}

/// Opens (and by default migrates) the store the database URL names; Postgres with `args`'
/// timeouts, waiting for it at start as `args` says.
pub async fn open(
    global: &GlobalArgs,
    migrate: bool,
    args: &StoreWaitArgs,
) -> Result<(Arc<dyn Store>, Option<String>)> {
    if !global.is_postgres() {
        return config::open_store(global, migrate).await;
    }
    let url = global.database_url();
    let shown = config::redact_url(&url);
    let wait = Duration::from_secs(args.store_wait_secs);
    let started = Instant::now();
    let mut attempt = 1u32;
    let store = loop {
        match PgStore::connect_timeouts(&url, DEFAULT_MAX_CONNECTIONS, args.timeouts()).await {
            Ok(store) => break store,
            Err(StoreError::Unavailable(cause)) => {
                let left = wait.saturating_sub(started.elapsed());
                if left.is_zero() {
                    if args.store_wait_secs == 0 {
                        bail!(
                            "the Postgres store {shown} cannot be reached: {cause} (--store-wait-secs 0: not waiting)"
                        );
                    }
                    bail!(
                        "the Postgres store {shown} cannot be reached: {cause} (gave up after {attempt} attempts in {} s: --store-wait-secs)",
                        args.store_wait_secs
                    );
                }
                let pause = backoff(attempt).min(left);
                tracing::warn!(
                    database = %shown,
                    cause = %cause,
                    attempt,
                    retry_in_ms = u64::try_from(pause.as_millis()).unwrap_or(u64::MAX),
                    wait_secs = args.store_wait_secs,
                    "the Postgres store cannot be reached; retrying"
                );
                tokio::time::sleep(pause).await;
                attempt += 1;
            }
            Err(e) => bail!("connecting to {shown}: {e}"),
        }
    };
    if attempt > 1 {
        tracing::info!(database = %shown, attempt, "the Postgres store is reachable");
    }
    config::postgres_migrated(store, migrate).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_a_quarter_second_up_to_five() {
        let waits: Vec<u64> = (1..=8)
            .map(|a| u64::try_from(backoff(a).as_millis()).unwrap_or(0))
            .collect();
        assert_eq!(waits, [250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
        assert_eq!(backoff(u32::MAX), Duration::from_secs(5));
    }
}
