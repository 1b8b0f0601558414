//! One request to GitHub through octocrab, and GitHub's answer as the port's error: 404 not
//! found, 409 conflict, 422 rejected, 401 and 403 refused, rate limits, 5xx failed, each
//! naming the repository and the operation. Secondary rate limits (403/429 with
//! `retry-after` or GitHub's "secondary rate limit" message) are retried with backoff within
//! a bound; a primary limit (`x-ratelimit-remaining: 0`) is reported at once with its reset.
//! Credentials travel only in a sensitive `Authorization` header and are never logged.

use std::time::Duration;

use capsid_core::ports::RepoHostError;
use http::header::{ACCEPT, AUTHORIZATION, HeaderValue, USER_AGENT};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use octocrab::Octocrab;
use serde_json::Value;

/// How secondary rate limits are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub secondary_retries: u32,
    /// First wait when GitHub names none; doubles each retry.
    pub backoff: Duration,
    /// Longest single wait, whatever GitHub asks.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            secondary_retries: 3,
            backoff: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// A bearer credential; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// GitHub's answer.
#[derive(Debug)]
pub struct Reply {
    /// Status.
    pub status: StatusCode,
    /// Headers.
    pub headers: http::HeaderMap,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self, what: &str) -> Result<Value, RepoHostError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            RepoHostError::Failed(format!("{what}: GitHub's answer is not JSON ({e})"))
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// GitHub's `message` (and `errors`), or the start of the body.
    pub fn message(&self) -> String {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(v) if v["message"].is_string() => {
                let mut m = v["message"].as_str().unwrap_or_default().to_owned();
                if let Some(errors) = v["errors"].as_array().filter(|e| !e.is_empty()) {
                    m.push_str(&format!(" {}", Value::Array(errors.clone())));
                }
                m
            }
            _ => String::from_utf8_lossy(&self.body)
                .chars()
                .take(300)
                .collect(),
        }
    }

    fn is_primary_limit(&self) -> bool {
        matches!(self.status.as_u16(), 403 | 429)
            && self.header("x-ratelimit-remaining") == Some("0")
    }

    fn is_secondary_limit(&self) -> bool {
        matches!(self.status.as_u16(), 403 | 429)
            && !self.is_primary_limit()
            && (self.header("retry-after").is_some()
                || self
                    .message()
                    .to_lowercase()
                    .contains("secondary rate limit"))
    }
}

/// GitHub's statuses as the port's errors; `what` names the repository and the operation.
pub fn classify(reply: Reply, what: &str) -> Result<Reply, RepoHostError> {
    let status = reply.status;
    if status.is_success() {
        return Ok(reply);
    }
    let detail = format!("{what}: HTTP {}: {}", status.as_u16(), reply.message());
    Err(match status.as_u16() {
        404 => RepoHostError::NotFound(detail),
        409 => RepoHostError::Conflict(detail),
        405 | 422 => RepoHostError::Rejected(detail),
        401 => RepoHostError::Forbidden(format!(
            "{detail} (the installation token was refused even after one refresh)"
        )),
        403 | 429 if reply.is_primary_limit() => RepoHostError::RateLimited(format!(
            "{detail} (primary rate limit; it resets at unix time {})",
            reply.header("x-ratelimit-reset").unwrap_or("?")
        )),
        403 | 429 if reply.is_secondary_limit() => RepoHostError::RateLimited(format!(
            "{detail} (secondary rate limit, still refused after the bounded retries)"
        )),
        403 => RepoHostError::Forbidden(detail),
        429 => RepoHostError::RateLimited(detail),
        _ => RepoHostError::Failed(detail),
    })
}

/// The HTTP client: octocrab over hyper-rustls (ring), with no credentials of its own.
pub struct Http {
    octo: Octocrab,
    // For absolute URLs GitHub redirects to (log downloads): no API base path is joined to
    // them, and no credential is sent.
    plain: Octocrab,
    api_url: String,
    retry: RetryPolicy,
}

