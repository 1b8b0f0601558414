//! The notification port: tell a human when a job blocks or fails, and when an agent asks a
//! question or blocks (its checkmark). Delivery is best effort; a failure is logged by the
//! adapter and never affects the write that caused it.

use async_trait::async_trait;

/// What happened. Fields that do not apply to the event are left out of the JSON.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Notification {
    /// `job-blocked`, `job-failed`, `checkmark-paused_for_input`, `checkmark-blocked`.
    pub event: String,
    /// Namespace.
    pub namespace: String,
    /// Job id (job events, and a checkmark that belongs to a job).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Job title (job events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The agent (checkmark events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What the agent asks a human (checkmark events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Why.
    pub reason: String,
    /// The exact command a human must run, for blocked jobs.
    pub command: Option<String>,
    /// Where to act: a console path (`/console?...`), made absolute by the adapter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

/// Sends notifications.
#[async_trait]
pub trait Notifier: Send + Sync {
    /// Delivers `notification` (best effort).
    async fn notify(&self, notification: Notification);
}
