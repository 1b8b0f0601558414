//! The resource server in front of `/mcp`: every request must carry a live access token that
//! was issued for this server's `/mcp` and is held by the owner (re-checked each time). A
//! missing or bad token gets 401 with `WWW-Authenticate: Bearer resource_metadata=...`
//! (RFC 9728); a valid token of someone who is no longer the owner gets 403.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use capsid_core::caller::bearer_token;
use capsid_core::oauth::SCOPE;
use capsid_core::owner::AccessRefusal;
use serde_json::json;

use super::owner;
use crate::AppState;
use crate::owner::Owner;

fn challenge(owner: &Owner, error: Option<&str>) -> Response {
    let metadata = owner.url("/.well-known/oauth-protected-resource/mcp");
    let (body, header_value) = match error {
        None => (
            json!({"error": "unauthorized", "error_description": "sign in: this route takes an OAuth access token issued by this server (see the resource metadata)"}),
            format!("Bearer resource_metadata=\"{metadata}\", scope=\"{SCOPE}\""),
        ),
        Some(why) => (
            json!({"error": "invalid_token", "error_description": why}),
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata}\"",
                why.replace(['"', '\\'], "'")
            ),
        ),
    };
    let mut resp = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&header_value) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    resp
}

/// Puts the owner's [`capsid_core::caller::Caller`] into the request, or answers 401/403.
pub async fn oauth_caller(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let owner = match owner(&state) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let header_value = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Some(token) = header_value.and_then(bearer_token).map(str::to_owned) else {
        return challenge(&owner, None);
    };
    let caller = match state
        .owner_service
        .oauth_access(&owner.settings, &token)
        .await
    {
        Ok(c) => c,
        Err(AccessRefusal::Invalid(why)) => {
            tracing::info!(reason = %why, "access token refused");
            return challenge(&owner, Some(&why));
        }
        Err(AccessRefusal::NotOwner(why)) => {
            tracing::warn!(reason = %why, "access token of a non-owner refused");
            return (
                StatusCode::FORBIDDEN,
                axum::Json(json!({"error": "forbidden", "error_description": why})),
            )
                .into_response();
        }
        Err(AccessRefusal::Unavailable(e)) => {
            tracing::error!(error = %e, "access token check failed: store unavailable");
            return crate::unavailable::unavailable("the store could not check the token");
        }
    };
    req.extensions_mut()
        .insert(crate::recheck::Recheck::owner(&state, &token));
    crate::auth::serve_as(&state, caller, req, next).await
}
