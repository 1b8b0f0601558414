//! The answer while the store cannot serve: 503 with `Retry-After` and a JSON body naming the
//! condition, never a 500. An MCP tool call that meets [`Error::StoreUnavailable`] records it
//! in the request's [`StoreFault`] slot, and the MCP routes turn that answer into the same
//! 503 (in the stateless JSON mode, where the response waits for the call; in session mode
//! the call's answer is already streaming, so the client reads the tool error instead). The
//! reason given is the store's account of the cause when it has one ("connection refused at
//! 127.0.0.1:5432").

use std::sync::{Arc, Mutex};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capsid_core::error::Error;
use capsid_core::service::Service;
use serde_json::json;

/// Seconds a client is asked to wait before retrying.
pub const RETRY_AFTER_SECONDS: u64 = 2;

/// 503 `unavailable` naming `reason`, with `Retry-After`.
pub(crate) fn unavailable(reason: &str) -> Response {
    let mut resp = (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({
            "error": "unavailable",
            "error_description": format!("{reason}; nothing was changed; retry in {RETRY_AFTER_SECONDS} s"),
        })),
    )
        .into_response();
    with_retry_after(&mut resp);
    resp
}

/// 503 for `what` failing on `e`, naming the store's condition when it is an outage (the
/// real cause, as [`outage_reason`] finds it).
pub(crate) async fn unavailable_because(service: &Service, what: &str, e: &Error) -> Response {
    match outage_reason(service, e).await {
        Some(reason) => unavailable(&format!("{what}: {reason}")),
        None => unavailable(what),
    }
}

/// Why the store cannot serve, when `e` is a store outage: the store's own account of the
/// cause when it has one (a refused connection, where the error only says that no pooled
/// connection became free in time), else the error's reason.
pub(crate) async fn outage_reason(service: &Service, e: &Error) -> Option<String> {
    let Error::StoreUnavailable(reason) = e else {
        return None;
    };
    Some(
        service
            .store()
            .outage_cause()
            .await
            .unwrap_or_else(|| reason.clone()),
    )
}

/// Adds `Retry-After` to a 503 built elsewhere.
pub(crate) fn with_retry_after(resp: &mut Response) {
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
}

/// Set when a call inside this request met an unavailable store.
#[derive(Clone, Debug, Default)]
pub(crate) struct StoreFault(Arc<Mutex<Option<String>>>);

impl StoreFault {
    /// Records `e` when it is a store outage.
    pub(crate) fn note(&self, e: &Error) {
        if let Error::StoreUnavailable(reason) = e
            && let Ok(mut slot) = self.0.lock()
        {
            slot.get_or_insert_with(|| reason.clone());
        }
    }

    /// The outage recorded, if any.
    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// The slot of the HTTP request an MCP call came in on.
pub(crate) fn note_in(extensions: &rmcp::model::Extensions, e: &Error) {
    if let Some(fault) = extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<StoreFault>())
    {
        fault.note(e);
    }
}
