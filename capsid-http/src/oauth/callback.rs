//! `GET /callback` (an MCP client's sign-in) — and, through [`github_round_trip`], the
//! console's `GET /console/callback`: the browser must hold the digest of the `state` it was
//! sent off with, the state must be live server-side, GitHub must exchange the code (the
//! state is spent only after that succeeded, so a GitHub hiccup does not burn it) and say
//! who signed in; the core then checks the owner.

use std::collections::BTreeMap;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use capsid_core::crypto::{ct_eq, sha256_hex};
use capsid_core::oauth::LoginPurpose;

use super::authorize::STATE_COOKIE;
use super::{owner, parse_form, redirect};
use crate::AppState;
use crate::cookies;
use crate::github::GitHubUser;
use crate::html::message;
use crate::owner::Owner;

/// What a finished GitHub round trip yields: the state and the user, or the page to show.
pub(crate) async fn github_round_trip(
    state: &AppState,
    owner: &Owner,
    query: &str,
    headers: &HeaderMap,
    purpose: LoginPurpose,
    cookie: &str,
    callback_path: &str,
) -> Result<(String, GitHubUser), Response> {
    let query: BTreeMap<String, String> = parse_form(query.as_bytes()).map_err(|_| {
        message(
            StatusCode::BAD_REQUEST,
            "Bad callback",
            "The callback query is malformed.",
        )
    })?;
    if let Some(e) = query.get("error") {
        return Err(message(
            StatusCode::FORBIDDEN,
            "GitHub sign-in did not complete",
            &format!("GitHub answered {e}."),
        ));
    }
    let (Some(code), Some(login_state)) = (query.get("code"), query.get("state")) else {
        return Err(message(
            StatusCode::BAD_REQUEST,
            "Bad callback",
            "The callback needs code and state.",
        ));
    };
    let held = cookies::get(headers, cookie).unwrap_or_default();
    if !ct_eq(held, sha256_hex(login_state)) {
        return Err(message(
            StatusCode::FORBIDDEN,
            "Refused",
            "This browser did not start this sign-in.",
        ));
    }
    if let Err(e) = state.owner_service.check_login(purpose, login_state).await {
        let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::FORBIDDEN);
        return Err(message(status, "Sign-in expired", &e.description));
    }
    let verifier = owner.github_verifier(login_state);
    let token = owner
        .github
        .exchange(code, &owner.url(callback_path), &verifier)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "GitHub code exchange failed");
            message(StatusCode::BAD_GATEWAY, "GitHub did not answer", &e)
        })?;
    let user = owner.github.user(&token).await.map_err(|e| {
        tracing::warn!(error = %e, "GitHub /user failed");
        message(StatusCode::BAD_GATEWAY, "GitHub did not answer", &e)
    })?;
    Ok((login_state.clone(), user))
}

/// `GET /callback`.
pub async fn callback(State(state): State<AppState>, req: Request) -> Response {
    let owner = match owner(&state) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let query = req.uri().query().unwrap_or("").to_owned();
    let headers = req.headers().clone();
    drop(req);
    let (login_state, user) = match github_round_trip(
        &state,
        &owner,
        &query,
        &headers,
        LoginPurpose::Authorize,
        STATE_COOKIE,
        "/callback",
    )
    .await
    {
        Ok(v) => v,
        Err(page) => return page,
    };
    match state
        .owner_service
        .finish_authorize(&owner.settings, &login_state, &user.login, user.id)
        .await
    {
        Ok(url) => {
            tracing::info!(login = %user.login, "owner authorized an MCP client");
            let mut resp = redirect(&url);
            resp.headers_mut().append(
                header::SET_COOKIE,
                cookies::clear(STATE_COOKIE, "/callback", owner.secure),
            );
            resp
        }
        Err(e) => {
            tracing::warn!(login = %user.login, error = %e, "sign-in refused");
            let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::FORBIDDEN);
            message(status, "Not admitted", &e.description)
        }
    }
}
