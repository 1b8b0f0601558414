//! The Handler API (SPEC 8; the sister design's 3.3): checkmarks, the log, answers, resumes
//! and the shared context over plain JSON for curl and scripts, under `/api/`. Bearer keys
//! resolve exactly as on `/ops/mcp`; every route calls the tool it stands for through
//! [`capsid_core::service::Service::call_tool`], so the one check decides and no route reads
//! another namespace's data. Errors are `{"error": {"code", "message"}}` with 400, 401, 403,
//! 404, 409 (and 413 for an oversized body, 503 when the store cannot be reached).

mod routes;

use axum::Router;
use axum::extract::{OriginalUri, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use capsid_core::caller::Caller;
use capsid_core::error::Error;
use capsid_core::service::NoConfirmer;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::{Bearer, NoCaller, resolve, stamp_last_seen};

/// The largest request body read.
pub const BODY_LIMIT: usize = 65_536;

/// The API's routes, behind the bearer check.
pub fn routes(state: &AppState) -> Router<AppState> {
    routes::table()
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            api_caller,
        ))
}

/// An API error: the status and `{"error": {"code", "message"}}`.
pub(crate) fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// A core error as the API answers it.
fn core_error(e: &Error) -> Response {
    let (status, code) = match e {
        Error::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
        Error::Denied(_) | Error::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
        Error::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
        Error::Conflict(_)
        | Error::Refused { .. }
        | Error::ConfirmationRequired(_)
        | Error::Declined(_) => (StatusCode::CONFLICT, "conflict"),
        Error::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        Error::Cancelled(_) => (StatusCode::CONFLICT, "cancelled"),
        Error::StoreUnavailable(_) => {
            let mut resp = error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                &e.to_string(),
            );
            crate::unavailable::with_retry_after(&mut resp);
            return resp;
        }
        Error::Internal(detail) => {
            tracing::error!(error = %detail, "handler API call failed");
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Capsid could not reach its store; try again (details are in the server log)",
            );
        }
    };
    error(status, code, &e.to_string())
}

/// Calls `tool` as `caller` (the one check, then the handler): its JSON, or the error response.
pub(crate) async fn call_value(
    state: &AppState,
    caller: &Caller,
    tool: &str,
    args: Value,
) -> Result<Value, Response> {
    match state
        .service
        .call_tool(caller, tool, args, &NoConfirmer)
        .await
    {
        Ok(value) => Ok(value),
        Err(e) => Err(
            match crate::unavailable::outage_reason(&state.service, &e).await {
                Some(reason) => core_error(&Error::StoreUnavailable(reason)),
                None => core_error(&e),
            },
        ),
    }
}

/// Calls `tool` as `caller` and answers its JSON.
pub(crate) async fn call(state: &AppState, caller: &Caller, tool: &str, args: Value) -> Response {
    match call_value(state, caller, tool, args).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// Resolves the bearer key as `/ops/mcp` does, or answers 401 in the API's shape.
async fn api_caller(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let Bearer { caller, minted } = match resolve(&state, req.headers()).await {
        Ok(bearer) => bearer,
        Err(NoCaller::Nobody { presented }) => return unauthorized(presented),
        Err(NoCaller::Unavailable(e)) => {
            let message = match crate::unavailable::outage_reason(&state.service, &e).await {
                Some(reason) => {
                    format!(
                        "Capsid could not reach its store to check the key ({reason}); try again"
                    )
                }
                None => "Capsid could not reach its store to check the key; try again".to_owned(),
            };
            let mut resp = error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", &message);
            crate::unavailable::with_retry_after(&mut resp);
            return resp;
        }
    };
    tracing::Span::current().record("actor", caller.actor().as_str());
    req.extensions_mut().insert(caller.clone());
    let resp = next.run(req).await;
    stamp_last_seen(&state, minted, caller);
    resp
}

fn unauthorized(presented: bool) -> Response {
    let (code, message, challenge) = if presented {
        (
            "invalid_token",
            "the bearer key was not recognised: it is not a live agent key nor an operator key of this server",
            "Bearer realm=\"capsid-operator\", error=\"invalid_token\"",
        )
    } else {
        (
            "unauthorized",
            "send Authorization: Bearer <key>: a minted agent key or an operator key",
            "Bearer realm=\"capsid-operator\"",
        )
    };
    let mut resp = error(StatusCode::UNAUTHORIZED, code, message);
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    resp
}

async fn not_found(method: Method, OriginalUri(uri): OriginalUri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!(
            "no Handler API route {method} {}; see the README's Handler API section",
            uri.path()
        ),
    )
}

async fn method_not_allowed(method: Method, OriginalUri(uri): OriginalUri) -> Response {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("{method} is not served on {}", uri.path()),
    )
}
