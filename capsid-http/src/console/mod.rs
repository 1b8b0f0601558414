//! The admin console (reference 10.1): `GET /console`, `GET /console.json` (the very object
//! the page renders), `GET /console/events` (server-sent events carrying the digest of that
//! object whenever it changes) and `/console/live.js` (the same-origin script that swaps the
//! page's content when it does; the page works without it), `POST /console` (twelve actions, CSRF checked before anything else, a
//! confirmation page stating the effect, then post/redirect/get), its own GitHub sign-in at
//! `/console/callback`, the one-time links of `capsid console login` at `/console/login`
//! (`local.rs`), a namespace's documents read-only at `/console/documents` (`documents.rs`),
//! and `POST /console/logout` ending this session or every session. Sessions live
//! server-side for twelve hours; the CSRF token is derived from the session, so every tab of
//! one session posts with the same one. Bearer callers are turned away with 403.

mod attention;
mod autonomy;
mod checkmarks;
mod documents;
mod doors;
mod local;
mod page;
mod skills;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use capsid_core::caller::Caller;
use capsid_core::crypto::{ct_eq, sha256_hex};
use capsid_core::error::Error;
use capsid_core::oauth::{
    CONSOLE_SESSION_TTL_MS, LoginPurpose, OwnerSettings, STATE_TTL_MS, console_csrf,
};
use capsid_core::owner::{ConsoleAction, LogSelection, console_return_path_ok};
use capsid_core::ports::AuditFilter;
use serde_json::{Map, Value, json};

use crate::AppState;
use crate::cookies::{self, SameSite};
use crate::html::message;
use crate::oauth::{BodyError, github_round_trip, owner, parse_form, read_form, redirect};
use crate::owner::{Owner, origin_of};

/// The session cookie (the token; only its hash is stored).
pub const SESSION_COOKIE: &str = "capsid_console";
/// The per-render CSRF cookie of earlier versions, cleared at sign-out (the token is now
/// derived from the session).
pub const OLD_CSRF_COOKIE: &str = "capsid_console_csrf";
/// The console sign-in's state digest cookie.
pub const STATE_COOKIE: &str = "capsid_console_state";
/// The largest action form read.
pub const ACTION_LIMIT: usize = 65_536;

/// The console's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console", get(console_get).post(console_post))
        .route("/console.json", get(console_json))
        .route("/console/callback", get(console_callback))
        .route("/console/login", get(local::console_login_link))
        .route("/console/documents", get(documents::console_documents))
        .route("/console/events", get(console_events))
        .route("/console/live.js", get(console_live_js))
        .route("/console/logout", post(console_logout))
        .route("/console/revoke-grants", post(console_revoke_grants))
}

/// A machine's bearer key gets an explanation, not a sign-in redirect.
fn bearer_refusal(headers: &HeaderMap) -> Option<Response> {
    headers.contains_key(header::AUTHORIZATION).then(|| {
        (
            StatusCode::FORBIDDEN,
            axum::Json(json!({
                "error": "forbidden",
                "error_description": "the console is the owner's page, signed in with GitHub or a link of `capsid console login` in a browser; bearer keys belong on /ops/mcp (agents) and OAuth tokens on /mcp",
            })),
        )
            .into_response()
    })
}

/// Where the console lives and how it is signed in to: GitHub when the owner's login is
/// configured, and always the one-time links of `capsid console login`.
#[derive(Clone)]
pub(crate) struct Site {
    /// The owner's GitHub login, when configured.
    github: Option<Arc<Owner>>,
    /// The public origin the console's forms must come from.
    origin: String,
    /// Whether cookies carry `Secure` (an https public URL).
    secure: bool,
}

impl Site {
    fn of(state: &AppState) -> Site {
        let public = state.config.public_url.trim_end_matches('/');
        Site {
            github: state.owner.clone(),
            origin: origin_of(public).to_owned(),
            secure: public.starts_with("https://"),
        }
    }