impl Http {
    /// A client for `api_url`.
    pub fn new(api_url: &str, retry: RetryPolicy) -> Result<Http, String> {
        let api_url = api_url.trim_end_matches('/').to_owned();
        if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
            return Err(format!(
                "CAPSID_GITHUB_API_URL must be an http(s) URL, got {api_url:?}"
            ));
        }
        let octo = Octocrab::builder()
            .base_uri(api_url.as_str())
            .map_err(|e| format!("CAPSID_GITHUB_API_URL {api_url:?} is not a usable URL: {e}"))?
            .add_header(USER_AGENT, "capsid".into())
            .add_header(
                http::header::HeaderName::from_static("x-github-api-version"),
                "2022-11-28".into(),
            )
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| format!("building the GitHub client failed: {e}"))?;
        let plain = Octocrab::builder()
            .add_header(USER_AGENT, "capsid".into())
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| format!("building the GitHub client failed: {e}"))?;
        Ok(Http {
            octo,
            plain,
            api_url,
            retry,
        })
    }

    /// The API base URL.
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// One exchange. `target` is a path under the API URL (`/repos/...`) or an absolute URL
    /// (a log download); `bearer` is sent only with API paths.
    async fn exchange(
        &self,
        method: &Method,
        target: &str,
        body: Option<&Value>,
        bearer: Option<&Secret>,
    ) -> Result<Reply, String> {
        let absolute = target.starts_with("https://") || target.starts_with("http://");
        let client = if absolute { &self.plain } else { &self.octo };
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(target)
            .header(ACCEPT, "application/vnd.github+json");
        if let (Some(secret), false) = (bearer, absolute) {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", secret.0))
                .map_err(|_| "a credential is not a valid header value".to_owned())?;
            value.set_sensitive(true);
            builder = builder.header(AUTHORIZATION, value);
        }
        let request = client
            .build_request(builder, body)
            .map_err(|e| format!("building the request failed: {e}"))?;
        let response = client
            .execute(request)
            .await
            .map_err(|e| format!("GitHub could not be reached: {e}"))?;
        let (parts, body) = response.into_parts();
        let bytes = body
            .collect()
            .await
            .map_err(|e| format!("reading GitHub's answer failed: {e}"))?
            .to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body: bytes.to_vec(),
        })
    }

    /// One request, with secondary rate limits retried within the policy's bound. Any status
    /// comes back as a [`Reply`]; only an unreachable GitHub is an error.
    pub async fn send(
        &self,
        method: Method,
        target: &str,
        body: Option<&Value>,
        bearer: Option<&Secret>,
        what: &str,
    ) -> Result<Reply, RepoHostError> {
        let mut attempt = 0u32;
        loop {
            let reply = self
                .exchange(&method, target, body, bearer)
                .await
                .map_err(|e| RepoHostError::Failed(format!("{what}: {e}")))?;
            tracing::debug!(
                operation = what,
                status = reply.status.as_u16(),
                "GitHub answered"
            );
            if !reply.is_secondary_limit() || attempt >= self.retry.secondary_retries {
                return Ok(reply);
            }
            let wait = retry_wait(&self.retry, attempt, reply.header("retry-after"));
            tracing::warn!(
                operation = what,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                attempt = attempt + 1,
                "GitHub secondary rate limit; retrying"
            );
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            attempt += 1;
        }
    }
}

/// How long to wait before retry `attempt + 1` of a secondary rate limit: what GitHub asked
/// in `retry-after` (seconds), else the backoff doubled per attempt; never past `max_wait`.
pub fn retry_wait(policy: &RetryPolicy, attempt: u32, retry_after: Option<&str>) -> Duration {
    let asked = retry_after
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let doubled = policy.backoff.saturating_mul(1u32 << attempt.min(16));
    asked.unwrap_or(doubled).min(policy.max_wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_waits_double_honour_retry_after_and_stay_bounded() {
        let p = RetryPolicy::default();
        let secs = |a, h| retry_wait(&p, a, h).as_secs();
        assert_eq!([secs(0, None), secs(1, None), secs(2, None)], [1, 2, 4]);
        assert_eq!(secs(0, Some("7")), 7, "GitHub's retry-after wins");
        assert_eq!(secs(0, Some("3600")), 60, "never past max_wait");
        assert_eq!(secs(40, None), 60, "no overflow, still bounded");
        assert_eq!(
            secs(1, Some("soon")),
            2,
            "an unreadable retry-after is ignored"
        );
    }

    fn reply(status: u16, headers: &[(&'static str, &str)], body: &str) -> Reply {
        let mut map = http::HeaderMap::new();
        for (k, v) in headers {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        Reply {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn statuses_become_errors_naming_the_operation() {
        let what = "read contents of a.rs on o/r";
        let e = classify(reply(404, &[], r#"{"message":"Not Found"}"#), what).unwrap_err();
        assert!(
            matches!(&e, RepoHostError::NotFound(m) if m.contains(what) && m.contains("Not Found")),
            "{e}"
        );
        assert!(matches!(
            classify(reply(409, &[], "{}"), what),
            Err(RepoHostError::Conflict(_))
        ));
        let e = classify(
            reply(
                422,
                &[],
                r#"{"message":"Validation Failed","errors":[{"code":"custom"}]}"#,
            ),
            what,
        )
        .unwrap_err();
        assert!(
            matches!(&e, RepoHostError::Rejected(m) if m.contains("custom")),
            "{e}"
        );
        assert!(
            matches!(classify(reply(502, &[], "bad gateway"), what), Err(RepoHostError::Failed(m)) if m.contains("502"))
        );
        let primary = reply(
            403,
            &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "123")],
            "{}",
        );
        assert!(
            matches!(classify(primary, what), Err(RepoHostError::RateLimited(m)) if m.contains("123"))
        );
        let secondary = reply(
            403,
            &[],
            r#"{"message":"You have exceeded a secondary rate limit"}"#,
        );
        assert!(secondary.is_secondary_limit());
        assert!(matches!(
            classify(secondary, what),
            Err(RepoHostError::RateLimited(_))
        ));
        assert!(matches!(
            classify(
                reply(
                    403,
                    &[],
                    r#"{"message":"Resource not accessible by integration"}"#
                ),
                what
            ),
            Err(RepoHostError::Forbidden(_))
        ));
        assert!(classify(reply(204, &[], ""), what).is_ok());
    }

    #[test]
    fn secrets_never_print() {
        assert_eq!(
            format!("{:?}", Secret("ghs_abc".into())),
            "Secret(<redacted>)"
        );
    }
}
