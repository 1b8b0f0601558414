//! The model API of the loop's `api` mode (SPEC section 4): `CAPSID_ANTHROPIC_API_KEY` (a
//! credential reference, resolved at start) and `CAPSID_ANTHROPIC_API_URL`; the client
//! `serve` hands the service, and what `capsid doctor` reports. The key is never printed.

use anyhow::{Context, Result};
use capsid_model::{AnthropicClient, DEFAULT_BASE_URL};
use clap::Args;
use serde_json::{Value, json};

/// The model API settings.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The model API key for the improve loop's `api` mode: a value, or a credential reference
    /// env:NAME, file:/path or cmd:command. Unset: no model, and `api` mode opens no run.
    #[arg(long, env = "CAPSID_ANTHROPIC_API_KEY", hide_env_values = true)]
    pub anthropic_api_key: Option<String>,
    /// The model API's base URL (the Anthropic Messages API).
    #[arg(long, env = "CAPSID_ANTHROPIC_API_URL", default_value = DEFAULT_BASE_URL)]
    pub anthropic_api_url: String,
}

impl ModelArgs {
    /// The settings as the environment gives them (for commands without these flags).
    pub fn from_env() -> ModelArgs {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        ModelArgs {
            anthropic_api_key: var("CAPSID_ANTHROPIC_API_KEY"),
            anthropic_api_url: var("CAPSID_ANTHROPIC_API_URL")
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
        }
    }

    /// The client, when a key is configured: its reference resolved now; a reference that
    /// does not resolve or a bad URL is an error naming the setting.
    pub fn client(&self) -> Result<Option<AnthropicClient>> {
        let Some(reference) = self
            .anthropic_api_key
            .as_deref()
            .filter(|v| !v.trim().is_empty())
        else {
            return Ok(None);
        };
        let key =
            crate::config::resolve_credential(reference).context("CAPSID_ANTHROPIC_API_KEY")?;
        let client = AnthropicClient::new(&self.anthropic_api_url, &key).map_err(|e| {
            let setting = match e {
                capsid_model::ConfigError::BadUrl(_) => "CAPSID_ANTHROPIC_API_URL",
                _ => "CAPSID_ANTHROPIC_API_KEY",
            };
            anyhow::Error::new(e).context(setting)
        })?;
        Ok(Some(client))
    }
}

/// `capsid doctor`'s report on the model API: not configured (fine: the loop's `api` mode is
/// optional), or configured and whether the API accepts the key. `false` when a configured
/// key does not resolve or is refused.
pub async fn doctor_check() -> (Value, bool) {
    const CHECK: &str = "model API (improve loop, api mode)";
    let args = ModelArgs::from_env();
    match args.client() {
        Ok(None) => (
            json!({"check": CHECK, "value": "not configured",
                   "note": "set CAPSID_ANTHROPIC_API_KEY to let the loop's api mode call the model"}),
            true,
        ),
        Err(e) => (
            json!({"check": CHECK, "key": format!("error: {e:#}")}),
            false,
        ),
        Ok(Some(client)) => {
            let answer = client.check().await;
            // Busy (rate limited, overloaded) still means the key was taken.
            let ok = matches!(
                answer,
                Ok(()) | Err(capsid_core::ports::ModelError::Busy(_))
            );
            (
                json!({"check": CHECK, "value": "configured", "api_url": client.base_url(),
                       "key": match answer { Ok(()) => "accepted".to_owned(), Err(e) => format!("refused: {e}") }}),
                ok,
            )
        }
    }
}
