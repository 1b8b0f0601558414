//! The system's clock and entropy, behind the core's ports: what a process that hosts the
//! service (the `capsid` binary, or an application embedding it) hands [`capsid_core::service::Service::new`].

use std::time::{SystemTime, UNIX_EPOCH};

use capsid_core::ids::Entropy;
use capsid_core::time::{Clock, Timestamp};

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        Timestamp::from_millis(i64::try_from(ms).unwrap_or(i64::MAX))
    }
}

/// The operating system's random generator (through `rand`'s thread-local CSPRNG, seeded
/// from the OS).
#[derive(Debug, Default, Clone, Copy)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&self, buf: &mut [u8]) {
        rand::fill(buf);
    }
}

/// Periodic tasks bounded by tokio's timer.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioDeadline;

#[async_trait::async_trait]
impl capsid_core::ports::Deadline for TokioDeadline {
    async fn within<'a>(
        &self,
        limit_ms: u64,
        task: capsid_core::ports::TaskFuture<'a>,
    ) -> Option<capsid_core::error::Result<serde_json::Value>> {
        tokio::time::timeout(std::time::Duration::from_millis(limit_ms), task)
            .await
            .ok()
    }
}
