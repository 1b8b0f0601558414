//! The notification webhook (`CAPSID_WEBHOOK_URL`): a JSON POST when a job blocks or fails and
//! when an agent asks a question or blocks, sent in the background with a timeout. A console
//! link the core gives as a path is made absolute with the public URL. A failed delivery is
//! logged and never affects the write that caused it.

use std::time::Duration;

use async_trait::async_trait;
use capsid_core::ports::{Notification, Notifier};

/// How long one delivery may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Posts notifications to one URL.
#[derive(Clone, Debug)]
pub struct WebhookNotifier {
    url: String,
    public_url: Option<String>,
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
            public_url: None,
            client,
        })
    }

    /// The same notifier, making console links absolute under `public_url`.
    pub fn with_public_url(mut self, public_url: &str) -> WebhookNotifier {
        self.public_url = Some(public_url.trim_end_matches('/').to_owned());
        self
    }
}

/// What a delivery's log line names: the job, or the agent.
fn subject(n: &Notification) -> String {
    match (&n.job_id, &n.agent) {
        (_, Some(agent)) => format!("{}/{agent}", n.namespace),
        (Some(job), None) => job.clone(),
        (None, None) => n.namespace.clone(),
    }
}

#[async_trait]
impl Notifier for WebhookNotifier {
    async fn notify(&self, mut notification: Notification) {
        if let (Some(base), Some(link)) = (&self.public_url, &notification.link)
            && link.starts_with('/')
        {
            notification.link = Some(format!("{base}{link}"));
        }
        let (client, url) = (self.client.clone(), self.url.clone());
        tokio::spawn(async move {
            let about = subject(&notification);
            match client.post(&url).json(&notification).send().await {
                Ok(resp) if resp.status().is_success() => {
                    tracing::info!(event = %notification.event, subject = %about, "webhook delivered");
                }
                Ok(resp) => {
                    tracing::warn!(event = %notification.event, subject = %about, status = resp.status().as_u16(), "webhook refused");
                }
                Err(e) => {
                    tracing::warn!(event = %notification.event, subject = %about, error = %e, "webhook delivery failed");
                }
            }
        });
    }
}
