//! The improve loop's signed routes (reference 8.3): `POST /improve/score` (a roster repo's
//! CI reports an attempt's score), `POST /improve/probe` (a skill's probe report, signed the
//! same way), `POST /improve/holdout-credential` (a one-hour read token
//! for the namespace's `improve/holdout/<ns>/`) and `GET /improve/holdout/objects/{*key}` (a
//! read with that token, streamed). Bodies are read as a bounded stream: a `Content-Length`
//! over 16,384 bytes is refused before a byte is read, and a chunked body is cut off as soon
//! as it passes the cap. The service decides everything else.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use capsid_core::error::Error;
use capsid_core::improve::report::{
    MAX_BODY_BYTES, NAMESPACE_HEADER, ReportRefusal, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
use capsid_core::service::ScoreError;
use http_body_util::BodyExt;
use serde_json::json;

use crate::AppState;
use crate::backup::{TokenQuery, read_token, stream_blob};

/// The improve routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/improve/score", post(score))
        .route("/improve/probe", post(probe))
        .route("/improve/holdout-credential", post(holdout_credential))
        .route("/improve/holdout/objects/{*key}", get(holdout_object))
}

fn refusal(status: StatusCode, error: &str, description: String) -> Response {
    (
        status,
        axum::Json(json!({"ok": false, "error": error, "error_description": description})),
    )
        .into_response()
}

fn too_large() -> Response {
    refusal(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        ReportRefusal::TooLarge.to_string(),
    )
}

/// Reads at most [`MAX_BODY_BYTES`]: `None` (refuse with 413) when the declared length is
/// over the cap, or as soon as the bytes read pass it; the rest is never read.
async fn bounded_body(headers: &HeaderMap, body: Body) -> Result<Vec<u8>, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = body;
    let mut read = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            refusal(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("the body could not be read: {e}"),
            )
        })?;
        if let Some(data) = frame.data_ref() {
            if read.len() + data.len() > MAX_BODY_BYTES {
                return Err(too_large());
            }
            read.extend_from_slice(data);
        }
    }
    Ok(read)
}

fn score_refusal(e: &ScoreError) -> Response {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let error = match status {
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        StatusCode::BAD_REQUEST => "invalid_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        _ => "conflict",
    };
    let description = match e {
        ScoreError::Unavailable(m) | ScoreError::Refused(ReportRefusal::ReplayUnknown(m)) => {
            tracing::error!(error = %m, "improve route: fail closed");
            "the replay table, a store or the holdout store is unavailable; nothing was recorded (details in the server log)".to_owned()
        }
        other => other.to_string(),
    };
    refusal(status, error, description)
}

fn text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn score(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let body = match bounded_body(&headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    match state
        .service
        .improve_score(
            text(&headers, NAMESPACE_HEADER),
            text(&headers, TIMESTAMP_HEADER),
            text(&headers, SIGNATURE_HEADER),
            &body,
        )
        .await
    {
        Ok(answer) => (StatusCode::OK, axum::Json(answer)).into_response(),
        Err(e) => score_refusal(&e),
    }
}

/// `POST /improve/probe`: a skill's probe report, signed as a score report is.
async fn probe(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let body = match bounded_body(&headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (ns, ts, sig) = (
        text(&headers, NAMESPACE_HEADER),
        text(&headers, TIMESTAMP_HEADER),
        text(&headers, SIGNATURE_HEADER),
    );
    match state.service.improve_probe(ns, ts, sig, &body).await {
        Ok(answer) => (StatusCode::OK, axum::Json(answer)).into_response(),
        Err(e) => score_refusal(&e),
    }
}

async fn holdout_credential(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let body = match bounded_body(&headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    match state
        .service
        .holdout_credential(
            text(&headers, NAMESPACE_HEADER),
            text(&headers, TIMESTAMP_HEADER),
            text(&headers, SIGNATURE_HEADER),
            &body,
        )
        .await
    {
        Ok(credential) => (StatusCode::OK, axum::Json(credential)).into_response(),
        Err(e) => score_refusal(&e),
    }
}

async fn holdout_object(
    State(state): State<AppState>,
    Path(key): Path<String>,
    Query(query): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    let token = read_token(&headers, query);
    match state.service.read_holdout_object(&token, &key).await {
        Ok(reader) => stream_blob(reader, "application/octet-stream"),
        Err(Error::Forbidden(m)) => refusal(StatusCode::UNAUTHORIZED, "unauthorized", m),
        Err(Error::NotFound(m)) => refusal(StatusCode::NOT_FOUND, "not_found", m),
        Err(e) => {
            tracing::error!(error = %e, "holdout read failed");
            refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the holdout store is unavailable (details in the server log)".to_owned(),
            )
        }
    }
}
