//! Who is calling: the bearer-key resolution of `/ops/mcp` and the Handler API (reference 3.1
//! order, decided by the core's `resolve_bearer`), the middleware of `/ops/mcp`, the binding of MCP sessions to their caller, and the answer
//! of `/mcp` while the owner's OAuth login is not configured.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use capsid_core::caller::Caller;
use capsid_core::service::Resolved;
use serde_json::json;

use crate::AppState;

/// When each agent's `last_seen` was last stamped, so a busy agent costs one write a minute
/// rather than one per call.
#[derive(Clone, Debug, Default)]
pub struct LastSeen(Arc<Mutex<HashMap<String, std::time::Instant>>>);

/// How often `last_seen` is stamped per agent.
const LAST_SEEN_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl LastSeen {
    /// Whether `actor`'s stamp is due now (and records that it is being stamped).
    fn due(&self, actor: &str) -> bool {
        let Ok(mut map) = self.0.lock() else {
            return true;
        };
        let now = std::time::Instant::now();
        match map.get(actor) {
            Some(t) if now.duration_since(*t) < LAST_SEEN_EVERY => false,
            _ => {
                if map.len() >= MAX_SESSIONS {
                    map.clear();
                }
                map.insert(actor.to_owned(), now);
                true
            }
        }
    }
}

/// Agents whose `last_seen` stamp is remembered at most; past it the memory starts over.
const MAX_SESSIONS: usize = 10_000;

/// The 401 of `/ops/mcp`. With no bearer key at all it only names the scheme (RFC 6750 3.1:
/// no error code when credentials are missing); a key that resolves to no one carries
/// `error="invalid_token"` and says so.
pub(crate) fn unauthorized(key_presented: bool) -> Response {
    let (body, challenge) = if key_presented {
        (
            json!({
                "error": "invalid_token",
                "error_description": INVALID_KEY,
            }),
            concat!(
                "Bearer realm=\"capsid-operator\", error=\"invalid_token\", ",
                "error_description=\"the bearer key was not recognised or has been revoked\""
            ),
        )
    } else {
        (
            json!({
                "error": "unauthorized",
                "error_description": "send Authorization: Bearer <key>: a minted agent key or an operator key",
            }),
            "Bearer realm=\"capsid-operator\"",
        )
    };
    let mut resp = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    resp
}

/// What a caller whose key resolves to no one reads.
const INVALID_KEY: &str = "the bearer key was not recognised: it is not a live agent key \
    (it may have been revoked, or minted on another server or data folder) nor an operator key \
    of this server; mint one with `capsid agents mint` and send it as Authorization: Bearer <key>";

/// A caller whose bearer key resolved: who, and whether it is a minted agent (whose
/// `last_seen` is stamped).
pub(crate) struct Bearer {
    /// The caller.
    pub(crate) caller: Caller,
    /// Whether it is a minted agent.
    pub(crate) minted: bool,
}

/// Why a request has no caller.
pub(crate) enum NoCaller {
    /// No key, or a key that resolves to no one (`presented`: a key was sent at all).
    Nobody {
        /// Whether the request carried a bearer key.
        presented: bool,
    },
    /// The store could not be asked (why).
    Unavailable(Box<capsid_core::error::Error>),
}

/// Resolves the request's bearer key: the one resolution of every bearer route (`/ops/mcp`,
/// the Handler API).
pub(crate) async fn resolve(state: &AppState, headers: &HeaderMap) -> Result<Bearer, NoCaller> {
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let resolved = state.service.resolve_bearer(header).await.map_err(|e| {
        tracing::error!(error = %e, "caller resolution failed: store unavailable");
        NoCaller::Unavailable(Box::new(e))
    })?;
    let minted = matches!(resolved, Resolved::Agent(_));
    match resolved.caller().cloned() {
        Some(caller) => Ok(Bearer { caller, minted }),
        None => Err(NoCaller::Nobody {
            presented: header.and_then(capsid_core::caller::bearer_token).is_some(),
        }),
    }
}

