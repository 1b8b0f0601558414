//! `GET /authorize` (the consent page, or straight on to GitHub when the owner already
//! approved this client for its exact redirect set) and `POST /authorize` (the consent,
//! CSRF-checked, then the GitHub round trip). A request naming an unknown client or a
//! redirect URI the client did not register is shown to the person, never redirected.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use capsid_core::crypto::{ct_eq, sha256_hex};
use capsid_core::oauth::request::{AuthorizeParams, AuthorizeRefusal, error_redirect};
use capsid_core::oauth::{LoginPurpose, OAuthError, STATE_TTL_MS};
use capsid_core::owner::AuthorizeCheck;
use rand::RngExt;

use super::{BodyError, owner, parse_form, read_form, redirect};
use crate::AppState;
use crate::cookies::{self, SameSite};
use crate::html::{esc, message, page};
use crate::owner::{Owner, origin_of};

/// The consent page's CSRF cookie.
pub const CSRF_COOKIE: &str = "capsid_csrf";
/// The login round trip's state digest cookie.
pub const STATE_COOKIE: &str = "capsid_state";
const FORM_LIMIT: usize = 16 * 1024;
const FIELDS: [&str; 8] = [
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "resource",
    "scope",
    "state",
];

fn params_of(form: &BTreeMap<String, String>) -> AuthorizeParams {
    let get = |k: &str| form.get(k).cloned();
    AuthorizeParams {
        response_type: get("response_type"),
        client_id: get("client_id"),
        redirect_uri: get("redirect_uri"),
        code_challenge: get("code_challenge"),
        code_challenge_method: get("code_challenge_method"),
        resource: get("resource"),
        scope: get("scope"),
        state: get("state"),
    }
}

fn refusal(owner: &Owner, r: AuthorizeRefusal) -> Response {
    match r {
        AuthorizeRefusal::Show(e) => {
            if let Some(detail) = &e.log {
                tracing::error!(error = %detail, "authorize failed");
            }
            let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
            message(
                status,
                "This sign-in request cannot continue",
                &e.description,
            )
        }
        AuthorizeRefusal::Redirect {
            redirect_uri,
            state,
            error,
        } => redirect(&error_redirect(
            &owner.settings,
            &redirect_uri,
            state.as_deref(),
            &error,
        )),
    }
}

/// On to GitHub: the state is stored server-side, its digest goes into a cookie.
async fn to_github(state: &AppState, owner: &Owner, check: &AuthorizeCheck) -> Response {
    let payload = match serde_json::to_value(&check.pending) {
        Ok(v) => v,
        Err(_) => return message(StatusCode::BAD_REQUEST, "Bad request", "unreadable request"),
    };
    let login = match state
        .owner_service
        .start_login(LoginPurpose::Authorize, &payload)
        .await
    {
        Ok(s) => s,
        Err(e) => return super::error_json(&e),
    };
    let url = owner.github.authorize_url(
        &owner.url("/callback"),
        &login,
        &owner.github_verifier(&login),
    );
    let mut resp = redirect(&url);
    let h = resp.headers_mut();
    h.append(
        header::SET_COOKIE,
        cookies::set(
            STATE_COOKIE,
            &sha256_hex(&login),
            "/callback",
            STATE_TTL_MS / 1000,
            SameSite::Lax,
            owner.secure,
        ),
    );
    h.append(
        header::SET_COOKIE,
        cookies::clear(CSRF_COOKIE, "/authorize", owner.secure),
    );
    resp
}