    fn settings(&self) -> Option<&OwnerSettings> {
        self.github.as_ref().map(|o| &o.settings)
    }

    /// The same-origin check of the console's POSTs: an `Origin` header, when sent, must be
    /// this server's.
    fn origin_ok(&self, headers: &HeaderMap) -> bool {
        match headers.get(header::ORIGIN).map(|v| v.to_str()) {
            None => true,
            Some(Ok(o)) => o == self.origin,
            Some(Err(_)) => false,
        }
    }

    /// The session cookie for `token`.
    fn session_cookie(&self, token: &str) -> HeaderValue {
        cookies::set(
            SESSION_COOKIE,
            token,
            "/",
            CONSOLE_SESSION_TTL_MS / 1000,
            SameSite::Lax,
            self.secure,
        )
    }
}

/// The signed-in owner and the session token, if the browser holds a live session.
async fn session(
    state: &AppState,
    site: &Site,
    headers: &HeaderMap,
) -> Result<Option<(Caller, String)>, Response> {
    let Some(token) = cookies::get(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    match state
        .owner_service
        .console_caller(site.settings(), &token)
        .await
    {
        Ok(Some(caller)) => Ok(Some((caller, token))),
        Ok(None) => Ok(None),
        Err(e) => Err(core_error(&e)),
    }
}

/// A core error as the console shows it: refusals 400, permission 403, failures 503.
fn core_error(e: &Error) -> Response {
    let status = match e {
        Error::Forbidden(_) | Error::Denied(_) => StatusCode::FORBIDDEN,
        Error::NotFound(_) => StatusCode::NOT_FOUND,
        Error::Internal(_) | Error::Unavailable(_) | Error::StoreUnavailable(_) => {
            tracing::error!(error = %e, "console failed");
            StatusCode::SERVICE_UNAVAILABLE
        }
        _ => StatusCode::BAD_REQUEST,
    };
    let text = match e {
        Error::Internal(_) => "Capsid could not reach its store; try again.".to_owned(),
        other => other.to_string(),
    };
    let mut resp = (status, text).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status == StatusCode::SERVICE_UNAVAILABLE {
        crate::unavailable::with_retry_after(&mut resp);
    }
    resp
}

/// Off to GitHub to sign in, coming back to `return_path`.
async fn sign_in(state: &AppState, owner: &Owner, return_path: &str) -> Response {
    let payload = json!({"return": return_path});
    let login = match state
        .owner_service
        .start_login(LoginPurpose::Console, &payload)
        .await
    {
        Ok(s) => s,
        Err(e) => return crate::oauth::error_json(&e),
    };
    let url = owner.github.authorize_url(
        &owner.url("/console/callback"),
        &login,
        &owner.github_verifier(&login),
    );
    let mut resp = redirect(&url);
    resp.headers_mut().append(
        header::SET_COOKIE,
        cookies::set(
            STATE_COOKIE,
            &sha256_hex(&login),
            "/console",
            STATE_TTL_MS / 1000,
            SameSite::Lax,
            owner.secure,
        ),
    );
    resp
}

/// The object the page renders: the core's view with the server's health beside it.
async fn view(
    state: &AppState,
    caller: &Caller,
    query: &BTreeMap<String, String>,
) -> Result<Value, Response> {
    let pick = |k: &str| {
        query
            .get(k)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty() && v.len() <= 256)
    };
    let filter = AuditFilter {
        namespace: pick("namespace"),
        actor: pick("actor"),
    };
    let core = state
        .owner_service
        .console_view(caller, filter)
        .await
        .map_err(|e| core_error(&e))?;
    let selection = match (pick("log_namespace"), pick("log_agent")) {
        (Some(namespace), Some(agent)) => Some(LogSelection {
            namespace,
            agent,
            cursor: pick("log_cursor"),
        }),
        _ => None,
    };
    let mut checkmarks = state
        .owner_service
        .console_checkmarks(caller, selection.as_ref())
        .await
        .map_err(|e| core_error(&e))?;
    let attention = state
        .owner_service
        .console_attention(caller, &mut checkmarks)
        .await
        .map_err(|e| core_error(&e))?;
    let health = crate::health::health_report(&state.service, &state.config.build).await;
    let health = serde_json::to_value(&health).unwrap_or(Value::Null);
    // The last restore rehearsal, shown beside the backup's age (null until one ran).
    let rehearsal = match state.service.last_rehearsal().await {
        Ok(r) => serde_json::to_value(r).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    let mut out = Map::new();
    if let Value::Object(fields) = core {
        for (k, v) in fields {
            out.insert(k.clone(), v);
            if k == "viewer" {
                out.insert("health".into(), health.clone());
                out.insert("rehearsal".into(), rehearsal.clone());
            }
        }
    }
    out.insert("attention".into(), attention);
    out.insert("checkmarks".into(), checkmarks);
    Ok(Value::Object(out))
}

fn query_of(req: &Request) -> BTreeMap<String, String> {
    parse_form(req.uri().query().unwrap_or("").as_bytes()).unwrap_or_default()
}

/// `GET /console`.
pub async fn console_get(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = bearer_refusal(req.headers()) {
        return r;
    }
    let site = Site::of(&state);
    let Some((caller, token)) = (match session(&state, &site, req.headers()).await {
        Ok(s) => s,
        Err(r) => return r,
    }) else {
        let Some(owner) = site.github.clone() else {
            return page::signed_out_page();
        };
        let path = req
            .uri()
            .path_and_query()
            .map_or("/console", |p| p.as_str());
        let back = if console_return_path_ok(path) {
            path
        } else {
            "/console"
        };
        let addr = crate::oauth::client_addr(&state, &req);
        if let Some((why, retry)) = crate::oauth::over_limit(&state, "login", &addr).await {
            return crate::oauth::too_many_page(&why, retry);
        }
        return sign_in(&state, &owner, back).await;
    };
    let query = query_of(&req);
    let view = match view(&state, &caller, &query).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let done = query.get("done").map(String::as_str);
    page::console_page(&view, &console_csrf(&token), done, &view_digest(&view))
}

/// How often `/console/events` re-reads the view of an open console.
pub const EVENTS_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// The digest of what the page shows: the view without the instant it was made and the
/// server's health (whose backup age moves with the clock), so it changes only when the
/// owner's data does.
pub(crate) fn view_digest(view: &Value) -> String {
    let mut v = view.clone();
    if let Value::Object(fields) = &mut v {
        fields.remove("generated");
        fields.remove("health");
    }
    sha256_hex(serde_json::to_string(&v).unwrap_or_default())
}

/// The answer to a request without a live console session on a route that is not a page.
fn signed_out_json() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(
            json!({"error": "unauthorized", "error_description": "sign in at /console first (with GitHub, or with a link of `capsid console login`)"}),
        ),
    )
        .into_response()
}

