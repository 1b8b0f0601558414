//! GitHub as the owner's identity provider: the authorize URL (with PKCE S256), the code
//! exchange at `<web>/login/oauth/access_token`, and `<api>/user`. GitHub's token is used
//! for that one call and dropped: never stored, logged, or handed to an MCP client.

use std::time::Duration;

use capsid_core::oauth::pkce::s256;
use capsid_core::oauth::request::with_query;
use serde::Deserialize;

use crate::owner::OwnerConfig;

/// How long one call to GitHub may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The GitHub user who signed in.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct GitHubUser {
    /// Login.
    pub login: String,
    /// Numeric id.
    pub id: i64,
}

/// A client of GitHub's OAuth App endpoints.
#[derive(Clone, Debug)]
pub struct GitHub {
    web: String,
    api: String,
    client_id: String,
    client_secret: String,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    error: Option<String>,
}

impl GitHub {
    /// A client for the configured endpoints.
    pub fn new(config: &OwnerConfig) -> Result<GitHub, String> {
        crate::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("building the GitHub client: {e}"))?;
        Ok(GitHub {
            web: config.github_web_url.trim_end_matches('/').to_owned(),
            api: config.github_api_url.trim_end_matches('/').to_owned(),
            client_id: config.github_client_id.clone(),
            client_secret: config.github_client_secret.clone(),
            http,
        })
    }

    /// GitHub's web origin, for the pages' `form-action`.
    pub fn web_origin(&self) -> &str {
        crate::owner::origin_of(&self.web)
    }

    /// Where to send the browser: GitHub's authorize page for `state`, coming back to
    /// `redirect_uri`, with the S256 challenge of `verifier`.
    pub fn authorize_url(&self, redirect_uri: &str, state: &str, verifier: &str) -> String {
        with_query(
            &format!("{}/login/oauth/authorize", self.web),
            &[
                ("client_id", &self.client_id),
                ("redirect_uri", redirect_uri),
                ("scope", "read:user"),
                ("state", state),
                ("code_challenge", &s256(verifier)),
                ("code_challenge_method", "S256"),
                ("allow_signup", "false"),
            ],
        )
    }

    /// Exchanges GitHub's `code` for a GitHub token.
    pub async fn exchange(
        &self,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<String, String> {
        let form = serde_urlencoded::to_string([
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.as_str()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ])
        .map_err(|_| "could not encode the code exchange".to_owned())?;
        let resp = self
            .http
            .post(format!("{}/login/oauth/access_token", self.web))
            .header(reqwest::header::ACCEPT, "application/json")
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form)
            .send()
            .await
            .map_err(|e| format!("GitHub did not answer the code exchange: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!(
                "GitHub refused the code exchange ({})",
                resp.status()
            ));
        }
        let answer: TokenAnswer = resp
            .json()
            .await
            .map_err(|_| "GitHub's code exchange answer was unreadable".to_owned())?;
        match (answer.access_token, answer.error) {
            (Some(t), _) if !t.is_empty() => Ok(t),
            (_, Some(e)) => Err(format!("GitHub refused the code exchange: {e}")),
            _ => Err("GitHub's code exchange carried no token".into()),
        }
    }

    /// The user a GitHub token belongs to.
    pub async fn user(&self, token: &str) -> Result<GitHubUser, String> {
        let resp = self
            .http
            .get(format!("{}/user", self.api))
            .bearer_auth(token)
            .header(reqwest::header::ACCEPT, "application/vnd.github+json")
            .header(reqwest::header::USER_AGENT, "capsid")
            .send()
            .await
            .map_err(|e| format!("GitHub did not answer /user: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("GitHub refused /user ({})", resp.status()));
        }
        resp.json()
            .await
            .map_err(|_| "GitHub's /user answer was unreadable".to_owned())
    }
}