fn consent_page(
    owner: &Owner,
    check: &AuthorizeCheck,
    form: &BTreeMap<String, String>,
) -> Response {
    let mut bytes = [0u8; 32];
    rand::rng().fill(&mut bytes);
    let csrf = hex::encode(bytes);
    let name = check
        .client_name
        .as_deref()
        .unwrap_or("An unnamed MCP client");
    let mut hidden = format!("<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">");
    for f in FIELDS {
        if let Some(v) = form.get(f) {
            hidden.push_str(&format!(
                "<input type=\"hidden\" name=\"{f}\" value=\"{}\">",
                esc(v)
            ));
        }
    }
    let body = format!(
        "<h1>Connect {name} to Capsid?</h1>\
         <div class=\"card\"><p><strong>{name}</strong> asks for access to this Capsid server's MCP tools as its owner.</p>\
         <p>After you approve, GitHub confirms who you are. <strong>Only the owner's GitHub account is admitted</strong>; anyone else is turned away.</p>\
         <p class=\"muted\">Access will be sent to <code>{redirect}</code></p>\
         <form method=\"post\" action=\"/authorize\" class=\"inline\">{hidden}\
         <button type=\"submit\" name=\"decision\" value=\"approve\">Approve and sign in with GitHub</button>\
         <button type=\"submit\" name=\"decision\" value=\"deny\" class=\"quiet\">Deny</button></form></div>",
        name = esc(name),
        redirect = esc(&check.pending.redirect_uri),
    );
    let github = owner.github.web_origin().to_owned();
    let client = origin_of(&check.pending.redirect_uri).to_owned();
    let mut resp = page(
        StatusCode::OK,
        "Connect to Capsid",
        &body,
        &[github.as_str(), client.as_str()],
    );
    resp.headers_mut().append(
        header::SET_COOKIE,
        cookies::set(
            CSRF_COOKIE,
            &csrf,
            "/authorize",
            600,
            SameSite::Lax,
            owner.secure,
        ),
    );
    resp
}

/// `GET /authorize`.
pub async fn authorize_get(State(state): State<AppState>, req: Request) -> Response {
    let owner = match owner(&state) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let addr = super::client_addr(&state, &req);
    if let Some((why, retry)) = super::over_limit(&state, "authorize", &addr).await {
        return super::too_many_page(&why, retry);
    }
    let form = match parse_form(req.uri().query().unwrap_or("").as_bytes()) {
        Ok(f) => f,
        Err(BodyError::Malformed(m)) => {
            return message(StatusCode::BAD_REQUEST, "Bad sign-in request", &m);
        }
        Err(BodyError::TooLarge) => {
            return message(StatusCode::BAD_REQUEST, "Bad sign-in request", "bad query");
        }
    };
    let params = params_of(&form);
    match state
        .owner_service
        .oauth_authorize(&owner.settings, &params)
        .await
    {
        Err(r) => refusal(&owner, r),
        Ok(check) if check.approved => to_github(&state, &owner, &check).await,
        Ok(check) => consent_page(&owner, &check, &form),
    }
}

fn csrf_ok(headers: &HeaderMap, form: &BTreeMap<String, String>) -> bool {
    match (cookies::get(headers, CSRF_COOKIE), form.get("csrf")) {
        (Some(cookie), Some(field)) => !field.is_empty() && ct_eq(cookie, field),
        _ => false,
    }
}

/// `POST /authorize`.
pub async fn authorize_post(State(state): State<AppState>, req: Request) -> Response {
    let owner: Arc<Owner> = match owner(&state) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let addr = super::client_addr(&state, &req);
    if let Some((why, retry)) = super::over_limit(&state, "authorize", &addr).await {
        return super::too_many_page(&why, retry);
    }
    let headers = req.headers().clone();
    if !super::origin_ok(&headers, &owner) {
        return message(
            StatusCode::FORBIDDEN,
            "Refused",
            "This form was posted from another site.",
        );
    }
    let form = match read_form(req.into_body(), FORM_LIMIT).await {
        Ok(f) => f,
        Err(BodyError::TooLarge) => {
            return message(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too large",
                "The form is too large.",
            );
        }
        Err(BodyError::Malformed(m)) => return message(StatusCode::BAD_REQUEST, "Bad form", &m),
    };
    if !form.contains_key("csrf") {
        return message(
            StatusCode::BAD_REQUEST,
            "Bad form",
            "The consent form is incomplete (no csrf field).",
        );
    }
    if !csrf_ok(&headers, &form) {
        return message(
            StatusCode::FORBIDDEN,
            "Refused",
            "The consent form's token does not match this browser's. Start the sign-in again from your MCP client.",
        );
    }
    let check = match state
        .owner_service
        .oauth_authorize(&owner.settings, &params_of(&form))
        .await
    {
        Ok(c) => c,
        Err(r) => return refusal(&owner, r),
    };
    if form.get("decision").map(String::as_str) != Some("approve") {
        let e = OAuthError::access_denied("the owner denied the request");
        return redirect(&error_redirect(
            &owner.settings,
            &check.pending.redirect_uri,
            check.pending.state.as_deref(),
            &e,
        ));
    }
    to_github(&state, &owner, &check).await
}
