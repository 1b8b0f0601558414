//! The owner's GitHub login settings (SPEC 4): the GitHub OAuth App's id and secret, the
//! owner, the cookie key and GitHub's endpoints. Secrets accept credential references
//! (`env:`, `file:`, `cmd:`). When any required one is missing, `/mcp` and `/console` answer
//! 503 naming what is missing.

use anyhow::{Context, Result};
use capsid_http::OwnerConfig;
use clap::Args;

use crate::config::resolve_credential;

/// `CAPSID_GITHUB_API_URL`'s default.
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";

/// The owner's login flags.
#[derive(Debug, Clone, Args)]
pub struct OwnerArgs {
    /// The GitHub OAuth App's client id (the owner's sign-in on /mcp and /console).
    #[arg(long, env = "CAPSID_GITHUB_CLIENT_ID")]
    pub github_client_id: Option<String>,
    /// The GitHub OAuth App's client secret: a value or a credential reference.
    #[arg(long, env = "CAPSID_GITHUB_CLIENT_SECRET", hide_env_values = true)]
    pub github_client_secret: Option<String>,
    /// The owner: a GitHub login (case-insensitive) or a numeric GitHub user id.
    #[arg(long, env = "CAPSID_ADMIN_GITHUB_LOGIN")]
    pub admin_github_login: Option<String>,
    /// Key of the login round trip's server-side HMACs: a value or a credential reference.
    #[arg(long, env = "CAPSID_COOKIE_KEY", hide_env_values = true)]
    pub cookie_key: Option<String>,
    /// GitHub's web origin (GitHub Enterprise, tests).
    #[arg(
        long,
        env = "CAPSID_GITHUB_WEB_URL",
        default_value = "https://github.com"
    )]
    pub github_web_url: String,
}

/// The owner's login configuration, or the names of the settings still missing. GitHub's
/// API origin comes from `CAPSID_GITHUB_API_URL` (shared with the GitHub App).
pub fn owner_config(args: &OwnerArgs) -> Result<(Option<OwnerConfig>, Vec<String>)> {
    let mut missing = Vec::new();
    let mut need = |name: &str, value: &Option<String>| {
        let v = value.as_deref().map(str::trim).filter(|v| !v.is_empty());
        if v.is_none() {
            missing.push(name.to_owned());
        }
        v.map(str::to_owned)
    };
    let id = need("CAPSID_GITHUB_CLIENT_ID", &args.github_client_id);
    let secret = need("CAPSID_GITHUB_CLIENT_SECRET", &args.github_client_secret);
    let admin = need("CAPSID_ADMIN_GITHUB_LOGIN", &args.admin_github_login);
    let key = need("CAPSID_COOKIE_KEY", &args.cookie_key);
    let (Some(id), Some(secret), Some(admin), Some(key)) = (id, secret, admin, key) else {
        return Ok((None, missing));
    };
    let api = std::env::var("CAPSID_GITHUB_API_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_GITHUB_API_URL.to_owned());
    for (name, url) in [
        ("CAPSID_GITHUB_WEB_URL", args.github_web_url.as_str()),
        ("CAPSID_GITHUB_API_URL", api.as_str()),
    ] {
        anyhow::ensure!(
            url.starts_with("https://") || url.starts_with("http://"),
            "{name} must be an http(s) URL, got {url:?}"
        );
    }
    Ok((
        Some(OwnerConfig {
            github_client_id: id,
            github_client_secret: resolve_credential(&secret)
                .context("CAPSID_GITHUB_CLIENT_SECRET")?,
            admin_login: admin,
            cookie_key: resolve_credential(&key).context("CAPSID_COOKIE_KEY")?,
            github_web_url: args.github_web_url.clone(),
            github_api_url: api,
        }),
        Vec::new(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> OwnerArgs {
        OwnerArgs {
            github_client_id: Some("Iv1.x".into()),
            github_client_secret: Some("cmd:printf s3cret".into()),
            admin_github_login: Some("octo".into()),
            cookie_key: Some("k".into()),
            github_web_url: "https://github.com".into(),
        }
    }

    #[test]
    fn complete_settings_resolve_credential_references() {
        let (config, missing) = owner_config(&args()).expect("config");
        assert!(missing.is_empty());
        let config = config.expect("configured");
        assert_eq!(config.github_client_secret, "s3cret");
        assert_eq!(config.admin_login, "octo");
    }

    #[test]
    fn missing_settings_are_named() {
        let mut a = args();
        a.cookie_key = None;
        a.admin_github_login = Some("  ".into());
        let (config, missing) = owner_config(&a).expect("config");
        assert!(config.is_none());
        assert_eq!(missing, ["CAPSID_ADMIN_GITHUB_LOGIN", "CAPSID_COOKIE_KEY"]);
        let mut bad = args();
        bad.github_web_url = "github.com".into();
        assert!(owner_config(&bad).is_err());
    }
}