/// `GET /console/events`: server-sent events for an open console, with the checks of
/// `GET /console`. The view (with the page's own query) is re-read every [`EVENTS_POLL`];
/// a `digest` event carries its digest at once and again whenever it changes. The stream
/// ends when the session does.
pub async fn console_events(State(state): State<AppState>, req: Request) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    if let Some(r) = bearer_refusal(req.headers()) {
        return r;
    }
    let site = Site::of(&state);
    let Some((caller, token)) = (match session(&state, &site, req.headers()).await {
        Ok(s) => s,
        Err(r) => return r,
    }) else {
        return signed_out_json();
    };
    let query = query_of(&req);
    struct Watch {
        state: AppState,
        site: Site,
        caller: Caller,
        token: String,
        query: BTreeMap<String, String>,
        last: Option<String>,
    }
    let watch = Watch {
        state,
        site,
        caller,
        token,
        query,
        last: None,
    };
    let stream = futures::stream::unfold(watch, |mut w| async move {
        loop {
            if w.last.is_some() {
                tokio::time::sleep(EVENTS_POLL).await;
            }
            match w
                .state
                .owner_service
                .console_caller(w.site.settings(), &w.token)
                .await
            {
                Ok(Some(_)) => {}
                Ok(None) => return None,
                Err(_) => {
                    w.last.get_or_insert_with(String::new);
                    continue;
                }
            }
            let Ok(v) = view(&w.state, &w.caller, &w.query).await else {
                w.last.get_or_insert_with(String::new);
                continue;
            };
            let digest = view_digest(&v);
            if w.last.as_deref() != Some(digest.as_str()) {
                let event = Event::default().event("digest").data(digest.clone());
                w.last = Some(digest);
                return Some((Ok::<_, std::convert::Infallible>(event), w));
            }
        }
    });
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The console's one script (`/console/live.js`): same-origin, so the page's
/// `script-src 'self'` allows it and nothing inline.
pub const LIVE_JS: &str = include_str!("live.js");

