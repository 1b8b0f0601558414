//! Dynamic client registration (RFC 7591): what a registration request may ask for. Public
//! clients (`none`) and confidential ones (`client_secret_post`, `client_secret_basic`) are
//! accepted; the code and refresh grants only; redirect URIs by the rules of
//! [`super::redirect`].

use serde_json::Value;

use super::OAuthError;
use super::redirect::{MAX_REDIRECT_URIS, validate_redirect_uri};

/// The largest registration body read.
pub const MAX_REGISTRATION_BYTES: usize = 16 * 1024;
/// The longest client name kept.
pub const MAX_CLIENT_NAME: usize = 128;

/// Token endpoint authentication methods a client may register.
pub const AUTH_METHODS: [&str; 3] = ["none", "client_secret_post", "client_secret_basic"];

/// A validated registration request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The redirect URIs, as sent (each valid).
    pub redirect_uris: Vec<String>,
    /// The client's name, if it gave one (printable, bounded).
    pub client_name: Option<String>,
    /// `none`, `client_secret_post` or `client_secret_basic`.
    pub auth_method: String,
}

impl Registration {
    /// Whether the client authenticates with a secret.
    pub fn is_confidential(&self) -> bool {
        self.auth_method != "none"
    }
}

fn strings(v: &Value, field: &str) -> Result<Option<Vec<String>>, OAuthError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str().map(str::to_owned).ok_or_else(|| {
                    OAuthError::invalid_client_metadata(format!(
                        "{field} must be an array of strings"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(OAuthError::invalid_client_metadata(format!(
            "{field} must be an array of strings"
        ))),
    }
}

/// Validates a registration request body.
pub fn parse_registration(body: &Value) -> Result<Registration, OAuthError> {
    if !body.is_object() {
        return Err(OAuthError::invalid_client_metadata(
            "the registration must be a JSON object",
        ));
    }
    let redirect_uris = strings(body, "redirect_uris")?.unwrap_or_default();
    if redirect_uris.is_empty() {
        return Err(OAuthError::invalid_redirect_uri(
            "redirect_uris is required: at least one https:// URI, or http:// on a loopback host",
        ));
    }
    if redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::invalid_redirect_uri(format!(
            "at most {MAX_REDIRECT_URIS} redirect_uris"
        )));
    }
    for uri in &redirect_uris {
        validate_redirect_uri(uri)
            .map_err(|why| OAuthError::invalid_redirect_uri(format!("redirect_uris: {why}")))?;
    }
    let client_name = match body.get("client_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => {
            let n = n.trim();
            if n.chars().count() > MAX_CLIENT_NAME {
                return Err(OAuthError::invalid_client_metadata(format!(
                    "client_name is longer than {MAX_CLIENT_NAME} characters"
                )));
            }
            if n.chars().any(char::is_control) {
                return Err(OAuthError::invalid_client_metadata(
                    "client_name must not contain control characters",
                ));
            }
            (!n.is_empty()).then(|| n.to_owned())
        }
        Some(_) => {
            return Err(OAuthError::invalid_client_metadata(
                "client_name must be a string",
            ));
        }
    };
    let auth_method = match body.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => "none".to_owned(),
        Some(Value::String(m)) if AUTH_METHODS.contains(&m.as_str()) => m.clone(),
        Some(other) => {
            return Err(OAuthError::invalid_client_metadata(format!(
                "token_endpoint_auth_method {other} is not supported; use one of {}",
                AUTH_METHODS.join(", ")
            )));
        }
    };
    if let Some(grants) = strings(body, "grant_types")?
        && let Some(g) = grants
            .iter()
            .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
    {
        return Err(OAuthError::invalid_client_metadata(format!(
            "grant type {g:?} is not supported: only authorization_code and refresh_token"
        )));
    }
    if let Some(types) = strings(body, "response_types")?
        && let Some(t) = types.iter().find(|t| t.as_str() != "code")
    {
        return Err(OAuthError::invalid_client_metadata(format!(
            "response type {t:?} is not supported: only code"
        )));
    }
    Ok(Registration {
        redirect_uris,
        client_name,
        auth_method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_public_client_registers() {
        let r = parse_registration(&json!({"redirect_uris": ["http://127.0.0.1:3000/callback"], "client_name": " Claude ", "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], "token_endpoint_auth_method": "none"})).unwrap();
        assert_eq!(r.client_name.as_deref(), Some("Claude"));
        assert!(!r.is_confidential());
        let c = parse_registration(&json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_basic"})).unwrap();
        assert!(c.is_confidential());
    }

    #[test]
    fn bad_metadata_is_refused_with_the_rule() {
        let cases = [
            (json!({}), "invalid_redirect_uri"),
            (json!({"redirect_uris": []}), "invalid_redirect_uri"),
            (
                json!({"redirect_uris": "https://a/cb"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["http://evil.example/cb"]}),
                "invalid_redirect_uri",
            ),
            (
                json!({"redirect_uris": ["HTTPS://a.example/cb"]}),
                "invalid_redirect_uri",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["password"]}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["implicit"]}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "client_name": "x\u{0}y"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "client_name": "n".repeat(129)}),
                "invalid_client_metadata",
            ),
            (json!([1]), "invalid_client_metadata"),
        ];
        for (body, code) in cases {
            let e = parse_registration(&body).unwrap_err();
            assert_eq!(e.code, code, "{body}: {e}");
            assert_eq!(e.status, 400);
        }
        let many: Vec<String> = (0..11).map(|i| format!("https://a.example/{i}")).collect();
        assert!(parse_registration(&json!({"redirect_uris": many})).is_err());
    }
}
