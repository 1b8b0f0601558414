//! The notification webhook (`CAPSID_WEBHOOK_URL`): a JSON POST when a job blocks or fails,
//! sent in the background with a timeout. A failed delivery is logged and never affects the
//! job.

use std::time::Duration;

use async_trait::async_trait;
use capsid_core::ports::{Notification, Notifier};

/// How long one delivery may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Posts notifications to one URL.
#[derive(Clone, Debug)]
pub struct WebhookNotifier {
    url: String,
    client: reqwest::Client,
}

/// Installs the TLS crypto provider once per process (ring; no C toolchain needed). Every
/// process that builds an HTTP client must call it first: the workspace builds reqwest without
/// a default provider.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl WebhookNotifier {
    /// A notifier for `url` (http or https).
    pub fn new(url: &str) -> Result<WebhookNotifier, String> {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!(
                "CAPSID_WEBHOOK_URL must be an http(s) URL, got {url:?}"
            ));
        }
        install_tls_provider();
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| format!("building the webhook client: {e}"))?;
        Ok(WebhookNotifier {
            url: url.to_owned(),
            client,
        })
    }
}

#[async_trait]
impl Notifier for WebhookNotifier {
    async fn notify(&self, notification: Notification) {
        let (client, url) = (self.client.clone(), self.url.clone());
        tokio::spawn(async move {
            match client.post(&url).json(&notification).send().await {
                Ok(resp) if resp.status().is_success() => {
                    tracing::info!(event = %notification.event, job = %notification.job_id, "webhook delivered");
                }
                Ok(resp) => {
                    tracing::warn!(event = %notification.event, job = %notification.job_id, status = resp.status().as_u16(), "webhook refused");
                }
                Err(e) => {
                    tracing::warn!(event = %notification.event, job = %notification.job_id, error = %e, "webhook delivery failed");
                }
            }
        });
    }
}
