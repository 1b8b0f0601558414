//! Installation access: the installation covering a repository (resolved with the App JWT,
//! cached for a day) and a token scoped to that one repository (cached until shortly before
//! GitHub says it expires). Tokens live only in this process's memory. A 401 from the API
//! forgets the token and retries the call once with a fresh one; a second 401 is an error,
//! never a loop.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use capsid_core::ports::{RepoHostError, RepoRef};
use capsid_core::time::{Clock, DAY_MS, HOUR_MS, Timestamp};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::jwt::AppSigner;
use crate::transport::{Http, Reply, Secret, classify};

/// How long an installation id is trusted.
const INSTALLATION_TTL_MS: i64 = DAY_MS;

struct Token {
    secret: Secret,
    expires_at: Timestamp,
}

/// The App's credentials and the caches above.
pub struct TokenCache {
    signer: AppSigner,
    clock: Arc<dyn Clock>,
    margin_ms: i64,
    installations: Mutex<HashMap<RepoRef, (u64, Timestamp)>>,
    tokens: Mutex<HashMap<RepoRef, Token>>,
}

impl TokenCache {
    /// Caches for the App `signer` signs for.
    pub fn new(signer: AppSigner, clock: Arc<dyn Clock>, margin: Duration) -> TokenCache {
        TokenCache {
            signer,
            clock,
            margin_ms: i64::try_from(margin.as_millis()).unwrap_or(i64::MAX),
            installations: Mutex::default(),
            tokens: Mutex::default(),
        }
    }

    fn jwt(&self) -> Result<Secret, RepoHostError> {
        self.signer
            .sign(self.clock.now())
            .map(Secret)
            .map_err(RepoHostError::Failed)
    }

    /// A request authenticated as the App itself (the JWT), as JSON.
    async fn app_call(
        &self,
        http: &Http,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Value, RepoHostError> {
        let jwt = self.jwt()?;
        let reply = http.send(method, path, body, Some(&jwt), what).await?;
        let reply = match reply.status {
            StatusCode::UNAUTHORIZED => {
                return Err(RepoHostError::Forbidden(format!(
                    "{what}: HTTP 401: {} (GitHub refused the App's JWT: check CAPSID_GITHUB_APP_CLIENT_ID, CAPSID_GITHUB_APP_PRIVATE_KEY and this machine's clock)",
                    reply.message()
                )));
            }
            _ => classify(reply, what)?,
        };
        reply.json(what)
    }

    /// `GET path` as the App, for `capsid doctor`.
    pub async fn app_get(
        &self,
        http: &Http,
        path: &str,
        what: &str,
    ) -> Result<Value, RepoHostError> {
        self.app_call(http, Method::GET, path, None, what).await
    }

    async fn installation(&self, http: &Http, repo: &RepoRef) -> Result<u64, RepoHostError> {
        let now = self.clock.now();
        let mut map = self.installations.lock().await;
        if let Some((id, at)) = map.get(repo)
            && now.millis_since(*at) < INSTALLATION_TTL_MS
        {
            return Ok(*id);
        }
        let what = format!("find the GitHub App installation for {repo}");
        let path = format!(
            "/repos/{}/{}/installation",
            seg(&repo.owner)?,
            seg(&repo.name)?
        );
        let found = self
            .app_call(http, Method::GET, &path, None, &what)
            .await
            .map_err(|e| match e {
                RepoHostError::NotFound(m) => RepoHostError::NotFound(format!(
                    "{m} (the App is not installed on {repo}; its credentials are fine)"
                )),
                other => other,
            })?;
        let id = found["id"].as_u64().ok_or_else(|| {
            RepoHostError::Failed(format!("{what}: GitHub's answer has no installation id"))
        })?;
        map.insert(repo.clone(), (id, now));
        Ok(id)
    }

    /// A token for `repo`: the cached one while it has more than the margin left, else a new
    /// one scoped to that repository.
    pub async fn token(&self, http: &Http, repo: &RepoRef) -> Result<Secret, RepoHostError> {
        let mut tokens = self.tokens.lock().await;
        let now = self.clock.now();
        if let Some(t) = tokens.get(repo)
            && t.expires_at.millis_since(now) > self.margin_ms
        {
            return Ok(t.secret.clone());
        }
        let id = self.installation(http, repo).await?;
        let what = format!("mint an installation token for {repo}");
        let body = json!({"repositories": [repo.name]});
        let minted = self
            .app_call(
                http,
                Method::POST,
                &format!("/app/installations/{id}/access_tokens"),
                Some(&body),
                &what,
            )
            .await;
        let minted = match minted {
            Ok(v) => v,
            Err(e) => {
                // The installation may be gone or changed: resolve it afresh next time.
                self.installations.lock().await.remove(repo);
                return Err(e);
            }
        };
        let secret = minted["token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(|t| Secret(t.to_owned()))
            .ok_or_else(|| {
                RepoHostError::Failed(format!("{what}: GitHub's answer has no token"))
            })?;
        let expires_at = minted["expires_at"]
            .as_str()
            .and_then(Timestamp::parse)
            .unwrap_or_else(|| now.plus_millis(HOUR_MS));
        tokens.insert(
            repo.clone(),
            Token {
                secret: secret.clone(),
                expires_at,
            },
        );
        Ok(secret)
    }

    async fn forget(&self, repo: &RepoRef, secret: &Secret) {
        let mut tokens = self.tokens.lock().await;
        if tokens.get(repo).is_some_and(|t| &t.secret == secret) {
            tokens.remove(repo);
        }
    }

    /// A request on `repo` with its installation token; a 401 forces exactly one refresh.
    /// Returns GitHub's answer for the caller to classify.
    pub async fn call(
        &self,
        http: &Http,
        repo: &RepoRef,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Reply, RepoHostError> {
        let token = self.token(http, repo).await?;
        let reply = http
            .send(method.clone(), path, body, Some(&token), what)
            .await?;
        if reply.status != StatusCode::UNAUTHORIZED {
            return Ok(reply);
        }
        tracing::info!(
            operation = what,
            "installation token refused; refreshing it once"
        );
        self.forget(repo, &token).await;
        let token = self.token(http, repo).await?;
        http.send(method, path, body, Some(&token), what).await
    }
}

/// One URL path segment, percent-encoded; `.` and `..` are refused so a request can never
/// leave the repository it names.
pub fn seg(value: &str) -> Result<String, RepoHostError> {
    if value.is_empty() || value == "." || value == ".." {
        return Err(RepoHostError::Failed(format!(
            "refusing a GitHub request with the path segment {value:?}"
        )));
    }
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// A multi-segment path (a file path, a branch with slashes), each segment encoded.
pub fn segs(value: &str) -> Result<String, RepoHostError> {
    value
        .split('/')
        .map(seg)
        .collect::<Result<Vec<_>, _>>()
        .map(|s| s.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded_and_cannot_climb() {
        assert_eq!(seg("a b#?").unwrap(), "a%20b%23%3F");
        assert_eq!(seg("feature/x").unwrap(), "feature%2Fx");
        assert_eq!(segs("src/a b.rs").unwrap(), "src/a%20b.rs");
        assert!(segs("a/../b").is_err());
        assert!(segs("a//b").is_err());
        assert!(seg("..").is_err());
    }
}
