//! The GitHub App adapter of the core's `RepoHost` port: octocrab carries every request to a
//! configurable API base URL, authenticated with short-lived installation tokens minted from
//! an RS256 App JWT. It carries calls and maps GitHub's answers to the port's errors; every
//! rule about which call is allowed lives in `capsid-core`.
//!
//! - `jwt`: the App JWT (issuer = the App's client id, backdated for clock skew, short expiry).
//! - `tokens`: installations resolved per repository (cached a day) and installation tokens
//!   (cached until shortly before they expire; never written anywhere but memory).
//! - `transport`: one request with the bounded secondary-rate-limit retry, the single token
//!   refresh on a 401, and GitHub's statuses as clear errors naming repository and operation.
//! - `wire`: GitHub's JSON shapes, reduced to the port's values.
//! - `reads`, `writes`: the port's operations; `port`: the `RepoHost` impl over them.

#![forbid(unsafe_code)]

mod jwt;
mod port;
mod reads;
mod tokens;
mod transport;
mod wire;
mod writes;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use capsid_core::time::Clock;

pub use transport::RetryPolicy;

/// GitHub's public API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// How to reach the App.
#[derive(Clone)]
pub struct GitHubConfig {
    /// The App's client id (the JWT issuer).
    pub client_id: String,
    /// The App's private key, PEM (PKCS#1 or PKCS#8).
    pub private_key_pem: String,
    /// The API base URL (`https://api.github.com`, a GitHub Enterprise `/api/v3` URL, or a
    /// test server).
    pub api_url: String,
    /// Secondary-rate-limit retries.
    pub retry: RetryPolicy,
    /// How long `ci_dispatch` waits between polls for the run it started.
    pub dispatch_poll_interval: Duration,
    /// Refresh an installation token this long before GitHub says it expires.
    pub token_refresh_margin: Duration,
}

impl GitHubConfig {
    /// A configuration with the production defaults.
    pub fn new(client_id: &str, private_key_pem: &str, api_url: Option<&str>) -> GitHubConfig {
        GitHubConfig {
            client_id: client_id.trim().to_owned(),
            private_key_pem: private_key_pem.to_owned(),
            api_url: api_url
                .unwrap_or(DEFAULT_API_URL)
                .trim_end_matches('/')
                .to_owned(),
            retry: RetryPolicy::default(),
            dispatch_poll_interval: Duration::from_secs(3),
            token_refresh_margin: Duration::from_secs(5 * 60),
        }
    }
}

impl fmt::Debug for GitHubConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHubConfig")
            .field("client_id", &self.client_id)
            .field("private_key_pem", &"<redacted>")
            .field("api_url", &self.api_url)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// The GitHub App, implementing the core's `RepoHost` port.
#[derive(Clone)]
pub struct GitHubApp {
    inner: Arc<Inner>,
}

struct Inner {
    http: transport::Http,
    tokens: tokens::TokenCache,
    poll_interval: Duration,
}

impl fmt::Debug for GitHubApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHubApp")
            .field("api_url", &self.inner.http.api_url())
            .finish_non_exhaustive()
    }
}

/// What `capsid doctor` reports about the App.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    /// `Ok(app name)` when GitHub accepted the JWT (`GET /app`), else why not.
    pub jwt: Result<String, String>,
    /// `Ok(installations as "account (id)")` when they could be listed, else why not.
    pub installations: Result<Vec<String>, String>,
}

impl GitHubApp {
    /// The App, with its key parsed now (a key that does not parse is refused here, naming
    /// the setting). Time comes from `clock`: JWT claims and token expiries.
    pub fn new(config: GitHubConfig, clock: Arc<dyn Clock>) -> Result<GitHubApp, String> {
        if config.client_id.is_empty() {
            return Err("CAPSID_GITHUB_APP_CLIENT_ID is empty".into());
        }
        let signer = jwt::AppSigner::new(&config.client_id, &config.private_key_pem)?;
        let http = transport::Http::new(&config.api_url, config.retry)?;
        let tokens = tokens::TokenCache::new(signer, clock, config.token_refresh_margin);
        Ok(GitHubApp {
            inner: Arc::new(Inner {
                http,
                tokens,
                poll_interval: config.dispatch_poll_interval,
            }),
        })
    }

    /// Whether GitHub accepts the App's JWT, and which installations it reaches.
    pub async fn diagnose(&self) -> Diagnosis {
        let http = &self.inner.http;
        let tokens = &self.inner.tokens;
        let jwt = match tokens
            .app_get(http, "/app", "read the App (GET /app)")
            .await
        {
            Ok(v) => Ok(v["name"]
                .as_str()
                .or(v["slug"].as_str())
                .unwrap_or("(unnamed)")
                .to_owned()),
            Err(e) => Err(e.to_string()),
        };
        let installations = match tokens
            .app_get(
                http,
                "/app/installations?per_page=100",
                "list the App's installations",
            )
            .await
        {
            Ok(v) => Ok(v
                .as_array()
                .map(|list| {
                    list.iter()
                        .map(|i| {
                            format!(
                                "{} ({})",
                                i["account"]["login"].as_str().unwrap_or("?"),
                                i["id"].as_u64().unwrap_or(0)
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()),
            Err(e) => Err(e.to_string()),
        };
        Diagnosis { jwt, installations }
    }
}
