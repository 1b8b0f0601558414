//! `POST /token`: a bounded form (and HTTP Basic client authentication), answered with JSON
//! that is never cached. The rules are the core's `Service::oauth_token`.

use std::collections::BTreeMap;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use capsid_core::oauth::OAuthError;
use capsid_core::owner::TokenRequest;

use super::{BodyError, error_json, owner, read_form};
use crate::AppState;

const FORM_LIMIT: usize = 16 * 1024;

fn percent_decode(text: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(&format!("v={text}")).ok()?;
    pairs.into_iter().next().map(|(_, v)| v)
}

/// `Authorization: Basic` client credentials (RFC 6749 §2.3.1: URL-encoded, then base64).
fn basic_credentials(
    headers: &axum::http::HeaderMap,
) -> Result<Option<(String, String)>, OAuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let bad =
        || OAuthError::invalid_client("the Authorization header is not valid Basic credentials");
    let text = value.to_str().map_err(|_| bad())?;
    let Some(encoded) = text.strip_prefix("Basic ") else {
        return Err(bad());
    };
    let decoded = STANDARD.decode(encoded.trim()).map_err(|_| bad())?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(bad)?;
    Ok(Some((
        percent_decode(id).ok_or_else(bad)?,
        percent_decode(secret).ok_or_else(bad)?,
    )))
}

fn request_of(form: &BTreeMap<String, String>) -> TokenRequest {
    let get = |k: &str| form.get(k).cloned();
    TokenRequest {
        grant_type: get("grant_type"),
        code: get("code"),
        redirect_uri: get("redirect_uri"),
        code_verifier: get("code_verifier"),
        refresh_token: get("refresh_token"),
        client_id: get("client_id"),
        client_secret: get("client_secret"),
        resource: get("resource"),
        scope: get("scope"),
    }
}

/// The route.
pub async fn token(State(state): State<AppState>, req: Request) -> Response {
    let owner = match owner(&state) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let addr = super::client_addr(&state, &req);
    let basic = match basic_credentials(req.headers()) {
        Ok(b) => b,
        Err(e) => return error_json(&e),
    };
    let form = match read_form(req.into_body(), FORM_LIMIT).await {
        Ok(f) => f,
        Err(BodyError::TooLarge) => {
            let mut e = OAuthError::invalid_request("the token request is too large");
            e.status = 413;
            return error_json(&e);
        }
        Err(BodyError::Malformed(m)) => return error_json(&OAuthError::invalid_request(m)),
    };
    let mut request = request_of(&form);
    if let Some((id, secret)) = basic {
        if request.client_id.as_deref().is_some_and(|c| c != id) {
            return error_json(&OAuthError::invalid_request(
                "client_id in the form differs from the Basic credentials",
            ));
        }
        request.client_id = Some(id);
        request.client_secret = Some(secret);
    }
    // Counted once the form is read (it is bounded): a live refresh token counts per client.
    let key = state.owner_service.token_rate_key(&request, &addr).await;
    if let Some((why, retry)) = super::over_limit(&state, "token", &key).await {
        let mut resp = error_json(&OAuthError::rate_limited(why));
        if let Ok(v) = HeaderValue::from_str(&retry.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return resp;
    }
    match state
        .owner_service
        .oauth_token(&owner.settings, &request)
        .await
    {
        Ok(answer) => {
            tracing::info!(request = %request, "token issued");
            let mut resp = axum::Json(answer).into_response();
            let h = resp.headers_mut();
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
            h.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            resp
        }
        Err(e) => {
            tracing::warn!(request = %request, error = %e, "token refused");
            let mut resp = error_json(&e);
            resp.headers_mut().insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            resp
        }
    }
}