/// `GET /console/live.js`.
pub async fn console_live_js() -> Response {
    let mut resp = LIVE_JS.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// `GET /console.json`: the same object `GET /console` renders.
pub async fn console_json(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = bearer_refusal(req.headers()) {
        return r;
    }
    let site = Site::of(&state);
    let Some((caller, _)) = (match session(&state, &site, req.headers()).await {
        Ok(s) => s,
        Err(r) => return r,
    }) else {
        return signed_out_json();
    };
    match view(&state, &caller, &query_of(&req)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// The form's CSRF field must be the one derived from this browser's session cookie.
fn csrf_ok(headers: &HeaderMap, form: &BTreeMap<String, String>) -> bool {
    match (cookies::get(headers, SESSION_COOKIE), form.get("csrf")) {
        (Some(session), Some(field)) => !field.is_empty() && ct_eq(console_csrf(&session), field),
        _ => false,
    }
}

/// Reads the form and checks CSRF before anything else.
async fn checked_form(
    site: &Site,
    req: Request,
) -> Result<(HeaderMap, BTreeMap<String, String>), Response> {
    let headers = req.headers().clone();
    let form = match read_form(req.into_body(), ACTION_LIMIT).await {
        Ok(f) => f,
        Err(BodyError::TooLarge) => {
            return Err(message(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too large",
                "The form is larger than 65,536 bytes.",
            ));
        }
        Err(BodyError::Malformed(m)) => {
            return Err(message(StatusCode::BAD_REQUEST, "Bad form", &m));
        }
    };
    if !csrf_ok(&headers, &form) || !site.origin_ok(&headers) {
        return Err(message(
            StatusCode::FORBIDDEN,
            "Refused",
            "This form's token does not match this browser's console session (or it was posted from another site). Reload the console and try again.",
        ));
    }
    Ok((headers, form))
}

/// What every signed-in console POST establishes first, in this order: not a bearer caller,
/// the body read and its CSRF field matching the session, then a live session
/// (`signed_out` is the page's text when there is none).
struct SignedInPost {
    site: Site,
    form: BTreeMap<String, String>,
    caller: Caller,
    token: String,
}

async fn signed_in_post(
    state: &AppState,
    req: Request,
    signed_out: &str,
) -> Result<SignedInPost, Response> {
    if let Some(r) = bearer_refusal(req.headers()) {
        return Err(r);
    }
    let site = Site::of(state);
    let (headers, form) = checked_form(&site, req).await?;
    let Some((caller, token)) = session(state, &site, &headers).await? else {
        return Err(message(StatusCode::UNAUTHORIZED, "Signed out", signed_out));
    };
    Ok(SignedInPost {
        site,
        form,
        caller,
        token,
    })
}

/// `POST /console`: CSRF, session, the action, the confirmation, then the action itself.
pub async fn console_post(State(state): State<AppState>, req: Request) -> Response {
    let SignedInPost { form, caller, .. } = match signed_in_post(
        &state,
        req,
        "Your console session ended; sign in again at /console.",
    )
    .await
    {
        Ok(p) => p,
        Err(r) => return r,
    };
    let action = match ConsoleAction::from_form(&form) {
        Ok(a) => a,
        Err(e) => return core_error(&e),
    };
    if form.get("confirm").map(String::as_str) != Some("yes") {
        let csrf = form.get("csrf").cloned().unwrap_or_default();
        return page::confirm_page(&action, &csrf);
    }
    match state.owner_service.console_act(&caller, &action).await {
        Ok(_) => {
            tracing::info!(actor = %caller.actor(), action = action.name(), "console action");
            let mut resp = StatusCode::SEE_OTHER.into_response();
            // The page says it went through (the action's name is one of the console's own).
            if let Ok(to) = HeaderValue::from_str(&format!("/console?done={}", action.name())) {
                resp.headers_mut().insert(header::LOCATION, to);
            }
            resp
        }
        Err(e) => core_error(&e),
    }
}

/// `GET /console/callback`.
pub async fn console_callback(State(state): State<AppState>, req: Request) -> Response {
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
        LoginPurpose::Console,
        STATE_COOKIE,
        "/console/callback",
    )
    .await
    {
        Ok(v) => v,
        Err(page) => return page,
    };
    match state
        .owner_service
        .finish_console_login(&owner.settings, &login_state, &user.login, user.id)
        .await
    {
        Ok(login) => {
            tracing::info!(login = %login.login, "console session started");
            let mut resp = StatusCode::SEE_OTHER.into_response();
            let h = resp.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&login.return_path) {
                h.insert(header::LOCATION, v);
            }
            h.append(
                header::SET_COOKIE,
                Site::of(&state).session_cookie(&login.token),
            );
            h.append(
                header::SET_COOKIE,
                cookies::clear(STATE_COOKIE, "/console", owner.secure),
            );
            resp
        }
        Err(e) => {
            tracing::warn!(login = %user.login, error = %e, "console sign-in refused");
            let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::FORBIDDEN);
            message(status, "Not admitted", &e.description)
        }
    }
}

