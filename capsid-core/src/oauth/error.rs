//! OAuth errors as the wire names them (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707 §2): a code,
//! a description naming what was wrong, and the HTTP status the adapter answers with.

use std::fmt;

/// An OAuth error response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthError {
    /// `invalid_request`, `invalid_client`, `invalid_grant`, ...
    pub code: &'static str,
    /// What was wrong, for a human.
    pub description: String,
    /// The HTTP status.
    pub status: u16,
    /// For the log only, never the response: what failed underneath (a store error).
    pub log: Option<String>,
}

impl OAuthError {
    fn new(code: &'static str, status: u16, description: impl Into<String>) -> OAuthError {
        OAuthError {
            code,
            description: description.into(),
            status,
            log: None,
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid_request(d: impl Into<String>) -> OAuthError {
        Self::new("invalid_request", 400, d)
    }
    /// 401 `invalid_client`.
    pub fn invalid_client(d: impl Into<String>) -> OAuthError {
        Self::new("invalid_client", 401, d)
    }
    /// 400 `invalid_grant`.
    pub fn invalid_grant(d: impl Into<String>) -> OAuthError {
        Self::new("invalid_grant", 400, d)
    }
    /// 400 `unsupported_grant_type`.
    pub fn unsupported_grant_type(d: impl Into<String>) -> OAuthError {
        Self::new("unsupported_grant_type", 400, d)
    }
    /// 400 `unsupported_response_type`.
    pub fn unsupported_response_type(d: impl Into<String>) -> OAuthError {
        Self::new("unsupported_response_type", 400, d)
    }
    /// 400 `invalid_scope`.
    pub fn invalid_scope(d: impl Into<String>) -> OAuthError {
        Self::new("invalid_scope", 400, d)
    }
    /// 400 `invalid_target` (RFC 8707: a resource this server does not serve).
    pub fn invalid_target(d: impl Into<String>) -> OAuthError {
        Self::new("invalid_target", 400, d)
    }
    /// 400 `invalid_redirect_uri` (RFC 7591).
    pub fn invalid_redirect_uri(d: impl Into<String>) -> OAuthError {
        Self::new("invalid_redirect_uri", 400, d)
    }
    /// 400 `invalid_client_metadata` (RFC 7591).
    pub fn invalid_client_metadata(d: impl Into<String>) -> OAuthError {
        Self::new("invalid_client_metadata", 400, d)
    }
    /// 403 `access_denied`.
    pub fn access_denied(d: impl Into<String>) -> OAuthError {
        Self::new("access_denied", 403, d)
    }
    /// 429 `access_denied` (a rate limit; the description names the count and window).
    pub fn rate_limited(d: impl Into<String>) -> OAuthError {
        Self::new("access_denied", 429, d)
    }
    /// 503 `server_error`: the store failed; details go to the log only.
    pub fn server_error() -> OAuthError {
        Self::new(
            "server_error",
            503,
            "the authorization server could not reach its store; try again",
        )
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.description)
    }
}

impl std::error::Error for OAuthError {}

impl From<crate::ports::StoreError> for OAuthError {
    fn from(e: crate::ports::StoreError) -> Self {
        OAuthError {
            log: Some(e.to_string()),
            ..OAuthError::server_error()
        }
    }
}
