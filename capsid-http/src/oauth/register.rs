//! `POST /register` (RFC 7591): a bounded JSON body; the per-address limits (30 an hour, 100
//! a day, 429 with a description) and the metadata rules are the core's.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capsid_core::oauth::OAuthError;
use capsid_core::oauth::registration::MAX_REGISTRATION_BYTES;

use super::{BodyError, client_addr, error_json, owner, read_body};
use crate::AppState;

/// The route.
pub async fn register(State(state): State<AppState>, req: Request) -> Response {
    if let Err(r) = owner(&state) {
        return r;
    }
    let addr = client_addr(&state, &req);
    let bytes = match read_body(req.into_body(), MAX_REGISTRATION_BYTES).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => {
            let mut e = OAuthError::invalid_client_metadata(format!(
                "the registration is larger than {MAX_REGISTRATION_BYTES} bytes"
            ));
            e.status = 413;
            return error_json(&e);
        }
        Err(BodyError::Malformed(m)) => {
            return error_json(&OAuthError::invalid_client_metadata(m));
        }
    };
    let body: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => {
            // Counted like any other attempt, so malformed floods are limited too.
            if let Ok(Some(over)) = state.owner_service.rate_limit("dcr", &addr).await {
                return error_json(&OAuthError::rate_limited(over.describe("registrations")));
            }
            return error_json(&OAuthError::invalid_client_metadata(
                "the registration must be a JSON object",
            ));
        }
    };
    match state.owner_service.oauth_register(&addr, &body).await {
        Ok(answer) => {
            tracing::info!(client = %answer["client_id"], addr = %addr, "client registered");
            let mut resp = (StatusCode::CREATED, axum::Json(answer)).into_response();
            let h = resp.headers_mut();
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            h.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            resp
        }
        Err(e) => {
            tracing::warn!(addr = %addr, error = %e, "registration refused");
            error_json(&e)
        }
    }
}
