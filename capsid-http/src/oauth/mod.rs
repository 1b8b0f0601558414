//! The owner's OAuth 2.1 authorization server and the protected resource `/mcp`: discovery
//! (RFC 8414, RFC 9728), registration (RFC 7591), the consent page and GitHub round trip,
//! the token endpoint, and the bearer check in front of the MCP handler. Every decision is
//! the core's (`capsid_core::oauth`, `Service::oauth_*`); this module carries HTTP.

mod authorize;
mod bearer;
mod callback;
mod metadata;
mod register;
mod token;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use capsid_core::oauth::OAuthError;
use serde_json::json;

pub use bearer::oauth_caller;
pub(crate) use callback::github_round_trip;

use crate::AppState;
use crate::owner::Owner;

/// The routes of the authorization server (everything but `/mcp` itself).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata::authorization_server).options(metadata::preflight),
        )
        .route(
            "/.well-known/oauth-protected-resource",
            get(metadata::protected_resource).options(metadata::preflight),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(metadata::protected_resource).options(metadata::preflight),
        )
        .route(
            "/register",
            post(register::register).options(metadata::preflight),
        )
        .route(
            "/authorize",
            get(authorize::authorize_get).post(authorize::authorize_post),
        )
        .route("/callback", get(callback::callback))
        .route("/token", post(token::token).options(metadata::preflight))
}

/// The owner's login, or the 503 naming what is missing.
pub(crate) fn owner(state: &AppState) -> Result<Arc<Owner>, Response> {
    state.owner.clone().ok_or_else(|| unconfigured(state))
}

/// 503 naming the missing settings.
pub fn unconfigured(state: &AppState) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({
            "error": "oauth_not_configured",
            "error_description": "the owner's GitHub login is not configured on this server, so /mcp, the console and the OAuth endpoints are off; agents use /ops/mcp with a bearer key",
            "missing": state.config.oauth_missing,
        })),
    )
        .into_response()
}

/// The client's address, for rate limits (`unknown` when the server does not know it),
/// through the trusted proxies when there are any.
pub(crate) fn client_addr(state: &AppState, req: &Request) -> String {
    crate::client_addr::client_addr(&state.config.trusted_proxies, req)
}

/// Counts one request of `what` (`token`, `authorize`, `login`) from `addr` against its
/// hourly and daily limits: past them, the description and the seconds to wait. A store
/// failure lets the request through (logged), as the reference's limiter does.
pub(crate) async fn over_limit(state: &AppState, what: &str, addr: &str) -> Option<(String, i64)> {
    match state.owner_service.rate_limit(what, addr).await {
        Ok(Some(over)) => {
            tracing::warn!(addr = %addr, what, count = over.count, "rate limit reached");
            Some((over.describe("requests"), over.retry_after_secs))
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(error = %e, what, "rate limiter unavailable; request allowed");
            None
        }
    }
}

/// A 429 page (for browsers) with `Retry-After`.
pub(crate) fn too_many_page(description: &str, retry_after: i64) -> Response {
    let mut resp = crate::html::message(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests",
        description,
    );
    if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// An OAuth error as JSON (RFC 6749 §5.2), never cached.
pub(crate) fn error_json(e: &OAuthError) -> Response {
    if let Some(detail) = &e.log {
        tracing::error!(error = %detail, code = e.code, "authorization server failure");
    }
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut resp = (
        status,
        axum::Json(json!({"error": e.code, "error_description": e.description})),
    )
        .into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Why a body could not be read.
pub(crate) enum BodyError {
    /// Larger than allowed.
    TooLarge,
    /// Not what was expected.
    Malformed(String),
}

/// Reads at most `limit` bytes of `body`.
pub(crate) async fn read_body(body: Body, limit: usize) -> Result<axum::body::Bytes, BodyError> {
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| BodyError::TooLarge)
}

/// Parses `application/x-www-form-urlencoded` text into fields, refusing a repeated field
/// (OAuth parameters must not be repeated).
pub(crate) fn parse_form(bytes: &[u8]) -> Result<BTreeMap<String, String>, BodyError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(bytes)
        .map_err(|_| BodyError::Malformed("the form is not valid URL-encoded text".into()))?;
    let mut out = BTreeMap::new();
    for (k, v) in pairs {
        if out.insert(k.clone(), v).is_some() {
            return Err(BodyError::Malformed(format!("parameter {k} is repeated")));
        }
    }
    Ok(out)
}

/// Reads a bounded form body.
pub(crate) async fn read_form(
    body: Body,
    limit: usize,
) -> Result<BTreeMap<String, String>, BodyError> {
    let bytes = read_body(body, limit).await?;
    parse_form(&bytes)
}

/// The same-origin check of browser-facing POSTs: an `Origin` header, when sent, must be
/// this server's.
pub(crate) fn origin_ok(req_headers: &axum::http::HeaderMap, owner: &Owner) -> bool {
    match req_headers.get(header::ORIGIN).map(|v| v.to_str()) {
        None => true,
        Some(Ok(o)) => o == owner.origin(),
        Some(Err(_)) => false,
    }
}

/// A 302 to `location`.
pub(crate) fn redirect(location: &str) -> Response {
    let mut resp = StatusCode::FOUND.into_response();
    match HeaderValue::from_str(location) {
        Ok(v) => {
            resp.headers_mut().insert(header::LOCATION, v);
            resp
        }
        Err(_) => crate::html::message(
            StatusCode::BAD_REQUEST,
            "Bad redirect",
            "The redirect target is not a valid URL.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_refuse_repeated_parameters() {
        let ok = parse_form(b"a=1&b=two%20words").ok().expect("form");
        assert_eq!(ok["b"], "two words");
        assert!(matches!(
            parse_form(b"a=1&a=2"),
            Err(BodyError::Malformed(_))
        ));
    }
}
