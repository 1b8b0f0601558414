//! Cross-cutting layers: a request id and one structured log line per request, security
//! headers per route class (HTML pages bring their own CSP; everything else gets
//! `default-src 'none'`) and `Cache-Control: no-store` by default, and a JSON 404.

use std::time::Instant;

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::RngExt;
use serde_json::json;
use tracing::Instrument;

/// The request id: the client's `x-request-id` when it is short and printable, else a new one.
fn request_id(req: &Request) -> String {
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let bytes: [u8; 8] = rand::rng().random();
            hex::encode(bytes)
        })
}

/// Logs each request once, at INFO (ERROR for a 5xx), with its id, HTTP method, path, caller,
/// and on the MCP routes the JSON-RPC method (`rpc`), the tool and the handler's verdict
/// (`outcome`), then status and latency. Everything else a request logs is DEBUG.
pub async fn request_log(req: Request, next: Next) -> Response {
    let id = request_id(&req);
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.uri().path(), actor = tracing::field::Empty, rpc = tracing::field::Empty, tool = tracing::field::Empty, outcome = tracing::field::Empty);
    let started = Instant::now();
    let mut resp = next.run(req).instrument(span.clone()).await;
    // Milliseconds to the microsecond (`0.706`, not `0.7069329999999999`).
    let ms = started.elapsed().as_micros() as f64 / 1000.0;
    span.in_scope(|| {
        let status = resp.status().as_u16();
        if status >= 500 {
            tracing::error!(status, ms, "request failed");
        } else {
            tracing::info!(status, ms, "request");
        }
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

/// Security headers on every response; `no-store` unless the route chose a policy.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let is_health = req.uri().path() == "/health";
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    if !is_health && !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Pages choose `same-origin` (see `html::page`); everything else leaks no referrer.
    if !h.contains_key(header::REFERRER_POLICY) {
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Pages set their own policy (one hashed stylesheet, their form targets); every other
    // answer is data that no browser should render anything from.
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'; base-uri 'none'"),
        );
    }
    if !h.contains_key("cross-origin-opener-policy") {
        h.insert(
            "cross-origin-opener-policy",
            HeaderValue::from_static("same-origin"),
        );
    }
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// Unknown routes.
pub async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error": "not found"})),
    )
        .into_response()
}
