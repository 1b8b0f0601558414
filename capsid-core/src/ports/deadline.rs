//! The deadline port: runs a periodic task for at most a given time. The core has no timer;
//! the process hosting it (the `capsid` binary over tokio) owns one.

use std::future::Future;
use std::pin::Pin;

use async_trait::async_trait;

/// A task's run, boxed so any task fits.
pub type TaskFuture<'a> =
    Pin<Box<dyn Future<Output = crate::error::Result<serde_json::Value>> + Send + 'a>>;

/// Bounds a future in time.
#[async_trait]
pub trait Deadline: Send + Sync {
    /// Runs `task` for at most `limit_ms`; `None` when it ran out of time (it is then
    /// dropped, so whatever it had not yet committed is not committed).
    async fn within<'a>(
        &self,
        limit_ms: u64,
        task: TaskFuture<'a>,
    ) -> Option<crate::error::Result<serde_json::Value>>;
}
