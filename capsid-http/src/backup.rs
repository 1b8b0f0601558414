//! The backup routes: `POST /ops/backup` (a bearer key with the write grant, every namespace
//! and `can_backup`: 200 with the summary when it ran, 409 when another run holds the lease,
//! 403 for any other key, 429 with `Retry-After` within the caller's interval),
//! `POST /backup/credential` (the backup-context HMAC request, reference 8.3) and
//! `GET /backup/objects/{*key}` (a read with the credential's token, streamed).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use capsid_core::backup::credential::{
    CredentialRefusal, MAX_BODY_BYTES, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
use capsid_core::backup::summary::NoProgress;
use capsid_core::caller::bearer_token;
use capsid_core::error::Error;
use capsid_core::ports::BlobReader;
use capsid_core::service::{CredentialError, OnDemandBackup};
use serde_json::json;

use crate::AppState;

/// The backup routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/ops/backup", post(ops_backup))
        .route("/backup/credential", post(credential))
        .route("/backup/objects/{*key}", get(object))
}

fn refusal(status: StatusCode, error: &str, description: String) -> Response {
    (
        status,
        axum::Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

fn core_error(e: &Error) -> Response {
    match e {
        Error::Forbidden(m) => refusal(StatusCode::FORBIDDEN, "forbidden", m.clone()),
        Error::Denied(m) => refusal(StatusCode::FORBIDDEN, "forbidden", m.to_string()),
        Error::Conflict(m) => refusal(StatusCode::CONFLICT, "conflict", m.clone()),
        Error::NotFound(m) => refusal(StatusCode::NOT_FOUND, "not_found", m.clone()),
        Error::Invalid(m) => refusal(StatusCode::BAD_REQUEST, "invalid", m.clone()),
        other => {
            tracing::error!(error = %other, "backup route failed");
            refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the backup could not run: its store or blob store is unavailable (details in the server log)"
                    .to_owned(),
            )
        }
    }
}

async fn ops_backup(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let caller = match state.service.resolve_bearer(authorization).await {
        Ok(resolved) => match resolved.caller() {
            Some(caller) => caller.clone(),
            None => return crate::auth::unauthorized(authorization.is_some()),
        },
        Err(e) => return core_error(&e),
    };
    match state.service.backup_as(&caller, &NoProgress).await {
        Ok(OnDemandBackup::Ran(summary)) if summary.ran => {
            (StatusCode::OK, axum::Json(summary)).into_response()
        }
        Ok(OnDemandBackup::Ran(summary)) => {
            (StatusCode::CONFLICT, axum::Json(summary)).into_response()
        }
        Ok(OnDemandBackup::TooSoon {
            retry_after_secs,
            message,
        }) => {
            let mut resp = refusal(StatusCode::TOO_MANY_REQUESTS, "too_many_requests", message);
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            resp
        }
        Err(e) => core_error(&e),
    }
}

async fn credential(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if body.len() > MAX_BODY_BYTES {
        return refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            format!("the body is larger than {MAX_BODY_BYTES} bytes"),
        );
    }
    match state
        .service
        .backup_credential(text(TIMESTAMP_HEADER), text(SIGNATURE_HEADER), &body)
        .await
    {
        Ok(credential) => (StatusCode::OK, axum::Json(credential)).into_response(),
        Err(CredentialError::Refused(r)) => {
            let status = match r {
                CredentialRefusal::NotConfigured => StatusCode::SERVICE_UNAVAILABLE,
                CredentialRefusal::BadTimestamp | CredentialRefusal::BadBody(_) => {
                    StatusCode::BAD_REQUEST
                }
                CredentialRefusal::OutsideWindow | CredentialRefusal::BadSignature => {
                    StatusCode::UNAUTHORIZED
                }
                CredentialRefusal::Replayed(_) => StatusCode::CONFLICT,
            };
            refusal(status, "refused", r.to_string())
        }
        Err(CredentialError::Unavailable(m)) => {
            tracing::error!(error = %m, "backup credential: fail closed");
            refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the replay cache or the media store is unavailable; no credential was issued"
                    .to_owned(),
            )
        }
    }
}

/// `?token=` on a signed-read route.
#[derive(serde::Deserialize)]
pub(crate) struct TokenQuery {
    token: Option<String>,
}

/// The read token of a signed-read route: `Authorization: Bearer`, else `?token=`.
pub(crate) fn read_token(headers: &HeaderMap, query: TokenQuery) -> String {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
        .map(str::to_owned)
        .or(query.token)
        .unwrap_or_default()
}

/// A blob streamed as the response body, chunk by chunk, with `content_type`.
pub(crate) fn stream_blob(reader: Box<dyn BlobReader>, content_type: &'static str) -> Response {
    let stream = futures::stream::unfold(reader, |mut reader| async move {
        match reader.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok::<_, std::io::Error>(Bytes::from(chunk)), reader)),
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e.to_string())), reader)),
        }
    });
    let mut resp = Body::from_stream(stream).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

async fn object(
    State(state): State<AppState>,
    Path(key): Path<String>,
    Query(query): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    let token = read_token(&headers, query);
    match state.service.read_backup_object(&token, &key).await {
        Ok(reader) => stream_blob(
            reader,
            if key.ends_with(".json") {
                "application/json"
            } else {
                "text/markdown; charset=utf-8"
            },
        ),
        Err(Error::Forbidden(m)) => refusal(StatusCode::UNAUTHORIZED, "unauthorized", m),
        Err(e) => core_error(&e),
    }
}
