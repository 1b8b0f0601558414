//! `GET /console/login?token=...`: the one-time link `capsid console login` prints. The core
//! spends the token and starts a console session (the same cookie and lifetime as a GitHub
//! sign-in); a spent, expired or unknown link gets a page saying so and changes nothing. The
//! request log records paths only, so the token reaches no log.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{Site, query_of};
use crate::AppState;
use crate::html::message;

/// The route.
pub async fn console_login_link(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = super::bearer_refusal(req.headers()) {
        return r;
    }
    let addr = crate::oauth::client_addr(&state, &req);
    if let Some((why, retry)) = crate::oauth::over_limit(&state, "login", &addr).await {
        return crate::oauth::too_many_page(&why, retry);
    }
    let query = query_of(&req);
    let Some(token) = query.get("token").filter(|t| !t.is_empty()) else {
        return message(
            StatusCode::BAD_REQUEST,
            "No sign-in link",
            "This address needs the token of a link printed by `capsid console login`; run it on the server's machine and open the link it prints.",
        );
    };
    match state.owner_service.finish_local_console_login(token).await {
        Ok(login) => {
            tracing::info!(actor = %login.login, "console session started from a one-time link");
            let mut resp = StatusCode::SEE_OTHER.into_response();
            let h = resp.headers_mut();
            h.insert(header::LOCATION, HeaderValue::from_static("/console"));
            h.append(
                header::SET_COOKIE,
                Site::of(&state).session_cookie(&login.token),
            );
            resp
        }
        Err(e) => {
            if let Some(detail) = &e.log {
                tracing::error!(error = %detail, "console sign-in link failed");
            } else {
                tracing::warn!(code = e.code, "console sign-in link refused");
            }
            let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::FORBIDDEN);
            let mut resp = message(status, "Sign-in link refused", &e.description);
            if status == StatusCode::SERVICE_UNAVAILABLE {
                crate::unavailable::with_retry_after(&mut resp);
            }
            resp
        }
    }
}
