//! The notification port: tell a human when a job blocks or fails. Delivery is best effort;
//! a failure is logged by the adapter and never affects the job.

use async_trait::async_trait;

/// What happened.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Notification {
    /// `job-blocked`, `job-failed`, ...
    pub event: String,
    /// Namespace.
    pub namespace: String,
    /// Job id.
    pub job_id: String,
    /// Job title.
    pub title: String,
    /// Why.
    pub reason: String,
    /// The exact command a human must run, for blocked jobs.
    pub command: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

/// Sends notifications.
#[async_trait]
pub trait Notifier: Send + Sync {
    /// Delivers `notification` (best effort).
    async fn notify(&self, notification: Notification);
}
