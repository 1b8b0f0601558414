//! Discovery: the authorization server's metadata (RFC 8414; the issuer is exactly the public
//! URL, PKCE S256 only, RFC 9207 `iss`) and the protected resource's (RFC 9728; the resource
//! is the canonical `/mcp` URL), at the root and at the path-inserted `/mcp` location.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capsid_core::oauth::SCOPE;
use capsid_core::oauth::registration::AUTH_METHODS;
use serde_json::{Value, json};

use super::owner;
use crate::AppState;

/// Metadata may be read from any origin (browser-based MCP clients).
fn public_json(body: Value) -> Response {
    let mut resp = (StatusCode::OK, axum::Json(body)).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    resp
}

/// `OPTIONS` for the endpoints browser clients call cross-origin.
pub async fn preflight() -> Response {
    let mut resp = StatusCode::NO_CONTENT.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, mcp-protocol-version"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    resp
}

/// `GET /.well-known/oauth-authorization-server`.
pub async fn authorization_server(State(state): State<AppState>) -> Response {
    let owner = match owner(&state) {
        Ok(o) => o,
        Err(r) => return r,
    };
    public_json(json!({
        "issuer": owner.settings.issuer,
        "authorization_endpoint": owner.url("/authorize"),
        "token_endpoint": owner.url("/token"),
        "registration_endpoint": owner.url("/register"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": AUTH_METHODS,
        "scopes_supported": [SCOPE],
        "authorization_response_iss_parameter_supported": true,
        "service_documentation": owner.url("/health"),
    }))
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub async fn protected_resource(State(state): State<AppState>) -> Response {
    let owner = match owner(&state) {
        Ok(o) => o,
        Err(r) => return r,
    };
    public_json(json!({
        "resource": owner.settings.resource(),
        "authorization_servers": [owner.settings.issuer],
        "bearer_methods_supported": ["header"],
        "scopes_supported": [SCOPE],
        "resource_name": "Capsid",
    }))
}
