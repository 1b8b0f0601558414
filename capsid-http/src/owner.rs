//! The owner's login configuration (`CAPSID_GITHUB_CLIENT_ID`, `CAPSID_GITHUB_CLIENT_SECRET`,
//! `CAPSID_ADMIN_GITHUB_LOGIN`, `CAPSID_COOKIE_KEY`, the GitHub endpoints) and what the routes
//! derive from it: the core's [`OwnerSettings`], the GitHub client, cookie attributes.

use std::fmt;

use capsid_core::crypto::hmac_sha256_hex;
use capsid_core::oauth::OwnerSettings;

use crate::github::GitHub;

/// What the owner's login needs. Secrets live only in memory; `Debug` redacts them.
#[derive(Clone)]
pub struct OwnerConfig {
    /// The GitHub OAuth App's client id.
    pub github_client_id: String,
    /// The GitHub OAuth App's client secret.
    pub github_client_secret: String,
    /// The owner: a GitHub login (case-insensitive) or numeric user id.
    pub admin_login: String,
    /// Key of the server-side HMACs of the login round trip (the GitHub PKCE verifier).
    pub cookie_key: String,
    /// GitHub's web origin (authorize, access_token): `https://github.com` by default.
    pub github_web_url: String,
    /// GitHub's API origin (`/user`): `https://api.github.com` by default.
    pub github_api_url: String,
}

impl fmt::Debug for OwnerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnerConfig")
            .field("github_client_id", &self.github_client_id)
            .field("github_client_secret", &"<redacted>")
            .field("admin_login", &self.admin_login)
            .field("cookie_key", &"<redacted>")
            .field("github_web_url", &self.github_web_url)
            .field("github_api_url", &self.github_api_url)
            .finish()
    }
}

/// The owner's login, ready to serve.
#[derive(Clone, Debug)]
pub struct Owner {
    /// The configuration.
    pub config: OwnerConfig,
    /// What the core decides against.
    pub settings: OwnerSettings,
    /// GitHub, as the upstream identity provider.
    pub github: GitHub,
    /// Whether cookies carry `Secure` (an https public URL).
    pub secure: bool,
}

impl Owner {
    /// The owner's login for the server at `public_url`.
    pub fn new(config: OwnerConfig, public_url: &str) -> Result<Owner, String> {
        let settings = OwnerSettings::new(public_url, &config.admin_login);
        let github = GitHub::new(&config)?;
        Ok(Owner {
            secure: settings.issuer.starts_with("https://"),
            settings,
            github,
            config,
        })
    }

    /// The PKCE verifier Capsid sends GitHub for the round trip `state`: derived, never
    /// stored (43+ unreserved characters).
    pub fn github_verifier(&self, state: &str) -> String {
        hmac_sha256_hex(
            &self.config.cookie_key,
            format!("capsid-github-pkce:v1:{state}"),
        )
    }

    /// `<issuer><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.settings.issuer)
    }

    /// The public origin (scheme and authority).
    pub fn origin(&self) -> &str {
        origin_of(&self.settings.issuer)
    }
}

/// The origin (`scheme://authority`) of an absolute URL.
pub fn origin_of(url: &str) -> &str {
    let start = url.find("://").map_or(0, |i| i + 3);
    match url[start..].find(['/', '?', '#']) {
        Some(end) => &url[..start + end],
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(origin_of("https://a.example/x?y"), "https://a.example");
        assert_eq!(origin_of("http://127.0.0.1:3000"), "http://127.0.0.1:3000");
        assert_eq!(
            origin_of("http://127.0.0.1:3000/cb"),
            "http://127.0.0.1:3000"
        );
    }

    #[test]
    fn secrets_are_redacted_and_the_verifier_is_derived() {
        let config = OwnerConfig {
            github_client_id: "id".into(),
            github_client_secret: "s3cret".into(),
            admin_login: "octo".into(),
            cookie_key: "k3y".into(),
            github_web_url: "https://github.com".into(),
            github_api_url: "https://api.github.com".into(),
        };
        let text = format!("{config:?}");
        assert!(!text.contains("s3cret") && !text.contains("k3y"));
        let owner = Owner::new(config, "https://capsid.example/").expect("owner");
        assert!(owner.secure);
        let v = owner.github_verifier("state");
        assert_eq!(v.len(), 64);
        assert_eq!(v, owner.github_verifier("state"));
        assert_ne!(v, owner.github_verifier("other"));
        assert_eq!(owner.url("/callback"), "https://capsid.example/callback");
    }
}