/// Stamps a minted agent's `last_seen` after its request was answered (at most once a minute,
/// in the background, best effort).
pub(crate) fn stamp_last_seen(state: &AppState, minted: bool, caller: Caller) {
    if minted && state.last_seen.due(&caller.actor()) {
        let service = state.service.clone();
        tokio::spawn(async move {
            if let Err(e) = service.touch_last_seen(&caller).await {
                tracing::warn!(error = %e, "last_seen stamp failed");
            }
        });
    }
}

/// Resolves the bearer key into a [`capsid_core::caller::Caller`] in the request's
/// extensions, or answers 401. A minted agent's `last_seen` is stamped after the answer.
pub async fn bearer_caller(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let Bearer { caller, minted } = match resolve(&state, req.headers()).await {
        Ok(bearer) => bearer,
        Err(NoCaller::Nobody { presented }) => return unauthorized(presented),
        Err(NoCaller::Unavailable(e)) => {
            return crate::unavailable::unavailable_because(
                &state.service,
                "the store could not check the key",
                &e,
            )
            .await;
        }
    };
    if let Some(header) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let recheck = crate::recheck::Recheck::bearer(&state, header);
        req.extensions_mut().insert(recheck);
    }
    let resp = serve_as(&state, caller.clone(), req, next).await;
    stamp_last_seen(&state, minted, caller);
    resp
}

/// Serves `req` as `caller`, with the session bound to the caller that opened it: another
/// caller's session id looks exactly like one that does not exist (404), so does a session id
/// this server does not know, a session the response opens is recorded under this caller
/// (within the bounds of [`crate::sessions::SessionLimits`]: past them the `initialize` is
/// answered with a JSON-RPC error by [`crate::jsonrpc`]), and one the client ends (`DELETE`)
/// is forgotten. Both MCP routes end here.
pub(crate) async fn serve_as(
    state: &AppState,
    caller: capsid_core::caller::Caller,
    mut req: Request,
    next: Next,
) -> Response {
    let actor = caller.actor();
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // A session this server does not know (never opened, ended, evicted) or one another
    // caller opened: 404, as the MCP transport says for a session that does not exist.
    if let Some(id) = &session
        && state
            .sessions
            .owner(id, state.service.now())
            .is_none_or(|owner| owner != actor)
    {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": "session not found"})),
        )
            .into_response();
    }
    // A request without a session may open one (an `initialize`): hold a place for it, or
    // leave the refusal for the JSON-RPC layer, which answers it with the request's id.
    let place = if state.config.mcp_sessions
        && session.is_none()
        && req.method() == axum::http::Method::POST
    {
        match state.sessions.reserve(&actor, state.service.now()).await {
            Ok(place) => Some(place),
            Err(refusal) => {
                req.extensions_mut()
                    .insert(crate::jsonrpc::SessionRefused(refusal.to_string()));
                None
            }
        }
    } else {
        None
    };
    tracing::Span::current().record("actor", actor.as_str());
    req.extensions_mut().insert(caller);
    let fault = crate::unavailable::StoreFault::default();
    req.extensions_mut().insert(fault.clone());
    let ending = req.method() == axum::http::Method::DELETE;
    let resp = next.run(req).await;
    if let Some(reason) = fault.take() {
        let e = capsid_core::error::Error::StoreUnavailable(reason);
        return crate::unavailable::unavailable_because(
            &state.service,
            "the store is unavailable",
            &e,
        )
        .await;
    }
    if ending
        && resp.status().is_success()
        && let Some(id) = &session
    {
        state.sessions.forget(id);
        // rmcp answers an ended session 202; the Python SDK reads anything but 200 or 204
        // as a failed termination (and says so), so the ending is answered 204.
        let mut ended = resp;
        *ended.status_mut() = StatusCode::NO_CONTENT;
        return ended;
    }
    if let Some(place) = place
        && let Some(new_id) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
    {
        place.fill(new_id.to_owned(), state.service.now());
    }
    resp
}

/// `/mcp` while the owner's GitHub login is not configured: 503 naming what is missing.
pub async fn oauth_route_unconfigured(State(state): State<AppState>) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({
            "error": "oauth_not_configured",
            "error_description": "the owner's OAuth route /mcp is not configured on this server; agents use /ops/mcp with a bearer key",
            "missing": state.config.oauth_missing,
        })),
    )
        .into_response()
}
