//! Capsid's model adapter: the core's `ModelClient` port over the Anthropic Messages API
//! (`POST {base}/v1/messages`), with a request deadline and a bounded answer. The API key is
//! held as a sensitive header value and appears in no `Debug` output, log line or error.
#![forbid(unsafe_code)]

mod wire;

use std::time::Duration;

use async_trait::async_trait;
use capsid_core::ports::{ModelClient, ModelError, ModelReply, ModelRequest};
use reqwest::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};

/// The API's public base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version every request names.
pub const API_VERSION: &str = "2023-06-01";
/// How long one completion may take, unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest answer body read; a larger one fails without being buffered.
pub const BODY_MAX: usize = 1024 * 1024;
/// The largest refusal body read for its message.
const ERROR_BODY_MAX: usize = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a client could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The base URL is not `http(s)://...`.
    #[error("the model API URL must be an http(s) URL, got {0:?}")]
    BadUrl(String),
    /// The key is empty or holds characters a header cannot carry.
    #[error("the model API key is empty or not a valid header value")]
    BadKey,
    /// The HTTP client did not build.
    #[error("building the model API client: {0}")]
    Client(String),
}

/// A client of the Messages API.
#[derive(Clone)]
pub struct AnthropicClient {
    base_url: String,
    key: HeaderValue,
    timeout: Duration,
    http: reqwest::Client,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("timeout", &self.timeout)
            .finish()
    }
}

fn http_client(timeout: Duration) -> Result<reqwest::Client, ConfigError> {
    // HTTPS needs the process's ring provider; installing it twice is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(CONNECT_TIMEOUT.min(timeout))
        // A redirect could carry the key to another host: none is followed.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ConfigError::Client(e.to_string()))
}

impl AnthropicClient {
    /// A client of the API at `base_url` (`https://api.anthropic.com`, or a fake in tests)
    /// with `api_key`, and the default 120-second deadline.
    pub fn new(base_url: &str, api_key: &str) -> Result<AnthropicClient, ConfigError> {
        let base_url = base_url.trim().trim_end_matches('/');
        if !(base_url.starts_with("https://") || base_url.starts_with("http://")) {
            return Err(ConfigError::BadUrl(base_url.to_owned()));
        }
        let api_key = api_key.trim();
        if api_key.is_empty() {
            return Err(ConfigError::BadKey);
        }
        let mut key = HeaderValue::from_str(api_key).map_err(|_| ConfigError::BadKey)?;
        key.set_sensitive(true);
        Ok(AnthropicClient {
            base_url: base_url.to_owned(),
            key,
            timeout: DEFAULT_TIMEOUT,
            http: http_client(DEFAULT_TIMEOUT)?,
        })
    }

    /// The same client with another deadline for each completion.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<AnthropicClient, ConfigError> {
        self.http = http_client(timeout)?;
        self.timeout = timeout;
        Ok(self)
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn transport_error(&self, e: &reqwest::Error) -> ModelError {
        if e.is_timeout() {
            ModelError::Failed(format!("no answer within {} s", self.timeout.as_secs_f64()))
        } else {
            // The URL holds no secret, but the message is kept to the cause.
            ModelError::Failed(wire::bounded(&format!(
                "the request did not complete: {}",
                error_chain(e)
            )))
        }
    }
}

fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What reading a body bounded by `max` found.
enum Read {
    Body(Vec<u8>),
    TooLarge,
}

/// Reads `response`'s body chunk by chunk, stopping as soon as it passes `max` bytes (or
/// before reading when its declared length already does).
async fn read_bounded(mut response: reqwest::Response, max: usize) -> Result<Read, reqwest::Error> {
    if response
        .content_length()
        .is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX))
    {
        return Ok(Read::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > max {
            return Ok(Read::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Read::Body(body))
}

impl AnthropicClient {
    /// `error` with every occurrence of the key (an API or proxy that echoes it) redacted.
    fn scrub(&self, error: ModelError) -> ModelError {
        let Ok(key) = self.key.to_str() else {
            return error;
        };
        let clean = |text: String| text.replace(key, "<redacted>");
        match error {
            ModelError::Unauthorized(t) => ModelError::Unauthorized(clean(t)),
            ModelError::Busy(t) => ModelError::Busy(clean(t)),
            ModelError::Refused(t) => ModelError::Refused(clean(t)),
            ModelError::Failed(t) => ModelError::Failed(clean(t)),
        }
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let response = self
            .http
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", self.key.clone())
            .header("anthropic-version", API_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .json(&wire::Body::of(request))
            .send()
            .await
            .map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        if status.is_success() {
            return match read_bounded(response, BODY_MAX).await {
                Ok(Read::Body(bytes)) => wire::reply(&request.model, &bytes),
                Ok(Read::TooLarge) => Err(ModelError::Failed(format!(
                    "the answer is larger than {BODY_MAX} bytes"
                ))),
                Err(e) => Err(self.transport_error(&e)),
            };
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match read_bounded(response, ERROR_BODY_MAX).await {
            Ok(Read::Body(bytes)) => Some(bytes),
            Ok(Read::TooLarge) | Err(_) => None,
        };
        Err(wire::refusal(
            status.as_u16(),
            retry_after.as_deref(),
            body.as_deref(),
        ))
    }
}

impl AnthropicClient {
    /// Whether the API answers and accepts the key, without asking for a completion:
    /// `GET {base}/v1/models?limit=1` (no tokens used). For `capsid doctor`.
    pub async fn check(&self) -> Result<(), ModelError> {
        let checked = async {
            let response = self
                .http
                .get(format!("{}/v1/models?limit=1", self.base_url))
                .header("x-api-key", self.key.clone())
                .header("anthropic-version", API_VERSION)
                .send()
                .await
                .map_err(|e| self.transport_error(&e))?;
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            let body = match read_bounded(response, ERROR_BODY_MAX).await {
                Ok(Read::Body(bytes)) => Some(bytes),
                Ok(Read::TooLarge) | Err(_) => None,
            };
            Err(wire::refusal(status.as_u16(), None, body.as_deref()))
        };
        checked.await.map_err(|e| self.scrub(e))
    }
}

#[async_trait]
impl ModelClient for AnthropicClient {
    async fn complete(&self, request: ModelRequest) -> Result<ModelReply, ModelError> {
        self.send(&request).await.map_err(|e| self.scrub(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_stays_out_of_debug_and_bad_settings_are_named() {
        let client = AnthropicClient::new("https://api.example/", "sk-ant-SECRET").unwrap();
        let shown = format!("{client:?} {client:#?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert_eq!(client.base_url(), "https://api.example");
        assert_eq!(
            AnthropicClient::new("ftp://x", "k").unwrap_err(),
            ConfigError::BadUrl("ftp://x".into())
        );
        assert_eq!(
            AnthropicClient::new("http://x", " ").unwrap_err(),
            ConfigError::BadKey
        );
        let bad = AnthropicClient::new("http://x", "sk\nSECRET").unwrap_err();
        assert_eq!(bad, ConfigError::BadKey);
        assert!(!format!("{bad} {bad:?}").contains("SECRET"));
    }
}