/// `POST /console/logout`: ends this session (or, with `all=yes`, every console session).
pub async fn console_logout(State(state): State<AppState>, req: Request) -> Response {
    let SignedInPost {
        site,
        form,
        caller,
        token,
    } = match signed_in_post(&state, req, "There is no console session to end.").await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let all = form.get("all").map(String::as_str) == Some("yes");
    match state.owner_service.console_end(&token, all).await {
        Ok(n) => {
            tracing::info!(actor = %caller.actor(), sessions = n, "console sessions ended");
            let mut resp = message(
                StatusCode::OK,
                "Signed out",
                &format!("{n} console session(s) ended. Open /console to sign in again."),
            );
            let h = resp.headers_mut();
            h.append(
                header::SET_COOKIE,
                cookies::clear(SESSION_COOKIE, "/", site.secure),
            );
            h.append(
                header::SET_COOKIE,
                cookies::clear(OLD_CSRF_COOKIE, "/console", site.secure),
            );
            resp
        }
        Err(e) => core_error(&e),
    }
}

/// `POST /console/revoke-grants`: ends every MCP client's access (tokens and remembered
/// approvals). CSRF first, then the session, then a confirmation page, then the revocation.
pub async fn console_revoke_grants(State(state): State<AppState>, req: Request) -> Response {
    let SignedInPost { form, caller, .. } = match signed_in_post(
        &state,
        req,
        "Your console session ended; sign in again at /console.",
    )
    .await
    {
        Ok(p) => p,
        Err(r) => return r,
    };
    if form.get("confirm").map(String::as_str) != Some("yes") {
        let csrf = form.get("csrf").cloned().unwrap_or_default();
        return page::confirm_revoke_page(&csrf);
    }
    match state.owner_service.console_revoke_grants(&caller).await {
        Ok(n) => {
            tracing::info!(actor = %caller.actor(), grants = n, "every MCP grant revoked");
            let mut resp = StatusCode::SEE_OTHER.into_response();
            resp.headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static("/console"));
            resp
        }
        Err(e) => core_error(&e),
    }
}
